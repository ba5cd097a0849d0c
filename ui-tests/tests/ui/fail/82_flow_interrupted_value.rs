//! `interrupted = ..` on a flow is `resume` (the default) or `end`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking, required(city), interrupted = resum)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
