//! No user callback can unwind out of a turn: every hook, predicate, signal handler
//! and reply function that panics fails the turn with `HookPanicked` naming it, the
//! stored session is exactly as before, and the next turn works. `on_response` runs
//! after the save: its panic is reported on the response instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::prelude::*;
use agent_core::signal::SignalDirective;
use agent_core::testing::{Answer, ScriptedProvider};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Trip {
    /// City to travel to
    city: Option<String>,
    /// Number of nights
    nights: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Prefs {
    tier: String,
}

type Ctx<'a> = Cx<'a, Trip, Prefs>;
type Pre = PreDirective<Trip, Prefs>;

/// Every kind of user callback the engine calls in a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    AgentOnEnter,
    FlowIf,
    FlowOnEnter,
    StepOnEnter,
    Skip,
    Prepare,
    InstructionIf,
    Finalize,
    OnContextUpdate,
    SignalIf,
    SignalHandler,
    SignalReply,
    OnDataUpdate,
    BranchIf,
    StepIf,
    OnComplete,
    OnExit,
}

/// Each site and the name its error must carry.
const SITES: &[(Site, &str)] = &[
    (Site::AgentOnEnter, "on_enter hook of the agent"),
    (Site::FlowIf, "`if` predicate of flow `trip`"),
    (Site::FlowOnEnter, "on_enter hook of flow `trip`"),
    (
        Site::StepOnEnter,
        "on_enter hook of step `ask_city` in flow `trip`",
    ),
    (
        Site::Skip,
        "`skip` predicate of step `ask_city` in flow `trip`",
    ),
    (
        Site::Prepare,
        "prepare hook of step `ask_city` in flow `trip`",
    ),
    (Site::InstructionIf, "`if` predicate of an instruction"),
    (
        Site::Finalize,
        "finalize hook of step `ask_city` in flow `trip`",
    ),
    (
        Site::OnContextUpdate,
        "on_context_update hook of flow `trip`",
    ),
    (Site::SignalIf, "`if` predicate of signal `mood`"),
    (Site::SignalHandler, "signal handler `mood`"),
    (Site::SignalReply, "reply function of signal `mood`"),
    (Site::OnDataUpdate, "on_data_update hook of flow `trip`"),
    (
        Site::BranchIf,
        "`if` predicate of branch 1 of step `ask_city` in flow `trip`",
    ),
    (
        Site::StepIf,
        "`if` predicate of step `ask_nights` in flow `trip`",
    ),
    (Site::OnComplete, "on_complete hook of flow `trip`"),
    (Site::OnExit, "on_exit hook of flow `trip`"),
];

/// Which site panics now (`None`: none).
type Armed = Arc<Mutex<Option<Site>>>;

fn boom(armed: &Armed, site: Site) {
    if *armed.lock().unwrap() == Some(site) {
        panic!("boom at {site:?}");
    }
}

/// ask_city (every step hook, a skip, a branch) → ask_nights (conditional) → wrap
/// (end); every flow hook; an agent hook, an instruction predicate and a signal.
fn agent(p: &ScriptedProvider, armed: &Armed) -> Agent<Trip, Prefs> {
    let a = |site: Site| {
        let armed = armed.clone();
        move || boom(&armed, site)
    };
    let (flow_if, flow_enter, data_update, context_update, complete, exit) = (
        a(Site::FlowIf),
        a(Site::FlowOnEnter),
        a(Site::OnDataUpdate),
        a(Site::OnContextUpdate),
        a(Site::OnComplete),
        a(Site::OnExit),
    );
    let (step_enter, skip, prepare, finalize, branch_if, step_if) = (
        a(Site::StepOnEnter),
        a(Site::Skip),
        a(Site::Prepare),
        a(Site::Finalize),
        a(Site::BranchIf),
        a(Site::StepIf),
    );
    let flow = Flow::builder("trip")
        .required(["city", "nights"])
        .if_(move |_: &Ctx<'_>| {
            flow_if();
            true
        })
        .on_enter(move |_: &Ctx<'_>| -> Pre {
            flow_enter();
            Pre::new()
        })
        .on_data_update(move |_: &Ctx<'_>| data_update())
        .on_context_update(move |_: &Ctx<'_>| context_update())
        .on_complete_hook(move |_: &Ctx<'_>| -> Directive {
            complete();
            Directive::new()
        })
        .on_exit(move |_: &Ctx<'_>| exit())
        .step(
            Step::model("ask_city")
                .prompt("Ask where to.")
                .collect(["city"])
                .on_enter(move |_: &Ctx<'_>| -> Pre {
                    step_enter();
                    Pre::new()
                })
                .skip(move |_: &Ctx<'_>| {
                    skip();
                    false
                })
                .prepare(move |_: &Ctx<'_>| -> Pre {
                    prepare();
                    Pre::new()
                })
                .finalize(move |_: &Ctx<'_>| -> Directive {
                    finalize();
                    let tier = json!({ "tier": "vip" }).as_object().cloned().unwrap();
                    Directive::new().context(tier)
                })
                .branch(Branch::to_step("wrap").if_(move |_: &Ctx<'_>| {
                    branch_if();
                    false
                })),
        )
        .step(
            Step::model("ask_nights")
                .prompt("Ask how many nights.")
                .collect(["nights"])
                .if_(move |_: &Ctx<'_>| {
                    step_if();
                    true
                }),
        )
        .step(Step::model("wrap").prompt("Confirm the trip.").end())
        .build()
        .unwrap();
    let (agent_enter, instruction_if, signal_if, handler) = (
        a(Site::AgentOnEnter),
        a(Site::InstructionIf),
        a(Site::SignalIf),
        a(Site::SignalHandler),
    );
    let armed_reply = armed.clone();
    Agent::builder()
        .provider(p.clone())
        .on_enter(move |_: &Ctx<'_>| -> Pre {
            agent_enter();
            Pre::new()
        })
        .instruction(Instruction::must("Be brief.").if_(move |_: &Ctx<'_>| {
            instruction_if();
            true
        }))
        .signal(
            Signal::new("mood")
                .if_(move |_: &Ctx<'_>| {
                    signal_if();
                    true
                })
                .handle(move |_: &agent_core::signal::SignalCx<'_, Trip, Prefs>| {
                    handler();
                    let d = SignalDirective::new();
                    if *armed_reply.lock().unwrap() == Some(Site::SignalReply) {
                        let armed = armed_reply.clone();
                        d.reply_with_fn(move |_| {
                            boom(&armed, Site::SignalReply);
                            "unreachable".into()
                        })
                    } else {
                        d
                    }
                }),
        )
        .flow(flow)
        .build()
        .unwrap()
}

/// The conversation: each message with the model's answer to it.
fn script() -> Vec<(&'static str, Answer)> {
    vec![
        ("hi", Answer::message("Where to?")),
        (
            "Lisbon",
            Answer::message("How many nights?").with_data(json!({ "city": "Lisbon" })),
        ),
        (
            "3 nights",
            Answer::message("Lisbon for 3 nights?").with_data(json!({ "nights": 3 })),
        ),
        ("yes", Answer::message("Booked. Enjoy Lisbon!")),
    ]
}

/// One turn through `respond` or `respond_stream`; a stream must end (with exactly
/// one `Done` or `Error`), never hang.
async fn turn(
    agent: &Agent<Trip, Prefs>,
    message: &str,
    stream: bool,
) -> Result<AgentResponse<Trip>, AgentError> {
    if !stream {
        return agent.respond("s", message).await;
    }
    let events: Vec<Event<Trip>> = tokio::time::timeout(
        Duration::from_secs(10),
        agent.respond_stream("s", message).collect(),
    )
    .await
    .expect("the stream ends");
    let ends: Vec<&Event<Trip>> = events
        .iter()
        .filter(|e| matches!(e, Event::Done(_) | Event::Error(_)))
        .collect();
    assert_eq!(ends.len(), 1, "{events:?}");
    match events.last() {
        Some(Event::Done(r)) => Ok(*r.clone()),
        Some(Event::Error(e)) => Err(e.clone()),
        other => panic!("the stream ended with {other:?}"),
    }
}

/// Run the conversation with `site` panicking until it first fires: that turn fails
/// with the site's name and leaves the session as it was; the same message then
/// succeeds and the conversation completes.
async fn panics_at(site: Site, what: &str, stream: bool) {
    let armed: Armed = Arc::new(Mutex::new(Some(site)));
    let p = ScriptedProvider::new();
    let agent = agent(&p, &armed);
    let mut hit = false;
    for (message, answer) in script() {
        if p.unused() == 0 {
            p.respond(answer.clone());
        }
        let before = agent.session("s").await.unwrap();
        match turn(&agent, message, stream).await {
            Ok(_) => {}
            Err(AgentError::HookPanicked {
                what: w,
                message: m,
            }) => {
                assert!(!hit, "{site:?} failed a second turn");
                hit = true;
                assert_eq!(w, what, "{site:?}");
                assert_eq!(m, format!("boom at {site:?}"));
                let after = agent.session("s").await.unwrap();
                assert_eq!(after, before, "{site:?}: the session is unchanged");
                *armed.lock().unwrap() = None;
                if p.unused() == 0 {
                    p.respond(answer);
                }
                turn(&agent, message, stream)
                    .await
                    .unwrap_or_else(|e| panic!("{site:?}: the next turn works: {e}"));
            }
            Err(e) => panic!("{site:?}: expected HookPanicked, got {e:?}"),
        }
    }
    assert!(hit, "{site:?} never fired");
    let s = agent.session("s").await.unwrap().unwrap();
    assert_eq!(
        s.data,
        Trip {
            city: Some("Lisbon".into()),
            nights: Some(3)
        },
        "{site:?}"
    );
    assert_eq!(s.completed_flows, ["trip"], "{site:?}");
    assert_eq!(p.unused(), 0, "{site:?}");
}

#[tokio::test]
async fn every_panicking_callback_is_a_typed_error_and_the_session_is_unchanged() {
    for &(site, what) in SITES {
        panics_at(site, what, false).await;
    }
}

#[tokio::test]
async fn a_panicking_callback_ends_the_stream_with_an_error_event() {
    for &(site, what) in SITES {
        panics_at(site, what, true).await;
    }
}

#[tokio::test]
async fn without_panics_the_conversation_runs_through() {
    let armed: Armed = Arc::new(Mutex::new(None));
    let p = ScriptedProvider::new();
    let agent = agent(&p, &armed);
    for (message, answer) in script() {
        p.respond(answer);
        agent.respond("s", message).await.unwrap();
    }
    let s = agent.session("s").await.unwrap().unwrap();
    assert_eq!(s.completed_flows, ["trip"]);
    assert_eq!(s.context.tier, "vip");
}

/// `on_response` runs after the save: the turn stands (and is saved), the caller gets
/// `Ok` with the failure listed, and the next turn is unaffected.
#[tokio::test]
async fn a_panicking_response_hook_is_reported_and_the_turn_stands() {
    for stream in [false, true] {
        let p = ScriptedProvider::new();
        let fail = Arc::new(Mutex::new(true));
        let f = fail.clone();
        let agent: Agent<Trip, Prefs> = Agent::builder()
            .provider(p.clone())
            .on_response(move |_, _| {
                if *f.lock().unwrap() {
                    panic!("hook down");
                }
            })
            .build()
            .unwrap();
        p.respond(Answer::message("Hello!"));
        let r = turn(&agent, "hi", stream).await.unwrap();
        assert_eq!(r.message, "Hello!");
        assert_eq!(r.hook_failures, ["on_response hook panicked: hook down"]);
        let s = agent.session("s").await.unwrap().unwrap();
        assert_eq!(s.version, r.version, "the turn was saved");
        assert_eq!(s.history.len(), 2);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["hook_failures"][0],
            "on_response hook panicked: hook down"
        );

        *fail.lock().unwrap() = false;
        p.respond(Answer::message("Still here."));
        let r = turn(&agent, "and now?", stream).await.unwrap();
        assert!(r.hook_failures.is_empty());
        assert!(
            serde_json::to_value(&r)
                .unwrap()
                .get("hook_failures")
                .is_none()
        );
    }
}

/// The migration hook runs before the turn: a panic in it is a typed error too.
#[tokio::test]
async fn a_panicking_migration_hook_is_a_typed_error() {
    let p = ScriptedProvider::new();
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let v1 = Flow::builder("trip")
        .step(Step::model("ask_city").collect(["city"]))
        .build()
        .unwrap();
    let first: Agent<Trip, Prefs> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(v1)
        .build()
        .unwrap();
    p.respond(Answer::message("Where to?"));
    first.respond("s", "hi").await.unwrap();
    let before = first.session("s").await.unwrap();

    // The step the session waits on is gone in the new version.
    let v2 = Flow::builder("trip")
        .step(Step::model("where").collect(["city"]))
        .build()
        .unwrap();
    let second: Agent<Trip, Prefs> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(v2)
        .migrate(|_, _| panic!("bad migration"))
        .build()
        .unwrap();
    let err = second.respond("s", "Lisbon").await.unwrap_err();
    assert_eq!(
        err,
        AgentError::HookPanicked {
            what: "migration hook".into(),
            message: "bad migration".into()
        }
    );
    assert_eq!(second.session("s").await.unwrap(), before);
}

/// A panic outside the named callbacks (here in the provider) is caught at the turn:
/// a typed error, nothing saved, and a stream that ends with it.
#[tokio::test]
async fn a_panic_anywhere_else_in_the_turn_is_caught_too() {
    for stream in [false, true] {
        let p = ScriptedProvider::new();
        let agent: Agent<Trip, Prefs> = Agent::builder().provider(p.clone()).build().unwrap();
        p.respond(Answer::message("Hello!"));
        turn(&agent, "hi", stream).await.unwrap();
        let before = agent.session("s").await.unwrap();
        p.respond(Answer::from_fn(|_| panic!("provider bug")));
        let err = turn(&agent, "again", stream).await.unwrap_err();
        match &err {
            AgentError::HookPanicked { what, message } => {
                assert!(what.contains("during the turn"), "{what}");
                assert_eq!(message, "provider bug");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(agent.session("s").await.unwrap(), before);
        p.respond(Answer::message("Back."));
        assert_eq!(
            turn(&agent, "again", stream).await.unwrap().message,
            "Back."
        );
    }
}
