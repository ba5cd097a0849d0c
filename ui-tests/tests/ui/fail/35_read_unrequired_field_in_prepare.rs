//! Reading `city` as a `String` in a `prepare` hook of a step that does not require it.
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
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        let city: String = v.city;
        PreDirective::new().append_prompt(city)
    }
}

fn main() {}
