//! The whole-turn deadline (`AgentConfig::turn_timeout`): a turn past it fails with
//! `TurnTimeout` and changes nothing; waiting for the session does not count; a code
//! flow that never finishes fails its step instead, so it cannot time out every turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agent_core::codeflow::{CodeFlow, FlowCx};
use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Notes {
    /// Anything
    note: Option<String>,
}

/// A tool that sleeps `secs` (virtual time in paused tests).
fn sleeping(secs: u64) -> FnTool<Notes, ()> {
    FnTool::new(
        "slow",
        "A slow lookup.",
        move |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| async move {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            Ok(ToolOutput::text("found"))
        },
    )
}

/// A tool that never finishes but awaits all the time.
fn spinning() -> FnTool<Notes, ()> {
    FnTool::new(
        "spin",
        "Never done.",
        |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| async move {
            loop {
                tokio::task::yield_now().await;
            }
        },
    )
}

fn config(turn: Duration) -> AgentConfig {
    AgentConfig {
        turn_timeout: Some(turn),
        tool_timeout: None,
        ..AgentConfig::default()
    }
}

fn agent(p: &ScriptedProvider, tool: FnTool<Notes, ()>, turn: Duration) -> Agent<Notes, ()> {
    Agent::builder()
        .provider(p.clone())
        .tool(tool.into_arc())
        .config(config(turn))
        .build()
        .unwrap()
}

#[test]
fn the_default_turn_deadline_is_three_minutes() {
    assert_eq!(
        AgentConfig::default().turn_timeout,
        Some(Duration::from_secs(180))
    );
}

#[tokio::test(start_paused = true)]
async fn a_turn_past_its_deadline_is_a_typed_error_and_changes_nothing() {
    let p = ScriptedProvider::new();
    let a = agent(&p, sleeping(3600), Duration::from_secs(30));
    p.respond(Answer::message("Hi!"));
    a.respond("s", "hello").await.unwrap();
    let before = a.session("s").await.unwrap();

    p.respond(Answer::tool("slow", json!({})));
    let started = tokio::time::Instant::now();
    let err = a.respond("s", "look it up").await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(
        err,
        AgentError::TurnTimeout {
            after: Duration::from_secs(30)
        }
    );
    assert!(err.to_string().contains("turn_timeout"), "{err}");
    assert_eq!(a.session("s").await.unwrap(), before, "nothing saved");

    p.respond(Answer::message("Anything else?"));
    let r = a.respond("s", "never mind").await.unwrap();
    assert_eq!(r.message, "Anything else?");
}

#[tokio::test(start_paused = true)]
async fn a_streamed_turn_past_its_deadline_ends_with_the_error() {
    let p = ScriptedProvider::new();
    let a = agent(&p, sleeping(3600), Duration::from_secs(30));
    p.respond(Answer::tool("slow", json!({})));
    let events: Vec<Event<Notes>> = a.respond_stream("s", "look it up").collect().await;
    assert!(
        matches!(
            events.last(),
            Some(Event::Error(AgentError::TurnTimeout { .. }))
        ),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Done(_))));
    assert!(a.session("s").await.unwrap().is_none());
}

/// The pinned limit: a timer stops anything that awaits (here a loop that only
/// yields); only a loop that never awaits cannot be stopped.
#[tokio::test]
async fn the_deadline_stops_a_loop_that_only_yields() {
    let p = ScriptedProvider::new();
    let a = agent(&p, spinning(), Duration::from_millis(200));
    p.respond(Answer::tool("spin", json!({})));
    let err = a.respond("s", "go").await.unwrap_err();
    assert!(matches!(err, AgentError::TurnTimeout { .. }), "{err:?}");
    assert!(a.session("s").await.unwrap().is_none());
}

/// Time spent waiting for the session (another turn holds it) counts toward the
/// deadline: of two 20 s turns asked at once with a 30 s deadline, the second waits
/// 20 s and is stopped 10 s into its work; with a 45 s deadline both finish.
#[tokio::test(start_paused = true)]
async fn waiting_for_the_session_counts_toward_the_deadline() {
    let p = ScriptedProvider::new();
    let a = agent(&p, sleeping(20), Duration::from_secs(30));
    p.respond(Answer::tool("slow", json!({})));
    p.tool_round(Answer::message("First."));
    p.respond(Answer::tool("slow", json!({})));
    let started = tokio::time::Instant::now();
    let (r1, r2) = tokio::join!(a.respond("s", "one"), a.respond("s", "two"));
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(r1.unwrap().message, "First.");
    let err = r2.unwrap_err();
    assert!(matches!(err, AgentError::TurnTimeout { .. }), "{err:?}");
    // The stopped turn changed nothing: the session holds the first turn only.
    assert_eq!(a.session("s").await.unwrap().unwrap().turns, 1);

    let p = ScriptedProvider::new();
    let a = agent(&p, sleeping(20), Duration::from_secs(45));
    p.respond(Answer::tool("slow", json!({})));
    p.tool_round(Answer::message("First."));
    p.respond(Answer::tool("slow", json!({})));
    p.tool_round(Answer::message("Second."));
    let started = tokio::time::Instant::now();
    let (r1, r2) = tokio::join!(a.respond("s", "one"), a.respond("s", "two"));
    assert_eq!(started.elapsed(), Duration::from_secs(40));
    assert_eq!(r1.unwrap().message, "First.");
    assert_eq!(r2.unwrap().message, "Second.");
}

/// A code flow that never finishes (it awaits, but never asks) is stopped a tenth of
/// the limit before the deadline as a failed step: it counts toward
/// `max_flow_failures`, is then cleared, and the session goes on.
#[tokio::test(start_paused = true)]
async fn a_code_flow_that_never_finishes_fails_its_step_and_is_cleared() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("forever", |ctx: FlowCx<Notes, ()>| async move {
        ctx.say("working").await;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let a: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .config(config(Duration::from_secs(100)))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(90));
    match &r.stopped {
        StoppedReason::FlowFailed {
            flow,
            message,
            cleared: false,
            replay: None,
        } => {
            assert_eq!(flow, "forever");
            assert!(message.contains("time limit"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.message, AgentConfig::default().flow_error_reply);

    p.respond(Answer::message("How can I help?"));
    let r = a.respond("s", "hello?").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: true, .. }),
        "{:?}",
        r.stopped
    );
    assert_eq!(r.message, "How can I help?");
    assert!(a.session("s").await.unwrap().unwrap().code.is_none());
}

/// The same with a flow that only yields, in real time.
#[tokio::test]
async fn a_code_flow_that_only_yields_is_stopped_too() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("spin", |_ctx: FlowCx<Notes, ()>| async move {
        loop {
            tokio::task::yield_now().await;
        }
    });
    let a: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .config(config(Duration::from_millis(300)))
        .build()
        .unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: false, .. }),
        "{:?}",
        r.stopped
    );
}

/// Without timers the runtime cannot enforce a deadline: a typed configuration error
/// says how to fix it, instead of a panic.
#[test]
fn a_runtime_without_timers_is_a_typed_error() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let p = ScriptedProvider::new();
    let a: Agent<Notes, ()> = Agent::builder().provider(p.clone()).build().unwrap();
    let err = rt.block_on(a.respond("s", "hi")).unwrap_err();
    assert!(
        matches!(&err, AgentError::Config(_)) && err.to_string().contains("enable_time"),
        "{err}"
    );
    let b: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .config(AgentConfig {
            turn_timeout: None,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    p.respond(Answer::message("Hi!"));
    assert_eq!(rt.block_on(b.respond("s", "hi")).unwrap().message, "Hi!");
}

/// A limit too far away to represent means no deadline, not a panic.
#[tokio::test]
async fn an_endless_limit_is_no_deadline() {
    let p = ScriptedProvider::new();
    let a: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .config(config(Duration::MAX))
        .build()
        .unwrap();
    p.respond(Answer::message("Hi!"));
    assert_eq!(a.respond("s", "hi").await.unwrap().message, "Hi!");
}
