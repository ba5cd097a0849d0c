//! Two steps with the same id.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask the city again.", collect(city))]
    fn ask_city() {}
}

fn main() {}
