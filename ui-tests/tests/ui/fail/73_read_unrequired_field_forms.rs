//! Reading a field the step does not `requires` as if it were present, in the forms a
//! hook body usually takes. The view's field is an `Option<&T>`, so rustc reports a
//! type mismatch, a missing method or a missing `Display` on that `Option`; no message
//! of ours can be attached to these errors (see "Step views" in the macro reference:
//! the fix is `requires(city)`, or handling the `Option`).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn shout(city: &str) -> String {
    city.to_uppercase()
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.", requires(guests))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        let city: &String = v.city;
        let n = v.city.len();
        let line = format!("{} for {}", v.city, v.guests);
        PreDirective::new().append_prompt(format!("{city} {n} {line} {}", super::shout(v.city)))
    }
}

fn main() {}
