//! `abort` on a directive that has a `reply`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn main() {
    let _ = Directive::reply("Goodbye!").abort("spam");
}
