//! A branch naming a step the flow does not have (did you mean).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), branches(
        when "the user is done" => confrim,
    ))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
