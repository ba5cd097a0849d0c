//! `range` on a field that is not a number.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City the guest wants to stay in
    #[field(range = 1..=12)]
    pub city: String,
}

fn main() {}
