//! Serde attributes that change a field's JSON name or shape in ways the engine cannot
//! follow are refused on `#[data]` (`rename`, `rename_all`, `alias`, `skip`, `default`
//! work); so is a rename with separate serialize and deserialize names.
use agent_core::typed::prelude::*;

#[data]
#[serde(transparent)]
pub struct Booking {
    /// City
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: String,
    /// Guests
    #[serde(rename(serialize = "g", deserialize = "guests"))]
    pub guests: u8,
    /// Extra
    #[serde(flatten)]
    pub extra: String,
}

fn main() {}
