//! A tool that needs the user's agreement (`effect = once`, or `confirm`) runs only on
//! a yes to the summary of its call the user just read: code writes the summary, a
//! yes runs exactly that call (no model call for its arguments), a changed detail or
//! anything else runs nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::Effect;
use common::{Booking, Concierge, TODAY_MS};
use serde_json::{Value, json};

/// The arguments of every run of a tool.
type Runs = Arc<Mutex<Vec<Value>>>;

fn runs(r: &Runs) -> Vec<Value> {
    r.lock().unwrap().clone()
}

/// `refund`, a once-tool with a summary template, recording each run's arguments.
fn refund(runs: &Runs) -> FnTool<Booking, Concierge> {
    let runs = runs.clone();
    FnTool::raw(
        "refund",
        "Refund the stay.",
        json!({
            "type": "object",
            "properties": { "invoice": { "type": "string", "description": "Invoice number" } },
            "required": ["invoice"]
        }),
        move |_cx: ToolCx<Booking, Concierge>, a: Value| {
            runs.lock().unwrap().push(a.clone());
            async move {
                Ok(
                    ToolOutput::text("refunded").directive(Directive::new().reply(format!(
                        "Refunded {}.",
                        a["invoice"].as_str().unwrap_or("?")
                    ))),
                )
            }
        },
    )
    .effect(Effect::Once)
    .summary("Refund invoice {invoice}")
}

fn agent_with_tool(
    p: &ScriptedProvider,
    tool: FnTool<Booking, Concierge>,
) -> Agent<Booking, Concierge> {
    Agent::builder()
        .provider(p.clone())
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .tool(tool)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_once_call_is_summarised_and_a_plain_yes_runs_it_with_no_model_call() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = agent_with_tool(&p, refund(&ran));
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    let r = a.respond("s", "Please refund INV-7").await.unwrap();
    assert!(runs(&ran).is_empty(), "nothing runs before the yes");
    assert_eq!(r.message, "Refund invoice INV-7. Shall I go ahead?");
    assert_eq!(r.stopped, StoppedReason::NeedsInput, "the summary asks");
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    let stored = a.session("s").await.unwrap().unwrap();
    let waiting = stored.proposal.expect("the call waits for the yes");
    assert_eq!(
        (waiting.tool.as_str(), &waiting.arguments),
        ("refund", &json!({ "invoice": "INV-7" }))
    );

    let calls = p.requests().len();
    let r = a.respond("s", "Yes please").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(p.requests().len(), calls);
    assert_eq!(runs(&ran), vec![json!({ "invoice": "INV-7" })]);
    assert_eq!(r.message, "Refunded INV-7.");
    assert!(r.tool_calls[0].ok);
    assert!(a.session("s").await.unwrap().unwrap().proposal.is_none());

    // The yes is used up: another yes runs nothing.
    p.respond(Answer::message("Anything else?"));
    a.respond("s", "yes").await.unwrap();
    assert_eq!(runs(&ran).len(), 1);
}

#[tokio::test]
async fn a_yes_to_anything_but_the_last_summary_runs_nothing() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = agent_with_tool(&p, refund(&ran));
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    a.respond("s", "Please refund INV-7").await.unwrap();
    // A question in between: the summary is no longer what the user answers.
    p.respond(Answer::message(
        "It is sunny. Would you like anything else?",
    ));
    a.respond("s", "What's the weather like?").await.unwrap();
    p.respond(Answer::message("Glad to help."));
    let r = a.respond("s", "yes").await.unwrap();
    assert!(runs(&ran).is_empty(), "{:?}", r.tool_calls);
    assert!(r.tool_calls.is_empty());
}

#[tokio::test]
async fn the_model_naming_other_arguments_after_a_summary_gets_them_summarised_again() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = agent_with_tool(&p, refund(&ran));
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    a.respond("s", "Please refund INV-7").await.unwrap();
    // Not a plain yes: the model reads it, and names another invoice.
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-8" })));
    let r = a.respond("s", "Sorry, I meant INV-8").await.unwrap();
    assert!(runs(&ran).is_empty());
    assert_eq!(r.message, "Refund invoice INV-8. Shall I go ahead?");
    let r = a.respond("s", "ok").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(runs(&ran), vec![json!({ "invoice": "INV-8" })]);
}

#[tokio::test]
async fn a_summary_without_a_template_is_the_description_and_the_values() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let tool = {
        let ran = ran.clone();
        FnTool::raw(
            "send",
            "Send the invoice by email.",
            json!({"type": "object", "properties": {
                "invoice": {"type": "string"}, "email": {"type": "string"}}}),
            move |_cx: ToolCx<Booking, Concierge>, a: Value| {
                ran.lock().unwrap().push(a);
                async move { Ok(ToolOutput::text("sent")) }
            },
        )
        .confirm(true)
    };
    let a = agent_with_tool(&p, tool);
    p.respond(Answer::tool(
        "send",
        json!({ "invoice": "INV-7", "email": "ana@example.com" }),
    ));
    let r = a
        .respond("s", "mail me INV-7 at ana@example.com")
        .await
        .unwrap();
    assert_eq!(
        r.message,
        "Send the invoice by email: ana@example.com, INV-7. Shall I go ahead?"
    );
    assert!(runs(&ran).is_empty());
}

#[tokio::test]
async fn a_pure_or_idempotent_tool_runs_at_once_and_a_once_tool_can_opt_out() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = agent_with_tool(&p, refund(&ran).confirm(false));
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    let r = a.respond("s", "Please refund INV-7").await.unwrap();
    assert_eq!(runs(&ran).len(), 1);
    assert_eq!(r.message, "Refunded INV-7.");
}

#[tokio::test]
async fn an_agreed_call_that_needs_approval_then_waits_for_a_person() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = agent_with_tool(&p, refund(&ran).needs_approval());
    p.respond(Answer::tool("refund", json!({ "invoice": "INV-7" })));
    a.respond("s", "Please refund INV-7").await.unwrap();
    let r = a.respond("s", "yes").await.unwrap();
    let StoppedReason::AwaitingApproval { calls } = &r.stopped else {
        panic!("{:?}", r.stopped)
    };
    assert!(runs(&ran).is_empty());
    p.respond(Answer::message("Refunded INV-7."));
    let done = a
        .resolve_approval("s", &calls[0], Decision::Approve)
        .await
        .unwrap();
    assert_eq!(runs(&ran), vec![json!({ "invoice": "INV-7" })]);
    assert_eq!(done.message, "Refunded INV-7.");
}

/// A booking flow whose confirmation step proposes `book` through its `ask`.
fn booking(ran: &Runs) -> Flow<Booking, Concierge> {
    let ran = ran.clone();
    let book = FnTool::raw(
        "book",
        "Book the room.",
        json!({"type": "object", "properties": {"hotel": {"type": "string", "description": "The hotel, when the user named one"}}}),
        move |cx: ToolCx<Booking, Concierge>, a: Value| {
            let city = cx.data().city.clone().unwrap_or_default();
            ran.lock().unwrap().push(json!({ "args": a, "city": city }));
            async move {
                Ok(ToolOutput::text("booked")
                    .data(
                        json!({ "booking_id": "BK-1" })
                            .as_object()
                            .cloned()
                            .unwrap(),
                    )
                    .directive(Directive::complete().reply(format!("Booked in {city}."))))
            }
        },
    )
    .confirm(true);
    Flow::builder("booking")
        .title("Hotel booking")
        .required(["city", "guests"])
        .cancel_after_tool("The booking stays.")
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Book the room when the user agrees.")
                .ask("{guests} guests in {city}. Shall I book it?")
                .tool(book)
                .requires_tool("book")
                .end(),
        )
        .build()
        .unwrap()
}

async fn at_confirm(p: &ScriptedProvider, a: &Agent<Booking, Concierge>) {
    p.respond(Answer::message("Noted.").with_data(json!({ "city": "Lisbon", "guests": 2 })));
    let r = a.respond("s", "A room in Lisbon for 2").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book it?");
}

#[tokio::test]
async fn a_steps_ask_is_the_summary_and_a_yes_to_it_books_with_no_model_call() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = common::agent(&p, vec![booking(&ran)]);
    at_confirm(&p, &a).await;
    let waiting = a.session("s").await.unwrap().unwrap().proposal.unwrap();
    assert_eq!(waiting.summary, "2 guests in Lisbon. Shall I book it?");
    let r = a.respond("s", "Yes, book it").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(runs(&ran), vec![json!({ "args": {}, "city": "Lisbon" })]);
    assert_eq!(r.message, "Booked in Lisbon.");
    assert_eq!(r.flow, None, "the booking completed");
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-1"));
}

#[tokio::test]
async fn a_yes_that_also_changes_a_value_books_nothing_and_the_new_summary_is_shown() {
    // On a small model (tools in the answer, code's questions): the answer is judged
    // a yes naming the call, and reads a new count from the same message.
    let ran = Runs::default();
    let p = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let a = common::agent_with(
        &p,
        vec![booking(&ran)],
        AgentConfig {
            tools_in_answer: true,
            ..AgentConfig::default()
        },
    );
    at_confirm(&p, &a).await;
    p.respond(Answer::raw(
        r#"{"action":{"answer":"yes","tool":"book","with":{}},"data":{"city":null,"guests":3},"message":"Booking it."}"#,
    ));
    p.respond(Answer::raw(
        r#"{"action":{"answer":"new details"},"data":{"city":null,"guests":3},"message":"Sure."}"#,
    ));
    let r = a.respond("s", "Yes, but we are 3").await.unwrap();
    assert!(runs(&ran).is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.data.guests, Some(3));
    assert!(
        r.message.ends_with("3 guests in Lisbon. Shall I book it?"),
        "{}",
        r.message
    );
    assert_eq!(p.calls_of(CallKind::Agreement), 0, "nothing to check");
    // A plain yes to the new summary books, with no model call.
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(runs(&ran).len(), 1);
}

#[tokio::test]
async fn a_yes_in_other_words_runs_the_summarised_call_once_checked() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = common::agent(&p, vec![booking(&ran)]);
    at_confirm(&p, &a).await;
    // Not a plain yes: the answer judges it, and the check agrees.
    p.respond(Answer::tool("book", json!({})));
    p.agreement(true);
    let r = a
        .respond("s", "That works for us, thank you so much")
        .await
        .unwrap();
    assert_eq!(runs(&ran).len(), 1);
    assert_eq!(r.message, "Booked in Lisbon.");
    assert_eq!(p.calls_of(CallKind::Agreement), 1);
}

#[tokio::test]
async fn a_yes_in_other_words_runs_the_summarised_call_without_what_the_model_added() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = common::agent(&p, vec![booking(&ran)]);
    at_confirm(&p, &a).await;
    // The model fills the hotel with the city; this message names no hotel, so the
    // call agreed to is the summary's, as summarised.
    p.respond(Answer::tool("book", json!({ "hotel": "Lisbon" })));
    p.agreement(true);
    let r = a.respond("s", "Sí, resérvalo por favor").await.unwrap();
    assert_eq!(runs(&ran), vec![json!({ "args": {}, "city": "Lisbon" })]);
    assert_eq!(r.message, "Booked in Lisbon.");

    // A hotel the message names changes the call: its summary is shown, nothing runs.
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = common::agent(&p, vec![booking(&ran)]);
    at_confirm(&p, &a).await;
    p.respond(Answer::tool("book", json!({ "hotel": "Marriott" })));
    p.agreement(true);
    let r = a.respond("s", "Yes, book Marriott please").await.unwrap();
    assert!(runs(&ran).is_empty(), "{:?}", r.tool_calls);
    assert!(r.message.contains("Marriott"), "{}", r.message);
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(
        runs(&ran),
        vec![json!({ "args": { "hotel": "Marriott" }, "city": "Lisbon" })]
    );
}

#[tokio::test]
async fn a_yes_judged_by_the_model_that_the_check_does_not_confirm_books_nothing() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = common::agent(&p, vec![booking(&ran)]);
    at_confirm(&p, &a).await;
    p.respond(Answer::tool("book", json!({})));
    p.agreement(false);
    p.default_answer(
        CallKind::Respond,
        Answer::message("No problem, take your time."),
    );
    p.default_answer(
        CallKind::ToolRound,
        Answer::message("No problem, take your time."),
    );
    let r = a
        .respond("s", "Hmm, let me think about that")
        .await
        .unwrap();
    assert!(runs(&ran).is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("confirm"));
}

#[tokio::test]
#[allow(deprecated)]
async fn the_deprecated_act_on_answer_makes_a_steps_tools_wait_for_the_yes() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let lookup = {
        let ran = ran.clone();
        FnTool::raw(
            "hold_room",
            "Hold the room.",
            json!({"type": "object", "properties": {"hotel": {"type": "string"}}}),
            move |_cx: ToolCx<Booking, Concierge>, a: Value| {
                ran.lock().unwrap().push(a);
                async move { Ok(ToolOutput::text("held")) }
            },
        )
        .derived_args(["hotel"])
    };
    let f = Flow::builder("hold")
        .step(
            Step::model("hold")
                .prompt("Hold a room.")
                .act_on_answer()
                .tool(lookup)
                .branch(Branch::to_step("hold")),
        )
        .build()
        .unwrap();
    let a = common::agent(&p, vec![f]);
    p.respond(Answer::tool("hold_room", json!({ "hotel": "Grand" })));
    let r = a.respond("s", "hold the Grand for me").await.unwrap();
    assert!(runs(&ran).is_empty());
    assert_eq!(r.message, "Hold the room: Grand. Shall I go ahead?");
}

/// A code flow that asks for the user's yes to its summary before it refunds.
fn refund_flow(
    tool: FnTool<Booking, Concierge>,
) -> agent_core::codeflow::CodeFlow<Booking, Concierge> {
    agent_core::codeflow::CodeFlow::new(
        "refunds",
        move |ctx: agent_core::codeflow::FlowCx<Booking, Concierge>| {
            let tool = tool.clone();
            async move {
                if ctx.confirm("refund", "Refund invoice INV-7").await {
                    let _ = ctx.tool(tool, json!({ "invoice": "INV-7" })).await;
                    ctx.say("Refunded INV-7.").await;
                } else {
                    ctx.say("Nothing was refunded.").await;
                }
                ctx.end("done")
            }
        },
    )
}

fn code_agent(p: &ScriptedProvider, ran: &Runs) -> Agent<Booking, Concierge> {
    Agent::builder()
        .provider(p.clone())
        .code_flow(refund_flow(refund(ran)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_code_flow_asks_for_the_yes_to_its_summary_and_a_plain_yes_needs_no_call() {
    let ran = Runs::default();
    let p = ScriptedProvider::new();
    let a = code_agent(&p, &ran);
    let r = a.respond("s", "refund my invoice").await.unwrap();
    assert_eq!(r.message, "Refund invoice INV-7. Shall I go ahead?");
    assert_eq!(r.model_calls, 0);
    assert!(runs(&ran).is_empty());
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(r.model_calls, 0);
    assert_eq!(runs(&ran), vec![json!({ "invoice": "INV-7" })]);
    assert_eq!(r.message, "Refunded INV-7.");
}

#[tokio::test]
async fn a_code_flows_summary_answered_in_other_words_is_judged_alone() {
    for (said, agrees, refunded) in [
        ("hmm, I am not sure about that", false, 0),
        ("that is exactly what I want", true, 1),
    ] {
        let ran = Runs::default();
        let p = ScriptedProvider::new();
        let a = code_agent(&p, &ran);
        a.respond("s", "refund my invoice").await.unwrap();
        p.agreement(agrees);
        let r = a.respond("s", said).await.unwrap();
        assert_eq!(p.calls_of(CallKind::Agreement), 1, "{said}");
        assert_eq!(runs(&ran).len(), refunded, "{said}");
        let asked = p.last_request().unwrap().messages[0].content.clone();
        assert!(
            asked.contains("The assistant asked: \"Refund invoice INV-7. Shall I go ahead?\""),
            "{asked}"
        );
        assert_eq!(
            r.message,
            if agrees {
                "Refunded INV-7."
            } else {
                "Nothing was refunded."
            }
        );
    }
}
