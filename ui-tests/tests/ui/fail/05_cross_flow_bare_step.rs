//! A step of another flow given as a bare name (must be `feedback::Step::ask_feedback`).
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
        when "the user wants to leave feedback" => ask_feedback,
    ))]
    fn confirm() {}
}

#[flow(data = Booking)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask_feedback() {}
}

fn main() {}
