//! `interrupted = ..` on a flow is `resume` (the default), `restart` or `end`; on a step, the same
//! values, and only on a model step: an `auto` or `reply` step never waits for the
//! user, so the flow is never interrupted there (`resume` would resume nowhere).
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking, required(city), interrupted = resum)]
mod booking {
    #[step(auto, interrupted = resume)]
    fn start() {}

    #[step(prompt = "Ask the city.", collect(city), interrupted = pause)]
    fn ask_city() {}

    #[step(reply = "Noted: {city}.", interrupted = end)]
    fn done() {}
}

fn main() {}
