//! `#[flow]` on an async fn: a code flow next to declarative ones. Handoffs name
//! flows by type in both directions (`ReminderFlow` is a code flow, `BookingFlow` a
//! declarative one; the `desk` flow branches to `TutorFlow`), and the agent runs them.
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Notes {
    /// City the guest wants to stay in
    pub city: String,
}

#[flow(title = "Hotel booking", data = Notes)]
mod booking {
    #[step(end, prompt = "Ask which city.", collect(city))]
    fn ask_city() {}
}

/// A declarative flow that hands off to code flows by type: a model-judged branch and
/// a directive.
#[flow(title = "Front desk", data = Notes, when = "the user needs help")]
mod desk {
    #[step(prompt = "Ask what the user needs.", branches(
        when "the user wants to practise English" => TutorFlow,
        when "the user wants a reminder" => Directive::go_to::<ReminderFlow>(),
    ))]
    fn triage() {}
}

/// Learn the user's name, then hand over to reminders.
#[flow(title = "English tutor", when = "the user wants to practise English")]
async fn tutor(ctx: FlowCx<Notes, ()>) -> FlowResult {
    let name: String = ctx.ask("name", "What's your name?").await;
    ctx.say(format!("Nice to meet you, {name}.")).await;
    ctx.handoff::<ReminderFlow>()
}

#[flow(id = "reminders", when = "the user wants a reminder")]
async fn reminder(ctx: FlowCx<Notes, ()>) -> FlowResult {
    let wants_hotel: bool = ctx.ask("hotel", "Do you need a hotel too?").await;
    if wants_hotel {
        return ctx.handoff::<BookingFlow>();
    }
    ctx.end("no hotel")
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
    assert_eq!(<ReminderFlow as FlowRef>::ID, "reminders");
    let provider = ScriptedProvider::new();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(provider.clone())
        .flow(booking::flow())
        .code_flow(TutorFlow)
        .code_flow(ReminderFlow)
        .build()
        .expect("valid agent");
    provider.route(Answer::route("tutor"));
    let r = block_on(agent.respond("s1", "teach me")).expect("turn");
    assert_eq!(r.message, "What's your name?");
    provider.extract(Answer::answering(agent_core::__private::serde_json::json!("Ana")));
    let r = block_on(agent.respond("s1", "Ana")).expect("turn");
    assert_eq!(r.message, "Nice to meet you, Ana.\n\nDo you need a hotel too?");
    provider.extract(Answer::answering(agent_core::__private::serde_json::json!(true)));
    provider.respond(Answer::message("Which city?"));
    let r = block_on(agent.respond("s1", "yes")).expect("turn");
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.message, "Which city?");

    // Declarative → code: the desk's branch names `TutorFlow`.
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(provider.clone())
        .flow(desk::flow())
        .code_flow(TutorFlow)
        .code_flow(ReminderFlow)
        .build()
        .expect("valid agent");
    provider.route(Answer::route("desk"));
    provider.respond(Answer::message("How can I help?"));
    let r = block_on(agent.respond("s2", "hello")).expect("turn");
    assert_eq!(r.message, "How can I help?");
    provider.respond(
        Answer::message("Sure!").judging("the user wants to practise English", true),
    );
    let r = block_on(agent.respond("s2", "I want to practise English")).expect("turn");
    assert_eq!(r.flow.as_deref(), Some("tutor"));
    assert_eq!(r.message, "What's your name?");
    assert_eq!(r.meta.source, Source::Flow);
}
