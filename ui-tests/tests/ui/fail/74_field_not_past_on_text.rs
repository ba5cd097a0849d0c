//! `not_past` needs a calendar value: a `String` or a number holding a date is refused
//! on the key, and the flag takes no value.
use agent_core::typed::prelude::*;

#[data]
pub struct Stay {
    /// Check-in date as text
    #[field(not_past)]
    pub check_in: String,
    /// Nights
    #[field(not_past)]
    pub nights: u8,
}

#[data]
pub struct Other {
    /// Arrival
    #[field(not_past = true)]
    pub arrival: Date,
}

fn main() {}
