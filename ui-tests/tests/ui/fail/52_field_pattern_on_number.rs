//! `pattern`, `len` and `one_of` on a field that is not a string.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// Number of guests
    #[field(pattern = "^[0-9]+$")]
    pub guests: u8,
    /// Nights
    #[field(len = 1..=2, one_of("1", "2"))]
    pub nights: Option<u32>,
}

fn main() {}
