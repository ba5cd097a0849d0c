//! A step that no path reaches.
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
    #[step(end, prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask the guests.", collect(guests))]
    fn ask_guests() {}
}

fn main() {}
