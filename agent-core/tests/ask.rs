//! `ask`: a model step's question written by code from the data. The turn that
//! reaches the step sends it (no second call when the data landed further than the
//! model predicted); later messages at the step are the model's.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

const ASK: &str = "{guests} guests in {city}. Shall I book it?";

fn flow(ask: &str) -> Result<Flow<Booking, Concierge>, ConfigErrors> {
    Flow::builder("booking")
        .title("Hotel booking")
        .required(["city", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Summarise and ask the guest to confirm.")
                .ask(ask)
                .tool(book_room_tool().confirm(true))
                .requires_tool("book_room")
                .end(),
        )
        .build()
}

fn agent(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .flow(flow(ASK).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_turn_that_lands_on_the_step_sends_its_question_without_a_second_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // The model renders the step it predicted (ask_guests), but the data completes it:
    // the walk lands on confirm, whose question is code's.
    p.respond(
        Answer::message("Lisbon, lovely! How many guests?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 })),
    );
    let r = a.respond("s", "Lisbon, for two").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book it?");
    assert_eq!(r.model_calls, 1, "no call to render confirm");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(p.unused(), 0);
}

#[tokio::test]
async fn a_model_message_that_predicted_the_step_is_replaced_by_its_question() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(
        Answer::message("Booked you in Lisbon!")
            .with_data(json!({ "city": "Lisbon", "guests": 3 }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "A hotel in Lisbon for 3").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "3 guests in Lisbon. Shall I book it?");
    assert_eq!(r.model_calls, 1);
}

#[tokio::test]
async fn later_messages_at_the_step_are_the_models() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(
        Answer::message("Shall I?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 }))
            .claiming("confirm"),
    );
    a.respond("s", "A hotel in Lisbon for 2").await.unwrap();
    // The user asks something else: the model answers (and the step stays).
    // (Rendered again when the draft would end the flow without the booking.)
    p.default_answer(
        CallKind::Respond,
        Answer::message("Breakfast is included. Shall I book it?"),
    );
    let r = a.respond("s", "Is breakfast included?").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "Breakfast is included. Shall I book it?");
    // The reply the user read was the model's: the booking it asks for is summarised
    // by code first, and the yes to that books it with no call to judge it.
    p.respond(Answer::tool("book_room", json!({ "hotel": "grand" })));
    let r = a.respond("s", "Yes").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "Book the room: grand. Shall I go ahead?");
    p.respond(Answer::message("Done."));
    let r = a.respond("s", "Yes").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.model_calls, 1, "no judgement: only the outcome, told");
    assert!(r.message.starts_with("Done."), "{}", r.message);
}

#[tokio::test]
async fn a_turn_with_a_refused_value_keeps_the_models_message_with_the_reason() {
    let p = ScriptedProvider::new();
    let flow = Flow::<Booking, Concierge>::builder("booking")
        .required(["city"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .ask("How many guests in {city}?")
                .collect(["guests"])
                .end(),
        )
        .build()
        .unwrap();
    let a = Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .flow(flow)
        .constrain("guests", json!({ "minimum": 1, "maximum": 12 }))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // The turn reaches ask_guests, but the guests were refused: the reason is the
    // model's to tell (the question alone would hide it).
    p.respond(
        Answer::message("Lisbon for 40!").with_data(json!({ "city": "Lisbon", "guests": 40 })),
    );
    p.default_answer(
        CallKind::Respond,
        Answer::message("We take 1 to 12 guests. How many in Lisbon?"),
    );
    let r = a.respond("s", "Lisbon, 40 of us").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.data.guests, None);
    assert!(!r.rejected_data.is_empty(), "{r:?}");
    assert_eq!(r.message, "We take 1 to 12 guests. How many in Lisbon?");

    // Without a refusal, the same turn sends the question.
    p.respond(Answer::message("Which city?"));
    a.respond("t", "I need a hotel").await.unwrap();
    p.respond(Answer::message("Lisbon!").with_data(json!({ "city": "Lisbon" })));
    let r = a.respond("t", "Lisbon").await.unwrap();
    assert_eq!(r.message, "How many guests in Lisbon?");
}

#[test]
fn build_refuses_an_ask_naming_a_field_that_may_be_empty_or_unknown() {
    let e = flow("{hotel} in {city}, checking in {check_in}?").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("`{hotel}`, which is not a data field"),
        "{text}"
    );
    assert!(
        text.contains("`{check_in}`, which may be empty at this step"),
        "{text}"
    );
    let e = flow("Book {guests?").unwrap_err();
    assert!(
        e.to_string().contains("the ask template is malformed"),
        "{e}"
    );
}

#[test]
fn build_refuses_an_ask_on_a_step_without_a_model_call() {
    let e = Flow::<Booking, Concierge>::builder("f")
        .step(Step::auto("route").ask("Routing."))
        .build()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("`ask` on a step the model does not render"),
        "{e}"
    );
}
