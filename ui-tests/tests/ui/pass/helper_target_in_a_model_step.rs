//! A step the model renders may branch to a directive a helper fn builds: only an `auto`
//! step's targets must be written in the attribute (fail case 105), since only `auto`
//! steps can loop without the user.
use agent_core::typed::directive::state::{JumpToStep, NoReply};
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
}

fn back_to_a() -> TypedDirective<JumpToStep, NoReply, Booking> {
    Directive::go_to_step(booking::Step::a)
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(auto, branches(else => b))]
    fn a() {}

    #[step(prompt = "Anything else?", branches(
        when "the user wants to start over" => super::back_to_a(),
        else => Directive::complete(),
    ))]
    fn b() {}
}

fn main() {
    let f = booking::flow().expect("a model step may branch through a helper");
    assert_eq!(f.steps().len(), 3);
}
