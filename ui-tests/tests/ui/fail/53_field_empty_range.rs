//! A `range` whose minimum is greater than its maximum, and a bound outside the type.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// Number of guests
    #[field(range = 12..=1)]
    pub guests: u8,
    /// Nights
    #[field(range = 1..=300)]
    pub nights: u8,
}

fn main() {}
