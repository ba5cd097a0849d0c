//! A hook declared `-> PreDirective<D, C>` (no reply in its type) that sets a reply:
//! rustc's type mismatch, whose `found` type shows `WithReply`; the fix is
//! `-> impl IntoPreDirective<Booking, ()>` (the macro cannot see what the body merges).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Ask the city.", collect(city))]
    fn ask_city(_v: ask_city::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().reply("Hello!")
    }
}

fn main() {}
