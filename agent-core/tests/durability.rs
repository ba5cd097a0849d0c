//! Exactly-once turns (inbound event ids) and flow versions, on the memory store.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_core::TurnOptions;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::store::MemoryStore;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;

#[tokio::test]
async fn a_repeated_event_id_returns_the_stored_response_and_does_not_advance() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    let first = a
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = a
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.message, first.message);
    assert_eq!(again.version, first.version);
    assert_eq!(p.calls(), 1, "the duplicate made no model call");
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.turns, 1);
    assert_eq!(s.history.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_arriving_at_once_advance_the_session_once() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    let a = agent(&p, vec![booking_flow(false)]);
    let mut handles = Vec::new();
    for _ in 0..8 {
        let a = a.clone();
        handles.push(tokio::spawn(async move {
            a.respond_with("s", "hi", &TurnOptions::event("evt-7"))
                .await
                .unwrap()
        }));
    }
    let mut fresh = 0;
    for h in handles {
        if !h.await.unwrap().duplicate {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);
    assert_eq!(a.session("s").await.unwrap().unwrap().turns, 1);
    assert_eq!(p.calls(), 1);
}

#[tokio::test]
async fn turns_without_event_ids_are_not_deduplicated() {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::message("Which city?").claiming("ask_city"),
    );
    let a = agent(&p, vec![booking_flow(false)]);
    a.respond("s", "hi").await.unwrap();
    a.respond("s", "hi").await.unwrap();
    assert_eq!(a.session("s").await.unwrap().unwrap().turns, 2);
}

#[tokio::test]
async fn event_memory_is_bounded() {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::message("Which city?").claiming("ask_city"),
    );
    let a = Agent::builder()
        .provider(p.clone())
        .flow(booking_flow(false))
        .config(AgentConfig {
            remembered_events: 3,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    for i in 0..5 {
        a.respond_with("s", "hi", &TurnOptions::event(format!("e{i}")))
            .await
            .unwrap();
    }
    let s: agent_core::session::Session<Booking, Concierge> =
        a.session("s").await.unwrap().unwrap();
    let ids: Vec<&str> = s.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e2", "e3", "e4"]);
}

fn two_step_flow(second: &str) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .step(
            Step::model(second)
                .prompt("Ask the date.")
                .collect(["check_in"]),
        )
        .build()
        .unwrap()
}

async fn session_at_second_step(store: &Arc<MemoryStore>) {
    let p = ScriptedProvider::new();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(two_step_flow("ask_date"))
        .build()
        .unwrap();
    p.respond(Answer::message("?").with_data(serde_json::json!({"city": "Lisbon"})));
    p.respond(Answer::message("Which date?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(
        s.flow_version.as_deref(),
        Some(a.flows().next().unwrap().version())
    );
}

#[tokio::test]
async fn a_session_whose_step_disappeared_is_reported_not_corrupted() {
    let store = Arc::new(MemoryStore::new());
    session_at_second_step(&store).await;
    let before = agent_core::store::SessionStore::load(store.as_ref(), "s")
        .await
        .unwrap();

    let p = ScriptedProvider::new();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(two_step_flow("ask_check_in"))
        .build()
        .unwrap();
    let err = a.respond("s", "July 1").await.unwrap_err();
    match &err {
        AgentError::IncompatibleSession { problem, .. } => {
            assert!(problem.contains("ask_date"), "{problem}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("migrate"));
    assert_eq!(p.calls(), 0);
    let after = agent_core::store::SessionStore::load(store.as_ref(), "s")
        .await
        .unwrap();
    assert_eq!(before, after, "nothing was written");
}

#[tokio::test]
async fn a_migration_hook_upgrades_the_session() {
    let store = Arc::new(MemoryStore::new());
    session_at_second_step(&store).await;
    let p = ScriptedProvider::new();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(two_step_flow("ask_check_in"))
        .migrate(|s, change| {
            assert_eq!(change.flow, "booking");
            if s.step.as_deref() == Some("ask_date") {
                s.step = Some("ask_check_in".into());
                Ok(())
            } else {
                Err("unknown layout".into())
            }
        })
        .build()
        .unwrap();
    p.respond(Answer::message("Noted.").with_data(serde_json::json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    // The migrated step answered with its field: the flow completes.
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
}

#[tokio::test]
async fn a_compatible_change_keeps_the_conversation_going() {
    let store = Arc::new(MemoryStore::new());
    session_at_second_step(&store).await;
    let p = ScriptedProvider::new();
    let extended = Flow::builder("booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask the date.")
                .collect(["check_in"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many.")
                .collect(["guests"]),
        )
        .build()
        .unwrap();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(extended)
        .build()
        .unwrap();
    p.respond(
        Answer::message("How many?")
            .with_data(serde_json::json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
}

#[tokio::test]
async fn a_clearing_turn_keeps_its_event_so_a_redelivery_does_not_run_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    a.dispatch("s", Directive::abort_and_clear("forget me"))
        .await
        .unwrap();
    let first = a
        .respond_with("s", "forget me", &TurnOptions::event("gdpr-1"))
        .await
        .unwrap();
    assert!(matches!(first.stopped, StoppedReason::Aborted { .. }));
    let again = a
        .respond_with("s", "forget me", &TurnOptions::event("gdpr-1"))
        .await
        .unwrap();
    assert!(again.duplicate);
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.history.is_empty(), "erased");
    assert_eq!(s.turns, 0);
    assert_eq!(s.events.len(), 1);
    assert_eq!(
        p.calls(),
        1,
        "the clearing turn made no model call, the redelivery none"
    );
}
