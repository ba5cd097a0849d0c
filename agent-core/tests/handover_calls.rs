//! Hand-overs without a second call.
//!
//! - The read-ahead (`AgentConfig::preview_handoffs`, off by default): the answer that
//!   hands over was written for the first step of the flow handed to, with the values
//!   it read for that flow; the flow handed to makes its own call only when it lands
//!   elsewhere or a value was not stored.
//! - Code that moves the user and says so (`{goTo, reply}` from a tool): the reply is
//!   the message and the step entered is not rendered this turn.
//! - Code that moves the user before any reply (a `prepare` hook's `go_to`): the flow
//!   handed to reads the message in its one call.

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

/// At the booking's city question, the model judges the feedback flow.
#[allow(clippy::unwrap_used)]
async fn at_ask_city(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let a = agent_with_read_ahead(p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();
    a
}

#[tokio::test]
async fn a_hand_over_answer_written_for_the_first_step_is_the_reply_in_one_call() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p).await;

    p.respond(Answer::raw(
        r#"{"data":{"check_in":null,"city":null,"feedback":null,"guests":null},"handoff":{"feedback":true},"message":"How was your last stay?","reply_asks_for":"city"}"#,
    ));
    let r = a
        .respond("s", "actually I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("feedback"), Some("ask_feedback"))
    );
    assert_eq!(r.message, "How was your last stay?");
    assert_eq!(r.model_calls, 1);
    assert_eq!(
        r.transitions.last().map(|t| t.to.as_str()),
        Some("feedback")
    );

    // What the call was told: the first step of each flow it may hand over to, and
    // the fields that step's flow collects, in `data` with the booking's own.
    let req = &p.requests()[2];
    let sys = req.instructions();
    assert!(
        sys.contains(
            "- feedback: the user wants to leave feedback. First step: Ask how the booking went."
        ),
        "{sys}"
    );
    assert!(
        sys.contains("- feedback (feedback): Free-text feedback"),
        "{sys}"
    );
    let schema = &req.output.as_ref().unwrap().schema;
    let data = &schema["properties"]["data"]["properties"];
    assert!(
        data.get("city").is_some() && data.get("feedback").is_some(),
        "{schema}"
    );
    let state = req.messages.last().unwrap().content.to_string();
    assert!(state.contains("Before replying, fill `data`"), "{state}");
}

#[tokio::test]
async fn values_read_for_the_flow_handed_to_are_stored_there_and_it_speaks_when_it_moves_on() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p).await;

    // The feedback is in the message: the feedback flow has everything, so it lands on
    // its closing, not on the question the answer was written for, and speaks itself.
    p.respond(
        Answer::message("How was your stay?")
            .with_data(json!({"feedback": "the stay was great"}))
            .switching_to("feedback")
            // "forget the booking": the booking flow is left, not interrupted.
            .command(agent_core::command::Command::cancel_flow()),
    );
    p.respond(Answer::message("Thanks for the feedback!"));
    let r = a
        .respond(
            "s",
            "forget the booking, I just want to say the stay was great",
        )
        .await
        .unwrap();
    assert_eq!(r.data.feedback.as_deref(), Some("the stay was great"));
    assert_eq!(
        r.message,
        "Thanks for the feedback! Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 2);
    // That call heard the first answer.
    let state = last_state(&p);
    assert!(state.contains("How was your stay?"), "{state}");
}

#[tokio::test]
async fn values_for_another_flow_are_not_read_when_the_answer_stays() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p).await;

    p.respond(
        Answer::message("Lisbon it is. Which date?")
            .with_data(json!({"city": "Lisbon", "feedback": "great"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "Lisbon, it will be great").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.feedback, None);
    // Asked for only in case of a hand-over: neither stored nor reported as dropped.
    assert!(r.dropped_fields.is_empty(), "{:?}", r.dropped_fields);
    assert_eq!(r.model_calls, 1);
}

#[tokio::test]
async fn a_value_the_user_never_said_is_dropped_once_and_the_flow_handed_to_asks_itself() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p).await;

    p.respond(
        Answer::message("Glad it was lovely! Anything else?")
            .with_data(json!({"feedback": "lovely"}))
            .switching_to("feedback"),
    );
    p.respond(Answer::message("How was your stay?").with_data(json!({"feedback": "lovely"})));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(r.data.feedback, None, "nobody said it");
    assert_eq!(r.step.as_deref(), Some("ask_feedback"));
    assert_eq!(r.message, "How was your stay?");
    assert_eq!(
        r.model_calls, 2,
        "the draft built on the value: asked again"
    );
    assert_eq!(r.ungrounded.len(), 1, "{:?}", r.ungrounded);
    let state = last_state(&p);
    assert!(state.contains("feedback is not known yet"), "{state}");
}

#[tokio::test]
async fn a_flow_that_opens_with_a_hook_gets_no_read_ahead() {
    let p = ScriptedProvider::new();
    let hooked = Flow::builder("feedback")
        .title("Feedback")
        .when("the user wants to leave feedback")
        .step(
            Step::model("ask_feedback")
                .prompt("Ask how the booking went.")
                .collect(["feedback"])
                .prepare(
                    |_cx: &Cx<'_, Booking, Concierge>| -> PreDirective<Booking, Concierge> {
                        PreDirective::new().append_prompt("The guest stayed in March.")
                    },
                ),
        )
        .build()
        .unwrap();
    let a = agent_with_read_ahead(&p, vec![booking_flow(false), hooked]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();
    let sys = p.last_request().unwrap().instructions();
    assert!(
        sys.contains("- feedback: the user wants to leave feedback\n")
            && !sys.contains("First step"),
        "{sys}"
    );

    p.respond(Answer::message("One moment.").switching_to("feedback"));
    p.respond(Answer::message("How was your March stay?"));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(r.message, "How was your March stay?");
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn by_default_the_prompt_and_schema_have_no_read_ahead() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();
    let req = p.last_request().unwrap();
    assert_eq!(req.kind, CallKind::Respond);
    assert!(!req.instructions().contains("First step"));
    let schema = &req.output.as_ref().unwrap().schema;
    assert!(
        schema["properties"]["data"]["properties"]
            .get("feedback")
            .is_none()
    );
}

#[tokio::test]
async fn a_tools_go_to_with_a_reply_is_the_message_and_the_step_entered_is_not_rendered() {
    let p = ScriptedProvider::new();
    let transfer = FnTool::new(
        "transfer",
        "Send the user to the feedback desk.",
        |_cx: ToolCx<Booking, Concierge>, _a: serde_json::Value| async move {
            Ok(ToolOutput::text("transferred").directive(
                Directive::go_to("feedback").reply("Over to feedback: how was your stay?"),
            ))
        },
    );
    let desk = Flow::builder("desk")
        .title("Desk")
        .step(
            Step::model("ask_need")
                .prompt("Find out what the user needs.")
                .tool(transfer.into_arc()),
        )
        .build()
        .unwrap();
    let a = agent(&p, vec![desk, feedback_flow()]);
    a.dispatch("s", Directive::go_to("desk")).await.unwrap();

    p.respond(Answer::tool("transfer", json!({})));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(r.message, "Over to feedback: how was your stay?");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("feedback"), Some("ask_feedback"))
    );
    assert_eq!(
        r.model_calls, 1,
        "no call for the step entered, none after the tool"
    );

    // The next message is read where the user was sent.
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "lovely stay"})));
    let r = a.respond("s", "It was a lovely stay").await.unwrap();
    assert_eq!(r.data.feedback.as_deref(), Some("lovely stay"));
}

/// A desk (asking again until the user is sent on) whose `prepare` hook sends
/// messages about a hotel to the booking flow.
#[allow(clippy::unwrap_used)]
fn desk_with_a_routing_hook() -> Flow<Booking, Concierge> {
    Flow::builder("desk")
        .title("Desk")
        .reentrant()
        .step(
            Step::model("ask_need")
                .prompt("Find out what the user needs.")
                .branch(Branch::to_step("ask_need"))
                .prepare(
                    |cx: &Cx<'_, Booking, Concierge>| -> PreDirective<Booking, Concierge> {
                        if cx.message().contains("hotel") {
                            PreDirective::from(Directive::go_to("booking"))
                        } else {
                            PreDirective::new()
                        }
                    },
                ),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_prepare_hooks_go_to_lets_the_flow_handed_to_read_the_message_in_one_call() {
    // The first message, the desk entered by a pending directive.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![desk_with_a_routing_hook(), booking_flow(false)]);
    a.dispatch("s", Directive::go_to("desk")).await.unwrap();
    p.respond(
        Answer::message("When do you arrive?")
            .with_data(json!({"city": "Paris"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "I need a hotel in Paris").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_date"))
    );
    assert_eq!(r.data.city.as_deref(), Some("Paris"));
    assert_eq!(r.message, "When do you arrive?");
    assert_eq!(r.model_calls, 1);
    let state = p
        .last_request()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content
        .to_string();
    assert!(state.contains("Before replying, fill `data`"), "{state}");

    // A later message, the desk's answer awaited (read by a speculative call).
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![desk_with_a_routing_hook(), booking_flow(false)]);
    a.dispatch("s", Directive::go_to("desk")).await.unwrap();
    p.respond(Answer::message("How can I help?"));
    a.respond("s", "hello").await.unwrap();
    p.respond(
        Answer::message("When do you arrive?")
            .with_data(json!({"city": "Rome"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "A hotel in Rome, please").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Rome"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.model_calls, 1);
    assert_eq!(p.unused(), 0);
}
