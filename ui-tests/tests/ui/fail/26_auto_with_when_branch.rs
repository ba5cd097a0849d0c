//! A model-judged `when` branch on an `auto` step.
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
    #[step(auto, branches(
        when "the user seems in a hurry" => confirm,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
