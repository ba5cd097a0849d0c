//! `skip` given something that is not a predicate.
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
    #[step(prompt = "Ask the city.", collect(city), skip = "when the city is known")]
    fn ask_city() {}
}

fn main() {}
