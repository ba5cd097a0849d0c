//! A misspelled step key.
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
    #[step(promt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
