//! An unconditional entry before other entries.
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
        else => confirm,
        if |b| b.guests.is_some() => large_group,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}

    #[step(end, reply = "A specialist will call you.")]
    fn large_group() {}
}

fn main() {}
