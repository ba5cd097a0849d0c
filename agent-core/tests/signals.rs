//! Signals end to end through `Agent::respond`: `when` / `if` gating, extraction,
//! frequency and persisted trigger state, priority and `stop_other_signals`, pre-phase
//! positions, halts and augmentation, post-phase pending directives, `Phase::Both`,
//! the single batched classifier call, and the response fields signals fill in.
//!
//! One file over 600 lines: every signal behaviour runs through `Agent::respond` on the same booking fixture and scripted provider.

mod common;

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use agent_core::AgentBuilder;
use agent_core::clock::ManualClock;
use agent_core::directive::Position;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest, Role};
use agent_core::response::{DirectiveSource, Transition};
use agent_core::signal::SignalCx;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

type Sig = Signal<Booking, Concierge>;
type Scx<'a> = SignalCx<'a, Booking, Concierge>;
type Sd = SignalDirective<Booking, Concierge>;

/// An agent builder on the scripted provider, without flows or signals.
fn base(p: &ScriptedProvider) -> AgentBuilder<Booking, Concierge> {
    Agent::builder().name("Concierge").provider(p.clone())
}

/// An agent with the given flows and signals.
fn build(
    p: &ScriptedProvider,
    flows: Vec<Flow<Booking, Concierge>>,
    signals: Vec<Sig>,
) -> Result<Agent<Booking, Concierge>, ConfigErrors> {
    let mut b = base(p);
    for f in flows {
        b = b.flow(f);
    }
    for s in signals {
        b = b.signal(s);
    }
    b.build()
}

/// A handler that records `name` and returns `d`.
fn logs(log: &Log, name: &'static str, d: Sd) -> impl Fn(&Scx<'_>) -> Sd + Send + Sync + 'static {
    let log = log.clone();
    move |_cx: &Scx<'_>| {
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name.to_owned());
        d.clone()
    }
}

/// A handler that records `name` and does nothing else.
fn noop(log: &Log, name: &'static str) -> impl Fn(&Scx<'_>) -> Sd + Send + Sync + 'static {
    logs(log, name, Sd::new())
}

fn requests_of(p: &ScriptedProvider, kind: CallKind) -> Vec<ModelRequest> {
    p.requests()
        .into_iter()
        .filter(|r| r.kind == kind)
        .collect()
}

fn classifier_calls(p: &ScriptedProvider) -> usize {
    p.calls_of(CallKind::Classify) + p.calls_of(CallKind::Route)
}

fn signal_sources(r: &AgentResponse<Booking>) -> Vec<DirectiveSource> {
    r.directive_chain
        .iter()
        .map(|e| e.source.clone())
        .filter(|s| {
            matches!(
                s,
                DirectiveSource::PreSignal(_) | DirectiveSource::PostSignal(_)
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// `when` / `if`
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_pre_signal_whose_when_is_judged_true_fires() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("frustrated")
                .when("the user is frustrated")
                .handle(noop(&l, "frustrated")),
        ],
    )
    .unwrap();
    p.classify(Answer::verdicts([("the user is frustrated", true)]));
    p.respond(Answer::message("Which city?"));

    let r = a.respond("s", "this is taking forever").await.unwrap();

    assert_eq!(r.signals, ["frustrated"]);
    assert_eq!(entries(&l), ["frustrated"]);
    assert_eq!(p.calls_of(CallKind::Classify), 1);
    let classify = &requests_of(&p, CallKind::Classify)[0];
    assert!(
        classify
            .instructions()
            .contains("- c0: the user is frustrated"),
        "{}",
        classify.system
    );
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "Which city?");
    assert_eq!(r.model_calls, 2, "classify + respond");
}

#[tokio::test]
async fn a_pre_signal_whose_when_is_judged_false_does_not_fire() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("frustrated")
                .when("the user is frustrated")
                .handle(noop(&l, "frustrated")),
        ],
    )
    .unwrap();
    p.classify(Answer::verdicts([("the user is frustrated", false)]));
    p.respond(Answer::message("Which city?"));

    let r = a.respond("s", "hello").await.unwrap();

    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert!(entries(&l).is_empty());
    assert_eq!(
        p.calls_of(CallKind::Classify),
        1,
        "the condition was still judged"
    );
    assert!(signal_sources(&r).is_empty());
    let state = a.session("s").await.unwrap().unwrap().signals;
    assert!(!state.contains_key("frustrated"), "{state:?}");
}

#[tokio::test]
async fn a_signal_whose_if_fails_is_never_put_to_the_classifier() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("checkout")
                .if_(|cx: &Cx<'_, Booking, Concierge>| cx.message().contains("checkout"))
                .when("the user wants a late checkout")
                .handle(noop(&l, "checkout")),
            Signal::new("frustrated")
                .when("the user is frustrated")
                .handle(noop(&l, "frustrated")),
        ],
    )
    .unwrap();
    // Both conditions would be judged true if they were asked.
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([
            ("the user wants a late checkout", true),
            ("the user is frustrated", true),
        ]),
    );
    p.default_answer(CallKind::Respond, Answer::message("ok"));

    let r = a.respond("s", "hello there").await.unwrap();
    assert_eq!(r.signals, ["frustrated"]);
    assert_eq!(p.calls_of(CallKind::Classify), 1);
    let system = &requests_of(&p, CallKind::Classify)[0].system;
    assert!(
        !system.contains("late checkout"),
        "gated condition was asked: {system}"
    );
    assert!(system.contains("the user is frustrated"), "{system}");

    // Control: once the predicate holds, the condition is asked and the signal fires.
    p.clear_requests();
    let r = a.respond("s", "can I have a late checkout?").await.unwrap();
    let system = &requests_of(&p, CallKind::Classify)[0].system;
    assert!(
        system.contains("the user wants a late checkout"),
        "{system}"
    );
    assert!(
        r.signals.contains(&"checkout".to_owned()),
        "{:?}",
        r.signals
    );
}

#[tokio::test]
async fn a_signal_gated_only_by_a_failing_if_makes_no_classifier_call() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("checkout")
                .if_(|cx: &Cx<'_, Booking, Concierge>| cx.message().contains("checkout"))
                .when("the user wants a late checkout")
                .handle(noop(&l, "checkout")),
        ],
    )
    .unwrap();
    p.respond(Answer::message("ok"));

    let r = a.respond("s", "hello").await.unwrap();

    assert_eq!(classifier_calls(&p), 0);
    assert!(r.signals.is_empty());
    assert_eq!(r.model_calls, 1);
}

#[tokio::test]
async fn a_signal_without_when_or_if_fires_every_turn_with_zero_classifier_calls() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![Signal::new("audit").handle(noop(&l, "audit"))],
    )
    .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("ok"));

    for turn in 1..=3 {
        let r = a.respond("s", "hi").await.unwrap();
        assert_eq!(r.signals, ["audit"], "turn {turn}");
        assert_eq!(r.model_calls, 1, "turn {turn}: only the respond call");
    }
    assert_eq!(entries(&l).len(), 3);
    assert_eq!(classifier_calls(&p), 0);
}

// ---------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------

/// What the complaint signal extracts.
#[derive(Debug, Deserialize, JsonSchema)]
struct Complaint {
    /// What the complaint is about
    topic: String,
    /// 1 (mild) to 5 (furious)
    severity: u8,
}

#[tokio::test]
async fn an_extracting_signal_reads_a_typed_value_in_its_handler() {
    let p = ScriptedProvider::new();
    let l = log();
    let seen = l.clone();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("complaint")
                .when("the user complains")
                .extract::<Complaint>()
                .handle(move |cx: &Scx<'_>| {
                    let c: Option<Complaint> = cx.extracted::<Complaint>();
                    seen.lock().unwrap().push(match c {
                        Some(c) => format!("{}/{}", c.topic, c.severity),
                        None => "nothing".into(),
                    });
                    Sd::new()
                }),
        ],
    )
    .unwrap();
    p.classify(Answer::verdicts([("the user complains", true)]).extracting(
        "the user complains",
        json!({ "topic": "noise", "severity": 4 }),
    ));
    p.respond(Answer::message("I am sorry about the noise."));

    let r = a.respond("s", "the room was so loud").await.unwrap();

    assert_eq!(entries(&l), ["noise/4"]);
    assert_eq!(r.signals, ["complaint"]);
    let req = &requests_of(&p, CallKind::Classify)[0];
    let schema = &req.output.as_ref().expect("structured classify").schema;
    let extracted = &schema["properties"]["extracted"]["properties"]["c0"];
    assert!(
        extracted["properties"]["topic"].is_object(),
        "extraction schema: {schema}"
    );
    assert!(
        extracted["properties"]["severity"].is_object(),
        "extraction schema: {schema}"
    );
}

// ---------------------------------------------------------------------------------
// Frequency and persisted trigger state
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_once_signal_fires_only_once_per_session() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![Signal::new("welcome").once().handle(noop(&l, "welcome"))],
    )
    .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("ok"));

    let fired: Vec<Vec<String>> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(a.respond("s", "hi").await.unwrap().signals);
        }
        v
    };
    assert_eq!(fired, [vec!["welcome".to_owned()], vec![], vec![]]);
    assert_eq!(entries(&l), ["welcome"]);
    let state = a.session("s").await.unwrap().unwrap().signals;
    assert_eq!(state["welcome"].fired, 1);

    // Another session starts fresh.
    let r = a.respond("other", "hi").await.unwrap();
    assert_eq!(r.signals, ["welcome"]);
}

#[tokio::test]
async fn a_cooldown_signal_does_not_fire_again_until_the_clock_passed_the_duration() {
    let p = ScriptedProvider::new();
    let l = log();
    let clock = ManualClock::new(1_000_000);
    let a = base(&p)
        .clock(clock.clone())
        .signal(
            Signal::new("nudge")
                .cooldown(Duration::from_secs(60))
                .handle(noop(&l, "nudge")),
        )
        .build()
        .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("ok"));

    let r = a.respond("s", "one").await.unwrap();
    assert_eq!(r.signals, ["nudge"], "first turn");

    clock.advance(Duration::from_secs(30));
    let r = a.respond("s", "two").await.unwrap();
    assert!(r.signals.is_empty(), "30 s later: {:?}", r.signals);

    clock.advance(Duration::from_secs(29));
    let r = a.respond("s", "three").await.unwrap();
    assert!(r.signals.is_empty(), "59 s later: {:?}", r.signals);

    clock.advance(Duration::from_secs(2));
    let r = a.respond("s", "four").await.unwrap();
    assert_eq!(r.signals, ["nudge"], "61 s later");

    let state = a.session("s").await.unwrap().unwrap().signals;
    assert_eq!(state["nudge"].fired, 2);
    assert_eq!(state["nudge"].last_fired_ms, 1_061_000);
    assert_eq!(entries(&l).len(), 2);
}

#[tokio::test]
async fn an_always_signal_fires_every_time_it_matches() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("thanks")
                .when("the user says thanks")
                .cooldown(Duration::from_secs(3600))
                .always()
                .handle(noop(&l, "thanks")),
        ],
    )
    .unwrap();
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([("the user says thanks", true)]),
    );
    p.default_answer(CallKind::Respond, Answer::message("You're welcome."));

    for turn in 1..=3 {
        let r = a.respond("s", "thanks!").await.unwrap();
        assert_eq!(r.signals, ["thanks"], "turn {turn}");
    }
    assert_eq!(entries(&l).len(), 3);
    let state = a.session("s").await.unwrap().unwrap().signals;
    assert_eq!(state["thanks"].fired, 3);
}

#[tokio::test]
async fn signal_trigger_state_is_persisted_in_the_session_across_turns() {
    let p = ScriptedProvider::new();
    let l = log();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let clock = ManualClock::new(5_000);
    let make = || {
        base(&p)
            .store_arc(store.clone())
            .clock(clock.clone())
            .signal(Signal::new("welcome").once().handle(noop(&l, "welcome")))
            .build()
            .unwrap()
    };
    p.default_answer(CallKind::Respond, Answer::message("ok"));

    let first = make();
    let r = first.respond("s", "hi").await.unwrap();
    assert_eq!(r.signals, ["welcome"]);
    let stored = first.session("s").await.unwrap().unwrap();
    assert_eq!(stored.signals["welcome"].fired, 1);
    assert_eq!(stored.signals["welcome"].last_fired_ms, 5_000);

    // A second agent instance on the same store sees the stored trigger state.
    let second = make();
    let r = second.respond("s", "hi again").await.unwrap();
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert_eq!(entries(&l), ["welcome"]);
}

// ---------------------------------------------------------------------------------
// Priority and stop_other_signals
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn higher_priority_signals_run_first() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("low").handle(noop(&l, "low")),
            Signal::new("high").priority(10).handle(noop(&l, "high")),
            Signal::new("mid").priority(5).handle(noop(&l, "mid")),
            Signal::new("low2").handle(noop(&l, "low2")),
        ],
    )
    .unwrap();
    p.respond(Answer::message("ok"));

    let r = a.respond("s", "hi").await.unwrap();

    assert_eq!(entries(&l), ["high", "mid", "low", "low2"]);
    assert_eq!(r.signals, ["high", "mid", "low", "low2"]);
}

#[tokio::test]
async fn stop_other_signals_skips_the_remaining_handlers_of_the_phase() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("low").handle(noop(&l, "low")),
            Signal::new("high").priority(10).handle(logs(
                &l,
                "high",
                Sd::new().stop_other_signals(),
            )),
            Signal::new("mid").priority(5).handle(noop(&l, "mid")),
        ],
    )
    .unwrap();
    p.respond(Answer::message("ok"));

    let r = a.respond("s", "hi").await.unwrap();

    assert_eq!(entries(&l), ["high"]);
    assert_eq!(r.signals, ["high"]);
    let state = a.session("s").await.unwrap().unwrap().signals;
    assert!(
        !state.contains_key("mid") && !state.contains_key("low"),
        "{state:?}"
    );
}

// ---------------------------------------------------------------------------------
// Pre-phase outcomes: position, halt, reply, augmentation
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_pre_signal_position_wins_over_routing() {
    let p = ScriptedProvider::new();
    let l = log();
    let cond = "the user complains about a past stay";
    let a = build(
        &p,
        vec![booking_flow(false), feedback_flow()],
        vec![Signal::new("complaint").when(cond).handle(logs(
            &l,
            "complaint",
            Directive::go_to("feedback").into(),
        ))],
    )
    .unwrap();

    // Routing picks `booking`, the signal moves to `feedback`.
    p.classify(Answer::verdicts([(cond, true)]).and_route("booking"));
    p.respond(Answer::message("Sorry to hear that. What went wrong?"));
    let r = a
        .respond("s", "I want to book again, but last time was awful")
        .await
        .unwrap();

    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(
        r.transitions,
        [Transition {
            from: None,
            to: "feedback".into()
        }]
    );
    assert_eq!(r.signals, ["complaint"]);
    let entry = r
        .directive_chain
        .iter()
        .find(|e| e.source == DirectiveSource::PreSignal("complaint".into()))
        .expect("the signal's directive is in the chain");
    assert!(matches!(&entry.directive.position, Some(Position::GoTo(g)) if g.flow == "feedback"));
    assert_eq!(classifier_calls(&p), 1, "signal and routing share one call");

    // Control: the signal does not match, routing decides.
    p.classify(Answer::verdicts([(cond, false)]).and_route("booking"));
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s2", "I want to book a room").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_city"));
}

#[tokio::test]
async fn a_pre_signal_halt_without_reply_ends_the_turn_with_halt_and_no_respond_call() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![Signal::new("maintenance").handle(logs(
            &l,
            "maintenance",
            PreDirective::new().halt().into(),
        ))],
    )
    .unwrap();

    let r = a.respond("s", "I want a room").await.unwrap();

    assert_eq!(r.stopped, StoppedReason::Halt);
    assert_eq!(r.message, "");
    assert_eq!(p.calls_of(CallKind::Respond), 0);
    assert_eq!(r.model_calls, 0);
    assert_eq!(r.signals, ["maintenance"]);
    assert!(
        r.directive_chain.iter().any(|e| e.halt),
        "{:?}",
        r.directive_chain
    );
}

#[tokio::test]
async fn a_pre_signal_halt_with_reply_with_delivers_that_message() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("closed").handle(logs(
                &l,
                "closed",
                Sd::new()
                    .pre(PreDirective::new().halt())
                    .reply_with("We are closed today."),
            )),
        ],
    )
    .unwrap();

    let r = a.respond("s", "I want a room").await.unwrap();

    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "We are closed today.");
    assert_eq!(p.calls_of(CallKind::Respond), 0);
    assert_eq!(r.model_calls, 0);
}

#[tokio::test]
async fn reply_with_fn_computes_the_reply_from_the_signal_view() {
    let p = ScriptedProvider::new();
    let a = build(
        &p,
        vec![],
        vec![
            Signal::new("order")
                .when("the user gives an order number")
                .extract::<String>()
                .handle(|_cx: &Scx<'_>| {
                    Sd::new()
                        .pre(PreDirective::new().halt())
                        .reply_with_fn(|cx: &Scx<'_>| {
                            format!(
                                "Looking up {} (you said: {})",
                                cx.extracted::<String>().unwrap_or_default(),
                                cx.turn().message()
                            )
                        })
                }),
        ],
    )
    .unwrap();
    p.classify(
        Answer::verdicts([("the user gives an order number", true)])
            .extracting("the user gives an order number", json!("A-42")),
    );

    let r = a.respond("s", "order A-42 please").await.unwrap();

    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "Looking up A-42 (you said: order A-42 please)");
    assert_eq!(p.calls_of(CallKind::Respond), 0);
}

#[tokio::test]
async fn an_augmentation_only_pre_signal_keeps_routing_and_appends_to_the_prompt() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false), feedback_flow()],
        vec![
            Signal::new("empathy").handle(logs(
                &l,
                "empathy",
                PreDirective::new()
                    .append_prompt("Lead with empathy.")
                    .into(),
            )),
        ],
    )
    .unwrap();
    p.route(Answer::route("booking"));
    p.respond(Answer::message("I'd love to help. Which city?"));

    let r = a.respond("s", "I need a hotel").await.unwrap();

    assert_eq!(r.flow.as_deref(), Some("booking"), "routing was kept");
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.signals, ["empathy"]);
    let respond = &requests_of(&p, CallKind::Respond)[0];
    assert!(
        respond.instructions().contains("Lead with empathy."),
        "{}",
        respond.system
    );
    let entry = r
        .directive_chain
        .iter()
        .find(|e| e.source == DirectiveSource::PreSignal("empathy".into()))
        .expect("the augmentation is in the chain");
    assert_eq!(entry.append_prompt, ["Lead with empathy."]);
    assert_eq!(entry.directive.position, None);
}

// ---------------------------------------------------------------------------------
// Post phase
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn post_signals_judge_the_reply_and_their_position_becomes_the_next_turns_pending_directive()
{
    let p = ScriptedProvider::new();
    let l = log();
    let seen = l.clone();
    let cond = "the assistant promised a callback";
    let a = build(
        &p,
        vec![booking_flow(false), feedback_flow()],
        vec![
            Signal::new("callback")
                .phase(Phase::Post)
                .when(cond)
                .handle(move |cx: &Scx<'_>| {
                    seen.lock().unwrap().push(format!(
                        "{:?}:{}",
                        cx.phase(),
                        cx.reply().unwrap_or("<none>")
                    ));
                    Directive::go_to("feedback").into()
                }),
        ],
    )
    .unwrap();
    let reply = "Which city? We will call you back about rates.";
    p.route(Answer::route("booking"));
    p.respond(Answer::message(reply));
    p.classify(Answer::verdicts([(cond, true)]));

    let r = a.respond("s", "I need a hotel").await.unwrap();

    // The reply stands and the position does not move this turn.
    assert_eq!(r.message, reply);
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.signals, ["callback"]);
    assert_eq!(entries(&l), [format!("Post:{reply}")]);
    // The post classifier call comes after the respond call and sees the reply.
    let kinds: Vec<CallKind> = p.requests().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [CallKind::Route, CallKind::Respond, CallKind::Classify]
    );
    let classify = &requests_of(&p, CallKind::Classify)[0];
    assert!(
        classify.instructions().contains(cond),
        "{}",
        classify.system
    );
    let last = classify.messages.last().expect("history");
    assert_eq!((last.role, last.content.as_str()), (Role::Assistant, reply));
    assert_eq!(
        signal_sources(&r),
        [DirectiveSource::PostSignal("callback".into())]
    );
    let pending = a.session("s").await.unwrap().unwrap().pending;
    assert_eq!(pending, Some(Directive::go_to("feedback")));

    // Next turn: the pending directive is applied first.
    p.clear_requests();
    p.respond(Answer::message("How did your last stay go?"));
    p.classify(Answer::verdicts([(cond, false)]));
    let r = a.respond("s", "ok").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "How did your last stay go?");
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert_eq!(
        a.session("s").await.unwrap().unwrap().pending,
        None,
        "consumed"
    );
    assert_eq!(
        r.transitions,
        [Transition {
            from: Some("booking".into()),
            to: "feedback".into()
        }]
    );
}

#[tokio::test]
async fn the_pending_directive_armed_by_a_post_signal_shows_in_the_next_directive_chain() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false), feedback_flow()],
        vec![
            Signal::new("handoff")
                .phase(Phase::Post)
                .once()
                .handle(logs(&l, "handoff", Directive::go_to("feedback").into())),
        ],
    )
    .unwrap();
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "I need a hotel").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(
        signal_sources(&r),
        [DirectiveSource::PostSignal("handoff".into())]
    );

    p.respond(Answer::message("How did your last stay go?"));
    let r = a.respond("s", "ok").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert!(
        r.directive_chain.iter().any(|e| e.source == DirectiveSource::Pending
            && matches!(&e.directive.position, Some(Position::GoTo(g)) if g.flow == "feedback")),
        "directive chain should show the applied pending directive: {:?}",
        r.directive_chain
    );
}

#[tokio::test]
async fn post_signal_append_prompt_and_halt_are_dropped() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("late").phase(Phase::Post).handle(logs(
                &l,
                "late",
                PreDirective::new()
                    .append_prompt("Mention the spa.")
                    .halt()
                    .into(),
            )),
        ],
    )
    .unwrap();
    p.respond(Answer::message("Which city?"));
    p.respond(Answer::message("Which city, again?").claiming("ask_city"));

    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(
        r.message, "Which city?",
        "halt after the reply has no effect"
    );
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.signals, ["late"]);
    assert_eq!(a.session("s").await.unwrap().unwrap().pending, None);

    let r = a.respond("s", "hmm").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::NeedsInput,
        "not halted on the next turn"
    );
    assert_eq!(r.message, "Which city, again?");
    for req in requests_of(&p, CallKind::Respond) {
        assert!(
            !req.instructions().contains("Mention the spa."),
            "{}",
            req.system
        );
    }
    assert_eq!(p.calls_of(CallKind::Respond), 2);
}

#[tokio::test]
async fn a_both_phase_signal_runs_in_both_phases() {
    let p = ScriptedProvider::new();
    let l = log();
    let seen = l.clone();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("trace")
                .phase(Phase::Both)
                .handle(move |cx: &Scx<'_>| {
                    seen.lock().unwrap().push(format!(
                        "{:?}:{}",
                        cx.phase(),
                        cx.reply().unwrap_or("<none>")
                    ));
                    Sd::new()
                }),
        ],
    )
    .unwrap();
    p.respond(Answer::message("Which city?"));

    let r = a.respond("s", "hi").await.unwrap();

    assert_eq!(entries(&l), ["Pre:<none>", "Post:Which city?"]);
    assert!(
        r.signals.iter().all(|s| s == "trace") && !r.signals.is_empty(),
        "{:?}",
        r.signals
    );
    assert_eq!(classifier_calls(&p), 0);
}

#[tokio::test]
async fn a_pre_only_signal_does_not_run_after_the_reply_and_a_post_only_one_not_before() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("post")
                .phase(Phase::Post)
                .handle(noop(&l, "post")),
            Signal::new("pre").phase(Phase::Pre).handle(noop(&l, "pre")),
        ],
    )
    .unwrap();
    p.respond(Answer::message("Which city?"));

    let r = a.respond("s", "hi").await.unwrap();

    assert_eq!(entries(&l), ["pre", "post"]);
    assert_eq!(r.signals, ["pre", "post"]);
}

// ---------------------------------------------------------------------------------
// One classifier call per turn
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn two_pre_signals_and_routing_are_judged_in_one_classifier_call() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false), feedback_flow()],
        vec![
            Signal::new("vip")
                .when("the user says they are a VIP")
                .handle(noop(&l, "vip")),
            Signal::new("rush")
                .when("the user is in a hurry")
                .handle(noop(&l, "rush")),
        ],
    )
    .unwrap();
    p.classify(
        Answer::verdicts([
            ("the user says they are a VIP", false),
            ("the user is in a hurry", true),
        ])
        .and_route("booking"),
    );
    p.respond(Answer::message("Quickly then: which city?"));

    let r = a.respond("s", "I need a hotel, fast").await.unwrap();

    assert_eq!(classifier_calls(&p), 1);
    let system = &p.requests()[0].system;
    for needle in [
        "the user says they are a VIP",
        "the user is in a hurry",
        "- booking:",
        "- feedback:",
    ] {
        assert!(system.contains(needle), "missing {needle:?} in {system}");
    }
    assert_eq!(r.signals, ["rush"]);
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn a_pre_signal_and_the_awaiting_steps_when_branches_share_one_classifier_call() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(true), feedback_flow()],
        vec![
            Signal::new("frustrated")
                .when("the user is frustrated")
                .handle(noop(&l, "frustrated")),
        ],
    )
    .unwrap();
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(
            json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Shall I book?"));
    let r = a.respond("s", "hello").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    p.clear_requests();

    p.classify(Answer::verdicts([
        ("the user is frustrated", true),
        ("the user wants another date", true),
    ]));
    p.respond(Answer::message("Sure, which date instead?"));
    let r = a
        .respond("s", "ugh, no. Another date please")
        .await
        .unwrap();

    assert_eq!(classifier_calls(&p), 1);
    let system = &requests_of(&p, CallKind::Classify)[0].system;
    for needle in [
        "the user is frustrated",
        "the user wants another date",
        "the user wants to leave feedback",
    ] {
        assert!(system.contains(needle), "missing {needle:?} in {system}");
    }
    assert_eq!(r.signals, ["frustrated"]);
    assert_eq!(
        r.step.as_deref(),
        Some("ask_date"),
        "the branch used the shared verdict"
    );
    assert_eq!(r.message, "Sure, which date instead?");
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn classifier_batch_size_one_splits_two_when_signals_into_two_calls() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = base(&p)
        .config(AgentConfig {
            classifier_batch_size: 1,
            ..Default::default()
        })
        .signal(
            Signal::new("vip")
                .when("the user says they are a VIP")
                .handle(noop(&l, "vip")),
        )
        .signal(
            Signal::new("rush")
                .when("the user is in a hurry")
                .handle(noop(&l, "rush")),
        )
        .build()
        .unwrap();
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([
            ("the user says they are a VIP", true),
            ("the user is in a hurry", true),
        ]),
    );
    p.respond(Answer::message("Right away."));

    let r = a.respond("s", "VIP here, and quick").await.unwrap();

    let classify = requests_of(&p, CallKind::Classify);
    assert_eq!(classify.len(), 2);
    assert!(
        classify[0]
            .instructions()
            .contains("the user says they are a VIP")
            && !classify[0].instructions().contains("in a hurry")
    );
    assert!(
        classify[1]
            .instructions()
            .contains("the user is in a hurry")
            && !classify[1].instructions().contains("VIP")
    );
    assert_eq!(r.signals, ["vip", "rush"]);
    assert_eq!(r.model_calls, 3);
}

// ---------------------------------------------------------------------------------
// Response fields
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn the_response_lists_fired_signals_and_their_directives_by_phase() {
    let p = ScriptedProvider::new();
    let l = log();
    let a = build(
        &p,
        vec![booking_flow(false)],
        vec![
            Signal::new("tone").handle(logs(
                &l,
                "tone",
                PreDirective::new().append_prompt("Keep it short.").into(),
            )),
            Signal::new("quiet")
                .when("the user asks for silence")
                .handle(noop(&l, "quiet")),
            Signal::new("note").phase(Phase::Post).handle(logs(
                &l,
                "note",
                Directive::new()
                    .context(json!({"tier": "gold"}).as_object().cloned().unwrap())
                    .into(),
            )),
        ],
    )
    .unwrap();
    p.classify(Answer::verdicts([("the user asks for silence", false)]));
    p.respond(Answer::message("Which city?"));

    let r = a.respond("s", "hi").await.unwrap();

    assert_eq!(r.signals, ["tone", "note"]);
    assert_eq!(
        signal_sources(&r),
        [
            DirectiveSource::PreSignal("tone".into()),
            DirectiveSource::PostSignal("note".into())
        ]
    );
    let post = r
        .directive_chain
        .iter()
        .find(|e| e.source == DirectiveSource::PostSignal("note".into()))
        .expect("post entry");
    assert_eq!(
        post.directive.context.as_ref().and_then(|c| c.get("tier")),
        Some(&json!("gold"))
    );
    assert_eq!(a.session("s").await.unwrap().unwrap().context.tier, "gold");
}
