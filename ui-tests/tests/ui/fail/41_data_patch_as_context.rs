//! A data patch written to the context.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn main() {
    let _ = Directive::new().context(Booking::patch().city("Lisbon"));
}
