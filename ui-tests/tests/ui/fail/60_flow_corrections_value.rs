//! `corrections = ..` on a flow is `refuse` (the default) or `reopen`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking, required(city), corrections = reopn)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
