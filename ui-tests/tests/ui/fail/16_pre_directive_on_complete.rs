//! `on_complete` given a `PreDirective` (`halt` is pre-LLM only).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking, on_complete = PreDirective::<Booking, ()>::new().halt())]
mod booking {
    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
