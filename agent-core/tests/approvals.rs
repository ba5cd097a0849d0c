//! Human approval of tool calls (issue 16, item 3): a call marked for approval pauses
//! the turn durably; the application approves, denies (the model reads why) or edits
//! it, and the turn resumes with the tool's real result. Declarative and code flows,
//! streaming and not, across a restart; a message while a call waits is answered and
//! the call stays pending.
//!
//! One file over 600 lines: each scenario pauses a turn and resumes it on the same approval fixture (declarative and code flows, every decision), which the tests share.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::error::AgentError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, Role};
use agent_core::testing::{Answer, ScriptedProvider};
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The payment's receipt
    receipt: Option<String>,
}

/// What the payment tool saw: its runs and their keys and amounts.
#[derive(Default, Clone)]
struct Charges {
    runs: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<(String, u64)>>>,
}

impl Charges {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
    fn seen(&self) -> Vec<(String, u64)> {
        self.seen.lock().unwrap().clone()
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    /// Amount in cents
    cents: u64,
}

/// `pay`: counts its runs, writes the receipt into the data.
fn pay(charges: &Charges) -> FnTool<Order, ()> {
    let c = charges.clone();
    FnTool::new(
        "pay",
        "Charge the card.",
        move |cx: ToolCx<Order, ()>, a: Amount| {
            let c = c.clone();
            async move {
                let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
                c.seen
                    .lock()
                    .unwrap()
                    .push((cx.idempotency_key().to_owned(), a.cents));
                let receipt = format!("R{n}-{}", a.cents);
                Ok(
                    ToolOutput::text(format!("charged {} cents, receipt {receipt}", a.cents))
                        .data(json!({ "receipt": receipt }).as_object().cloned().unwrap()),
                )
            }
        },
    )
    .effect(Effect::Once)
    // A person's approval is tested here; the user's yes to a summary, and an
    // approval after it, in `agreement.rs`.
    .confirm(false)
    // The model converts the euros the user names into cents.
    .derived_args(["cents"])
}

fn agent(p: &ScriptedProvider, tool: FnTool<Order, ()>) -> Agent<Order, ()> {
    Agent::builder()
        .provider(p.clone())
        .tool(tool)
        .build()
        .unwrap()
}

/// The tool results the model was shown in its last call.
fn shown_results(p: &ScriptedProvider) -> Vec<String> {
    p.last_request()
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.to_string())
        .collect()
}

#[tokio::test]
async fn a_call_needing_approval_pauses_the_turn_and_runs_once_approved() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let r = a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(charges.runs(), 0, "nothing runs before a person decides");
    assert_eq!(
        r.stopped,
        StoppedReason::AwaitingApproval {
            calls: vec!["call_0".into()]
        }
    );
    assert_eq!(r.awaiting_approval.len(), 1);
    let call = &r.awaiting_approval[0];
    assert_eq!(
        (call.tool.as_str(), &call.arguments),
        ("pay", &json!({ "cents": 500 }))
    );
    assert_eq!(r.message, AgentConfig::default().approval_reply);
    assert!(r.tool_calls.is_empty());
    assert_eq!(a.pending_approvals("s").await.unwrap(), r.awaiting_approval);

    p.respond(Answer::message("Paid: receipt R1-500."));
    let done = a
        .resolve_approval("s", &call.id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(
        charges.seen()[0].0,
        call.key,
        "the key given when it was asked for"
    );
    assert_eq!(done.message, "Paid: receipt R1-500.");
    assert_eq!(done.stopped, StoppedReason::Responded);
    assert!(done.awaiting_approval.is_empty());
    assert_eq!(done.data.receipt.as_deref(), Some("R1-500"));
    assert!(done.tool_calls[0].ok);
    assert_eq!(done.version, r.version + 1);
    // The model answered with the real result, and was offered no tool to repeat it.
    let last = p.last_request().unwrap();
    assert!(last.tools.is_empty());
    assert_eq!(shown_results(&p), ["charged 500 cents, receipt R1-500"]);
    let calls_msg = last
        .messages
        .iter()
        .find(|m| !m.tool_calls.is_empty())
        .expect("the call precedes its result");
    assert_eq!(calls_msg.tool_calls[0].id, "call_0");
    assert!(a.pending_approvals("s").await.unwrap().is_empty());

    // Decided once: a second decision is a typed error and changes nothing.
    let again = a
        .resolve_approval("s", &call.id, Decision::Approve)
        .await
        .unwrap_err();
    assert!(
        matches!(&again, AgentError::NoPendingApproval { call_id, waiting, .. } if call_id == "call_0" && waiting.is_empty()),
        "{again:?}"
    );
    assert_eq!(a.session("s").await.unwrap().unwrap().version, done.version);
    assert_eq!(charges.runs(), 1);
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_why() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 90_000 })));
    let r = a.respond("s", "pay 900 euros").await.unwrap();
    p.respond(Answer::message("The payment was not approved."));
    let done = a
        .resolve_approval(
            "s",
            &r.awaiting_approval[0].id,
            Decision::Deny {
                reason: "over the limit".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(charges.runs(), 0);
    assert!(!done.tool_calls[0].ok);
    assert_eq!(
        done.tool_calls[0].output,
        "ERROR: denied by a person: over the limit"
    );
    assert_eq!(
        shown_results(&p),
        ["ERROR: denied by a person: over the limit"]
    );
    assert_eq!(done.data.receipt, None, "a denied call writes nothing");
    assert_eq!(done.message, "The payment was not approved.");
}

#[tokio::test]
async fn an_edited_call_runs_with_the_new_arguments_and_its_original_key() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 90_000 })));
    let r = a.respond("s", "pay 900 euros").await.unwrap();
    p.respond(Answer::message("Paid 300."));
    let call = &r.awaiting_approval[0];
    let done = a
        .resolve_approval(
            "s",
            &call.id,
            Decision::Edit {
                arguments: json!({ "cents": 300 }),
            },
        )
        .await
        .unwrap();
    assert_eq!(charges.seen(), [(call.key.clone(), 300)]);
    assert_eq!(done.data.receipt.as_deref(), Some("R1-300"));
    assert_eq!(done.tool_calls[0].arguments, json!({ "cents": 300 }));
}

#[tokio::test]
async fn a_rule_holds_only_the_calls_it_picks() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(
        &p,
        pay(&charges).needs_approval_if(|args: &Value| args["cents"].as_u64() > Some(10_000)),
    );
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::message("Paid."));
    let r = a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(charges.runs(), 1, "a small amount runs at once");
    assert_eq!(r.stopped, StoppedReason::Responded);

    p.respond(Answer::tool("pay", json!({ "cents": 50_000 })));
    let r = a.respond("s", "pay 500 euros").await.unwrap();
    assert_eq!(charges.runs(), 1, "a large one waits");
    assert!(matches!(r.stopped, StoppedReason::AwaitingApproval { .. }));

    // A rule that panics holds the call (the safe side).
    let p = ScriptedProvider::new();
    let a = agent(&p, pay(&charges).needs_approval_if(|_| panic!("rule bug")));
    p.respond(Answer::tool("pay", json!({ "cents": 1 })));
    let r = a.respond("s", "pay").await.unwrap();
    assert!(matches!(r.stopped, StoppedReason::AwaitingApproval { .. }));
}

#[tokio::test]
async fn a_message_while_a_call_waits_is_answered_and_the_call_stays_pending() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let held = a.respond("s", "pay 5 euros").await.unwrap();

    // The user writes again; the model tries the payment again: that call fails
    // (an earlier one waits) instead of stacking a second approval.
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::message("Your payment is waiting for approval."));
    let r = a.respond("s", "is it done?").await.unwrap();
    assert_eq!(r.message, "Your payment is waiting for approval.");
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.awaiting_approval, held.awaiting_approval, "still pending");
    assert!(!r.tool_calls[0].ok);
    assert!(
        r.tool_calls[0]
            .output
            .contains("still awaits a person's approval"),
        "{}",
        r.tool_calls[0].output
    );
    assert_eq!(charges.runs(), 0);

    // The application decides later: the held call runs, once.
    p.respond(Answer::message("Paid."));
    let done = a
        .resolve_approval("s", &held.awaiting_approval[0].id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(done.message, "Paid.");
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.approval.is_none());
    // The history stays well-formed: every tool call is followed by its result.
    let h = &s.history;
    for (i, m) in h.iter().enumerate() {
        for c in &m.tool_calls {
            assert!(
                h[i + 1..]
                    .iter()
                    .take_while(|n| n.role == Role::Tool)
                    .any(|n| n.tool_call_id.as_deref() == Some(c.id.as_str())),
                "{h:?}"
            );
        }
    }
}

#[tokio::test]
async fn resolving_a_call_that_does_not_wait_is_a_typed_error() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    let e = a
        .resolve_approval("nobody", "call_0", Decision::Approve)
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::NoPendingApproval { .. }), "{e:?}");
    assert!(a.session("nobody").await.unwrap().is_none());

    p.respond(Answer::tool("pay", json!({ "cents": 5 })));
    let r = a.respond("s", "pay").await.unwrap();
    let e = a
        .resolve_approval("s", "call_9", Decision::Approve)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "session `s` has no tool call `call_9` waiting for approval; waiting: call_0"
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.version, r.version);
    assert_eq!(a.pending_approvals("s").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_round_resumes_once_every_waiting_call_is_decided() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(
        &p,
        pay(&charges).needs_approval_if(|args: &Value| args["cents"].as_u64() > Some(100)),
    );
    p.respond(
        Answer::tool("pay", json!({ "cents": 50 }))
            .and_tool("pay", json!({ "cents": 500 }))
            .and_tool("pay", json!({ "cents": 700 })),
    );
    let r = a.respond("s", "pay all three").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::AwaitingApproval {
            calls: vec!["call_1".into(), "call_2".into()]
        },
        "the small one needs no decision but waits with its round"
    );
    assert_eq!(charges.runs(), 0);
    let part = a
        .resolve_approval("s", "call_2", Decision::Approve)
        .await
        .unwrap();
    assert_eq!(
        part.stopped,
        StoppedReason::AwaitingApproval {
            calls: vec!["call_1".into()]
        }
    );
    assert_eq!(part.model_calls, 0);
    assert_eq!(charges.runs(), 0);
    p.respond(Answer::message("Two paid, one refused."));
    let done = a
        .resolve_approval(
            "s",
            "call_1",
            Decision::Deny {
                reason: "duplicate".into(),
            },
        )
        .await
        .unwrap();
    let amounts: Vec<u64> = charges.seen().iter().map(|(_, c)| *c).collect();
    assert_eq!(amounts, [50, 700]);
    let oks: Vec<bool> = done.tool_calls.iter().map(|c| c.ok).collect();
    assert_eq!(oks, [true, false, true]);
    assert_eq!(done.message, "Two paid, one refused.");
}

/// A checkout flow whose closing step pays (the tool must run before it ends).
fn checkout_agent(p: &ScriptedProvider, charges: &Charges) -> Agent<Order, ()> {
    let flow = Flow::builder("checkout")
        .cancel_after_tool("Okay, I've stopped here. What the tool did stays done.")
        .title("Checkout")
        .step(
            Step::model("confirm")
                .prompt("Ask the user to confirm the payment of 5 euros, then pay.")
                .tool(pay(charges).needs_approval())
                .requires_tool("pay")
                .end(),
        )
        .build()
        .unwrap();
    Agent::builder()
        .provider(p.clone())
        .flow(flow)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_flow_step_resumes_where_it_paused_and_completes_with_the_tool_result() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = checkout_agent(&p, &charges);
    p.respond(Answer::message("Shall I pay 5 euros?"));
    let r = a.respond("s", "checkout").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));

    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let held = a.respond("s", "yes, pay").await.unwrap();
    assert!(matches!(
        held.stopped,
        StoppedReason::AwaitingApproval { .. }
    ));
    assert_eq!(held.flow.as_deref(), Some("checkout"), "the flow waits");
    assert_eq!(held.data.receipt, None);

    p.respond(Answer::message("Paid, your receipt is R1-500."));
    let done = a
        .resolve_approval("s", &held.awaiting_approval[0].id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(
        done.stopped,
        StoppedReason::FlowCompleted {
            flow: "checkout".into()
        }
    );
    assert_eq!(done.message, "Paid, your receipt is R1-500.");
    assert_eq!(done.data.receipt.as_deref(), Some("R1-500"));
    assert_eq!(charges.runs(), 1);
    assert_eq!(p.unused(), 0);
}

#[tokio::test]
async fn a_denied_flow_step_does_not_complete_and_asks_again() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = checkout_agent(&p, &charges);
    p.respond(Answer::message("Shall I pay 5 euros?"));
    a.respond("s", "checkout").await.unwrap();
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let held = a.respond("s", "yes, pay").await.unwrap();
    // The model's first answer claims success; the step's tool did not run (denied),
    // so the step is asked again, told so.
    p.respond(Answer::message("Done!"));
    p.respond(Answer::message(
        "The payment was refused. Try another card?",
    ));
    let done = a
        .resolve_approval(
            "s",
            &held.awaiting_approval[0].id,
            Decision::Deny {
                reason: "card blocked".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(charges.runs(), 0);
    assert_eq!(done.flow.as_deref(), Some("checkout"));
    assert_eq!(done.stopped, StoppedReason::NeedsInput);
    assert_eq!(done.message, "The payment was refused. Try another card?");
}

#[tokio::test]
async fn streaming_shows_the_request_and_the_resumed_answer() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let events: Vec<Event<Order>> = a.respond_stream("s", "pay 5 euros").collect().await;
    let requested: Vec<&PendingCall> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(requested.len(), 1);
    let Some(Event::Done(r)) = events.last() else {
        panic!("{events:?}")
    };
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, r.message);
    assert_eq!(r.awaiting_approval[0], *requested[0]);

    p.respond(Answer::message("Paid."));
    let events: Vec<Event<Order>> = a
        .resolve_approval_stream("s", &requested[0].id, Decision::Approve)
        .collect()
        .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::ToolCall { .. } => "call",
            Event::ToolResult(_) => "result",
            Event::TextDelta(_) => "text",
            Event::Done(_) => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["call", "result", "text", "done"]);
    assert_eq!(charges.runs(), 1);
}

#[tokio::test]
async fn a_repeated_decision_with_the_same_event_id_runs_the_call_once() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let a = agent(&p, pay(&charges).needs_approval());
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let r = a.respond("s", "pay").await.unwrap();
    p.respond(Answer::message("Paid."));
    let id = &r.awaiting_approval[0].id;
    let opts = TurnOptions::event("approval-1");
    let first = a
        .resolve_approval_with("s", id, Decision::Approve, &opts)
        .await
        .unwrap();
    let second = a
        .resolve_approval_with("s", id, Decision::Approve, &opts)
        .await
        .unwrap();
    assert!(second.duplicate);
    assert_eq!(second.message, first.message);
    assert_eq!(charges.runs(), 1);
}

#[tokio::test]
async fn a_code_flow_tool_call_waits_for_approval_and_the_flow_continues() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let tool = pay(&charges).needs_approval().into_arc();
    let flow = CodeFlow::new("checkout", move |ctx: FlowCx<Order, ()>| {
        let tool = tool.clone();
        async move {
            ctx.say("Let me charge your card.").await;
            match ctx.tool(tool, json!({ "cents": 900 })).await {
                Ok(out) => ctx.say(format!("Done: {out}.")).await,
                Err(f) => ctx.say(format!("Not charged ({}).", f.message)).await,
            }
            let _: String = ctx.ask("note", "Anything else?").await;
            ctx.end("paid")
        }
    });
    let a = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .build()
        .unwrap();
    let r = a.respond("s", "checkout").await.unwrap();
    assert!(matches!(r.stopped, StoppedReason::AwaitingApproval { .. }));
    assert!(
        r.message.starts_with("Let me charge your card."),
        "{}",
        r.message
    );
    assert_eq!(charges.runs(), 0);
    let id = r.awaiting_approval[0].id.clone();

    let done = a
        .resolve_approval("s", &id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(
        done.message,
        "Done: charged 900 cents, receipt R1-900.\n\nAnything else?"
    );
    assert_eq!(done.stopped, StoppedReason::NeedsInput);
    assert_eq!(
        p.calls_of(CallKind::Extract),
        0,
        "the old message answers nothing"
    );

    // The flow replays past the recorded call without running it again.
    p.extract(Answer::answering(json!("no thanks")));
    p.respond(Answer::message("Goodbye."));
    let end = a.respond("s", "no thanks").await.unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(
        end.stopped,
        StoppedReason::FlowCompleted {
            flow: "checkout".into()
        }
    );
}

#[tokio::test]
async fn a_code_flow_denied_call_is_a_failure_the_flow_handles() {
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let tool = pay(&charges).needs_approval().into_arc();
    let flow = CodeFlow::new("checkout", move |ctx: FlowCx<Order, ()>| {
        let tool = tool.clone();
        async move {
            match ctx.tool(tool, json!({ "cents": 900 })).await {
                Ok(out) => ctx.say(format!("Done: {out}.")).await,
                Err(f) => ctx.say(format!("Not charged ({}).", f.message)).await,
            }
            ctx.end("done")
        }
    });
    let a = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .build()
        .unwrap();
    let r = a.respond("s", "checkout").await.unwrap();
    let done = a
        .resolve_approval(
            "s",
            &r.awaiting_approval[0].id,
            Decision::Deny {
                reason: "no".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(charges.runs(), 0);
    assert_eq!(done.message, "Not charged (denied by a person: no).");
    assert_eq!(
        done.stopped,
        StoppedReason::FlowCompleted {
            flow: "checkout".into()
        }
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_held_call_survives_a_restart() {
    let dir = std::env::temp_dir().join("agent-core-approvals");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("restart-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let charges = Charges::default();
    let p = ScriptedProvider::new();
    let agent = || {
        Agent::builder()
            .provider(p.clone())
            .store(agent_core::store::SqliteStore::open(&path).unwrap())
            .tool(pay(&charges).needs_approval())
            .build()
            .unwrap()
    };
    let first = agent();
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let r = first.respond("s", "pay 5 euros").await.unwrap();
    drop(first);

    let second = agent();
    assert_eq!(
        second.pending_approvals("s").await.unwrap(),
        r.awaiting_approval
    );
    p.respond(Answer::message("Paid."));
    let done = second
        .resolve_approval("s", &r.awaiting_approval[0].id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(done.data.receipt.as_deref(), Some("R1-500"));
    drop(second);
    for ext in ["", "-wal", "-shm"] {
        let mut f = path.clone().into_os_string();
        f.push(ext);
        let _ = std::fs::remove_file(f);
    }
}

#[tokio::test]
async fn a_held_call_decided_after_the_flow_was_left_keeps_its_result_not_its_move() {
    let p = ScriptedProvider::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let n = runs.clone();
    let pay_and_complete = FnTool::new(
        "pay",
        "Charge the card.",
        move |_cx: ToolCx<Order, ()>, _a: Amount| {
            let n = n.clone();
            async move {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text("charged")
                    .data(json!({ "receipt": "R1" }).as_object().cloned().unwrap())
                    .directive(Directive::complete()))
            }
        },
    )
    .needs_approval()
    .derived_args(["cents"]);
    let checkout = Flow::builder("checkout")
        .cancel_after_tool("Okay, I've stopped here. What the tool did stays done.")
        .title("Checkout")
        .step(
            Step::model("confirm")
                .prompt("Ask the user to confirm, then pay.")
                .tool(pay_and_complete)
                .end(),
        )
        .build()
        .unwrap();
    let help = Flow::builder("help")
        .title("Help")
        .step(Step::model("ask").prompt("Ask what the user needs."))
        .build()
        .unwrap();
    let a: Agent<Order, ()> = Agent::builder()
        .provider(p.clone())
        .flow(checkout)
        .flow(help)
        .build()
        .unwrap();
    a.dispatch("s", Directive::go_to("checkout")).await.unwrap();
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let held = a.respond("s", "pay").await.unwrap();
    assert!(matches!(
        held.stopped,
        StoppedReason::AwaitingApproval { .. }
    ));

    // The user changes their mind while the call waits.
    a.dispatch("s", Directive::go_to("help")).await.unwrap();
    p.respond(Answer::message("What do you need?"));
    let r = a.respond("s", "actually, I need help").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("help"));

    p.respond(Answer::message("The payment went through."));
    let done = a
        .resolve_approval("s", &held.awaiting_approval[0].id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        done.data.receipt.as_deref(),
        Some("R1"),
        "the result stands"
    );
    assert_eq!(
        done.flow.as_deref(),
        Some("help"),
        "its `complete` was for the flow it left"
    );
    assert!(a.pending_approvals("s").await.unwrap().is_empty());
}
