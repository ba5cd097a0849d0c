//! The session-store conformance suite: one set of behaviours every `SessionStore`
//! must show, run against each store by a `tests/store_*.rs` file:
//!
//! ```ignore
//! mod common;
//! mod conformance;
//! conformance::suite!(backend());          // every store
//! conformance::durable_suite!(backend());  // stores that outlive the process
//! ```
//!
//! `backend()` returns `Option<impl Backend>`: `None` (after printing why) skips the
//! suite, e.g. when the server's URL is not set.
//!
//! What is pinned: bit-identical round trips (pending directive and signal state
//! included); the compare-and-swap; 50 concurrent turns on one session through one
//! and through several agents (as separate processes would be) losing no update,
//! with `ConflictPolicy::Retry` re-running and `ConflictPolicy::Fail` reporting a
//! typed conflict, never last-write-wins; a duplicate inbound event advancing the
//! session once even when the copies reach different agents at the same time; a
//! failed turn leaving the stored session untouched; flow-version changes detected
//! and migrated; a save cancelled mid-flight, or a process killed (SIGKILL) while
//! saving, leaving the old or the new session, never a mix; list, delete, prune;
//! sessions with 10k history items.
//!
//! One file over 600 lines: the conformance suite is one macro expanded once per store, so every store runs exactly the same cases.

#![allow(
    dead_code,
    unused_macros,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::missing_panics_doc
)]

use std::any::Any;
use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_core::TurnOptions;
use agent_core::error::StoreError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, Message, ToolCall};
use agent_core::session::{ProcessedEvent, Session};
use agent_core::signal::SignalState;
use agent_core::store::{SessionStore, StoredSession};
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use serde_json::json;

use crate::common::{Booking, Concierge, booking_flow};

pub mod compat;
pub mod fair;
pub mod journal;
pub mod lease;
pub mod once_reuse;

/// A store under test, isolated from every other test's (own file, table or prefix).
pub struct Fixture {
    /// The store.
    pub store: Arc<dyn SessionStore>,
    /// Reopens the same store from another handle or process ([`Backend::reopen`]).
    pub token: String,
    /// Dropped with the fixture (e.g. removes a temporary file).
    pub guard: Option<Box<dyn Any + Send + Sync>>,
}

/// How the suite gets stores of one kind.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Store name, for messages.
    fn name(&self) -> &'static str;
    /// A new, empty, isolated store.
    async fn create(&self) -> Fixture;
    /// A new handle on the store of a fixture, as another process would open it
    /// (durable stores only).
    async fn reopen(&self, token: &str) -> Arc<dyn SessionStore>;
}

/// Print a line that is shown even though libtest captures test output.
pub fn notice(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// A unique suffix for names of files, tables and key prefixes.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Every test of the suite for a backend expression of type `Option<impl Backend>`.
macro_rules! suite {
    ($backend:expr) => {
        $crate::conformance::suite!(@case round_trip_is_bit_identical, $backend);
        $crate::conformance::suite!(@case save_is_a_compare_and_swap_on_the_version, $backend);
        $crate::conformance::suite!(@case racing_saves_of_one_version_have_exactly_one_winner, $backend);
        $crate::conformance::suite!(@case fifty_concurrent_turns_through_one_agent_lose_no_update, $backend);
        $crate::conformance::suite!(@case fifty_concurrent_turns_through_several_agents_lose_no_update, $backend);
        $crate::conformance::suite!(@case concurrent_turns_with_conflict_fail_get_typed_conflicts_never_overwrites, $backend);
        $crate::conformance::suite!(@case a_duplicate_inbound_event_advances_the_session_once, $backend);
        $crate::conformance::suite!(@case duplicates_reaching_several_agents_at_once_advance_once, $backend);
        $crate::conformance::suite!(@case a_failed_turn_leaves_the_stored_session_unchanged, $backend);
        $crate::conformance::suite!(@case an_incompatible_flow_change_is_reported_then_migrated, $backend);
        $crate::conformance::suite!(@case a_save_cancelled_mid_flight_leaves_old_or_new_state, $backend);
        $crate::conformance::suite!(@case list_delete_and_prune, $backend);
        $crate::conformance::suite!(@case large_sessions_round_trip_and_take_turns, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::$name(&b).await;
            }
        }
    };
}
pub(crate) use suite;

/// The tests that need a store outliving its handle and its process.
macro_rules! durable_suite {
    ($backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_reopened_store_returns_the_saved_sessions() {
            if let Some(b) = $backend {
                $crate::conformance::a_reopened_store_returns_the_saved_sessions(&b).await;
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_process_killed_during_save_leaves_old_or_new_state() {
            if let Some(b) = $backend {
                $crate::conformance::a_process_killed_during_save_leaves_old_or_new_state(
                    &b,
                    "a_process_killed_during_save_leaves_old_or_new_state",
                )
                .await;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use durable_suite;

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

type TestAgent = Agent<Booking, Concierge>;

fn stored(id: &str, version: u64, updated_ms: u64, bytes: &[u8]) -> StoredSession {
    StoredSession {
        id: id.into(),
        version,
        updated_ms,
        bytes: bytes.to_vec(),
    }
}

/// An agent without flows that answers every turn with "ok".
fn chat_agent(
    p: &ScriptedProvider,
    store: &Arc<dyn SessionStore>,
    conflict: ConflictPolicy,
) -> TestAgent {
    p.default_answer(CallKind::Respond, Answer::message("ok"));
    Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .store_arc(store.clone())
        .config(AgentConfig {
            conflict,
            // These tests pin the compare-and-swap, the second line of defence: the
            // lease (which queues the turns instead) is tested in `lease.rs`.
            lease: None,
            ..AgentConfig::default()
        })
        .build()
        .unwrap()
}

/// A session with every part of the state set: data, context, position, history with
/// tool calls and non-ASCII text, summary, a pending directive, signal bookkeeping,
/// processed events, flow version.
fn rich_session(id: &str) -> Session<Booking, Concierge> {
    let mut s: Session<Booking, Concierge> = Session::new(
        id,
        Concierge {
            tier: "gold ✨".into(),
        },
        1_700_000_000_123,
    );
    s.version = 7;
    s.data.city = Some("Lisboa — São Bento".into());
    s.data.guests = Some(3);
    s.flow = Some("booking".into());
    s.step = Some("ask_date".into());
    s.completed_flows = vec!["feedback".into()];
    s.history = vec![
        Message::user("Quero um quarto em Lisboa 🏨\n\"quoted\" \\ back\u{0}slash"),
        Message {
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "book_room".into(),
                arguments: json!({"hotel": "Pestana", "nested": {"n": [1, 2.5, null]}}),
            }],
            ..Message::assistant("")
        },
        Message::tool("call_1", "booked BK-7"),
        Message::assistant("Which date?"),
    ];
    s.summary = Some("The guest wants Lisbon.".into());
    s.pending = Some(
        Directive::go_to_step_in("booking", "ask_guests")
            .data(
                json!({"check_in": "2026-07-01"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
            .reply("Let's pick up where we left off.")
            .because("dispatched by a webhook"),
    );
    s.signals = BTreeMap::from([
        (
            "frustrated".to_string(),
            SignalState {
                fired: 2,
                last_fired_ms: 1_700_000_000_100,
            },
        ),
        (
            "vip".to_string(),
            SignalState {
                fired: 1,
                last_fired_ms: 5,
            },
        ),
    ]);
    s.turns = 6;
    s.flow_version = Some("f00dfeed".into());
    s.events = vec![ProcessedEvent {
        id: "evt-1".into(),
        response: json!({"message": "Which date?", "version": 7}),
    }];
    s.updated_ms = 1_700_000_000_456;
    s
}

const CRASH_ID: &str = "crash";
const CRASH_ITEMS: usize = 2_000;
const WRITER_ENV: &str = "AGENT_CONFORMANCE_WRITER";

/// A session whose every part says which version it is, so a torn write shows.
fn versioned(id: &str, version: u64, items: usize) -> StoredSession {
    let mut s: Session<Booking, Concierge> = Session::new(id, Concierge::default(), 1);
    s.version = version;
    s.turns = version;
    s.updated_ms = 1_000 + version;
    s.data.booking_id = Some(format!("v{version}"));
    s.history = (0..items)
        .map(|i| Message::user(format!("v{version} item {i} {}", "x".repeat(200))))
        .collect();
    s.encode().unwrap()
}

/// Decode a `versioned` session and check it is one whole version; its version.
fn check_versioned(stored: &StoredSession, items: usize) -> u64 {
    let s = Session::<Booking, Concierge>::decode(stored)
        .unwrap_or_else(|e| panic!("the stored session does not decode (torn write?): {e}"));
    let v = stored.version;
    let tag = format!("v{v} ");
    assert_eq!(s.turns, v, "turns and version disagree");
    assert_eq!(
        stored.updated_ms,
        1_000 + v,
        "updated_ms and version disagree"
    );
    assert_eq!(s.data.booking_id, Some(format!("v{v}")));
    assert_eq!(s.history.len(), items, "history was cut");
    assert!(
        s.history.iter().all(|m| m.content.starts_with(&tag)),
        "history mixes versions"
    );
    v
}

fn jitter(max_micros: u64) -> Duration {
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or(0);
    Duration::from_micros(n % max_micros.max(1))
}

async fn load(store: &Arc<dyn SessionStore>, id: &str) -> Option<StoredSession> {
    store.load(id).await.unwrap()
}

// ---------------------------------------------------------------------------------
// Round trips and the compare-and-swap
// ---------------------------------------------------------------------------------

/// What is saved is what is loaded, byte for byte, and decodes to an equal session,
/// pending directive and signal state included; ids and bytes of any kind survive.
pub async fn round_trip_is_bit_identical(b: &impl Backend) {
    let fx = b.create().await;
    let store = &fx.store;

    let id = "ü/é:\"quoted\" 'single'; DROP TABLE x; -- {tag} *?";
    let session = rich_session(id);
    let enc = session.encode().unwrap();
    store.save(enc.clone(), 0).await.unwrap();
    let got = load(store, id).await.expect("saved session is missing");
    assert_eq!(got, enc, "{}: stored bytes differ", b.name());
    let back = Session::<Booking, Concierge>::decode(&got).unwrap();
    assert_eq!(back, session);
    assert_eq!(back.pending, session.pending, "pending directive");
    assert_eq!(back.signals, session.signals, "signal state");
    assert_eq!(
        back.encode().unwrap().bytes,
        enc.bytes,
        "re-encoding differs"
    );

    // Raw bytes of every value, and no bytes at all.
    let all: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    store.save(stored("binary", 1, 42, &all), 0).await.unwrap();
    assert_eq!(load(store, "binary").await.unwrap().bytes, all);
    store.save(stored("empty", 1, 0, b""), 0).await.unwrap();
    assert_eq!(load(store, "empty").await.unwrap().bytes, b"");
    assert!(load(store, "missing").await.is_none());

    // A session that went through a real agent: a dispatched (pending) directive.
    let p = ScriptedProvider::new();
    let a: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("agent", "hi").await.unwrap();
    a.dispatch(
        "agent",
        Directive::go_to_step("ask_guests").reply("How many?"),
    )
    .await
    .unwrap();
    let s = a.session("agent").await.unwrap().unwrap();
    assert!(s.pending.is_some());
    let raw = load(store, "agent").await.unwrap();
    assert_eq!(s.encode().unwrap().bytes, raw.bytes);
}

/// `save` with the wrong expected version changes nothing and reports what it found.
pub async fn save_is_a_compare_and_swap_on_the_version(b: &impl Backend) {
    let fx = b.create().await;
    let store = &fx.store;
    store.save(stored("a", 1, 10, b"one"), 0).await.unwrap();

    let err = store
        .save(stored("a", 1, 11, b"other"), 0)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            session_id: "a".into(),
            expected: 0,
            found: 1
        },
        "{}: creating an existing session",
        b.name()
    );
    let err = store
        .save(stored("a", 6, 11, b"stale"), 5)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            session_id: "a".into(),
            expected: 5,
            found: 1
        }
    );
    assert_eq!(load(store, "a").await.unwrap(), stored("a", 1, 10, b"one"));

    store.save(stored("a", 2, 20, b"two"), 1).await.unwrap();
    assert_eq!(load(store, "a").await.unwrap(), stored("a", 2, 20, b"two"));
    // The old expected version no longer matches.
    let err = store
        .save(stored("a", 2, 21, b"late"), 1)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { found: 2, .. }),
        "{err:?}"
    );

    // A missing session has version 0.
    let err = store.save(stored("b", 4, 1, b"x"), 3).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            session_id: "b".into(),
            expected: 3,
            found: 0
        }
    );
    assert!(load(store, "b").await.is_none());

    // After a delete the id can be created again.
    assert!(store.delete("a").await.unwrap());
    store.save(stored("a", 1, 30, b"again"), 0).await.unwrap();
    assert_eq!(load(store, "a").await.unwrap().bytes, b"again");
}

/// Sixteen writers racing to replace (or create) the same version: one wins, the
/// others get a conflict, and the stored bytes are the winner's.
pub async fn racing_saves_of_one_version_have_exactly_one_winner(b: &impl Backend) {
    let fx = b.create().await;
    let store = fx.store.clone();
    store.save(stored("s", 1, 1, b"base"), 0).await.unwrap();
    for (id, expected) in [("s", 1u64), ("new", 0)] {
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let store = store.clone();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    let body = format!("writer {i}");
                    barrier.wait().await;
                    let r = store
                        .save(stored(id, expected + 1, 2, body.as_bytes()), expected)
                        .await;
                    (body, r)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            let (body, r) = t.await.unwrap();
            match r {
                Ok(()) => winners.push(body),
                Err(StoreError::Conflict {
                    expected: e, found, ..
                }) => {
                    assert_eq!((e, found), (expected, expected + 1));
                }
                Err(other) => panic!("{}: unexpected {other:?}", b.name()),
            }
        }
        assert_eq!(winners.len(), 1, "{}: winners {winners:?}", b.name());
        let got = load(&store, id).await.unwrap();
        assert_eq!(got.version, expected + 1);
        assert_eq!(got.bytes, winners[0].as_bytes());
    }
}

// ---------------------------------------------------------------------------------
// Single writer: concurrent turns
// ---------------------------------------------------------------------------------

/// Run `agents × per_agent` turns on one session at once, through `agents` agents
/// sharing the store; the results in message order.
async fn concurrent_turns(
    store: &Arc<dyn SessionStore>,
    agents: usize,
    per_agent: usize,
    conflict: ConflictPolicy,
) -> Vec<(String, Result<AgentResponse<Booking>, AgentError>)> {
    let p = ScriptedProvider::new();
    let list: Vec<TestAgent> = (0..agents)
        .map(|_| chat_agent(&p, store, conflict))
        .collect();
    let barrier = Arc::new(tokio::sync::Barrier::new(agents * per_agent));
    let tasks: Vec<_> = (0..agents * per_agent)
        .map(|i| {
            let a = list[i % agents].clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let text = format!("message {i}");
                barrier.wait().await;
                let r = a.respond("shared", &text).await;
                (text, r)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// Check that the stored session holds exactly the successful turns, once each.
async fn assert_no_lost_update(
    name: &str,
    store: &Arc<dyn SessionStore>,
    results: &[(String, Result<AgentResponse<Booking>, AgentError>)],
) {
    let ok: Vec<&String> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(t, _)| t)
        .collect();
    let mut versions: Vec<u64> = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().map(|r| r.version))
        .collect();
    versions.sort_unstable();
    let n = ok.len() as u64;
    assert_eq!(
        versions,
        (1..=n).collect::<Vec<u64>>(),
        "{name}: each successful turn saved its own version"
    );
    let raw = load(store, "shared").await.unwrap();
    let s = Session::<Booking, Concierge>::decode(&raw).unwrap();
    assert_eq!(s.turns, n, "{name}: turns lost");
    assert_eq!(s.version, n);
    assert_eq!(s.history.len() as u64, 2 * n, "{name}: history lost");
    for (text, r) in results {
        let count = s.history.iter().filter(|m| m.content == *text).count();
        let want = usize::from(r.is_ok());
        assert_eq!(count, want, "{name}: `{text}` appears {count} times");
    }
}

/// 50 turns at once through one agent (its per-session lock serializes them).
pub async fn fifty_concurrent_turns_through_one_agent_lose_no_update(b: &impl Backend) {
    let fx = b.create().await;
    let results = concurrent_turns(&fx.store, 1, 50, ConflictPolicy::Retry(3)).await;
    for (t, r) in &results {
        assert!(
            r.is_ok(),
            "{}: `{t}` failed: {:?}",
            b.name(),
            r.as_ref().err()
        );
    }
    assert_no_lost_update(b.name(), &fx.store, &results).await;
}

/// 50 turns at once through five agents sharing the store, as five processes would:
/// only the store's compare-and-swap keeps them apart; losers re-run on fresh state.
pub async fn fifty_concurrent_turns_through_several_agents_lose_no_update(b: &impl Backend) {
    let fx = b.create().await;
    let results = concurrent_turns(&fx.store, 5, 10, ConflictPolicy::Retry(10_000)).await;
    for (t, r) in &results {
        assert!(
            r.is_ok(),
            "{}: `{t}` failed: {:?}",
            b.name(),
            r.as_ref().err()
        );
    }
    assert_eq!(results.len(), 50);
    assert_no_lost_update(b.name(), &fx.store, &results).await;
}

/// With `ConflictPolicy::Fail`, a turn that lost the race fails with a typed conflict
/// and writes nothing; every successful turn is in the session (never last-write-wins).
pub async fn concurrent_turns_with_conflict_fail_get_typed_conflicts_never_overwrites(
    b: &impl Backend,
) {
    let fx = b.create().await;
    let results = concurrent_turns(&fx.store, 5, 10, ConflictPolicy::Fail).await;
    for (t, r) in &results {
        if let Err(e) = r {
            assert!(
                matches!(e, AgentError::Store(StoreError::Conflict { .. })),
                "{}: `{t}` failed with {e:?}, not a conflict",
                b.name()
            );
        }
    }
    let saved = results.iter().filter(|(_, r)| r.is_ok()).count();
    assert!(saved > 0);
    assert_no_lost_update(b.name(), &fx.store, &results).await;
    notice(&format!(
        "{}: 50 concurrent turns through 5 agents with ConflictPolicy::Fail: {saved} saved, {} typed conflicts, 0 lost",
        b.name(),
        results.len() - saved
    ));
}

// ---------------------------------------------------------------------------------
// Exactly-once turns
// ---------------------------------------------------------------------------------

/// A repeated inbound event id returns the stored response and does not advance the
/// session; the stored bytes do not change.
pub async fn a_duplicate_inbound_event_advances_the_session_once(b: &impl Backend) {
    let fx = b.create().await;
    let p = ScriptedProvider::new();
    let a = chat_agent(&p, &fx.store, ConflictPolicy::Retry(3));
    let first = a
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    assert!(!first.duplicate);
    let before = load(&fx.store, "s").await.unwrap();

    let again = a
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    assert!(again.duplicate, "{}: not flagged as a duplicate", b.name());
    assert_eq!((again.message.as_str(), again.version), ("ok", 1));
    assert_eq!(p.calls(), 1, "the duplicate made a model call");
    assert_eq!(load(&fx.store, "s").await.unwrap(), before, "bytes changed");

    // Another agent (another process) answers the duplicate from the store too.
    let other = chat_agent(&p, &fx.store, ConflictPolicy::Retry(3));
    let third = other
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    assert!(third.duplicate);
    assert_eq!(third.version, 1);
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!((s.turns, s.version, s.history.len()), (1, 1, 2));

    // A new event advances it.
    let next = other
        .respond_with("s", "again", &TurnOptions::event("evt-2"))
        .await
        .unwrap();
    assert!(!next.duplicate);
    assert_eq!(next.version, 2);
}

/// Eight copies of one event reaching four agents at the same time: one turn runs,
/// seven answers come from the store, the session advances once. Both for a new
/// session (the create path of the store) and an existing one (the update path).
pub async fn duplicates_reaching_several_agents_at_once_advance_once(b: &impl Backend) {
    let fx = b.create().await;
    let p = ScriptedProvider::new();
    let agents: Vec<TestAgent> = (0..4)
        .map(|_| chat_agent(&p, &fx.store, ConflictPolicy::Retry(100)))
        .collect();
    duplicates_at_once(b.name(), &agents, "evt-7", 1).await;
    duplicates_at_once(b.name(), &agents, "evt-8", 2).await;
    let s = agents[0].session("s").await.unwrap().unwrap();
    assert_eq!(s.events.len(), 2);
}

async fn duplicates_at_once(name: &str, agents: &[TestAgent], event: &'static str, version: u64) {
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let a = agents[i % 4].clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                a.respond_with("s", "hi", &TurnOptions::event(event)).await
            })
        })
        .collect();
    let mut fresh = 0;
    for t in tasks {
        let r = t.await.unwrap().unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!((r.message.as_str(), r.version), ("ok", version));
        if !r.duplicate {
            fresh += 1;
        }
    }
    assert_eq!(
        fresh, 1,
        "{name}: `{event}` advanced the session {fresh} times"
    );
    let s = agents[0].session("s").await.unwrap().unwrap();
    assert_eq!(
        (s.turns, s.version, s.history.len() as u64),
        (version, version, 2 * version)
    );
}

// ---------------------------------------------------------------------------------
// Atomic turns, flow versions
// ---------------------------------------------------------------------------------

/// A turn that fails (here: the provider has no answer) leaves the stored bytes as
/// they were, and does not consume its event id.
pub async fn a_failed_turn_leaves_the_stored_session_unchanged(b: &impl Backend) {
    let fx = b.create().await;
    let p = ScriptedProvider::new();
    let a: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(fx.store.clone())
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I want a room").await.unwrap();
    let before = load(&fx.store, "s").await.unwrap();

    let err = a
        .respond_with("s", "Lisbon", &TurnOptions::event("evt-9"))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Provider { .. }), "{err:?}");
    assert_eq!(
        load(&fx.store, "s").await.unwrap(),
        before,
        "{}: a failed turn changed the store",
        b.name()
    );

    p.respond(Answer::message("Check-in date?").with_data(json!({"city": "Lisbon"})));
    let r = a
        .respond_with("s", "Lisbon", &TurnOptions::event("evt-9"))
        .await
        .unwrap();
    assert!(!r.duplicate, "the failed attempt consumed the event id");
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.version, 2);
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

/// A session whose step disappeared from its flow is reported (and the store left
/// alone); a migration hook upgrades it and the upgraded session is saved.
pub async fn an_incompatible_flow_change_is_reported_then_migrated(b: &impl Backend) {
    let fx = b.create().await;
    let p = ScriptedProvider::new();
    let v1: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(fx.store.clone())
        .flow(two_step_flow("ask_date"))
        .build()
        .unwrap();
    // The first step is read ahead: one call stores the city and asks the date.
    p.respond(Answer::message("Which date?").with_data(json!({"city": "Lisbon"})));
    let r = v1.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(p.unused(), 0);
    let before = load(&fx.store, "s").await.unwrap();
    let stored_version = Session::<Booking, Concierge>::decode(&before)
        .unwrap()
        .flow_version;
    assert_eq!(
        stored_version.as_deref(),
        Some(v1.flows().next().unwrap().version())
    );

    let v2: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(fx.store.clone())
        .flow(two_step_flow("ask_check_in"))
        .build()
        .unwrap();
    let err = v2.respond("s", "July 1").await.unwrap_err();
    assert!(
        matches!(&err, AgentError::IncompatibleSession { problem, .. } if problem.contains("ask_date")),
        "{}: {err:?}",
        b.name()
    );
    assert_eq!(
        load(&fx.store, "s").await.unwrap(),
        before,
        "nothing written"
    );

    let migrating: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(fx.store.clone())
        .flow(two_step_flow("ask_check_in"))
        .migrate(|s, _| {
            s.step = Some("ask_check_in".into());
            Ok(())
        })
        .build()
        .unwrap();
    p.respond(Answer::message("Noted.").with_data(json!({"check_in": "2026-07-01"})));
    let r = migrating.respond("s", "July 1").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    let after =
        Session::<Booking, Concierge>::decode(&load(&fx.store, "s").await.unwrap()).unwrap();
    assert_eq!(after.version, 2);
    assert_ne!(after.flow_version, stored_version);
}

// ---------------------------------------------------------------------------------
// Crashes
// ---------------------------------------------------------------------------------

/// Saves of ~450 KB sessions cancelled (task aborted) at varying points: the store
/// always holds one whole version, and accepts the next compare-and-swap.
pub async fn a_save_cancelled_mid_flight_leaves_old_or_new_state(b: &impl Backend) {
    let fx = b.create().await;
    let items = CRASH_ITEMS;
    fx.store
        .save(versioned(CRASH_ID, 1, items), 0)
        .await
        .unwrap();
    let mut last = 1;
    for round in 0..12u64 {
        let store = fx.store.clone();
        let writer = tokio::spawn(async move {
            loop {
                let cur = store.load(CRASH_ID).await.unwrap().unwrap().version;
                let next = versioned(CRASH_ID, cur + 1, items);
                store.save(next, cur).await.unwrap();
                // A store that never awaits anything (memory) must still be abortable.
                tokio::task::yield_now().await;
            }
        });
        tokio::time::sleep(Duration::from_millis(1 + round % 4) + jitter(4_000)).await;
        writer.abort();
        let _ = writer.await;
        let got = load(&fx.store, CRASH_ID).await.unwrap();
        let v = check_versioned(&got, items);
        assert!(v >= last, "{}: went back from {last} to {v}", b.name());
        last = v;
    }
    // A save still in flight on a blocking thread may land after the abort: retry.
    let mut saved = false;
    for _ in 0..50 {
        let cur = load(&fx.store, CRASH_ID).await.unwrap().version;
        match fx.store.save(versioned(CRASH_ID, cur + 1, 1), cur).await {
            Ok(()) => {
                saved = true;
                break;
            }
            Err(StoreError::Conflict { .. }) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{}: {e:?}", b.name()),
        }
    }
    assert!(saved, "{}: the store no longer accepts saves", b.name());
}

/// The child side of [`a_process_killed_during_save_leaves_old_or_new_state`]: save
/// ever newer versions until killed (or a minute passes), announcing each save on
/// stdout (`WRITER saving V`, `WRITER saved V MICROS`) so the parent can aim its kill.
async fn writer_loop(b: &impl Backend, token: &str) {
    let store = b.reopen(token).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut cur = store.load(CRASH_ID).await.unwrap().map_or(0, |s| s.version);
    while Instant::now() < deadline {
        let next = versioned(CRASH_ID, cur + 1, CRASH_ITEMS);
        println!("WRITER saving {}", cur + 1);
        let t = Instant::now();
        store.save(next, cur).await.unwrap();
        println!("WRITER saved {} {}", cur + 1, t.elapsed().as_micros());
        cur += 1;
    }
}

/// A child process (this test binary, re-run with a writer flag) saves ~450 KB
/// sessions in a loop and is killed with SIGKILL at a random moment inside a save
/// (it announces each save; the kill comes 0..d after an announcement, d being its
/// typical save time); the store, opened afresh, holds one whole version and accepts
/// the next save. Six rounds.
pub async fn a_process_killed_during_save_leaves_old_or_new_state(b: &impl Backend, test: &str) {
    if let Ok(token) = std::env::var(WRITER_ENV) {
        writer_loop(b, &token).await;
        return;
    }
    let fx = b.create().await;
    fx.store
        .save(versioned(CRASH_ID, 1, CRASH_ITEMS), 0)
        .await
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut last = 1;
    let mut mid_save = 0;
    let mut landed_late = 0;
    for round in 0..6u64 {
        let mut child = Command::new(&exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(WRITER_ENV, &fx.token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("WRITER ") && tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Let the writer complete a few saves (learning how long one takes), then kill
        // it a random fraction of a save after it announces the next one.
        let warmup = 2 + round % 3;
        let mut saves = Vec::new();
        let started = Instant::now();
        let mut last_saving: u64;
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(line) => {
                    let parts: Vec<&str> = line.split(' ').collect();
                    match parts.as_slice() {
                        ["WRITER", "saved", _, micros] => {
                            saves.push(micros.parse::<u64>().unwrap())
                        }
                        ["WRITER", "saving", v] => {
                            last_saving = v.parse::<u64>().unwrap();
                            if saves.len() as u64 >= warmup {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    panic!(
                        "{}: the writer stopped announcing saves after {:?}: {err}",
                        b.name(),
                        started.elapsed()
                    );
                }
            }
        }
        saves.sort_unstable();
        let typical = saves[saves.len() / 2];
        std::thread::sleep(jitter(typical.max(1)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        // The last save the writer saw return; the one after it may or may not have
        // landed. Normally the kill comes during the save of `last_saving`.
        let acknowledged = rx
            .try_iter()
            .filter_map(|l| {
                l.strip_prefix("WRITER saved ")
                    .and_then(|r| r.split(' ').next())
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .max()
            .unwrap_or(last_saving - 1)
            .max(last_saving - 1);
        if acknowledged < last_saving {
            mid_save += 1;
        }

        let store = b.reopen(&fx.token).await;
        let got = store.load(CRASH_ID).await.unwrap().unwrap();
        let mut v = check_versioned(&got, CRASH_ITEMS);
        assert!(
            v == acknowledged || v == acknowledged + 1,
            "{}: the writer saw version {acknowledged} saved, the store holds {v}",
            b.name()
        );
        assert!(v >= last, "{}: went back from {last} to {v}", b.name());
        // The next compare-and-swap works (no stuck lock, no half transaction). A
        // server store may still finish a COMMIT the writer sent just before it died
        // (it is in the server's socket): that late save is the new state, whole.
        let mut late = false;
        loop {
            match store.save(versioned(CRASH_ID, v + 1, CRASH_ITEMS), v).await {
                Ok(()) => break,
                Err(StoreError::Conflict { found, .. })
                    if !late && v == acknowledged && found == v + 1 =>
                {
                    late = true;
                    landed_late += 1;
                    let got = store.load(CRASH_ID).await.unwrap().unwrap();
                    v = check_versioned(&got, CRASH_ITEMS);
                    assert_eq!(v, acknowledged + 1, "{}: the late save", b.name());
                }
                Err(e) => panic!("{}: after the crash: {e:?}", b.name()),
            }
        }
        last = v + 1;
    }
    notice(&format!(
        "{}: 6 writer processes killed (SIGKILL), {mid_save} before their save returned, {landed_late} of those saves landed after the kill; every time one whole version was stored",
        b.name()
    ));
}

/// What one handle saved, a new handle (a restarted process) loads.
pub async fn a_reopened_store_returns_the_saved_sessions(b: &impl Backend) {
    let fx = b.create().await;
    let enc = rich_session("durable").encode().unwrap();
    fx.store.save(enc.clone(), 0).await.unwrap();
    let other = b.reopen(&fx.token).await;
    assert_eq!(other.load("durable").await.unwrap(), Some(enc));
    assert_eq!(other.list().await.unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------
// Housekeeping, size
// ---------------------------------------------------------------------------------

/// `list` reports every session with its version and save time, sorted by id;
/// `delete` says whether it existed; `prune` deletes exactly the sessions last saved
/// before the cutoff.
pub async fn list_delete_and_prune(b: &impl Backend) {
    let fx = b.create().await;
    let store = &fx.store;
    assert!(store.list().await.unwrap().is_empty());
    store.save(stored("c", 1, 100, b"c"), 0).await.unwrap();
    store.save(stored("a", 1, 10, b"a"), 0).await.unwrap();
    store.save(stored("b", 1, 50, b"b"), 0).await.unwrap();
    store.save(stored("b", 2, 200, b"b2"), 1).await.unwrap();
    let listed: Vec<(String, u64, u64)> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.id, i.version, i.updated_ms))
        .collect();
    assert_eq!(
        listed,
        [
            ("a".to_string(), 1, 10),
            ("b".to_string(), 2, 200),
            ("c".to_string(), 1, 100)
        ],
        "{}",
        b.name()
    );

    assert_eq!(
        store.prune(100).await.unwrap(),
        1,
        "only `a` is older than 100"
    );
    assert!(load(store, "a").await.is_none());
    assert!(load(store, "c").await.is_some(), "the cutoff is exclusive");
    assert_eq!(store.prune(100).await.unwrap(), 0);

    assert!(store.delete("c").await.unwrap());
    assert!(!store.delete("c").await.unwrap());
    assert!(!store.delete("never").await.unwrap());
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids, ["b"]);

    // Many sessions: prune works past any internal batch size.
    for i in 0..1_200u64 {
        store
            .save(stored(&format!("bulk-{i:04}"), 1, i, b"x"), 0)
            .await
            .unwrap();
    }
    // bulk-0000 … bulk-1099 and `b` (saved at 200).
    assert_eq!(store.prune(1_100).await.unwrap(), 1_101);
    assert_eq!(store.list().await.unwrap().len(), 100);
    assert_eq!(store.prune(u64::MAX).await.unwrap(), 100);
    assert!(store.list().await.unwrap().is_empty());
}

/// A session with 10 000 history items round-trips bit-identically, takes a turn and
/// is saved again.
pub async fn large_sessions_round_trip_and_take_turns(b: &impl Backend) {
    let fx = b.create().await;
    let mut s = rich_session("large");
    s.version = 1;
    s.pending = None;
    s.step = Some("ask_city".into());
    s.flow_version = None;
    s.history = (0..10_000)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("user message {i}: Olá, quero reservar 🏨 #{i}"))
            } else {
                Message::assistant(format!(
                    "assistant answer {i}: Which city? {}",
                    "·".repeat(i % 40)
                ))
            }
        })
        .collect();
    let enc = s.encode().unwrap();
    let started = Instant::now();
    fx.store.save(enc.clone(), 0).await.unwrap();
    let got = load(&fx.store, "large").await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(got, enc, "{}: large session bytes differ", b.name());
    assert_eq!(Session::<Booking, Concierge>::decode(&got).unwrap(), s);
    notice(&format!(
        "{}: a session of 10k history items ({} KB) saved and loaded in {elapsed:?}",
        b.name(),
        enc.bytes.len() / 1024
    ));

    let p = ScriptedProvider::new();
    let a: TestAgent = Agent::builder()
        .provider(p.clone())
        .store_arc(fx.store.clone())
        .flow(booking_flow(false))
        .config(AgentConfig {
            history_token_budget: usize::MAX,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    let r = a.respond("large", "still here").await.unwrap();
    assert_eq!(r.version, 2);
    let after = a.session("large").await.unwrap().unwrap();
    assert_eq!(after.history.len(), 10_002);
    let ids: HashSet<String> = fx
        .store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert!(ids.contains("large"));
}
