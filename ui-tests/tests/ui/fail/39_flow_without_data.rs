//! A flow without its data type.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(title = "Booking")]
mod booking {
    #[step(prompt = "Ask the city.")]
    fn ask_city() {}
}

fn main() {}
