//! Only a path to this flow's steps (`Step::x`, `self::Step::x`, `booking::Step::x`)
//! makes a step reachable from code: `other::Step::confirm` in a helper names a step of
//! another flow, so this flow's `confirm` is still reported unreachable.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod other {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}

    #[allow(dead_code)]
    fn unused() -> impl IntoDirective<Booking> {
        Directive::go_to_step(super::other::Step::confirm)
    }
}

fn main() {}
