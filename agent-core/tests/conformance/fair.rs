//! Session ids and lease waits, on every store (`fair_suite!`):
//!
//! - ids at the rule's limits (one byte, 2560 and 2561 bytes around the PostgreSQL
//!   hashing threshold, 3 KB and 4096 random bytes, multi-byte text) work through an
//!   agent and through the store's own methods (load, list, delete, leases, journal);
//! - ids the rule refuses (empty, 4097 bytes, NUL, a newline) fail at the agent with
//!   `InvalidSessionId` before the store is touched;
//! - waiters for a lease are served first come, first served: by the store (tickets,
//!   leaving the queue, expired tickets) and through agents on separate store handles
//!   (as separate processes), each arriving 120 ms after the previous one;
//! - every wait is bounded by `max_wait`, behind turns of the same agent too, and
//!   without a lease by `turn_timeout`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::error::SessionIdError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelResponse, ToolCall};
use agent_core::session::Session;
use agent_core::store::{
    JournalBegin, LeaseAttempt, LeaseConfig, QueuedAttempt, SessionStore, StoredSession,
};
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::{FnTool, ToolOutput};
use serde_json::json;

use super::{Backend, Fixture};
use crate::common::{Booking, Concierge};

type TestAgent = Agent<Booking, Concierge>;

/// Every case for a backend expression of type `Option<impl Backend>`.
macro_rules! fair_suite {
    ($backend:expr) => {
        $crate::conformance::fair::fair_suite!(@case ids_at_the_rules_limits_work_through_the_agent_and_the_store, $backend);
        $crate::conformance::fair::fair_suite!(@case ids_the_rule_refuses_fail_before_the_store_is_touched, $backend);
        $crate::conformance::fair::fair_suite!(@case the_store_serves_lease_waiters_first_come_first_served, $backend);
        $crate::conformance::fair::fair_suite!(@case turns_waiting_for_a_lease_run_in_the_order_they_arrived, $backend);
        $crate::conformance::fair::fair_suite!(@case a_wait_behind_a_turn_of_the_same_agent_is_bounded_by_max_wait, $backend);
        $crate::conformance::fair::fair_suite!(@case without_a_lease_a_wait_in_the_process_is_bounded_by_turn_timeout, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::fair::$name(&b).await;
            }
        }
    };
}
pub(crate) use fair_suite;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Text that does not compress (PostgreSQL compresses index entries that do): hex of
/// a simple generator.
fn random_id(len: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = String::with_capacity(len);
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push(char::from(b"0123456789abcdef"[(x & 0xf) as usize]));
    }
    s
}

/// A handle on the fixture's store as another process would open it (the same
/// value for the memory store).
async fn handle(b: &impl Backend, fx: &Fixture) -> Arc<dyn SessionStore> {
    if b.name() == "memory" {
        fx.store.clone()
    } else {
        b.reopen(&fx.token).await
    }
}

/// An agent without flows: every message makes the model call the tool `work`
/// (which takes `work` long), then answer "ok".
fn agent(
    store: Arc<dyn SessionStore>,
    work: Duration,
    lease: Option<LeaseConfig>,
    turn_timeout: Option<Duration>,
) -> TestAgent {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::from_fn(|_| {
            Ok(ModelResponse {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "work".into(),
                    arguments: json!({}),
                }],
                usage: Default::default(),
                finish: Default::default(),
                id: None,
            })
        }),
    );
    p.default_answer(CallKind::ToolRound, Answer::message("ok"));
    let tool = FnTool::<Booking, Concierge>::raw(
        "work",
        "Do the work.",
        json!({"type": "object", "properties": {}}),
        move |_cx, _args| async move {
            tokio::time::sleep(work).await;
            Ok(ToolOutput::text("done"))
        },
    );
    Agent::builder()
        .name("Concierge")
        .provider(p)
        .store_arc(store)
        .tool(tool)
        .config(AgentConfig {
            lease,
            turn_timeout,
            tool_timeout: None,
            ..AgentConfig::default()
        })
        .build()
        .unwrap()
}

fn lease(max_wait: Duration) -> LeaseConfig {
    LeaseConfig {
        ttl: Duration::from_secs(5),
        max_wait,
        ..LeaseConfig::default()
    }
}

/// The user messages of a stored session, in order.
async fn said(store: &Arc<dyn SessionStore>, id: &str) -> Vec<String> {
    let raw = store.load(id).await.unwrap().unwrap();
    let s = Session::<Booking, Concierge>::decode(&raw).unwrap();
    s.history
        .iter()
        .filter(|m| m.role == agent_core::provider::Role::User)
        .map(|m| m.authored().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------

pub async fn ids_at_the_rules_limits_work_through_the_agent_and_the_store(b: &impl Backend) {
    let fx = b.create().await;
    let name = b.name();
    let max = agent_core::store::MAX_SESSION_ID_BYTES;
    let around = agent_core::store::HASHED_ABOVE_BYTES;
    let multibyte = "é".repeat(max / 2);
    let ids = [
        "x".to_owned(),
        random_id(around, 1),
        random_id(around + 1, 2),
        random_id(3 * 1024, 3),
        random_id(max, 4),
        multibyte,
        // Long and compressible: the same character repeated.
        "a".repeat(max),
    ];
    let a = agent(
        fx.store.clone(),
        Duration::ZERO,
        Some(lease(ms(5000))),
        None,
    );
    for id in &ids {
        agent_core::store::check_session_id(id).unwrap();
        let what = format!("{name}: id of {} bytes", id.len());
        let r = a
            .respond(id, "first")
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r.version, 1, "{what}");
        let r = a.respond(id, "second").await.unwrap();
        assert_eq!(r.version, 2, "{what}");
        assert_eq!(said(&fx.store, id).await, ["first", "second"], "{what}");
        assert_eq!(a.session(id).await.unwrap().unwrap().id, *id, "{what}");
        // The store's own methods take it too: leases and the journal.
        let l = match fx.store.try_acquire_lease(id, "probe", ms(500)).await {
            Ok(LeaseAttempt::Acquired(l)) => l,
            other => panic!("{what}: {other:?}"),
        };
        assert_eq!(l.session_id, *id);
        fx.store.renew_lease(&l).await.unwrap();
        let raw = fx.store.load(id).await.unwrap().unwrap();
        assert_eq!(raw.id, *id, "{what}");
        let next = StoredSession {
            version: 3,
            ..raw.clone()
        };
        fx.store.save_leased(next, 2, &l).await.unwrap();
        assert!(fx.store.release_lease(&l).await.unwrap(), "{what}");
        assert_eq!(
            fx.store.journal_begin(id, "k", "pay", 1).await.unwrap(),
            JournalBegin::Started,
            "{what}"
        );
        fx.store.journal_finish(id, "k", b"paid").await.unwrap();
        assert_eq!(
            fx.store.journal_begin(id, "k", "pay", 2).await.unwrap(),
            JournalBegin::Done(b"paid".to_vec()),
            "{what}"
        );
    }
    let mut listed: Vec<String> = fx
        .store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    listed.sort();
    let mut want: Vec<String> = ids.to_vec();
    want.sort();
    assert_eq!(listed, want, "{name}: list returns the ids themselves");
    for id in &ids {
        assert!(a.delete_session(id).await.unwrap(), "{name}");
        assert!(fx.store.load(id).await.unwrap().is_none(), "{name}");
        // The journal went with the session.
        assert_eq!(
            fx.store.journal_begin(id, "k", "pay", 3).await.unwrap(),
            JournalBegin::Started,
            "{name}"
        );
    }
}

pub async fn ids_the_rule_refuses_fail_before_the_store_is_touched(b: &impl Backend) {
    let fx = b.create().await;
    let name = b.name();
    let a = agent(
        fx.store.clone(),
        Duration::ZERO,
        Some(lease(ms(5000))),
        None,
    );
    let too_long = "y".repeat(agent_core::store::MAX_SESSION_ID_BYTES + 1);
    let cases: [(&str, SessionIdError); 4] = [
        ("", SessionIdError::Empty),
        (
            &too_long,
            SessionIdError::TooLong {
                len: too_long.len(),
                limit: agent_core::store::MAX_SESSION_ID_BYTES,
            },
        ),
        ("a\0b", SessionIdError::ControlCharacter { at: 1, code: 0 }),
        (
            "line\n",
            SessionIdError::ControlCharacter { at: 4, code: 10 },
        ),
    ];
    for (id, want) in cases {
        let err = a.respond(id, "hello").await.unwrap_err();
        assert_eq!(err, AgentError::InvalidSessionId(want), "{name}: {id:?}");
        assert!(!err.to_string().is_empty());
        let err = a.dispatch(id, Directive::complete()).await.unwrap_err();
        assert_eq!(err, AgentError::InvalidSessionId(want), "{name}: {id:?}");
        let err = a.session(id).await.unwrap_err();
        assert_eq!(err, AgentError::InvalidSessionId(want), "{name}: {id:?}");
        let err = a.delete_session(id).await.unwrap_err();
        assert_eq!(err, AgentError::InvalidSessionId(want), "{name}: {id:?}");
        let mut events = a.respond_stream(id, "hello");
        let mut last = None;
        while let Some(e) = futures::StreamExt::next(&mut events).await {
            last = Some(e);
        }
        assert!(
            matches!(last, Some(agent_core::response::Event::Error(AgentError::InvalidSessionId(w))) if w == want),
            "{name}: {id:?}"
        );
    }
    assert!(fx.store.list().await.unwrap().is_empty(), "{name}: stored");
    // Nothing holds a lease: a valid id goes through at once.
    let started = Instant::now();
    a.respond("ok", "hello").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
}

// ---------------------------------------------------------------------------------
// Waits
// ---------------------------------------------------------------------------------

fn waiting(a: &QueuedAttempt) -> (Option<u64>, u64) {
    match a {
        QueuedAttempt::Waiting { ticket, ahead, .. } => (*ticket, *ahead),
        other => panic!("expected to wait, got {other:?}"),
    }
}

pub async fn the_store_serves_lease_waiters_first_come_first_served(b: &impl Backend) {
    let fx = b.create().await;
    let s = &fx.store;
    let name = b.name();
    assert!(s.supports_lease_queue(), "{name}");
    let id = "fair";
    let live = Duration::from_secs(2);
    let holder = match s.try_acquire_lease(id, "holder", ms(5000)).await.unwrap() {
        LeaseAttempt::Acquired(l) => l,
        other => panic!("{other:?}"),
    };
    // Three waiters draw tickets in order; each sees the ones before it.
    let first = s
        .acquire_lease_queued(id, "first", ms(5000), None, live)
        .await
        .unwrap();
    let (t1, ahead) = waiting(&first);
    let t1 = t1.unwrap();
    assert_eq!(ahead, 0, "{name}");
    let (t2, ahead) = waiting(
        &s.acquire_lease_queued(id, "second", ms(5000), None, live)
            .await
            .unwrap(),
    );
    let t2 = t2.unwrap();
    assert_eq!(ahead, 1, "{name}");
    let (t3, ahead) = waiting(
        &s.acquire_lease_queued(id, "third", ms(5000), None, live)
            .await
            .unwrap(),
    );
    let t3 = t3.unwrap();
    assert_eq!(ahead, 2, "{name}");
    assert!(t1 < t2 && t2 < t3, "{name}: {t1} {t2} {t3}");
    s.release_lease(&holder).await.unwrap();
    // Free, but the later waiters and a newcomer do not pass the first.
    for (t, who) in [(t3, "third"), (t2, "second")] {
        let got = s
            .acquire_lease_queued(id, who, ms(5000), Some(t), live)
            .await
            .unwrap();
        assert!(
            matches!(got, QueuedAttempt::Waiting { .. }),
            "{name}: {who} passed the first waiter: {got:?}"
        );
    }
    assert!(matches!(
        s.try_acquire_lease(id, "plain", ms(5000)).await.unwrap(),
        LeaseAttempt::Busy { .. }
    ));
    let (newcomer, ahead) = waiting(
        &s.acquire_lease_queued(id, "newcomer", ms(5000), None, live)
            .await
            .unwrap(),
    );
    let newcomer = newcomer.unwrap();
    assert_eq!(ahead, 3, "{name}");
    let l1 = match s
        .acquire_lease_queued(id, "first", ms(5000), Some(t1), live)
        .await
        .unwrap()
    {
        QueuedAttempt::Acquired(l) => l,
        other => panic!("{name}: the first waiter did not get the lease: {other:?}"),
    };
    assert!(l1.token > holder.token);
    // The second gives up: the third is next.
    s.leave_lease_queue(id, t2).await.unwrap();
    s.release_lease(&l1).await.unwrap();
    let (_, ahead) = waiting(
        &s.acquire_lease_queued(id, "newcomer", ms(5000), Some(newcomer), live)
            .await
            .unwrap(),
    );
    assert_eq!(ahead, 1, "{name}: the newcomer sits behind the third only");
    let l3 = match s
        .acquire_lease_queued(id, "third", ms(5000), Some(t3), live)
        .await
        .unwrap()
    {
        QueuedAttempt::Acquired(l) => l,
        other => panic!("{name}: {other:?}"),
    };
    s.leave_lease_queue(id, newcomer).await.unwrap();
    // A ticket not refreshed within its time to live no longer holds the queue.
    let (ghost, _) = waiting(
        &s.acquire_lease_queued(id, "ghost", ms(5000), None, ms(150))
            .await
            .unwrap(),
    );
    assert!(ghost.is_some(), "{name}");
    s.release_lease(&l3).await.unwrap();
    assert!(matches!(
        s.try_acquire_lease(id, "early", ms(5000)).await.unwrap(),
        LeaseAttempt::Busy { .. }
    ));
    tokio::time::sleep(ms(300)).await;
    assert!(
        matches!(
            s.try_acquire_lease(id, "after", ms(5000)).await.unwrap(),
            LeaseAttempt::Acquired(_)
        ),
        "{name}: an expired ticket still holds the queue"
    );
}

pub async fn turns_waiting_for_a_lease_run_in_the_order_they_arrived(b: &impl Backend) {
    let fx = b.create().await;
    let name = b.name();
    let id = "arrivals";
    let holder = match fx
        .store
        .try_acquire_lease(id, "holder", ms(10_000))
        .await
        .unwrap()
    {
        LeaseAttempt::Acquired(l) => l,
        other => panic!("{other:?}"),
    };
    // Five agents on their own store handles (as five processes), each turn arriving
    // 120 ms after the previous one, all waiting for the holder.
    let mut turns = Vec::new();
    for i in 0..5 {
        let a = agent(
            handle(b, &fx).await,
            Duration::ZERO,
            Some(lease(ms(10_000))),
            None,
        );
        turns.push(tokio::spawn(async move {
            a.respond(id, &format!("turn {i}")).await
        }));
        tokio::time::sleep(ms(120)).await;
    }
    fx.store.release_lease(&holder).await.unwrap();
    for t in turns {
        t.await.unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let order = said(&fx.store, id).await;
    let want: Vec<String> = (0..5).map(|i| format!("turn {i}")).collect();
    assert_eq!(order, want, "{name}: not first come, first served");
}

pub async fn a_wait_behind_a_turn_of_the_same_agent_is_bounded_by_max_wait(b: &impl Backend) {
    let fx = b.create().await;
    let name = b.name();
    // Turns take 1.5 s; a waiting turn of the same agent gives up after 300 ms.
    let a = agent(fx.store.clone(), ms(1500), Some(lease(ms(300))), None);
    let first = tokio::spawn({
        let a = a.clone();
        async move { a.respond("busy", "first").await }
    });
    tokio::time::sleep(ms(100)).await;
    let started = Instant::now();
    let err = a.respond("busy", "second").await.unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(&err, AgentError::SessionBusy { session_id, .. } if session_id == "busy"),
        "{name}: {err:?}"
    );
    assert!(
        waited >= ms(280) && waited < ms(1200),
        "{name}: waited {waited:?}"
    );
    assert_eq!(first.await.unwrap().unwrap().version, 1);
    assert_eq!(said(&fx.store, "busy").await, ["first"], "{name}");
}

pub async fn without_a_lease_a_wait_in_the_process_is_bounded_by_turn_timeout(b: &impl Backend) {
    let fx = b.create().await;
    let name = b.name();
    // Turns take 0.6 s of a 0.9 s limit, and the wait counts: a second turn queued
    // behind one for 0.55 s has 0.35 s left for its work and is stopped at 0.9 s
    // after it was asked, having changed nothing.
    let a = agent(fx.store.clone(), ms(600), None, Some(ms(900)));
    let one = tokio::spawn({
        let a = a.clone();
        async move { a.respond("queue", "one").await }
    });
    tokio::time::sleep(ms(50)).await;
    let started = Instant::now();
    let err = a.respond("queue", "two").await.unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&err, AgentError::TurnTimeout { .. }),
        "{name}: {err:?}"
    );
    assert!(took >= ms(850) && took < ms(1150), "{name}: {took:?}");
    one.await.unwrap().unwrap();
    assert_eq!(said(&fx.store, "queue").await, ["one"], "{name}");
}
