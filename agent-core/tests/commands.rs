//! Commands: what the model read in a message, as typed items code applies in one
//! place; the older answer keys read as the same commands; each command that took
//! effect is listed in the response and, when it changes data or position, in the
//! directive chain with the source `command`.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::command::Command;
use agent_core::prelude::*;
use agent_core::response::DirectiveSource;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

fn sources(r: &AgentResponse<Booking>) -> Vec<String> {
    r.directive_chain
        .iter()
        .map(|e| e.source.to_string())
        .collect()
}

/// The booking agent (with `flows`), at the city question.
async fn at_ask_city(
    p: &ScriptedProvider,
    flows: Vec<Flow<Booking, Concierge>>,
) -> Agent<Booking, Concierge> {
    let routed = flows.len() > 1;
    let a = agent(p, flows);
    if routed {
        p.route(Answer::route("booking"));
    }
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I want to book a hotel").await.unwrap();
    a
}

#[tokio::test]
async fn value_commands_written_out_store_like_the_data_key_and_are_listed() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false)]).await;

    p.respond(
        Answer::message("Check-in date?")
            .command(Command::set_value("city", json!("Lisbon")).citing("Lisbon"))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.model_calls, 1);
    assert_eq!(
        r.commands,
        vec![Command::set_value("city", json!("Lisbon")).citing("Lisbon")]
    );
    let entry = r
        .directive_chain
        .iter()
        .find(|e| e.source == DirectiveSource::Command("set_value city".into()))
        .expect("the stored value is a directive of the command");
    assert_eq!(
        entry.directive.data,
        Some(json!({"city": "Lisbon"}).as_object().unwrap().clone())
    );

    // The same through the older `data` key: the same command, without the words.
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!(
        r.commands,
        vec![Command::set_value("check_in", json!("2026-07-01"))]
    );
    assert!(
        sources(&r).contains(&"command `set_value check_in`".to_owned()),
        "{:?}",
        sources(&r)
    );
}

#[tokio::test]
async fn a_value_the_words_do_not_show_is_held_for_a_yes_not_stored_or_listed() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false)]).await;
    // "Paris" is nowhere in what the user said.
    p.respond(
        Answer::message("Check-in date?")
            .command(Command::set_value("city", json!("Paris")))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "somewhere warm").await.unwrap();
    assert_eq!(r.data.city, None);
    assert!(r.commands.is_empty(), "{:?}", r.commands);
    assert_eq!(r.tentative.len(), 1, "{:?}", r.tentative);
    assert_eq!(r.message, "Just to check: city Paris. Is that right?");
    assert!(
        !sources(&r).iter().any(|s| s.contains("set_value")),
        "{:?}",
        sources(&r)
    );
}

#[tokio::test]
async fn a_value_that_replaces_a_stored_one_is_a_correction() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false)]).await;
    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.respond("s", "Lisbon").await.unwrap();
    // Called a plain set by the answer; it replaces Lisbon, so it is a correction.
    p.respond(
        Answer::message("Porto it is. Check-in date?")
            .command(Command::set_value("city", json!("Porto")).citing("Porto"))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "actually, Porto").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(
        r.commands,
        vec![Command::correct_value("city", json!("Porto")).citing("Porto")]
    );
    assert!(
        sources(&r).contains(&"command `correct_value city`".to_owned()),
        "{:?}",
        sources(&r)
    );
}

#[tokio::test]
async fn a_start_flow_command_moves_the_conversation_like_a_handoff() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false), feedback_flow()]).await;

    p.respond(
        Answer::message("Let me take your feedback instead.")
            .command(Command::start_flow("feedback")),
    );
    p.respond(Answer::message("How was your last stay?"));
    let r = a
        .respond("s", "actually I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.message, "How was your last stay?");
    assert_eq!(r.commands, vec![Command::start_flow("feedback")]);
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::Command("start_flow feedback".into())),
        "{:?}",
        sources(&r)
    );
}

#[tokio::test]
async fn a_start_flow_command_for_a_flow_the_agent_lacks_is_not_followed() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false), feedback_flow()]).await;

    p.respond(
        Answer::message("Which city, then?")
            .claiming("ask_city")
            .command(Command::start_flow("spa")),
    );
    let r = a.respond("s", "is there a spa?").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.message, "Which city, then?");
    assert_eq!(r.model_calls, 1);
    assert!(r.commands.is_empty(), "{:?}", r.commands);
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
}

#[tokio::test]
async fn an_unknown_command_is_a_malformed_answer_asked_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::raw(
        r#"{"data":{},"message":"Which city?","commands":[{"command":"book_everything"}]}"#,
    ));
    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "I want to book a hotel").await.unwrap();
    assert_eq!(r.message, "Which city?");
    assert_eq!(r.model_calls, 2, "the repair asked once");
    let repair = p.last_request().unwrap();
    let last = repair.messages.last().unwrap().content.to_string();
    assert!(last.contains("could not be used"), "{last}");
}

#[tokio::test]
async fn commands_are_kept_with_the_stored_answer_of_an_event() {
    let p = ScriptedProvider::new();
    let a = at_ask_city(&p, vec![booking_flow(false)]).await;
    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    let opts = TurnOptions::event("evt-1");
    let first = a.respond_with("s", "Lisbon", &opts).await.unwrap();
    let again = a.respond_with("s", "Lisbon", &opts).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.commands, first.commands);
    assert_eq!(
        first.commands,
        vec![Command::set_value("city", json!("Lisbon"))]
    );
}
