//! A predicate that does not return `bool`.
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
    #[step(auto, requires(guests), branches(
        if |b| b.guests => confirm,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {}
