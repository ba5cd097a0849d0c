//! A branch naming a flow type that does not exist.
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
    #[step(end, prompt = "Confirm.", branches(
        when "the user asks about pets" => PetFlow,
    ))]
    fn confirm() {}
}

#[flow(data = Booking)]
mod pets {
    #[step(prompt = "Ask about the pet.")]
    fn ask_pet() {}
}

fn main() {}
