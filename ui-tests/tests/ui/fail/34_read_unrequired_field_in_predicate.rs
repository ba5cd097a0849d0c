//! Reading `guests` as a plain value in a step that does not `requires(guests)`.
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
    #[step(auto, requires(city), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}

    #[step(end, reply = "A specialist will call you.")]
    fn large_group() {}
}

fn main() {}
