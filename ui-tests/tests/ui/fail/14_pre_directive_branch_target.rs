//! A pre-LLM-only field (`append_prompt`) as a branch target.
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
        when "the user hesitates" => PreDirective::<Booking, ()>::new().append_prompt("Reassure them."),
    ))]
    fn confirm() {}
}

fn main() {}
