//! Two fields serde would write under one JSON key, and a `#[field]` constraint on a
//! `#[serde(skip)]` field (the model never writes it).
use agent_core::typed::prelude::*;

#[data]
#[serde(rename_all = "camelCase")]
pub struct Booking {
    /// Check-in date
    pub check_in: String,
    /// Also check-in?
    #[serde(rename = "checkIn")]
    pub arrival: String,
    /// A cache
    #[serde(skip)]
    #[field(len = 1..=3)]
    pub cache: String,
    /// Bad rule
    pub guests: u8,
}

#[data]
#[serde(rename_all = "camel_case")]
pub struct Other {
    /// City
    pub city: String,
}

fn main() {}
