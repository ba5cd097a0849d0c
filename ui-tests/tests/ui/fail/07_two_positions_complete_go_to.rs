//! `complete` then `go_to`: two position fields.
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
    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn main() {
    let _ = Directive::complete().go_to::<BookingFlow>();
}
