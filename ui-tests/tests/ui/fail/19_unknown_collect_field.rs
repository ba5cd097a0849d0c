//! `collect` naming a field the data type lacks.
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
    #[step(prompt = "Ask the city.", collect(citty))]
    fn ask_city() {}
}

fn main() {}
