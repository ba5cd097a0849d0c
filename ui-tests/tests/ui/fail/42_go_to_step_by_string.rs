//! A step named by a string instead of its typed id.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn main() {
    let _ = Directive::go_to_step("confirm");
}
