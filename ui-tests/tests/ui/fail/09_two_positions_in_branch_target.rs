//! Two position fields in a branch target.
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
        when "the user wants to start over" => Directive::reset().complete(),
    ))]
    fn confirm() {}
}

fn main() {}
