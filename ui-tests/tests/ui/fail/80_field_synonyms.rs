//! `synonyms` stand for values the field can hold: a number of the field's type and
//! `range` for a numeric field, a string in its `one_of` for a text field; a malformed
//! entry is reported with the key's usage.
use agent_core::typed::prelude::*;

#[data]
pub struct Stay {
    /// Guests
    #[field(range = 1..=12, synonyms(1 = ["just me"], 20 = ["a busload"], "two" = ["a pair"]))]
    pub guests: u8,
    /// Room type
    #[field(one_of("standard", "suite"), synonyms("double" = ["two beds"], 2 = ["twin"]))]
    pub room: String,
    /// Nights
    #[field(synonyms(1 = ["one night"], 1 = ["a night"], 3 = [""]))]
    pub nights: u8,
    /// Notes
    #[field(synonyms(just me))]
    pub notes: String,
}

fn main() {}
