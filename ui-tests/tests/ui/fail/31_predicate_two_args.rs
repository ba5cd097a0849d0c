//! A predicate closure with the wrong arity, reported at the closure.
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
        if |b, c| b.guests.is_some() => confirm,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
