//! `required` and `optional` naming fields the data type lacks (both reported).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, required(city, gusts), optional(notes))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
