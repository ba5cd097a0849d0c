//! An unknown `#[field]` key: the error suggests the closest key and lists them all.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// Number of guests
    #[field(rnage = 1..=12)]
    pub guests: u8,
}

fn main() {}
