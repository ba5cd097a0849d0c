//! An `auto` cycle closed through a directive that only jumps to a step of this flow
//! (`Directive::go_to_step(Step::b)`) has no exit either: reported like one closed by
//! plain step targets.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(auto, branches(else => Directive::go_to_step(Step::b)))]
    fn a() {}

    #[step(auto, branches(else => a))]
    fn b() {}
}

fn main() {}
