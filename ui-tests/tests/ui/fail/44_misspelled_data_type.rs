//! `data =` naming a type that does not exist.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Bookin)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
