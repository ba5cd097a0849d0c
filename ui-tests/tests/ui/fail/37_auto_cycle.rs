//! `auto` steps that only lead to each other.
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
        if |b| b.guests.is_some() => pong,
        else => pong,
    ))]
    fn ping() {}

    #[step(auto, branches(else => ping))]
    fn pong() {}
}

fn main() {}
