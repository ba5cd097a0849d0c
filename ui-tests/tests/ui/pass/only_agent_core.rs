//! A complete agent whose crate depends on `agent-core` only: the generated code needs
//! no serde, schemars or async-trait of its own. One turn runs on the scripted provider.
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: String,
}

#[flow(title = "Hotel booking", data = Booking, required(city))]
mod booking {
    #[step(prompt = "Ask which city.", collect(city))]
    fn ask_city() {}

    #[step(end, prompt = "Confirm.", requires(city))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().append_prompt(format!("The city is {}.", v.city))
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() {
    let provider = ScriptedProvider::new();
    provider.respond(Answer::message("Which city?"));
    let agent: Agent<Booking, ()> = Agent::builder()
        .provider(provider.clone())
        .flow(booking::flow().expect("valid flow"))
        .build()
        .expect("valid agent");
    let r = block_on(agent.respond("s1", "I need a hotel")).expect("turn");
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.model_calls, 1);
}
