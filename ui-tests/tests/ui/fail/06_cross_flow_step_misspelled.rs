//! A typed cross-flow step that the other flow does not have.
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
        when "the user wants to leave feedback" => feedback::Step::ask_feedbak,
    ))]
    fn confirm() {}
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask_feedback() {}
}

fn main() {}
