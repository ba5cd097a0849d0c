//! A once-tool is offered only when the user's words ask for it, wherever it is
//! offered: on a step (`not_past.rs`), and on the agent or a flow, with or without
//! flows. A call the model makes to a tool not offered does not run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::Effect;
use common::{Booking, Concierge};
use serde_json::json;

/// `refund`, a once-tool (request word: its name's first word), counting its runs.
fn refund(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool<Booking, Concierge>> {
    let runs = runs.clone();
    FnTool::raw(
        "refund",
        "Refund the stay.",
        json!({"type": "object", "properties": {}}),
        move |_cx: ToolCx<Booking, Concierge>, _a| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(ToolOutput::text("refunded")) }
        },
    )
    .effect(Effect::Once)
    .into_arc()
}

fn offered(p: &ScriptedProvider, i: usize) -> bool {
    p.requests()[i].tools.iter().any(|t| t.name == "refund")
}

#[tokio::test]
async fn an_agent_level_once_tool_is_offered_only_when_the_user_asks() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = ScriptedProvider::new();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .tool(refund(&runs))
        .build()
        .unwrap();
    // The model calls it anyway: not offered, it does not run.
    p.respond(Answer::tool("refund", json!({})));
    p.tool_round(Answer::message("It is sunny."));
    let r = a
        .respond("s", "hello, what is the weather like?")
        .await
        .unwrap();
    assert!(!offered(&p, 0), "{:?}", p.requests()[0].tools);
    assert!(
        p.requests()[0]
            .instructions()
            .contains("Not offered now: refund (the user has not asked for it in their own words)"),
        "{}",
        p.requests()[0].instructions()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "{:?}", r.tool_calls);
    assert!(r.tool_calls.iter().all(|c| !c.ok), "{:?}", r.tool_calls);

    // Asked for in the user's own words: offered, and it runs.
    p.respond(Answer::tool("refund", json!({})));
    p.tool_round(Answer::message("Refunded."));
    a.respond("s", "Please refund my stay").await.unwrap();
    let asked = p.requests().len() - 2;
    assert!(offered(&p, asked));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_flow_level_once_tool_is_offered_only_when_the_user_asks() {
    let runs = Arc::new(AtomicUsize::new(0));
    let p = ScriptedProvider::new();
    let desk = Flow::builder("desk")
        .title("Desk")
        .cancel_after_tool("Okay, I've stopped here. What the tool did stays done.")
        .tool(refund(&runs))
        .step(
            Step::model("help")
                .prompt("Help the user.")
                .branch(Branch::to_step("help")),
        )
        .build()
        .unwrap();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .flow(desk)
        .build()
        .unwrap();
    // Every model call names the tool.
    p.default_answer(CallKind::Respond, Answer::tool("refund", json!({})));
    p.default_answer(CallKind::ToolRound, Answer::message("It is sunny."));
    let _ = a.respond("s", "hello, what is the weather like?").await;
    let requests = p.requests();
    let responds: Vec<_> = requests
        .iter()
        .filter(|r| r.kind == CallKind::Respond)
        .collect();
    assert!(!responds.is_empty());
    for r in responds {
        assert!(r.tools.iter().all(|t| t.name != "refund"), "{:?}", r.tools);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
