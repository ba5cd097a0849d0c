//! `#[step]` outside a `#[flow]` module.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[step(prompt = "Ask the city.")]
fn ask_city() {}

fn main() {}
