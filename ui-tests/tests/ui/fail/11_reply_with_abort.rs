//! `reply` on an `abort` directive.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn main() {
    let _ = Directive::abort("spam").reply("Goodbye!");
}
