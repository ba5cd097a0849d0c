//! The test kit's `Conversation`: an answer queued for a turn and left unused fails
//! that turn with a list of what was left, instead of silently answering a later turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_core::error::{AgentError, ProviderError};
use agent_core::testing::{Answer, Conversation, ConversationError, ScriptedProvider};
use common::*;
use serde_json::json;

fn conversation() -> (Conversation<Booking, Concierge>, ScriptedProvider) {
    let p = ScriptedProvider::new();
    let conv = Conversation::new(agent(&p, vec![booking_flow(false)]), p.clone());
    (conv, p)
}

#[tokio::test]
async fn an_answer_left_unused_fails_its_turn_and_never_answers_a_later_one() {
    let (conv, p) = conversation();
    p.respond(Answer::message("Which city?"));
    p.respond(Answer::message("Stale answer").with_data(json!({ "city": "Oslo" })));
    let err = conv.say("I need a room").await.err();
    let Some(ConversationError::UnusedAnswers {
        unused,
        message,
        step,
    }) = err.clone()
    else {
        panic!("expected the unused answer to be reported, got {err:?}");
    };
    assert_eq!(
        unused,
        [r#"Respond: message "Stale answer" with data {"city":"Oslo"}"#]
    );
    assert_eq!(
        (message.as_str(), step.as_deref()),
        ("Which city?", Some("ask_city"))
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("1 scripted answer(s) queued for this turn were not used")
            && text.contains("Stale answer")
            && text.contains("queue_ahead"),
        "{text}"
    );

    // The leftover was dropped: the next turn gets the answer queued for it.
    assert_eq!(p.unused(), 0);
    p.respond(Answer::message("When?").with_data(json!({ "city": "Porto" })));
    conv.say("Porto")
        .await
        .unwrap()
        .expect_message("When?")
        .expect_data(|d| d.city.as_deref() == Some("Porto"));
}

#[tokio::test]
async fn queue_ahead_lets_answers_wait_for_later_turns() {
    let (conv, p) = conversation();
    let conv = conv.queue_ahead();
    p.respond(Answer::message("Which city?"));
    p.respond(Answer::message("When?").with_data(json!({ "city": "Porto" })));
    conv.say("I need a room")
        .await
        .unwrap()
        .expect_message("Which city?");
    assert_eq!(p.unused(), 1, "kept for the next turn");
    conv.say("Porto").await.unwrap().expect_message("When?");
}

#[tokio::test]
async fn a_failed_turn_returns_its_error_and_keeps_the_queue_for_a_retry() {
    let (conv, p) = conversation();
    p.respond(Answer::error(ProviderError::Network(
        "connection refused".into(),
    )));
    p.respond(Answer::message("Which city?"));
    let err = conv.say("I need a room").await.err();
    assert!(
        matches!(
            err,
            Some(ConversationError::Agent(AgentError::Provider { .. }))
        ),
        "{err:?}"
    );
    conv.say("I need a room")
        .await
        .unwrap()
        .expect_message("Which city?");
}
