//! `auto` steps that branch to each other are not a closed cycle when one of them has a
//! hook that may move on (its `prepare` body here): it compiles, and `build()` agrees.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking)]
mod booking {
    #[step(auto, branches(else => pong))]
    fn ping() {}

    #[step(auto, branches(else => ping))]
    fn pong(v: pong::View<'_>) -> impl IntoPreDirective<Booking, ()> {
        let _ = v.guests;
        PreDirective::new().directive(Directive::complete())
    }
}

fn main() {
    let f = booking::flow().expect("a hook opens the cycle");
    assert_eq!(f.steps().len(), 2);
}
