//! `reply` with `prompt` and `collect`.
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
    #[step(reply = "Hello!", prompt = "Greet.", collect(city))]
    fn greet() {}
}

fn main() {}
