//! The booking conversation: data first, one model call per turn, completion.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

#[tokio::test]
async fn one_field_per_turn_costs_exactly_one_model_call_per_turn() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);

    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "I want to book a hotel").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.message, "Check-in date?");

    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_guests"), 1));

    p.respond(
        Answer::message("Shall I book?")
            .with_data(json!({"guests": 2}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "two of us").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("confirm"), 1));
    let steps: Vec<&str> = r.executed_steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, ["route", "confirm"]);
    assert_eq!(
        p.calls_of(CallKind::Classify) + p.calls_of(CallKind::Route),
        0
    );
}

#[tokio::test]
async fn all_data_in_one_message_lands_on_confirm_in_at_most_two_calls() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Which city?")
            .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})),
    );
    p.respond(Answer::message("Lisbon, July 1, 2 guests. Shall I book?"));
    let r = a.respond("s", "Lisbon, July 1, two of us").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert!(r.model_calls <= 2, "{} calls", r.model_calls);
    assert_eq!(r.message, "Lisbon, July 1, 2 guests. Shall I book?");
    let steps: Vec<&str> = r.executed_steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(
        steps,
        ["ask_city", "ask_date", "ask_guests", "route", "confirm"]
    );
}

#[tokio::test]
async fn confirm_turn_books_through_the_tool_and_completes_the_flow() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(true), feedback_flow()]);
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

    // The confirm step's `when` branches are judged inside the respond call (no
    // classifier call), the tool books and completes the flow.
    p.respond(Answer::tool("book_room", json!({"hotel": "Grand"})));
    p.tool_round(Answer::message("Booked! Your id is BK-5."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(
        r.message,
        "Booked! Your id is BK-5. Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 2, "respond + tool round");
    assert_eq!(p.calls_of(CallKind::Classify), 0);
    assert!(r.tool_calls[0].ok);
}

#[tokio::test]
async fn a_when_branch_judged_true_redirects_and_rerenders() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(true), feedback_flow()]);
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
    a.respond("s", "hi").await.unwrap();

    p.respond(Answer::message("Booking now").judging("the user wants another date", true));
    p.respond(Answer::message("Which date instead?"));
    let r = a.respond("s", "actually, another date").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"), "{r:#?}");
    assert_eq!(r.message, "Which date instead?");
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn large_groups_get_the_verbatim_reply_with_no_extra_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("?")
            .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 10})),
    );
    let r = a.respond("s", "Lisbon July 1 for 10").await.unwrap();
    assert_eq!(r.message, "A specialist will call you about groups.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.model_calls, 1);
    assert_eq!(r.flow, None, "a terminal reply step completes the flow");
}

#[tokio::test]
async fn multi_flow_agents_route_once_then_stay_in_the_chosen_flow() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("feedback"));
    p.respond(Answer::message("How did it go?"));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("feedback"), Some("ask_feedback"))
    );
    assert_eq!(r.model_calls, 2, "route + respond");
    let route = &p.requests()[0];
    assert_eq!(route.kind, CallKind::Route);
    assert!(route.instructions().contains("booking") && route.instructions().contains("feedback"));

    // Inside a flow no routing call is made; the respond call offers a switch instead.
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "great"})));
    let r = a.respond("s", "it was great").await.unwrap();
    assert_eq!(r.model_calls, 1);
    assert_eq!(p.calls_of(CallKind::Route), 1);
    let schema = &p.last_request().unwrap().output.unwrap().schema;
    // One yes/no per other flow, before the message.
    assert_eq!(
        schema["properties"]["handoff"]["properties"]["booking"],
        json!({ "type": "boolean" })
    );
    assert_eq!(
        schema["properties"]["handoff"]["required"],
        json!(["booking"])
    );
}

#[tokio::test]
async fn the_model_can_switch_flows_from_the_respond_call_and_the_new_flow_speaks() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(Answer::message("Let me take your feedback instead.").switching_to("feedback"));
    p.respond(Answer::message("How was your last stay?"));
    let r = a
        .respond("s", "actually I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.message, "How was your last stay?");
    // The first flow's message is not shown, but the next flow hears it.
    let state = p
        .last_request()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content
        .to_string();
    assert!(
        state.contains("Let me take your feedback instead."),
        "{state}"
    );
    assert_eq!(
        r.transitions.last().map(|t| t.to.as_str()),
        Some("feedback")
    );
    assert!(r.directive_chain.iter().any(|e| e.source
        == agent_core::response::DirectiveSource::Command("start_flow feedback".into())));
    // The switch is the command the answer's `handoff` key reads as.
    assert!(
        r.commands
            .contains(&agent_core::command::Command::start_flow("feedback")),
        "{:?}",
        r.commands
    );
}

#[tokio::test]
async fn a_switch_to_a_flow_that_does_not_exist_is_ignored_and_the_reply_stands() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(
        Answer::message("Which city, then?")
            .claiming("ask_city")
            .switching_to("weather"),
    );
    let r = a.respond("s", "what's the weather?").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.message, "Which city, then?");
    assert!(r.transitions.is_empty());
    assert_eq!(r.model_calls, 1);
}

#[tokio::test]
async fn a_model_switch_back_to_a_flow_left_this_turn_is_not_followed() {
    let p = ScriptedProvider::new();
    let a = Agent::builder()
        .provider(p.clone())
        .flow(booking_flow(false))
        .flow(feedback_flow())
        .config(AgentConfig {
            max_transitions_per_turn: 3,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    for i in 0..10 {
        let to = if i % 2 == 0 { "feedback" } else { "booking" };
        p.respond(Answer::message(format!("hop {i}")).switching_to(to));
    }
    let r = a.respond("s", "I can't decide").await.unwrap();
    // booking -> feedback is followed; feedback -> booking (left this turn) is not:
    // the flow that answered speaks, instead of a ping-pong up to the cap.
    assert_eq!(r.transitions.len(), 1);
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.message, "hop 1");
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn when_routing_finds_no_flow_the_agent_replies_without_one() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.push(
        CallKind::Route,
        Answer::verdicts(Vec::<(String, bool)>::new()),
    );
    p.respond(Answer::message("I can book hotels or take feedback."));
    let r = a.respond("s", "what's the weather?").await.unwrap();
    assert_eq!(r.flow, None);
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.message, "I can book hotels or take feedback.");
    assert!(
        p.last_request().unwrap().output.is_none(),
        "a plain reply, no schema"
    );
}

#[tokio::test]
async fn builders_take_flow_results_and_tool_values_directly() {
    let p = ScriptedProvider::new();
    let tool = FnTool::new(
        "ping",
        "Answer pong.",
        |_cx: ToolCx<Booking, Concierge>, _a: serde_json::Value| async move {
            Ok(ToolOutput::text("pong"))
        },
    );
    // A `Result` from `Flow::builder(..).build()` and a tool value, no `?` / `Arc` needed.
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .tool(tool)
        .flow(
            Flow::builder("booking")
                .step(
                    Step::model("ask_city")
                        .prompt("Ask the city.")
                        .collect(["city"]),
                )
                .build(),
        )
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    assert_eq!(p.last_request().unwrap().tools[0].name, "ping");

    // An invalid flow's errors come out of the agent's `build()`, with the others.
    let err = Agent::<Booking, Concierge>::builder()
        .provider(p.clone())
        .flow(Flow::builder("empty").build())
        .flow(Flow::builder("empty2").build())
        .build()
        .err()
        .unwrap();
    assert_eq!(err.0.len(), 2, "{err}");
    assert!(err.to_string().contains("flow `empty`: flow has no steps"));
}

/// A flow the tests list before `feedback` (and after it alphabetically).
#[allow(clippy::expect_used)]
fn support_flow() -> Flow<Booking, Concierge> {
    Flow::builder("support")
        .title("Support")
        .when("the user reports a problem")
        .step(Step::model("ask_problem").prompt("Ask what went wrong."))
        .build()
        .expect("support flow is valid")
}

#[tokio::test]
async fn two_flows_judged_true_are_asked_about_and_the_prompt_lists_them() {
    let p = ScriptedProvider::new();
    let a = agent(
        &p,
        vec![booking_flow(false), support_flow(), feedback_flow()],
    );
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(Answer::raw(
        r#"{"data":{},"handoff":{"feedback":true,"support":true},"message":"One moment."}"#,
    ));
    let r = a
        .respond("s", "the app broke, and I have feedback")
        .await
        .unwrap();
    // Clarification: neither starts; code asks which one, in the order listed.
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert!(
        r.message.starts_with("Do you mean ") && r.message.ends_with(" or feedback?"),
        "{}",
        r.message
    );
    let first = &p.requests()[1];
    let sys = first.instructions();
    // Listed in registration order.
    let support = sys.find("- support: the user reports a problem");
    let feedback = sys.find("- feedback: the user wants to leave feedback");
    assert!(
        support.is_some() && feedback.is_some() && support < feedback,
        "{sys}"
    );
}

#[tokio::test]
async fn a_switch_flow_id_written_by_hand_is_still_followed_and_all_false_stays() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(Answer::raw(
        r#"{"data":{},"handoff":{"feedback":false},"message":"Which city, then?","reply_asks_for":"city"}"#,
    ));
    let r = a.respond("s", "hmm").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert!(r.transitions.is_empty());

    p.respond(Answer::raw(
        r#"{"data":{},"switch_flow":"feedback","message":"Sure."}"#,
    ));
    p.respond(Answer::message("How did it go?"));
    let r = a.respond("s", "I'd rather leave feedback").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.message, "How did it go?");
}

#[tokio::test]
async fn the_flow_handed_to_reads_the_same_message_and_stores_what_it_collects() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    // The model read a cancel and the message names stopping ("forget the
    // booking"): the booking flow is left, not interrupted.
    p.respond(
        Answer::message("One moment.")
            .switching_to("feedback")
            .command(agent_core::command::Command::cancel_flow()),
    );
    p.respond(Answer::message("Noted.").with_data(json!({"feedback": "great"})));
    // The feedback flow completes with its field: its closing reply.
    p.respond(Answer::message("Thanks for the feedback!"));
    let r = a
        .respond("s", "forget the booking, I want to say the stay was great")
        .await
        .unwrap();
    assert_eq!(r.data.feedback.as_deref(), Some("great"));
    assert_eq!(
        r.message,
        "Thanks for the feedback! Is there anything else I can help with?"
    );
    // The feedback flow's first call read the message for its fields.
    let reqs = p.requests();
    let state = reqs[3].messages.last().unwrap().content.to_string();
    assert!(state.contains("ask_feedback"), "{state}");
    assert!(!state.contains("Write null for every field"), "{state}");
}

/// A flow only code reaches: no `when`.
#[allow(clippy::expect_used)]
fn desk_flow() -> Flow<Booking, Concierge> {
    Flow::builder("desk")
        .title("Front desk")
        .step(Step::model("ask_need").prompt("Find out what the user needs."))
        .build()
        .expect("desk flow is valid")
}

#[tokio::test]
async fn a_flow_without_when_is_not_offered_for_a_hand_over_and_not_followed() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), desk_flow(), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(
        Answer::message("Which city, then?")
            .claiming("ask_city")
            .switching_to("desk"),
    );
    let r = a.respond("s", "hmm").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert!(r.transitions.is_empty());
    let req = p.last_request().unwrap();
    let system = req.system.clone();
    let schema = &req.output.unwrap().schema;
    assert_eq!(
        schema["properties"]["handoff"]["required"],
        json!(["feedback"])
    );
    assert!(!system.contains("- desk:"), "{system}");
}

/// The turn a flow starts reads the message as the answer to its first step: a
/// message that gives the city is answered for the next step in the same call.
#[tokio::test]
async fn an_opening_message_that_answers_the_first_step_is_answered_in_one_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Lisbon, lovely. From which date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "Book me a room in Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
    assert_eq!(r.message, "Lisbon, lovely. From which date?");
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    let sys = p.last_request().unwrap().instructions();
    assert!(sys.contains("Now, Step `ask_date`"), "{sys}");
    assert!(
        sys.contains(
            "But if the user's latest message does not give `city`, instead Step `ask_city`"
        ),
        "{sys}"
    );
}

/// A greeting does not answer the first step: the reply the same call wrote for it
/// (the fallback, which it says it asks for) is used.
#[tokio::test]
async fn an_opening_message_without_the_answer_uses_the_fallback_reply_in_one_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Hello! Which city?").claiming("ask_city"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert_eq!(r.message, "Hello! Which city?");
    assert_eq!(r.data.city, None);
}

/// A reply written for the next step while the message gave nothing for the first is
/// not shown: the turn renders the first step again.
#[tokio::test]
async fn a_reply_for_the_next_step_without_its_data_is_rendered_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("From which date?").claiming("ask_date"));
    p.respond(Answer::message("Which city would you like?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 2));
    assert_eq!(r.message, "Which city would you like?");
    // The second call renders the first step itself, with no fallback.
    let sys = p.last_request().unwrap().instructions();
    assert!(
        sys.contains("Now, Step `ask_city`") && !sys.contains("But if"),
        "{sys}"
    );
}

/// A first step that runs a hook is not read ahead: the speculative call renders
/// that step, as before.
#[tokio::test]
async fn a_first_step_with_code_to_run_is_not_read_ahead() {
    let hooked = city_step().prepare(
        |_cx: &Cx<'_, Booking, Concierge>| -> PreDirective<Booking, Concierge> {
            PreDirective::new().append_prompt("The guest is new.")
        },
    );
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![city_then_date(hooked)]);
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert_eq!(r.message, "Which city?");
    let sys = p.last_request().unwrap().instructions();
    assert!(
        sys.contains("Now, Step `ask_city`") && !sys.contains("But if"),
        "{sys}"
    );
}

/// A first step whose question code writes (`ask`) is read ahead like any other: a
/// message that answers it gets the next step's reply in one call; one that does not
/// gets code's question, not the model's fallback.
#[tokio::test]
async fn a_first_step_with_a_code_question_is_read_ahead_and_asked_by_code() {
    let asked = || city_step().ask("Which city shall it be?");
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![city_then_date(asked())]);
    p.respond(Answer::message("Which city would you like?").claiming("ask_city"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert_eq!(r.message, "Which city shall it be?");
    let sys = p.last_request().unwrap().instructions();
    assert!(
        sys.contains("Now, Step `ask_date`") && sys.contains("But if"),
        "{sys}"
    );

    let p = ScriptedProvider::new();
    let a = agent(&p, vec![city_then_date(asked())]);
    p.respond(
        Answer::message("Lisbon it is. From which date?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "A room in Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
    assert_eq!(r.message, "Lisbon it is. From which date?");
}

fn city_step() -> Step<Booking, Concierge> {
    Step::model("ask_city")
        .prompt("Ask which city the user wants to stay in.")
        .collect(["city"])
}

fn city_then_date(first: Step<Booking, Concierge>) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .title("Hotel booking")
        .step(first)
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"]),
        )
        .build()
        .unwrap()
}

/// What the model says its reply asks for decides which step it stands for: a reply
/// that asks for the city again after reading the city is not used.
#[tokio::test]
async fn the_reply_is_used_for_the_step_it_says_it_asks_for() {
    for (asks_for, calls, message) in [
        ("check_in", 1, "From which date?"),
        ("city", 2, "Which date works for you?"),
    ] {
        let p = ScriptedProvider::new();
        let a = agent(&p, vec![booking_flow(false)]);
        p.respond(Answer::raw(format!(
            r#"{{"data":{{"city":"Lisbon","check_in":null,"guests":null}},"message":"From which date?","reply_asks_for":"{asks_for}"}}"#
        )));
        p.respond(Answer::message("Which date works for you?"));
        let r = a.respond("s", "A room in Lisbon").await.unwrap();
        assert_eq!(
            (r.step.as_deref(), r.model_calls, r.message.as_str()),
            (Some("ask_date"), calls, message),
            "{asks_for}"
        );
    }
}

/// A small model copies its previous reply: a copy is not the answer to the step the
/// conversation moved on to, and the turn renders that step.
#[tokio::test]
async fn a_copy_of_the_previous_reply_is_not_used_for_the_next_step() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    let question = "Hello! Which city would you like to stay in?";
    p.respond(Answer::message(question).claiming("ask_city"));
    a.respond("s", "hi").await.unwrap();

    p.respond(
        Answer::message(question)
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Lisbon it is. From which date?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 2));
    assert_eq!(r.message, "Lisbon it is. From which date?");

    // Asking the same question again when the user did not answer is no copy to
    // refuse: the step did not change.
    p.respond(Answer::message("Lisbon it is. From which date?").claiming("ask_date"));
    let r = a.respond("s", "hmm").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
}

/// ask_city -> ask_date, with a rule that holds for Porto only.
fn harbour_flow() -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .title("Hotel booking")
        .instruction(
            Instruction::should("mention the harbour view")
                .if_(|cx: &Cx<'_, Booking, Concierge>| cx.data().city.as_deref() == Some("Porto")),
        )
        .step(Step::model("ask_city").collect(["city"]))
        .step(Step::model("ask_date").collect(["check_in"]))
        .build()
        .unwrap()
}

/// A reply read ahead was written with the rules of the data before its own values:
/// when those values make another rule hold, the step is rendered again with it.
#[tokio::test]
async fn a_rule_that_the_read_values_make_hold_is_in_the_reply() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![harbour_flow()]);
    p.respond(Answer::message("From which date?").with_data(json!({"city": "Porto"})));
    p.respond(Answer::message(
        "Porto has a harbour view. From which date?",
    ));
    let r = a.respond("s", "A room in Porto").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 2));
    assert_eq!(r.message, "Porto has a harbour view. From which date?");
    let first = p.requests()[0].instructions();
    let second = p.last_request().unwrap().instructions();
    assert!(!first.contains("harbour"), "{first}");
    assert!(
        second.contains("SHOULD mention the harbour view"),
        "{second}"
    );

    // A city the rule does not hold for: the reply read ahead stands.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![harbour_flow()]);
    p.respond(Answer::message("From which date?").with_data(json!({"city": "Lisbon"})));
    let r = a.respond("s", "A room in Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
}
