//! `Directive::go_to::<T>()` with a type that is not a flow.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn main() {
    let _ = Directive::go_to::<Booking>();
}
