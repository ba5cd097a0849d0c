//! Malformed `#[field]` values, all reported at once.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// Number of guests
    #[field(range = "1 to 12")]
    pub guests: u8,
    /// Room type
    #[field(one_of(standard, suite))]
    pub room: String,
    /// Nights
    #[field(range = 1..14)]
    pub nights: u8,
    /// Check-in date
    #[field(pattern = "(\\d{4}-\\d{2}-\\d{2}", len)]
    pub check_in: String,
}

fn main() {}
