//! `reply` with `auto`.
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
    #[step(auto, reply = "Hello!")]
    fn greet() {}
}

fn main() {}
