//! The dialogue stack and the cancel pattern: a flow the model starts while another
//! is under way interrupts it, and the interrupted flow resumes at its step when the
//! other ends; a cancel stops the active flow, clears what only it collected, and
//! lets it start again.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::command::Command;
use agent_core::flow::Interruption;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::session::Interrupted;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

/// The booking flow waiting at `ask_date` (Lisbon stored), the feedback flow beside it.
async fn at_ask_date(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let a = agent(p, vec![booking_flow(false), feedback_flow()]);
    wait_at_ask_date(&a, p, "booking").await;
    a
}

#[tokio::test]
async fn an_interrupting_flow_ends_and_the_interrupted_one_asks_its_question_again() {
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    // The model hands over to feedback: booking waits on the stack at ask_date.
    p.respond(Answer::message("Sure.").switching_to("feedback"));
    p.respond(Answer::message("How did your last stay go?"));
    let r = a
        .respond("s", "before that, I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(
        s.stack,
        vec![Interrupted::new(
            "booking",
            Some("ask_date".into()),
            "feedback"
        )]
    );
    // Feedback completes: booking resumes at ask_date in the same turn, and asks.
    p.respond(Answer::message("Thanks for the feedback!").with_data(json!({"feedback": "great"})));
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "It was great").await.unwrap();
    assert_eq!(r.data.feedback.as_deref(), Some("great"));
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(
        r.data.city.as_deref(),
        Some("Lisbon"),
        "kept while it waited"
    );
    assert!(
        r.message.ends_with("When do you check in?"),
        "{}",
        r.message
    );
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.stack.is_empty());
    assert!(s.completed_flows.contains(&"feedback".to_owned()));
}

#[tokio::test]
async fn a_plain_cancel_stops_the_flow_clears_its_values_and_it_can_start_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Lisbon it is. When do you check in?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.respond("s", "A hotel in Lisbon").await.unwrap();
    p.respond(Answer::message("Sure.").command(Command::cancel_flow()));
    let r = a.respond("s", "cancel").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "booking".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(r.data.city, None, "what only the flow collected is cleared");
    assert_eq!(
        r.message,
        "Okay, I've stopped hotel booking. Is there anything else I can help with?"
    );
    assert!(r.commands.contains(&Command::cancel_flow()));
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source
                == agent_core::directive::DirectiveSource::Command("cancel_flow".into())),
        "{:?}",
        r.directive_chain
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.completed_flows.is_empty(), "cancelled is not completed");

    // Asked again, the flow starts over.
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "I need a hotel after all").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_city"));
}

#[tokio::test]
async fn a_cancel_in_other_words_is_asked_about_and_stops_on_a_yes() {
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.respond(Answer::message("Alright.").command(Command::cancel_flow()));
    let r = a
        .respond("s", "I don't think I need a room anymore")
        .await
        .unwrap();
    assert_eq!(r.message, "Do you want to stop hotel booking?");
    assert_eq!(r.flow.as_deref(), Some("booking"), "not stopped yet");
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));

    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "booking".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(r.data.city, None);
    assert_eq!(r.model_calls, 0, "a plain yes is read by code");
}

#[tokio::test]
async fn asked_whether_to_stop_a_no_keeps_the_flow_and_the_message_is_read_as_usual() {
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.respond(Answer::message("Alright.").command(Command::cancel_flow()));
    a.respond("s", "hmm not sure about this").await.unwrap();
    p.agreement(false);
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "no, July 1st 2026 please").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert!(r.commands.contains(&Command::decline()));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.cancelling, None);
}

#[tokio::test]
async fn cancelling_an_interrupting_flow_resumes_the_interrupted_one() {
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.respond(Answer::message("Sure.").switching_to("feedback"));
    p.respond(Answer::message("How did your last stay go?"));
    a.respond("s", "I want to leave feedback").await.unwrap();
    p.respond(Answer::message("Okay.").command(Command::cancel_flow()));
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "never mind").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(
        r.message,
        "Okay, I've stopped feedback.\n\nWhen do you check in?"
    );
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
}

#[tokio::test]
async fn the_agents_own_branch_decides_over_the_built_in_cancel() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("booking")
        .title("Hotel booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .branch(Branch::to_step("goodbye").when("the user wants to cancel")),
        )
        .step(Step::reply("goodbye", "Cancelled by our own step. Bye!").end())
        .build()
        .unwrap();
    let a = agent(&p, vec![flow]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm")
            .data(json!({"city": "Rome"}).as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    p.respond(Answer::message("A room in Rome: shall I book it?"));
    a.respond("s", "hello?").await.unwrap();
    // The answer reads a cancel; the step's own condition, judged before the
    // built-in cancel acts, holds too.
    p.respond(
        Answer::message("Okay.")
            .judging("the user wants to cancel", true)
            .command(Command::cancel_flow()),
    );
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([("the user wants to cancel", true)]),
    );
    let r = a.respond("s", "cancel").await.unwrap();
    assert_eq!(r.message, "Cancelled by our own step. Bye!");
    assert!(!r.commands.contains(&Command::cancel_flow()));
}

#[tokio::test]
async fn past_the_stack_bound_a_flow_is_not_started_and_the_reply_says_so() {
    let p = ScriptedProvider::new();
    let a = agent_with(
        &p,
        vec![booking_flow(false), feedback_flow()],
        AgentConfig {
            max_interruptions: 0,
            ..AgentConfig::default()
        },
    );
    p.respond(Answer::message("Which city?"));
    a.dispatch("s", Directive::go_to("booking")).await.unwrap();
    a.respond("s", "a hotel").await.unwrap();
    p.respond(Answer::message("Sure.").switching_to("feedback"));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.model_calls, 1);
    assert_eq!(
        r.message,
        "Let's finish hotel booking first; then ask me again about feedback."
    );
}

#[tokio::test]
async fn the_answer_schema_asks_whether_the_user_cancels() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let req = p.last_request().unwrap();
    let schema = &req.output.as_ref().unwrap().schema;
    assert_eq!(schema["properties"]["cancel"], json!({"type": "boolean"}));
    let sys = req.system.to_string();
    assert!(sys.contains("Set `cancel` to true only when"), "{sys}");

    // The answer's key reads as the cancel command.
    p.respond(Answer::raw(
        json!({"cancel": true, "data": {}, "is_asking_for": "nothing_else", "message": "Okay."})
            .to_string(),
    ));
    let r = a.respond("s", "cancel").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "booking".into()
        }
    );
}

#[tokio::test]
async fn a_flow_that_ends_on_a_reply_step_hands_back_to_the_interrupted_one() {
    let p = ScriptedProvider::new();
    let support = Flow::builder("support")
        .title("Support")
        .when("the user wants to leave feedback")
        .step(
            Step::model("ask_feedback")
                .prompt("Ask for the feedback.")
                .collect(["feedback"]),
        )
        .step(
            Step::reply("logged", "Thanks, noted: {feedback}.")
                .requires(["feedback"])
                .end(),
        )
        .build()
        .unwrap();
    let a = agent(&p, vec![booking_flow(false), support]);
    p.respond(
        Answer::message("Lisbon it is. When do you check in?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.dispatch("s", Directive::go_to("booking")).await.unwrap();
    a.respond("s", "A hotel in Lisbon").await.unwrap();
    p.respond(Answer::message("Sure.").switching_to("support"));
    p.respond(Answer::message("What would you like to tell us?"));
    a.respond("s", "first some feedback").await.unwrap();
    // The answer lands on a reply step: the model only reads the message.
    p.extract(Answer::data(json!({"feedback": "great stay"})));
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "great stay").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_date")),
        "{r:?}"
    );
    assert_eq!(
        r.message,
        "Thanks, noted: great stay.\n\nWhen do you check in?"
    );
}

#[tokio::test]
async fn a_message_that_only_asks_to_stop_stops_even_when_the_model_missed_it() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Lisbon it is. When do you check in?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.respond("s", "A hotel in Lisbon").await.unwrap();
    // The model read nothing; code recognises the plain request to stop.
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "never mind").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "booking".into()
        }
    );
    // A message that also gives a value is not a plain stop.
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(Answer::message("When?").with_data(json!({"city": "Stop"})));
    let r = a.respond("s", "Stop").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
}

#[tokio::test]
async fn a_cancel_beside_a_new_flow_leaves_only_when_the_message_names_stopping() {
    // "Before that, ..." with a cancel read: the booking waits on the stack.
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.respond(
        Answer::message("Sure.")
            .switching_to("feedback")
            .command(Command::cancel_flow()),
    );
    p.respond(Answer::message("How did your last stay go?"));
    let r = a
        .respond("s", "before that, some feedback about my last stay")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.stack.len(), 1, "the booking waits");

    // "Forget the booking, ..." with a cancel read: it is left for good.
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.respond(
        Answer::message("Sure.")
            .switching_to("feedback")
            .command(Command::cancel_flow()),
    );
    p.respond(Answer::message("How did your last stay go?"));
    let r = a
        .respond("s", "forget the booking, I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.stack.is_empty(), "the booking was left");
}

/// ask_city → ask_date, with `interrupted` set on the flow and optionally on `ask_date`.
fn trip(flow: Interruption, at_date: Option<Interruption>) -> Flow<Booking, Concierge> {
    let mut ask_date = Step::model("ask_date")
        .prompt("Ask the check-in date.")
        .collect(["check_in"]);
    if let Some(i) = at_date {
        ask_date = ask_date.interrupted(i);
    }
    Flow::builder("trip")
        .title("Trip")
        .interrupted(flow)
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .step(ask_date)
        .build()
        .unwrap()
}

/// `trip` waiting at `ask_date` (Lisbon stored); the model then starts feedback.
async fn trip_interrupted(
    p: &ScriptedProvider,
    flow: Interruption,
    at_date: Option<Interruption>,
) -> Agent<Booking, Concierge> {
    let a = agent(p, vec![trip(flow, at_date), feedback_flow()]);
    wait_at_ask_date(&a, p, "trip").await;
    p.respond(Answer::message("Sure.").switching_to("feedback"));
    p.respond(Answer::message("How did your last stay go?"));
    let r = a.respond("s", "before that, some feedback").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    a
}

#[tokio::test]
async fn a_flow_that_restarts_when_interrupted_starts_over_with_its_values_cleared() {
    let p = ScriptedProvider::new();
    let a = trip_interrupted(&p, Interruption::Restart, None).await;
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.stack.len(), 1);
    assert!(
        s.stack[0].restart && s.stack[0].step.is_none(),
        "{:?}",
        s.stack
    );
    assert_eq!(
        s.data.city.as_deref(),
        Some("Lisbon"),
        "kept while it waits"
    );
    // Feedback completes: the trip resumes at its first step, Lisbon cleared.
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "great"})));
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "It was great").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("trip"));
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.data.city, None, "what only the trip collected is cleared");
    assert_eq!(
        r.data.feedback.as_deref(),
        Some("great"),
        "feedback's value stays"
    );
    assert!(r.message.ends_with("Which city?"), "{}", r.message);
}

#[tokio::test]
async fn a_step_says_what_an_interruption_there_does_over_the_flow() {
    // The flow resumes, but its `ask_date` step ends it when interrupted there.
    let p = ScriptedProvider::new();
    let a = trip_interrupted(&p, Interruption::Resume, Some(Interruption::End)).await;
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.stack.is_empty(), "ended, not waiting: {:?}", s.stack);
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "great"})));
    let r = a.respond("s", "It was great").await.unwrap();
    assert_eq!(r.flow, None, "nothing resumes");

    // The flow ends, but its `ask_date` step resumes.
    let p = ScriptedProvider::new();
    let a = trip_interrupted(&p, Interruption::End, Some(Interruption::Resume)).await;
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.stack.len(), 1);
    assert_eq!(s.stack[0].step.as_deref(), Some("ask_date"));
}

#[test]
fn build_refuses_an_interruption_policy_on_a_step_that_never_waits() {
    let err = Flow::<Booking, Concierge>::builder("trip")
        .step(Step::auto("start").interrupted(Interruption::Resume))
        .step(Step::reply("done", "Done.").interrupted(Interruption::End))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err.matches("`interrupted` on a step that never waits")
            .count(),
        2,
        "{err}"
    );
}

/// A paid trip: `pay` (a once-tool) at `confirm`, then a note.
fn paid_trip(
    after_tool: Option<&str>,
) -> Result<Flow<Booking, Concierge>, agent_core::error::ConfigErrors> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The hotel
        hotel: String,
    }
    let pay = FnTool::new(
        "pay",
        "Pay the room.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            Ok(ToolOutput::text(format!("paid {}", a.hotel))
                .data(json!({"booking_id": "BK-1"}).as_object().cloned().unwrap()))
        },
    )
    .effect(agent_core::tool::Effect::Once)
    // (The cancel after it ran is tested here; the user's yes in `agreement.rs`.)
    .confirm(false)
    .derived_args(["hotel"]);
    let mut f = Flow::builder("trip")
        .title("Trip")
        .cancel_clears(["booking_id"])
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm, then pay.")
                .tool(pay),
        )
        .step(
            Step::model("note")
                .prompt("Ask for feedback.")
                .collect(["feedback"]),
        );
    if let Some(t) = after_tool {
        f = f.cancel_after_tool(t);
    }
    f.build()
}

#[test]
fn build_refuses_a_flow_offering_a_once_tool_without_its_cancel_reply() {
    let err = paid_trip(None).err().unwrap().to_string();
    assert!(err.contains("offers the once-tool `pay`"), "{err}");
    assert!(err.contains("cancel_after_tool"), "{err}");
    let err = Flow::<Booking, Concierge>::builder("trip")
        .cancel_clears(["bookng_id"])
        .cancel_after_tool("Booking {booking_id} stays.")
        .step(Step::model("a").collect(["city"]))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`cancel_clears` names unknown field `bookng_id`"),
        "{err}"
    );
    assert!(err.contains("placeholder"), "{err}");
}

#[tokio::test]
async fn a_cancel_after_a_once_tool_ran_says_the_flows_reply_and_clears_what_it_declares() {
    const STAYS: &str = "Okay, I've stopped here. Your room stays paid.";
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![paid_trip(Some(STAYS)).unwrap()]);
    a.dispatch("s", Directive::go_to("trip")).await.unwrap();
    p.respond(
        Answer::message("Lisbon. Shall I pay the room?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));

    // Before the tool ran, a cancel says the built-in reply.
    let p2 = ScriptedProvider::new();
    let b = agent(&p2, vec![paid_trip(Some(STAYS)).unwrap()]);
    b.dispatch("s", Directive::go_to("trip")).await.unwrap();
    p2.respond(
        Answer::message("Lisbon. Shall I pay the room?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("confirm"),
    );
    b.respond("s", "Lisbon").await.unwrap();
    p2.respond(Answer::message("Okay."));
    let r = b.respond("s", "cancel").await.unwrap();
    assert!(
        r.message.starts_with("Okay, I've stopped trip."),
        "{}",
        r.message
    );

    // The user asks to pay: the once-tool runs, and the flow goes on to the note.
    p.respond(Answer::tool("pay", json!({"hotel": "Lisbon Inn"})));
    p.tool_round(Answer::message("Paid. Any feedback?").claiming("note"));
    let r = a.respond("s", "yes, pay the room").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-1"), "{}", r.message);
    assert_eq!(r.step.as_deref(), Some("note"));
    p.respond(Answer::message("Okay."));
    let r = a.respond("s", "cancel").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "trip".into()
        }
    );
    assert!(r.message.starts_with(STAYS), "{}", r.message);
    assert_eq!(r.data.booking_id, None, "declared in cancel_clears");
    assert_eq!(r.data.city, None);
}

// ---------------------------------------------------------------------------
// The digression check of small models (`ModelProfile::checks_digressions`)
// ---------------------------------------------------------------------------

/// A scripted small model whose sorting calls read an answer unless a test queues
/// another.
fn small() -> ScriptedProvider {
    let p = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    p.default_answer(CallKind::Route, Answer::raw(r#"{"about": "answer"}"#));
    p
}

#[tokio::test]
async fn on_a_small_model_a_message_sorted_as_another_flow_starts_it_without_the_flows_call() {
    let p = small();
    let a = at_ask_date(&p).await;
    p.clear_requests();
    p.route(Answer::route("feedback"));
    p.default_answer(
        CallKind::Respond,
        Answer::message("How did your last stay go?").claiming("ask_feedback"),
    );
    let r = a
        .respond("s", "hold on, I have something to say about my last stay")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    // The step it reached is asked by code on a small model, from the field's doc.
    assert_eq!(r.message, "Could you tell me the free-text feedback?");
    assert!(r.commands.contains(&Command::start_flow("feedback")));
    // One short call sorted the message; the booking's own call was not made.
    assert_eq!(p.calls_of(CallKind::Route), 1);
    let requests = p.requests();
    assert!(
        requests
            .iter()
            .filter(|r| r.kind == CallKind::Respond)
            .all(|r| !r.system.contains("Current task: Hotel booking")),
        "the booking did not read the message"
    );
    let sort = &requests[0];
    assert_eq!(sort.kind, CallKind::Route);
    assert!(sort.system.contains("date"), "{}", sort.system);
    assert!(sort.system.contains("feedback:"), "{}", sort.system);
    assert_eq!(sort.messages.len(), 1, "the message alone, not the history");
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(
        s.stack,
        vec![Interrupted::new(
            "booking",
            Some("ask_date".into()),
            "feedback"
        )]
    );
    // Feedback completes; the booking resumes at ask_date and asks again.
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "great"})));
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "It was great").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_date"))
    );
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
}

#[tokio::test]
async fn on_a_small_model_a_message_sorted_as_an_answer_is_read_by_the_flow() {
    let p = small();
    let a = at_ask_date(&p).await;
    p.clear_requests();
    p.route(Answer::raw(r#"{"about": "answer"}"#));
    p.respond(Answer::message("Noted.").with_data(json!({"check_in": "2026-07-01"})));
    p.default_answer(CallKind::Respond, Answer::message("Shall I book it?"));
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(p.calls_of(CallKind::Route), 1);
    assert!(
        !r.commands
            .iter()
            .any(|c| matches!(c, Command::StartFlow { .. }))
    );
}

/// The concierge with no flow under way, routed by the reply with no flow
/// (`Router::SchemaIntent`), which a small model's sorting call stands in for.
fn opening_agent(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    use agent_core::codeflow::{Fallback, Router};
    Agent::builder()
        .provider(p.clone())
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .flow(booking_flow(false))
        .flow(feedback_flow())
        .router(Router::SchemaIntent {
            fallback: Fallback::Classic,
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn on_a_small_model_a_flow_the_first_message_is_sorted_to_reads_that_message() {
    // The sorting call reads the values with the pick: the flow starts with them, and
    // code asks the next question, in that one call.
    let p = small();
    let a = opening_agent(&p);
    p.route(Answer::raw(
        r#"{"about": "booking", "data": {"city": "Porto", "check_in": null, "guests": 2, "feedback": null}}"#,
    ));
    let r = a
        .respond("s", "A room in Porto for 2 people please")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.data.guests, Some(2));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert!(r.commands.contains(&Command::start_flow("booking")));
    assert_eq!(r.model_calls, 1);
    let sort = &p.requests()[0];
    assert!(sort.system.contains("write in `data`"), "{}", sort.system);

    // A message that asks something is read by the flow's own call, which answers
    // it: the values it gives are stored in the turn the flow starts, and the
    // question asked is the next one's, not the city's.
    let p = small();
    let a = opening_agent(&p);
    p.route(Answer::raw(r#"{"about": "booking", "data": {"city": null, "check_in": null, "guests": null, "feedback": null}}"#));
    p.respond(
        Answer::message("Yes, Porto has rooms.").with_data(json!({"city": "Porto", "guests": 2})),
    );
    let r = a
        .respond("s", "Any rooms in Porto for 2 people?")
        .await
        .unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.data.guests, Some(2));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(p.calls_of(CallKind::Route), 1);
    assert_eq!(
        r.model_calls, 2,
        "the sort, then the flow's call that reads"
    );
}

#[tokio::test]
async fn on_a_small_model_a_message_that_is_nothing_but_the_answer_costs_the_sorting_call_alone() {
    // The sorting call reads the asked field with the pick; the message says nothing
    // else, so the value is stored and code asks the next question: one call.
    let p = small();
    let a = at_ask_date(&p).await;
    p.clear_requests();
    p.route(Answer::raw(
        r#"{"about": "answer", "data": {"check_in": "2026-07-01"}}"#,
    ));
    let r = a.respond("s", "July 1st, please").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.model_calls, 1);
    assert!(
        r.commands
            .iter()
            .any(|c| matches!(c, Command::SetValue { field, .. } if field == "check_in")),
        "{:?}",
        r.commands
    );
    // The instructions are those of the sort without values (the pick is made as
    // before); only the answer's schema carries the asked field, after the pick.
    let sort = &p.requests()[0];
    assert!(!sort.system.contains("`data`"), "{}", sort.system);
    let schema = &sort.output.as_ref().unwrap().schema;
    assert!(
        schema["properties"]["data"]["properties"]["check_in"].is_object(),
        "{schema}"
    );
    assert!(
        schema["properties"]["data"]["properties"]["guests"].is_null(),
        "{schema}"
    );

    // A message that says more than the answer is read by the flow's own call too,
    // with the conversation: what else it says is stored, not lost.
    let p = small();
    let a = at_ask_date(&p).await;
    p.route(Answer::raw(
        r#"{"about": "answer", "data": {"check_in": "2026-07-01"}}"#,
    ));
    p.respond(Answer::message("Noted.").with_data(json!({"check_in": "2026-07-01", "guests": 3})));
    p.default_answer(CallKind::Respond, Answer::message("Shall I book it?"));
    p.clear_requests();
    let r = a
        .respond("s", "July 1st, and we will be three")
        .await
        .unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.data.guests, Some(3));
    assert_eq!(p.calls_of(CallKind::Route), 1);
    let read = &p.requests()[1];
    assert_eq!(
        read.kind,
        CallKind::Respond,
        "the flow's call read the message"
    );

    // A value the message alone does not show (said in another turn, or not at
    // all) is the flow's call's to read, as before.
    let p = small();
    let a = at_ask_date(&p).await;
    p.route(Answer::raw(
        r#"{"about": "answer", "data": {"check_in": "2026-07-02"}}"#,
    ));
    p.respond(Answer::message("Noted.").with_data(json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn an_unreadable_sorting_answer_leaves_the_message_to_the_flow() {
    let p = small();
    let a = at_ask_date(&p).await;
    p.clear_requests();
    p.route(Answer::raw("not json"));
    p.default_answer(CallKind::Respond, Answer::message("When do you check in?"));
    let r = a.respond("s", "hmm").await.unwrap();
    assert_eq!(p.calls_of(CallKind::Route), 1);
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
}

#[tokio::test]
async fn no_sorting_call_on_a_capable_model_for_a_plain_yes_a_stop_or_a_step_that_branches() {
    // Capable: the flow's own call judges hand-overs.
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    p.default_answer(CallKind::Respond, Answer::message("When do you check in?"));
    a.respond("s", "hold on, I have something to say")
        .await
        .unwrap();
    assert_eq!(p.calls_of(CallKind::Route), 0);
    // Small: a plain yes and a message that speaks of stopping are read without it.
    let p = small();
    let a = at_ask_date(&p).await;
    p.clear_requests();
    p.default_answer(CallKind::Respond, Answer::message("When do you check in?"));
    a.respond("s", "yes").await.unwrap();
    a.respond("s", "stop, never mind").await.unwrap();
    assert_eq!(p.calls_of(CallKind::Route), 0);
    // Small: a step whose own branches judge conditions decides for itself.
    let p = small();
    let flow = Flow::builder("booking")
        .title("Hotel booking")
        .when("the user wants to book a hotel room")
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"])
                .branch(Branch::to_flow("feedback").when("the user is unhappy")),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask the date.")
                .collect(["check_in"]),
        )
        .build()
        .unwrap();
    let a = agent(&p, vec![flow, feedback_flow()]);
    a.dispatch("s", Directive::go_to("booking")).await.unwrap();
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([("the user is unhappy", false)]),
    );
    a.respond("s", "hello").await.unwrap();
    let r = a.respond("s", "hmm, something else first").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(p.calls_of(CallKind::Route), 0);
}

// ---------------------------------------------------------------------------
// Clarification: two flows fit
// ---------------------------------------------------------------------------

fn complaint_flow() -> Flow<Booking, Concierge> {
    Flow::builder("complaint")
        .title("Complaint")
        .when("the user wants to complain about a stay")
        .step(
            Step::model("ask_what")
                .prompt("Ask what went wrong.")
                .collect(["feedback"]),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn two_flows_that_fit_are_asked_about_and_none_starts_until_the_user_names_one() {
    let p = ScriptedProvider::new();
    let a = agent(
        &p,
        vec![booking_flow(false), feedback_flow(), complaint_flow()],
    );
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(
        Answer::message("Sure.")
            .switching_to("feedback")
            .command(Command::start_flow("complaint")),
    );
    let r = a
        .respond("s", "about my last stay, it was not great")
        .await
        .unwrap();
    assert_eq!(r.message, "Do you mean feedback or complaint?");
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_date"))
    );
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert!(
        r.commands
            .contains(&Command::clarify(["feedback", "complaint"]))
    );
    assert!(
        r.directive_chain
            .iter()
            .any(|d| d.source.to_string().contains("clarify feedback|complaint")),
        "{:?}",
        r.directive_chain
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.stack.is_empty(), "nothing was interrupted");
    // The user names one: it starts, and the booking waits.
    p.respond(Answer::message("Sorry to hear that.").switching_to("complaint"));
    p.respond(Answer::message("What went wrong?"));
    let r = a.respond("s", "a complaint").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("complaint"));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.stack.len(), 1);
}

#[tokio::test]
async fn the_agents_own_branch_decides_over_the_built_in_clarification() {
    let p = ScriptedProvider::new();
    let a = agent(
        &p,
        vec![booking_flow(true), feedback_flow(), complaint_flow()],
    );
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(
            json!({"city": "Rome", "check_in": "2026-07-01", "guests": 2})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    p.respond(Answer::message("A room in Rome: shall I book it?"));
    a.respond("s", "hello?").await.unwrap();
    // The answer starts two flows; the step's own condition holds too.
    p.respond(
        Answer::message("Sure.")
            .switching_to("feedback")
            .command(Command::start_flow("complaint"))
            .judging("the user wants to leave feedback", true),
    );
    p.default_answer(
        CallKind::Classify,
        Answer::verdicts([("the user wants to leave feedback", true)]),
    );
    p.default_answer(CallKind::Respond, Answer::message("How did it go?"));
    let r = a
        .respond("s", "first some feedback about my stay")
        .await
        .unwrap();
    assert!(!r.message.starts_with("Do you mean"), "{}", r.message);
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert!(
        !r.commands
            .iter()
            .any(|c| matches!(c, Command::Clarify { .. }))
    );
}

#[tokio::test]
async fn a_cancel_read_in_the_message_that_started_the_flow_is_not_followed() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    // The message starts the booking; its call reads the city and, wrongly, a cancel.
    p.respond(
        Answer::message("When do you check in?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date")
            .command(Command::cancel_flow()),
    );
    let r = a.respond("s", "I need a hotel in Lisbon").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_date"))
    );
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_ne!(r.message, "Do you want to stop hotel booking?");
    assert!(!r.commands.contains(&Command::cancel_flow()));

    // A message that starts the flow and says to stop: the cancel is asked about.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Okay.").command(Command::cancel_flow()));
    let r = a
        .respond("s", "I need a hotel in Lisbon... no, forget it")
        .await
        .unwrap();
    assert_eq!(r.message, "Do you want to stop hotel booking?");
}

#[tokio::test]
async fn a_cancel_read_beside_a_value_the_message_gave_is_not_followed() {
    let p = ScriptedProvider::new();
    let a = at_ask_date(&p).await;
    // The answer reads the date and, wrongly, a cancel: the message is about the
    // booking's content, and the flow goes on.
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests")
            .command(Command::cancel_flow()),
    );
    let r = a.respond("s", "July 1st 2026").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("booking"), Some("ask_guests"))
    );
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.message, "How many guests?");
    assert!(!r.commands.contains(&Command::cancel_flow()));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.cancelling, None);

    // A value and words of stopping: the cancel is asked about.
    p.respond(
        Answer::message("Okay.")
            .with_data(json!({"guests": 2}))
            .command(Command::cancel_flow()),
    );
    let r = a
        .respond("s", "2 guests... actually no, forget it")
        .await
        .unwrap();
    assert_eq!(r.message, "Do you want to stop hotel booking?");
}
