//! Reading a field the step does not `requires` as if it were present, in the forms a
//! hook body usually takes. The view's field is an `Unrequired<'_, String, _>`: `{}` and
//! `{:?}` fail with our message naming the field and the fix (`requires(city)`, or
//! `.get()`); using it as a `&String` (a binding, a method of `String`, an argument)
//! gets rustc's type mismatch or missing method, naming `Unrequired`.
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
    #[step(end, prompt = "Confirm.", requires(guests))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        let city: &String = v.city;
        let n = v.city.len();
        let line = format!("{} for {}", v.city, v.guests);
        let debug = format!("{:?}", v.city);
        PreDirective::new().append_prompt(format!("{city} {n} {line} {debug} {}", super::shout(v.city)))
    }
}

fn main() {}
