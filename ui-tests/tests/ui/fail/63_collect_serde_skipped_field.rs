//! A `#[serde(skip)]` field is not data the model writes: a step cannot collect it.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Computed by code, never serialized
    #[serde(skip)]
    pub cache: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city, cache))]
    fn ask_city() {}
}

fn main() {}
