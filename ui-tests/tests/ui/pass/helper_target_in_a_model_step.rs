//! An `auto` cycle closed through a directive a helper fn builds: the jump's target step
//! is a value (`Step::a`), not part of the helper's type, so `#[flow]` cannot see the
//! cycle; it compiles, and `flow()` rejects it naming the cycle's steps.
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

    #[step(auto, branches(else => super::back_to_a()))]
    fn b() {}
}

fn main() {
    let Err(e) = booking::flow() else {
        panic!("a closed auto cycle must not build");
    };
    let text = e.to_string();
    assert!(
        text.contains("`auto` cycle with no exit: `a` → `b` only lead to each other"),
        "{text}"
    );
}
