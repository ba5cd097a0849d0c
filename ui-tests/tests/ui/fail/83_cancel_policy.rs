//! A flow's cancel policy: `cancel_clears(..)` names fields of the flow's data type,
//! and `cancel_after_tool` is plain, non-empty text (the cancel clears the values a
//! placeholder would name).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Booking reference
    pub reference: Option<String>,
}

#[flow(data = Booking, required(city), cancel_clears(refrence), cancel_after_tool = "Booking {reference} stays.")]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

#[flow(data = Booking, cancel_after_tool = " ")]
mod other {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
