//! `go_to_step` then `reset`: two position fields.
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
    let _ = Directive::go_to_step(booking::Step::confirm).data(Booking::patch().guests(2)).reset();
}
