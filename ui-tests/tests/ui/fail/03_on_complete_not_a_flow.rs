//! `on_complete` naming a type that is not a flow.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, on_complete = Booking)]
mod booking {
    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
