//! The turn engine, behaviour by behaviour: hook moments, pending directives and
//! `dispatch`, pre-LLM `halt`, auto steps and code-only forks, `skip`, data first,
//! completion and `complete.next`, in-turn transitions and their cap, branch targets,
//! the directive chain, `reset` and `abort`, and failed turns leaving the store alone.
//!
//! One file over 600 lines: the turn engine's behaviours in the spec's order, on the shared booking fixture; each section is one phase of a turn.

mod common;

use std::sync::{Arc, PoisonError};

use agent_core::AgentBuilder;
use agent_core::error::DirectiveError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest, ModelResponse};
use agent_core::response::{DirectiveSource, Transition};
use agent_core::session::Session;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

type Ctx<'a> = Cx<'a, Booking, Concierge>;
type Pre = PreDirective<Booking, Concierge>;
/// What a helper that builds a flow or an agent returns.
type Built<T> = Result<T, ConfigErrors>;
type BookingFlow = agent_core::flow::FlowBuilder<Booking, Concierge>;

fn patch(v: Value) -> Patch {
    v.as_object().cloned().unwrap_or_default()
}

fn push(l: &Log, entry: impl Into<String>) {
    l.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(entry.into());
}

fn drain(l: &Log) -> Vec<String> {
    std::mem::take(&mut *l.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Every entry of `order` is in `log` (as a prefix of an entry), first occurrences in
/// this order.
fn assert_order(log: &[String], order: &[&str]) {
    let mut last = None;
    for want in order {
        let pos = log.iter().position(|e| e.starts_with(want));
        assert!(pos.is_some(), "`{want}` missing from {log:#?}");
        assert!(
            pos > last,
            "`{want}` is out of order (expected after {:?}) in {log:#?}",
            last.map(|i: usize| &log[i])
        );
        last = pos;
    }
}

fn count(log: &[String], prefix: &str) -> usize {
    log.iter().filter(|e| e.starts_with(prefix)).count()
}

fn flow(id: &str) -> BookingFlow {
    Flow::builder(id)
}

fn builder(p: &ScriptedProvider) -> AgentBuilder<Booking, Concierge> {
    Agent::builder().name("Concierge").provider(p.clone())
}

/// A structured answer that records the model call in the shared log.
fn logged_answer(l: &Log, message: &str, data: Value) -> Answer {
    let l = l.clone();
    let content = json!({ "message": message, "data": data }).to_string();
    Answer::from_fn(move |req: &ModelRequest| {
        push(&l, format!("model:{:?}", req.kind));
        Ok(ModelResponse {
            content: content.clone(),
            ..ModelResponse::default()
        })
    })
}

/// A tool with no arguments that always returns `out`.
fn tool(name: &str, out: ToolOutput) -> Arc<dyn Tool<Booking, Concierge>> {
    FnTool::<Booking, Concierge>::raw(
        name,
        format!("The {name} tool."),
        json!({ "type": "object", "properties": {} }),
        move |_cx, _args| {
            let out = out.clone();
            async move { Ok(out) }
        },
    )
    .into_arc()
}

fn respond_requests(p: &ScriptedProvider) -> Vec<ModelRequest> {
    p.requests()
        .into_iter()
        .filter(|r| r.kind == CallKind::Respond)
        .collect()
}

fn routing_calls(p: &ScriptedProvider) -> usize {
    p.calls_of(CallKind::Route) + p.calls_of(CallKind::Classify)
}

fn step_ids(r: &AgentResponse<Booking>) -> Vec<&str> {
    r.executed_steps.iter().map(|s| s.step.as_str()).collect()
}

fn hops(r: &AgentResponse<Booking>, from: &str, to: &str) -> usize {
    r.transitions
        .iter()
        .filter(|t| t.from.as_deref() == Some(from) && t.to == to)
        .count()
}

/// The stored session (`None` when missing or unreadable).
async fn stored(a: &Agent<Booking, Concierge>, id: &str) -> Option<Session<Booking, Concierge>> {
    a.session(id).await.ok().flatten()
}

// ---------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------

/// A two-step flow whose every hook writes to `l`.
fn hooked_flow(l: &Log) -> Built<Flow<Booking, Concierge>> {
    let (l1, l2, l3, l4, l5) = (l.clone(), l.clone(), l.clone(), l.clone(), l.clone());
    let (s1, s2, s3, s4, s5, s6) = (
        l.clone(),
        l.clone(),
        l.clone(),
        l.clone(),
        l.clone(),
        l.clone(),
    );
    flow("booking")
        .required(["city", "guests"])
        .on_enter(move |cx: &Ctx<'_>| -> Pre {
            push(
                &l1,
                format!(
                    "flow.on_enter flow={:?} step={:?}",
                    cx.flow_id(),
                    cx.step_id()
                ),
            );
            Pre::new()
        })
        .on_data_update(move |cx: &Ctx<'_>| {
            let d = cx.data();
            push(
                &l2,
                format!(
                    "flow.on_data_update city={:?} guests={:?} booking_id={:?}",
                    d.city, d.guests, d.booking_id
                ),
            );
        })
        .on_context_update(move |cx: &Ctx<'_>| {
            push(
                &l3,
                format!("flow.on_context_update tier={}", cx.context().tier),
            );
        })
        .on_complete_hook(move |cx: &Ctx<'_>| -> Directive {
            let d = cx.data();
            push(
                &l4,
                format!("flow.on_complete city={:?} guests={:?}", d.city, d.guests),
            );
            Directive::new()
        })
        .on_exit(move |cx: &Ctx<'_>| {
            push(&l5, format!("flow.on_exit flow={:?}", cx.flow_id()));
        })
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"])
                .on_enter(move |cx: &Ctx<'_>| -> Pre {
                    push(&s1, format!("ask_city.on_enter step={:?}", cx.step_id()));
                    Pre::new()
                })
                .prepare(move |cx: &Ctx<'_>| -> Pre {
                    push(&s2, format!("ask_city.prepare step={:?}", cx.step_id()));
                    Pre::new().append_prompt("PREPARE-CITY")
                })
                .finalize(move |_cx: &Ctx<'_>| -> Directive {
                    push(&s3, "ask_city.finalize");
                    Directive::new().context(patch(json!({ "tier": "vip" })))
                }),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"])
                .on_enter(move |cx: &Ctx<'_>| -> Pre {
                    push(&s4, format!("ask_guests.on_enter step={:?}", cx.step_id()));
                    Pre::new()
                })
                .prepare(move |_cx: &Ctx<'_>| -> Pre {
                    push(&s5, "ask_guests.prepare");
                    Pre::new().append_prompt("PREPARE-GUESTS")
                })
                .finalize(move |cx: &Ctx<'_>| -> Directive {
                    push(
                        &s6,
                        format!("ask_guests.finalize guests={:?}", cx.data().guests),
                    );
                    Directive::new().data(patch(json!({ "booking_id": "BK-1" })))
                }),
        )
        .build()
}

#[tokio::test]
async fn hooks_run_at_their_moments_with_the_real_session() {
    let l = log();
    let p = ScriptedProvider::new();
    let la = l.clone();
    let a = builder(&p)
        .on_enter(move |cx: &Ctx<'_>| -> Pre {
            push(
                &la,
                format!(
                    "agent.on_enter session={} flow={:?} message={}",
                    cx.session_id(),
                    cx.flow_id(),
                    cx.message()
                ),
            );
            Pre::new()
        })
        .flow(hooked_flow(&l).unwrap())
        .build()
        .unwrap();

    // Turn 1: agent on_enter, flow on_enter, the step's hooks around the one call.
    p.respond(logged_answer(&l, "Which city?", json!({})));
    let r = a.respond("s", "hi").await.unwrap();
    let t1 = drain(&l);
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_order(
        &t1,
        &[
            "agent.on_enter session=s flow=None message=hi",
            "flow.on_enter flow=Some(\"booking\") step=Some(\"ask_city\")",
            "ask_city.prepare step=Some(\"ask_city\")",
            "model:Respond",
            "ask_city.finalize",
            "flow.on_context_update tier=vip",
        ],
    );
    assert_eq!(
        count(&t1, "ask_city.on_enter step=Some(\"ask_city\")"),
        1,
        "{t1:#?}"
    );
    let reqs = respond_requests(&p);
    assert!(
        reqs[0].instructions().contains("PREPARE-CITY"),
        "{}",
        reqs[0].system
    );
    assert!(!reqs[0].instructions().contains("PREPARE-GUESTS"));
    assert_eq!(
        stored(&a, "s").await.unwrap().context.tier,
        "vip",
        "finalize's context write"
    );

    // Turn 2: no agent/flow on_enter again. The next step has an on_enter hook, so it
    // is not rendered speculatively: extraction first, then the step is entered (its
    // on_enter before its prepare), then the call; finalize's data write follows.
    p.extract(logged_answer(&l, "", json!({ "city": "Lisbon" })));
    p.respond(logged_answer(&l, "How many guests?", json!({})));
    let r = a.respond("s", "Lisbon").await.unwrap();
    let t2 = drain(&l);
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(
        count(&t2, "agent.on_enter"),
        0,
        "agent on_enter is first turn only"
    );
    assert_eq!(
        count(&t2, "flow.on_enter"),
        0,
        "the flow was not re-entered"
    );
    assert_order(
        &t2,
        &[
            "model:Extract",
            "flow.on_data_update city=Some(\"Lisbon\") guests=None booking_id=None",
            "ask_guests.on_enter step=Some(\"ask_guests\")",
            "ask_guests.prepare",
            "model:Respond",
            "ask_guests.finalize",
            "flow.on_data_update city=Some(\"Lisbon\") guests=None booking_id=Some(\"BK-1\")",
        ],
    );
    assert_eq!(
        count(&t2, "ask_guests.on_enter step=Some(\"ask_guests\")"),
        1,
        "{t2:#?}"
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-1"));
    let reqs = respond_requests(&p);
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].instructions().contains("PREPARE-GUESTS"),
        "{}",
        reqs[1].system
    );
    assert!(!reqs[1].instructions().contains("PREPARE-CITY"));

    // Turn 3: the flow completes; on_complete sees the data, then on_exit.
    p.respond(logged_answer(&l, "All set.", json!({ "guests": 2 })));
    let r = a.respond("s", "two of us").await.unwrap();
    let t3 = drain(&l);
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
    assert_eq!(count(&t3, "agent.on_enter"), 0);
    assert_order(
        &t3,
        &[
            "model:Respond",
            "flow.on_data_update city=Some(\"Lisbon\") guests=Some(2)",
            "flow.on_complete city=Some(\"Lisbon\") guests=Some(2)",
            "flow.on_exit flow=Some(\"booking\")",
        ],
    );
    assert_eq!(count(&t3, "flow.on_complete"), 1);
    assert_eq!(count(&t3, "flow.on_exit"), 1);
}

#[tokio::test]
async fn step_on_enter_runs_before_prepare_and_the_model_call() {
    // The pre-LLM bus order: flow on_enter, step on_enter, prepare, then the call; an
    // on_enter append_prompt reaches that call.
    let l = log();
    let p = ScriptedProvider::new();
    let (l1, l2) = (l.clone(), l.clone());
    let f = flow("booking")
        .step(
            Step::model("ask_city")
                .collect(["city"])
                .on_enter(move |_cx: &Ctx<'_>| -> Pre {
                    push(&l1, "ask_city.on_enter");
                    Pre::new().append_prompt("ENTER-MARK")
                })
                .prepare(move |_cx: &Ctx<'_>| -> Pre {
                    push(&l2, "ask_city.prepare");
                    Pre::new()
                }),
        )
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();
    p.default_answer(
        CallKind::Respond,
        logged_answer(&l, "Which city?", json!({})),
    );

    let r = a.respond("s", "hi").await.unwrap();
    let every_call_sees_on_enter = respond_requests(&p)
        .iter()
        .all(|q| q.instructions().contains("ENTER-MARK"));
    assert_eq!(
        (drain(&l), r.model_calls, every_call_sees_on_enter),
        (
            vec![
                "ask_city.on_enter".to_string(),
                "ask_city.prepare".to_string(),
                "model:Respond".to_string()
            ],
            1,
            true
        ),
        "(hook/model order, model calls, on_enter's append_prompt in every call)"
    );
}

// ---------------------------------------------------------------------------------
// Pending directives and dispatch
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn pending_directive_is_applied_first_without_routing() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    a.dispatch("s", Directive::go_to_step_in("booking", "ask_guests"))
        .await
        .unwrap();
    assert!(stored(&a, "s").await.unwrap().pending.is_some());

    p.respond(Answer::message("How many guests?"));
    let r = a.respond("s", "hello").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.message, "How many guests?");
    assert_eq!(routing_calls(&p), 0, "a pending directive skips routing");
    assert_eq!(r.model_calls, 1);
    assert_eq!(
        stored(&a, "s").await.unwrap().pending,
        None,
        "consumed once"
    );
    assert_eq!(
        r.directive_chain.first().map(|e| &e.source),
        Some(&DirectiveSource::Pending),
        "chain: {:#?}",
        r.directive_chain
    );
}

#[tokio::test]
async fn dispatch_json_accepts_the_flat_shape() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    a.dispatch_json(
        "s",
        json!({
            "goToStep": { "flow": "booking", "step": "ask_date" },
            "dataUpdate": { "city": "Lisbon" }
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        stored(&a, "s").await.unwrap().pending,
        Some(
            Directive::go_to_step_in("booking", "ask_date")
                .data(patch(json!({ "city": "Lisbon" })))
        )
    );

    p.respond(Answer::message("Check-in date?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(routing_calls(&p), 0);
}

#[tokio::test]
async fn dispatch_json_with_an_unknown_flow_is_rejected_and_leaves_the_session_unchanged() {
    let p = ScriptedProvider::new();
    let store = Arc::new(MemoryStore::new());
    let a = builder(&p)
        .store_arc(store.clone())
        .flow(booking_flow(false))
        .flow(feedback_flow())
        .build()
        .unwrap();
    a.dispatch("s", Directive::go_to("booking")).await.unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let before = store.load("s").await.unwrap().expect("stored");

    let err = a
        .dispatch_json("s", json!({ "goTo": "nowhere" }))
        .await
        .unwrap_err();
    match &err {
        AgentError::Directive {
            error: DirectiveError::UnknownFlow { flow, known },
            ..
        } => {
            assert_eq!(flow, "nowhere");
            assert!(known.contains(&"booking".to_string()), "{known:?}");
        }
        other => panic!("expected an unknown-flow directive error, got {other:?}"),
    }
    let after = store.load("s").await.unwrap().expect("still stored");
    assert_eq!(after, before, "stored bytes unchanged");
    assert_eq!(stored(&a, "s").await.unwrap().pending, None);
}

// ---------------------------------------------------------------------------------
// Halt
// ---------------------------------------------------------------------------------

fn halting_flow(reply: Option<&'static str>) -> Built<Flow<Booking, Concierge>> {
    flow("booking")
        .step(
            Step::model("ask_city")
                .collect(["city"])
                .prepare(move |_cx: &Ctx<'_>| -> Pre {
                    let d = Pre::new().halt();
                    match reply {
                        Some(r) => d.reply(r),
                        None => d,
                    }
                }),
        )
        .build()
}

#[tokio::test]
async fn pre_llm_halt_skips_the_model_call() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Extract, Answer::data(json!({})));
    p.default_answer(CallKind::Respond, Answer::message("should not be said"));
    let a = builder(&p)
        .flow(halting_flow(None).unwrap())
        .build()
        .unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::Halt);
    assert_eq!(r.message, "");
    assert_eq!(p.calls_of(CallKind::Respond), 0);
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.halt && e.source == DirectiveSource::Prepare("ask_city".into()))
    );
}

#[tokio::test]
async fn pre_llm_halt_with_a_reply_delivers_the_reply() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Extract, Answer::data(json!({})));
    p.default_answer(CallKind::Respond, Answer::message("should not be said"));
    let a = builder(&p)
        .flow(halting_flow(Some("We are closed today.")).unwrap())
        .build()
        .unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "We are closed today.");
    assert_eq!(p.calls_of(CallKind::Respond), 0);
}

// ---------------------------------------------------------------------------------
// Auto steps, branches, skip, implicit fork
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn auto_steps_and_code_only_branches_cost_zero_model_calls() {
    let p = ScriptedProvider::new();
    let f = flow("triage")
        .step(
            Step::auto("route")
                .branch(
                    Branch::to_step("big")
                        .if_(|cx: &Ctx<'_>| cx.data().guests.is_some_and(|g| g > 8)),
                )
                .branch(Branch::to_step("small")),
        )
        .step(Step::reply("big", "A specialist will call you.").end())
        .step(Step::reply("small", "Enjoy your trip.").end())
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();

    a.dispatch("big", Directive::new().data(patch(json!({ "guests": 10 }))))
        .await
        .unwrap();
    let r = a.respond("big", "hi").await.unwrap();
    assert_eq!(r.message, "A specialist will call you.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(step_ids(&r), ["route", "big"]);
    assert_eq!(r.model_calls, 0);

    let r = a.respond("small", "hi").await.unwrap();
    assert_eq!(r.message, "Enjoy your trip.");
    assert_eq!(step_ids(&r), ["route", "small"]);
    assert_eq!(r.model_calls, 0);
    assert_eq!(p.calls(), 0, "no model call at all");
}

fn cycle_agent(p: &ScriptedProvider, max: u32) -> Built<Agent<Booking, Concierge>> {
    // `b` may leave the flow (its branch back is conditional), so `build()` accepts the
    // cycle; at run time the predicate always holds and only the cap stops the walk.
    let f = flow("loop")
        .step(Step::auto("a").branch(Branch::to_step("b")))
        .step(Step::auto("b").branch(Branch::to_step("a").if_(|_: &Ctx<'_>| true)))
        .build()?;
    builder(p)
        .config(AgentConfig {
            max_auto_steps_per_turn: max,
            ..AgentConfig::default()
        })
        .flow(f)
        .build()
}

#[tokio::test]
async fn auto_step_cycle_stops_at_the_auto_step_cap() {
    let p = ScriptedProvider::new();
    let r3 = cycle_agent(&p, 3)
        .unwrap()
        .respond("s", "hi")
        .await
        .unwrap();
    assert!(
        matches!(r3.stopped, StoppedReason::AutoStepCap { .. }),
        "{:?}",
        r3.stopped
    );
    assert_eq!(r3.model_calls, 0);

    let a5 = cycle_agent(&p, 5).unwrap();
    let r5 = a5.respond("s", "hi").await.unwrap();
    assert!(matches!(r5.stopped, StoppedReason::AutoStepCap { .. }));
    assert!(r3.executed_steps.len() <= 4, "{:?}", step_ids(&r3));
    assert_eq!(
        r5.executed_steps.len() - r3.executed_steps.len(),
        2,
        "the cap follows max_auto_steps_per_turn"
    );
    assert_eq!(
        stored(&a5, "s").await.unwrap().turns,
        1,
        "the turn was saved"
    );
    assert_eq!(p.calls(), 0);
}

/// `intro` is skipped for VIP sessions; the answer names the step it rendered.
fn skip_agent(p: &ScriptedProvider, tier: &str, l: &Log) -> Built<Agent<Booking, Concierge>> {
    let l = l.clone();
    let f = flow("welcome")
        .step(
            Step::model("intro")
                .prompt("Introduce yourself.")
                .skip(|cx: &Ctx<'_>| cx.context().tier == "vip")
                .prepare(move |_cx: &Ctx<'_>| -> Pre {
                    push(&l, "intro.prepare");
                    Pre::new()
                }),
        )
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .build()?;
    p.default_answer(
        CallKind::Respond,
        Answer::from_fn(|req: &ModelRequest| {
            let message = if req.instructions().contains("Step `ask_city`") {
                "Which city?"
            } else {
                "Hello, I am the concierge."
            };
            Ok(ModelResponse {
                content: json!({ "message": message, "data": {} }).to_string(),
                ..ModelResponse::default()
            })
        }),
    );
    builder(p)
        .context(Concierge { tier: tier.into() })
        .flow(f)
        .build()
}

#[tokio::test]
async fn skip_predicate_skips_a_step() {
    let l = log();
    let p = ScriptedProvider::new();
    let r = skip_agent(&p, "vip", &l)
        .unwrap()
        .respond("s", "hi")
        .await
        .unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "Which city?");

    let p = ScriptedProvider::new();
    let r = skip_agent(&p, "regular", &l)
        .unwrap()
        .respond("s", "hi")
        .await
        .unwrap();
    assert_eq!(
        r.step.as_deref(),
        Some("intro"),
        "not skipped when the predicate fails"
    );
    assert_eq!(r.message, "Hello, I am the concierge.");
}

#[tokio::test]
async fn a_skipped_step_is_never_prepared_or_rendered() {
    let l = log();
    let p = ScriptedProvider::new();
    let r = skip_agent(&p, "vip", &l)
        .unwrap()
        .respond("s", "hi")
        .await
        .unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    let rendered_intro = respond_requests(&p)
        .iter()
        .any(|q| q.instructions().contains("Step `intro`"));
    assert_eq!(
        (drain(&l), rendered_intro, r.model_calls),
        (Vec::<String>::new(), false, 1),
        "(hooks of the skipped step, skipped step rendered, model calls)"
    );
}

#[tokio::test]
async fn implicit_fork_takes_the_first_passing_successor_else_the_unconditional_one() {
    let p = ScriptedProvider::new();
    let f = flow("fork")
        .step(Step::auto("start"))
        .step(
            Step::reply("big", "big group")
                .if_(|cx: &Ctx<'_>| cx.data().guests.is_some_and(|g| g > 8))
                .end(),
        )
        .step(
            Step::reply("medium", "medium group")
                .if_(|cx: &Ctx<'_>| cx.data().guests.is_some_and(|g| g > 4))
                .end(),
        )
        .step(Step::reply("small", "small group").end())
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();
    for (session, guests, want) in [
        ("ten", Some(10), "big"),
        ("six", Some(6), "medium"),
        ("two", Some(2), "small"),
        ("none", None, "small"),
    ] {
        if let Some(g) = guests {
            a.dispatch(
                session,
                Directive::new().data(patch(json!({ "guests": g }))),
            )
            .await
            .unwrap();
        }
        let r = a.respond(session, "hi").await.unwrap();
        assert_eq!(step_ids(&r), ["start", want], "guests {guests:?}");
        assert_eq!(r.message, format!("{want} group"));
        assert_eq!(r.model_calls, 0);
    }
}

// ---------------------------------------------------------------------------------
// Data first
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn model_writes_to_fields_the_flow_does_not_collect_are_dropped() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();

    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({ "city": "Lisbon", "feedback": "great" }))
            .claiming("ask_date"),
    );
    p.default_answer(CallKind::Respond, Answer::message("Check-in date?"));
    let r = a.respond("s", "Lisbon, and it's great").await.unwrap();
    assert_eq!(r.dropped_fields, ["feedback"]);
    assert_eq!(
        r.data.city.as_deref(),
        Some("Lisbon"),
        "collected fields still land"
    );
    assert_eq!(r.data.feedback, None);
    assert_eq!(stored(&a, "s").await.unwrap().data.feedback, None);
    assert_eq!(r.step.as_deref(), Some("ask_date"));
}

#[tokio::test]
async fn a_model_value_of_the_wrong_type_is_refused_alone_and_the_reply_asks_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();

    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({ "city": "Lisbon", "guests": "many" }))
            .claiming("ask_date"),
    );
    p.default_answer(
        CallKind::Respond,
        Answer::message("How many guests, in digits?"),
    );
    let r = a.respond("s", "Lisbon, many of us").await.unwrap();
    assert_eq!(r.rejected_data, ["guests must be a whole number"]);
    assert_eq!(
        r.data.city.as_deref(),
        Some("Lisbon"),
        "the valid value lands"
    );
    assert_eq!(r.data.guests, None);
    // The speculative reply assumed the refused value: the step is rendered again,
    // told why.
    assert_eq!(r.message, "How many guests, in digits?");
    let last = p.last_request().unwrap().instructions();
    assert!(
        last.contains("guests many is not possible: it must be a whole number"),
        "{last}"
    );
    let s = stored(&a, "s").await.unwrap();
    assert_eq!(
        (s.data.city.as_deref(), s.data.guests),
        (Some("Lisbon"), None)
    );
}

// ---------------------------------------------------------------------------------
// Completion
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_flow_never_completes_with_required_fields_missing() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm")
            .data(patch(json!({ "city": "Lisbon", "check_in": "2026-07-01" }))),
    )
    .await
    .unwrap();
    // book_room returns `Directive::complete()`; guests is still missing.
    p.respond(Answer::tool("book_room", json!({ "hotel": "Grand" })));
    p.tool_round(Answer::message("Booked!"));
    p.respond(Answer::message("How many guests?"));
    let r = a.respond("s", "book it").await.unwrap();
    assert!(
        r.tool_calls.first().is_some_and(|t| t.ok),
        "{:?}",
        r.tool_calls
    );
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.message, "How many guests?");
    let s = stored(&a, "s").await.unwrap();
    assert!(s.completed_flows.is_empty(), "{:?}", s.completed_flows);
    assert_eq!(s.flow.as_deref(), Some("booking"));
}

#[tokio::test]
async fn a_terminal_step_answered_with_all_required_fields_completes_the_flow() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(patch(
            json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2 }),
        )),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Shall I book?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));

    p.respond(Answer::message("Enjoy your stay."));
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(
        r.message,
        "Enjoy your stay. Is there anything else I can help with?"
    );
    let s = stored(&a, "s").await.unwrap();
    assert_eq!(s.completed_flows, ["booking"]);
    assert_eq!((s.flow, s.step), (None, None));
}

/// `booking` with one step `confirm` (data given by dispatch) and `feedback`.
fn confirm_agent(
    p: &ScriptedProvider,
    confirm: Step<Booking, Concierge>,
    f: BookingFlow,
) -> Built<Agent<Booking, Concierge>> {
    builder(p)
        .flow(
            f.required(["city"])
                .step(
                    Step::model("ask_city")
                        .prompt("Ask which city.")
                        .collect(["city"]),
                )
                .step(confirm.prompt("Confirm the booking.").end())
                .build()?,
        )
        .flow(feedback_flow())
        .build()
}

async fn start_at_confirm(a: &Agent<Booking, Concierge>, id: &str) -> Result<(), AgentError> {
    a.dispatch(
        id,
        Directive::go_to_step_in("booking", "confirm").data(patch(json!({ "city": "Lisbon" }))),
    )
    .await
}

/// `book`: completes the flow and writes the reply itself, from code.
fn book_with_reply() -> Arc<dyn Tool<Booking, Concierge>> {
    tool(
        "book",
        ToolOutput::text("booked G-2")
            .directive(Directive::complete().reply("Booked: reference G-2.")),
    )
}

#[tokio::test]
async fn a_tool_that_writes_the_reply_is_not_followed_by_another_model_call() {
    let p = ScriptedProvider::new();
    let a = confirm_agent(
        &p,
        Step::model("confirm").tool(book_with_reply()),
        flow("booking"),
    )
    .unwrap();
    start_at_confirm(&a, "s").await.unwrap();
    p.respond(Answer::tool("book", json!({})));
    let r = a.respond("s", "yes, book it").await.unwrap();
    assert_eq!(r.message, "Booked: reference G-2.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.flow, None, "the tool completed the flow");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(
        r.model_calls, 1,
        "no tool round: its message would be replaced"
    );
    assert!(p.requests().iter().all(|q| q.kind != CallKind::ToolRound));

    // The same in a stream.
    start_at_confirm(&a, "t").await.unwrap();
    p.respond(Answer::tool("book", json!({})));
    let events: Vec<Event<Booking>> = a.respond_stream("t", "yes, book it").collect().await;
    let Some(Event::Done(r)) = events.last() else {
        panic!("the stream ends with Done: {events:#?}");
    };
    assert_eq!(r.message, "Booked: reference G-2.");
    assert_eq!(r.model_calls, 1);
    assert_eq!(p.unused(), 0);
}

#[tokio::test]
async fn a_tool_without_a_reply_is_followed_by_the_model_s_message() {
    let p = ScriptedProvider::new();
    let book = tool(
        "book",
        ToolOutput::text("booked G-2").directive(Directive::complete()),
    );
    let a = confirm_agent(&p, Step::model("confirm").tool(book), flow("booking")).unwrap();
    start_at_confirm(&a, "s").await.unwrap();
    p.respond(Answer::tool("book", json!({})));
    p.tool_round(Answer::message("Your booking G-2 is made."));
    let r = a.respond("s", "yes, book it").await.unwrap();
    assert_eq!(
        r.message,
        "Your booking G-2 is made. Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 2, "respond + tool round");
}

#[tokio::test]
async fn complete_then_from_a_tool_hands_over_in_the_same_turn() {
    let p = ScriptedProvider::new();
    let finish = tool(
        "finish",
        ToolOutput::text("done").directive(Directive::complete_then(Directive::go_to("feedback"))),
    );
    let a = confirm_agent(&p, Step::model("confirm").tool(finish), flow("booking")).unwrap();
    start_at_confirm(&a, "s").await.unwrap();
    p.respond(Answer::tool("finish", json!({})));
    p.tool_round(Answer::message("Booked."));
    p.respond(Answer::message("How was it?"));
    let r = a.respond("s", "book it").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.flow.as_deref(), Some("feedback"), "no turn late");
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "Booked.\n\nHow was it?");
    assert!(
        r.transitions.iter().any(|t| t.to == "feedback"),
        "{:?}",
        r.transitions
    );
    assert_eq!(stored(&a, "s").await.unwrap().pending, None);
    assert!(
        stored(&a, "s")
            .await
            .unwrap()
            .completed_flows
            .contains(&"booking".to_owned())
    );
}

#[tokio::test]
async fn flow_on_complete_directive_hands_over_in_the_same_turn() {
    let p = ScriptedProvider::new();
    let a = builder(&p)
        .flow(
            flow("booking")
                .required(["city"])
                .on_complete(Directive::go_to("feedback"))
                .step(
                    Step::model("ask_city")
                        .prompt("Ask which city.")
                        .collect(["city"]),
                )
                .build()
                .unwrap(),
        )
        .flow(feedback_flow())
        .build()
        .unwrap();
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "a hotel please").await.unwrap();

    p.respond(Answer::message("Lisbon it is.").with_data(json!({ "city": "Lisbon" })));
    p.respond(Answer::message("How was your last stay?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert!(
        r.directive_chain.iter().any(
            |e| e.source == DirectiveSource::OnComplete("booking".into())
                && e.directive == Directive::go_to("feedback")
        ),
        "{:#?}",
        r.directive_chain
    );
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "Lisbon it is.\n\nHow was your last stay?");
    assert_eq!(stored(&a, "s").await.unwrap().pending, None);

    // The next message answers the feedback question.
    p.respond(Answer::message("Thanks!").with_data(json!({ "feedback": "great" })));
    let r = a.respond("s", "great").await.unwrap();
    assert_eq!(r.data.feedback.as_deref(), Some("great"));
    assert_eq!(p.unused(), 0);
}

// ---------------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn go_to_after_the_model_answered_renders_the_new_flow_in_the_same_turn() {
    let p = ScriptedProvider::new();
    let handoff = tool(
        "handoff",
        ToolOutput::text("ok").directive(Directive::go_to("feedback")),
    );
    let a = confirm_agent(&p, Step::model("confirm").tool(handoff), flow("booking")).unwrap();
    start_at_confirm(&a, "s").await.unwrap();
    p.respond(Answer::tool("handoff", json!({})));
    p.tool_round(Answer::message("Let me hand you over to feedback."));
    p.respond(Answer::message("How was your stay?"));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();

    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "How was your stay?");
    assert_eq!(hops(&r, "booking", "feedback"), 1, "{:?}", r.transitions);
    let reqs = respond_requests(&p);
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1]
            .instructions()
            .contains("Let me hand you over to feedback."),
        "the first message is carried as context: {}",
        reqs[1].system
    );
    assert!(!reqs[0].instructions().contains("Let me hand you over"));
}

#[tokio::test]
async fn respond_stream_emits_a_transition_event() {
    let p = ScriptedProvider::new();
    let confirm = Step::model("confirm")
        .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to("feedback") });
    let a = confirm_agent(&p, confirm, flow("booking")).unwrap();
    start_at_confirm(&a, "s").await.unwrap();
    p.respond(Answer::message("Your booking is confirmed."));
    p.respond(Answer::message("How was your stay?"));
    let events: Vec<Event<Booking>> = a.respond_stream("s", "thanks").collect().await;

    let hop = Transition {
        from: Some("booking".into()),
        to: "feedback".into(),
    };
    assert!(
        events.contains(&Event::Transition(hop.clone())),
        "{events:#?}"
    );
    let Some(Event::Done(r)) = events.last() else {
        panic!("the stream ends with Done: {events:#?}");
    };
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert!(r.transitions.contains(&hop));
    assert_eq!(r.message, "How was your stay?");
    assert!(
        respond_requests(&p)[1]
            .instructions()
            .contains("Your booking is confirmed.")
    );
}

fn ping_pong(p: &ScriptedProvider, max: u32) -> Built<Agent<Booking, Concierge>> {
    let ping = flow("ping")
        .step(
            Step::model("p")
                .prompt("Ping.")
                .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to("pong") }),
        )
        .build()?;
    let pong = flow("pong")
        .step(
            Step::model("q")
                .prompt("Pong.")
                .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to("ping") }),
        )
        .build()?;
    p.default_answer(CallKind::Respond, Answer::message("bounce"));
    builder(p)
        .config(AgentConfig {
            max_transitions_per_turn: max,
            ..AgentConfig::default()
        })
        .flow(ping)
        .flow(pong)
        .build()
}

#[tokio::test]
async fn go_to_ping_pong_is_capped_by_max_transitions_per_turn() {
    let p = ScriptedProvider::new();
    let a = ping_pong(&p, 3).unwrap();
    a.dispatch("s", Directive::go_to("ping")).await.unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::TransitionCap {
            blocked: "ping".into()
        }
    );
    let between = r.transitions.iter().filter(|t| t.from.is_some()).count();
    assert_eq!(between, 3, "{:?}", r.transitions);
    assert_eq!(r.message, "bounce", "the last rendering reaches the user");
    assert_eq!(r.flow.as_deref(), Some("pong"));
    assert_eq!(r.model_calls, 4);
}

#[tokio::test]
async fn transition_cap_counts_only_hops_to_a_different_flow() {
    let p = ScriptedProvider::new();
    let ping = flow("ping")
        .step(
            Step::model("p0")
                .prompt("First.")
                .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to_step("p1") }),
        )
        .step(
            Step::model("p1")
                .prompt("Second.")
                .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to("pong") }),
        )
        .build()
        .unwrap();
    let pong = flow("pong")
        .step(Step::model("q").prompt("Pong."))
        .build()
        .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("hop"));
    let a = builder(&p)
        .config(AgentConfig {
            max_transitions_per_turn: 1,
            ..AgentConfig::default()
        })
        .flow(ping)
        .flow(pong)
        .build()
        .unwrap();
    a.dispatch("s", Directive::go_to("ping")).await.unwrap();
    // p0 -> step p1 (same flow, not a hop) -> flow pong (the one hop the cap allows).
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::NeedsInput, "{:?}", r.transitions);
    assert_eq!(r.flow.as_deref(), Some("pong"));
    assert_eq!(r.step.as_deref(), Some("q"));
    assert_eq!(hops(&r, "ping", "pong"), 1);
    assert_eq!(r.model_calls, 3);

    // One real hop fits a cap of 1.
    let p = ScriptedProvider::new();
    let a = ping_pong(&p, 1).unwrap();
    a.dispatch("s", Directive::go_to("ping")).await.unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(hops(&r, "ping", "pong"), 1);
    assert_eq!(
        r.stopped,
        StoppedReason::TransitionCap {
            blocked: "ping".into()
        }
    );
}

// ---------------------------------------------------------------------------------
// Branch targets
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn branch_then_as_a_full_directive_applies_its_data_write() {
    let p = ScriptedProvider::new();
    let vip = Directive::go_to_step("done").data(patch(json!({ "booking_id": "VIP-1" })));
    let f = flow("triage")
        .step(Step::auto("route").branch(Branch::to_directive(vip.clone()).label("vip")))
        .step(Step::reply("other", "Other.").end())
        .step(Step::reply("done", "Done.").end())
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Done.");
    assert_eq!(step_ids(&r), ["route", "done"]);
    assert_eq!(r.data.booking_id.as_deref(), Some("VIP-1"));
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::Branch("route:vip".into()) && e.directive == vip),
        "{:#?}",
        r.directive_chain
    );
    assert_eq!(r.model_calls, 0);
}

#[tokio::test]
async fn branch_to_a_flow_id_enters_that_flow() {
    let p = ScriptedProvider::new();
    let f = flow("triage")
        .step(Step::auto("route").branch(Branch::to_id("feedback")))
        .step(Step::reply("never", "never").end())
        .build()
        .unwrap();
    let a = builder(&p).flow(f).flow(feedback_flow()).build().unwrap();
    a.dispatch("s", Directive::go_to("triage")).await.unwrap();
    p.respond(Answer::message("How was your stay?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "How was your stay?");
    assert_eq!(hops(&r, "triage", "feedback"), 1);
    assert_eq!(r.model_calls, 1);
}

// ---------------------------------------------------------------------------------
// Directive chain
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn directive_chain_lists_emissions_in_order_with_sources() {
    let p = ScriptedProvider::new();
    let finish = tool(
        "finish",
        ToolOutput::text("ok").directive(Directive::complete()),
    );
    let f = flow("order")
        .on_complete_hook(|_cx: &Ctx<'_>| -> Directive {
            Directive::new().data(patch(json!({ "booking_id": "BK-9" })))
        })
        .step(Step::auto("route").branch(Branch::to_step("confirm").label("go")))
        .step(Step::reply("never", "never").end())
        .step(
            Step::model("confirm")
                .prompt("Confirm.")
                .tool(finish)
                .prepare(|_cx: &Ctx<'_>| -> Pre { Pre::new().append_prompt("Be brief.") })
                .finalize(|_cx: &Ctx<'_>| -> Directive {
                    Directive::new().context(patch(json!({ "tier": "gold" })))
                })
                .end(),
        )
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();
    p.respond(Answer::tool("finish", json!({})));
    p.tool_round(Answer::message("Done."));
    let r = a.respond("s", "go").await.unwrap();

    let sources: Vec<&DirectiveSource> = r.directive_chain.iter().map(|e| &e.source).collect();
    assert_eq!(
        sources,
        [
            &DirectiveSource::Branch("route:go".into()),
            &DirectiveSource::Prepare("confirm".into()),
            &DirectiveSource::Tool("finish".into()),
            &DirectiveSource::Finalize("confirm".into()),
            &DirectiveSource::OnComplete("order".into()),
        ]
    );
    let c = &r.directive_chain;
    assert_eq!(c[0].directive, Directive::go_to_step("confirm"));
    assert_eq!(c[1].append_prompt, ["Be brief."]);
    assert_eq!(c[2].directive, Directive::complete());
    assert_eq!(
        c[3].directive,
        Directive::new().context(patch(json!({ "tier": "gold" })))
    );
    assert_eq!(
        c[4].directive,
        Directive::new().data(patch(json!({ "booking_id": "BK-9" })))
    );
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "order".into()
        }
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-9"));
    assert_eq!(stored(&a, "s").await.unwrap().context.tier, "gold");
}

// ---------------------------------------------------------------------------------
// Reset and abort
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn reset_restarts_the_flow_and_reset_clearing_data_clears_its_fields() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "ask_guests").data(patch(json!({
            "city": "Lisbon", "check_in": "2026-07-01", "booking_id": "OLD-1"
        }))),
    )
    .await
    .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("Next?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));

    // reset: back to the entry step, data kept (satisfied steps are walked through).
    a.dispatch("s", Directive::reset()).await.unwrap();
    let r = a.respond("s", "start over").await.unwrap();
    assert_eq!(
        step_ids(&r).first(),
        Some(&"ask_city"),
        "{:?}",
        step_ids(&r)
    );
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));

    // reset_clearing_data: the flow's declared fields are cleared, others kept.
    a.dispatch("s", Directive::reset_clearing_data())
        .await
        .unwrap();
    let r = a.respond("s", "really start over").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(
        (r.data.city, r.data.check_in, r.data.guests),
        (None, None, None)
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("OLD-1"));
    assert_eq!(r.flow.as_deref(), Some("booking"));
}

#[tokio::test]
async fn abort_ends_the_conversation() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    a.dispatch("s", Directive::abort("fraud")).await.unwrap();
    let calls = p.calls();

    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::Aborted {
            reason: Some("fraud".into())
        }
    );
    assert_eq!(r.message, "");
    assert_eq!(r.flow, None);
    assert_eq!(p.calls(), calls, "no model call after an abort");
    let s = stored(&a, "s").await.unwrap();
    assert_eq!((s.flow, s.step, s.pending), (None, None, None));
}

#[tokio::test]
async fn abort_and_clear_erases_the_session_under_compare_and_swap() {
    let p = ScriptedProvider::new();
    let store = Arc::new(MemoryStore::new());
    let forget = tool(
        "forget_me",
        ToolOutput::text("forgotten").directive(Directive::abort_and_clear("gdpr")),
    );
    let a = builder(&p)
        .store_arc(store.clone())
        .flow(
            flow("chat")
                .tool(forget)
                .step(Step::model("chat").prompt("Chat."))
                .step(Step::model("more").prompt("Chat more."))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    p.respond(Answer::message("Hi!"));
    a.respond("s", "hi").await.unwrap();
    assert!(store.load("s").await.unwrap().is_some());

    p.respond(Answer::tool("forget_me", json!({})));
    p.tool_round(Answer::message("Bye."));
    let r = a.respond("s", "forget me").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::Aborted {
            reason: Some("gdpr".into())
        }
    );
    // Erased, not deleted: nothing of the conversation remains, but the record keeps
    // its version so a concurrent writer's compare-and-swap fails instead of winning.
    let stored = store.load("s").await.unwrap().unwrap();
    assert_eq!(stored.version, r.version);
    let text = String::from_utf8_lossy(&stored.bytes).to_string();
    assert!(
        !text.contains("forget me") && !text.contains("Hi!"),
        "{text}"
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.history.is_empty());
    assert_eq!(s.flow, None);
    assert_eq!(s.data, Booking::default());
}

// ---------------------------------------------------------------------------------
// Failed turns
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_failed_turn_leaves_the_stored_bytes_unchanged() {
    let p = ScriptedProvider::new();
    let store = Arc::new(MemoryStore::new());
    let a = builder(&p)
        .store_arc(store.clone())
        .flow(
            flow("booking")
                .step(
                    Step::model("ask_city")
                        .prompt("Ask which city.")
                        .collect(["city"]),
                )
                .step(
                    Step::model("ask_date")
                        .prompt("Ask for the date.")
                        .collect(["check_in"])
                        .finalize(|_cx: &Ctx<'_>| -> Directive { Directive::go_to("nowhere") }),
                )
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let before = store.load("s").await.unwrap().expect("stored");

    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    let err = a.respond("s", "Lisbon").await.unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Directive {
                error: DirectiveError::UnknownFlow { flow, .. },
                ..
            } if flow == "nowhere"
        ),
        "{err:?}"
    );
    assert_eq!(store.load("s").await.unwrap(), Some(before));
    assert_eq!(stored(&a, "s").await.unwrap().data.city, None);
}

#[tokio::test]
async fn a_predicted_steps_prepare_output_is_withdrawn_when_the_walk_stays_on_the_pending_step() {
    let p = ScriptedProvider::new();
    let f = flow("booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"])
                .prepare(|_cx: &Ctx<'_>| -> Pre { Pre::new().append_prompt("PREPARE-GUESTS") }),
        )
        .build()
        .unwrap();
    let a = builder(&p).flow(f).build().unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();

    // The one call renders the predicted `ask_guests` (its prepare output belongs there),
    // but no city arrives and the model claims the wrong step: `ask_city` is rendered
    // again, without what `ask_guests` prepared.
    p.respond(Answer::message("How many guests?").claiming("ask_guests"));
    p.respond(Answer::message("Which city, then?"));
    p.clear_requests();
    let r = a.respond("s", "not sure yet").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "Which city, then?");
    let reqs = p.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].instructions().contains("PREPARE-GUESTS"));
    assert!(
        !reqs[1].instructions().contains("PREPARE-GUESTS"),
        "{}",
        reqs[1].system
    );
}
