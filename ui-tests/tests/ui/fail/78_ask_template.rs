//! `ask` writes a model step's question from the data: each placeholder must be a
//! field present at the step, the braces must pair, and a step the model does not
//! render has no question to write.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, required(city))]
mod booking {
    #[step(prompt = "Ask for the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask how many.", collect(guests), ask = "How many guests in {city}, {guests}?")]
    fn ask_guests() {}

    #[step(prompt = "Confirm.", requires(guests), ask = "Book {guests guests?", end)]
    fn confirm() {}

    #[step(auto, ask = "Routing.")]
    fn route() {}
}

fn main() {}
