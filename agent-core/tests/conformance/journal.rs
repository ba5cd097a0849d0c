//! The once-tool journal, on every store (`journal_suite!`) and across handles of the
//! durable ones (`journal_durable_suite!`):
//!
//! - a call's intent is written once: the next attempt finds it pending, then done
//!   with the exact result bytes; records are per session; `delete` drops a
//!   session's records and `prune` those whose intent is older than the cutoff;
//! - racing attempts of one call: exactly one starts it;
//! - agents: a turn that failed after its once-tool ran, delivered again to another
//!   agent over the same store, reuses the recorded result (the tool runs once);
//! - a reopened store (another process) finds the records.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::error::ProviderError;
use agent_core::prelude::*;
use agent_core::store::{JournalBegin, SessionStore};
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::json;

use super::Backend;
use crate::common::{Booking, Concierge};

/// Every journal test for a backend expression of type `Option<impl Backend>`.
macro_rules! journal_suite {
    ($backend:expr) => {
        $crate::conformance::journal::journal_suite!(@case a_call_is_started_once_then_pending_then_done, $backend);
        $crate::conformance::journal::journal_suite!(@case racing_attempts_of_one_call_start_it_exactly_once, $backend);
        $crate::conformance::journal::journal_suite!(@case a_failed_turn_delivered_again_to_another_agent_reuses_the_once_result, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::journal::$name(&b).await;
            }
        }
    };
}
pub(crate) use journal_suite;

/// The journal tests that need a store outliving its handle.
macro_rules! journal_durable_suite {
    ($backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_reopened_store_finds_the_journal() {
            if let Some(b) = $backend {
                $crate::conformance::journal::a_reopened_store_finds_the_journal(&b).await;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use journal_durable_suite;

pub async fn a_call_is_started_once_then_pending_then_done(b: &impl Backend) {
    let f = b.create().await;
    let s = f.store.as_ref();
    assert!(s.supports_journal(), "{}", b.name());
    let begin = |id: &'static str, at: u64| s.journal_begin(id, "k-1", "pay", at);
    assert_eq!(begin("s", 10).await.unwrap(), JournalBegin::Started);
    assert_eq!(
        begin("s", 20).await.unwrap(),
        JournalBegin::Pending { intent_ms: 10 },
        "an intent without a result"
    );
    assert_eq!(
        begin("t", 30).await.unwrap(),
        JournalBegin::Started,
        "per session"
    );
    assert_eq!(
        s.journal_begin("s", "k-2", "pay", 30).await.unwrap(),
        JournalBegin::Started,
        "per call key"
    );
    let bytes: Vec<u8> = (0u8..=255).collect();
    s.journal_finish("s", "k-1", &bytes).await.unwrap();
    assert_eq!(
        begin("s", 40).await.unwrap(),
        JournalBegin::Done(bytes.clone())
    );
    assert_eq!(
        begin("t", 40).await.unwrap(),
        JournalBegin::Pending { intent_ms: 30 }
    );

    // Deleting a session deletes its records.
    s.delete("s").await.unwrap();
    assert_eq!(begin("s", 50).await.unwrap(), JournalBegin::Started);
    assert_eq!(
        begin("t", 50).await.unwrap(),
        JournalBegin::Pending { intent_ms: 30 }
    );
    // Pruning drops records by the age of their intent.
    s.prune(40).await.unwrap();
    assert_eq!(
        begin("t", 60).await.unwrap(),
        JournalBegin::Started,
        "pruned"
    );
    assert_eq!(
        begin("s", 60).await.unwrap(),
        JournalBegin::Pending { intent_ms: 50 },
        "kept: newer than the cutoff"
    );
}

pub async fn racing_attempts_of_one_call_start_it_exactly_once(b: &impl Backend) {
    let f = b.create().await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = f.store.clone();
            tokio::spawn(async move { store.journal_begin("race", "k", "pay", 100 + i).await })
        })
        .collect();
    let mut started = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            JournalBegin::Started => started += 1,
            JournalBegin::Pending { intent_ms } => assert!((100..116).contains(&intent_ms)),
            JournalBegin::Done(_) => panic!("no result was written"),
        }
    }
    assert_eq!(
        started,
        1,
        "{}: exactly one attempt runs the call",
        b.name()
    );
}

fn charge(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool<Booking, Concierge>> {
    let runs = runs.clone();
    FnTool::new(
        "charge",
        "Charge the card.",
        move |_cx: ToolCx<Booking, Concierge>, _a: serde_json::Value| {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(ToolOutput::text(format!("charged, receipt R{n}"))) }
        },
    )
    .effect(agent_core::tool::Effect::Once)
    // The journal is tested here; the user's yes in `agreement.rs`.
    .confirm(false)
    .into_arc()
}

fn agent(
    p: &ScriptedProvider,
    store: Arc<dyn SessionStore>,
    runs: &Arc<AtomicUsize>,
) -> Agent<Booking, Concierge> {
    Agent::builder()
        .provider(p.clone())
        .store_arc(store)
        .tool(charge(runs))
        .build()
        .unwrap()
}

pub async fn a_failed_turn_delivered_again_to_another_agent_reuses_the_once_result(
    b: &impl Backend,
) {
    let f = b.create().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let p = ScriptedProvider::new();
    let first = agent(&p, f.store.clone(), &runs);
    p.respond(Answer::tool("charge", json!({ "cents": 500 })));
    p.tool_round(Answer::error(ProviderError::Other("process died".into())));
    let opts = TurnOptions::event("delivery-1");
    first
        .respond_with("s", "charge me", &opts)
        .await
        .unwrap_err();
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let second = agent(&p, f.store.clone(), &runs);
    p.respond(Answer::tool("charge", json!({ "cents": 500 })));
    p.tool_round(Answer::message("Done."));
    let r = second.respond_with("s", "charge me", &opts).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "{}: not charged twice",
        b.name()
    );
    assert_eq!(r.tool_calls[0].output, "charged, receipt R1");
}

pub async fn a_reopened_store_finds_the_journal(b: &impl Backend) {
    let f = b.create().await;
    f.store.journal_begin("s", "k", "pay", 10).await.unwrap();
    f.store.journal_begin("s", "k2", "pay", 10).await.unwrap();
    f.store.journal_finish("s", "k", b"done").await.unwrap();
    let other = b.reopen(&f.token).await;
    assert_eq!(
        other.journal_begin("s", "k", "pay", 20).await.unwrap(),
        JournalBegin::Done(b"done".to_vec())
    );
    assert_eq!(
        other.journal_begin("s", "k2", "pay", 20).await.unwrap(),
        JournalBegin::Pending { intent_ms: 10 }
    );
}
