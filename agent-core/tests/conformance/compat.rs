//! Sessions saved by earlier versions continue, on every store (`compat_suite!`).
//!
//! The fixtures (`tests/fixtures/sessions/*.json`) are the exact bytes the stores held
//! for the booking agent of `tests/common` after turns run by the engine at commit
//! 33d7bd2: awaiting the check-in date, at the confirmation, and after the booking
//! completed. Each is put into a fresh store as those bytes and the conversation goes
//! on with today's engine: a change to the stored session's shape that loses them
//! fails here. New stored fields must keep these loading (defaults), and CHANGELOG.md
//! lists them.

use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::store::{SessionStore, StoredSession};
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::json;

use super::Backend;
use crate::common::{Booking, Concierge, TODAY_MS, booking_flow, feedback_flow};

/// Every compatibility test for a backend expression of type `Option<impl Backend>`.
macro_rules! compat_suite {
    ($backend:expr) => {
        $crate::conformance::compat::compat_suite!(@case a_session_saved_awaiting_a_value_continues, $backend);
        $crate::conformance::compat::compat_suite!(@case a_session_saved_at_the_confirmation_books_on_yes, $backend);
        $crate::conformance::compat::compat_suite!(@case a_session_saved_after_completion_starts_another_flow, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::compat::$name(&b).await;
            }
        }
    };
}
pub(crate) use compat_suite;

/// The fixture `name`, put into a fresh store of `b` under the session id `s`, and the
/// booking agent over that store.
async fn restored(
    b: &impl Backend,
    name: &str,
    p: &ScriptedProvider,
) -> (Agent<Booking, Concierge>, super::Fixture) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions")
        .join(format!("{name}.json"));
    let bytes = std::fs::read(&path).unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let f = b.create().await;
    f.store
        .save(
            StoredSession {
                id: "s".into(),
                version: saved["version"].as_u64().unwrap(),
                updated_ms: saved["updated_ms"].as_u64().unwrap(),
                bytes,
            },
            0,
        )
        .await
        .unwrap();
    let store: Arc<dyn SessionStore> = f.store.clone();
    let agent = Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .flow(booking_flow(true))
        .flow(feedback_flow())
        .store_arc(store)
        .build()
        .unwrap();
    (agent, f)
}

pub async fn a_session_saved_awaiting_a_value_continues(b: &impl Backend) {
    let p = ScriptedProvider::new();
    let (a, _f) = restored(b, "awaiting_date", &p).await;
    let before = a.session("s").await.unwrap().unwrap();
    assert_eq!(
        (before.flow.as_deref(), before.step.as_deref()),
        (Some("booking"), Some("ask_date")),
        "{}",
        b.name()
    );
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"), "{}", b.name());
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.model_calls, 1);
    let after = a.session("s").await.unwrap().unwrap();
    assert_eq!(after.history.len(), 6);
    assert_eq!(after.version, before.version + 1);
}

pub async fn a_session_saved_at_the_confirmation_books_on_yes(b: &impl Backend) {
    let p = ScriptedProvider::new();
    let (a, _f) = restored(b, "at_confirmation", &p).await;
    p.respond(Answer::tool("book_room", json!({ "hotel": "Grand" })));
    p.tool_round(Answer::message("Booked! Your id is BK-5."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        },
        "{}",
        b.name()
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.data.guests, Some(2));
    assert!(r.tool_calls[0].ok);
}

pub async fn a_session_saved_after_completion_starts_another_flow(b: &impl Backend) {
    let p = ScriptedProvider::new();
    let (a, _f) = restored(b, "completed", &p).await;
    let before = a.session("s").await.unwrap().unwrap();
    assert_eq!(before.flow, None, "{}", b.name());
    assert_eq!(before.completed_flows, ["booking"]);
    p.route(Answer::route("feedback"));
    p.respond(Answer::message("How did the booking go?"));
    let r = a.respond("s", "I'd like to leave feedback").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("feedback"), Some("ask_feedback")),
        "{}",
        b.name()
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
}
