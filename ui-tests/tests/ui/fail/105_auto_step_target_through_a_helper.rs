//! An `auto` step whose branch target `#[flow]` cannot read: a helper fn's directive, a
//! variable, a step computed by a call. Such a target may close an `auto` cycle the macro
//! cannot see, so in an `auto` step each one is an error; a step the model renders may
//! take them (see the pass case `helper_target_in_a_model_step`).
use agent_core::typed::directive::state::{JumpToStep, NoReply};
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

fn back_to_a() -> TypedDirective<JumpToStep, NoReply, Booking> {
    Directive::go_to_step(booking::Step::a)
}

fn pick() -> booking::Step {
    booking::Step::a
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(auto, branches(else => b))]
    fn a() {}

    #[step(auto, branches(
        if |v| v.city.is_some() => Directive::go_to_step(super::pick()),
        else => super::back_to_a(),
    ))]
    fn b() {}
}

fn main() {}
