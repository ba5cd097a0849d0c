//! Re-runs of a turn whose save conflicted wait a jittered, exponentially growing
//! pause (`AgentConfig::conflict_backoff`), so writers racing on one session spread
//! out. Time is tokio's paused clock: the pauses are measured, never slept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_core::ConflictBackoff;
use agent_core::error::StoreError;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::store::{SessionInfo, StoredSession};
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use tokio::time::Instant;

/// A memory store whose first `conflicts` saves fail as if another writer had saved
/// first; it counts every save.
#[derive(Default)]
struct ContendedStore {
    inner: MemoryStore,
    conflicts: AtomicU32,
    saves: AtomicU32,
}

impl ContendedStore {
    fn new(conflicts: u32) -> Arc<Self> {
        let s = Self::default();
        s.conflicts.store(conflicts, Ordering::SeqCst);
        Arc::new(s)
    }
    fn saves(&self) -> u32 {
        self.saves.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl SessionStore for ContendedStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        self.inner.load(id).await
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        let lost = self
            .conflicts
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lost {
            return Err(StoreError::Conflict {
                session_id: session.id.clone(),
                expected,
                found: expected + 1,
            });
        }
        self.inner.save(session, expected).await
    }
    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.delete(id).await
    }
    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.inner.list().await
    }
    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        self.inner.prune(cutoff_ms).await
    }
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Notes {
    /// A note
    note: Option<String>,
}

fn agent(
    store: &Arc<ContendedStore>,
    conflict: ConflictPolicy,
    backoff: ConflictBackoff,
) -> Result<Agent<Notes, ()>, ConfigErrors> {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("ok"));
    Agent::builder()
        .provider(p)
        .store_arc(store.clone())
        .config(AgentConfig {
            conflict,
            conflict_backoff: backoff,
            ..AgentConfig::default()
        })
        .build()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// 10 ms doubling, at most 25 ms: re-runs wait 5–10, 10–20, then 12.5–25 ms.
const BACKOFF: ConflictBackoff = ConflictBackoff {
    base: Duration::from_millis(10),
    max: Duration::from_millis(25),
};

#[tokio::test(start_paused = true)]
async fn a_conflicting_turn_backs_off_between_re_runs_and_then_succeeds() {
    let store = ContendedStore::new(3);
    let a = agent(&store, ConflictPolicy::Retry(3), BACKOFF).unwrap();
    let t0 = Instant::now();
    let r = a.respond("s", "hi").await.unwrap();
    let waited = t0.elapsed();
    assert_eq!(r.message, "ok");
    assert_eq!(store.saves(), 4, "three lost saves, then one that held");
    assert!(
        waited >= Duration::from_micros(27_500) && waited <= ms(55),
        "paused {waited:?}: three growing pauses, each between half and all of its ceiling"
    );
}

#[tokio::test(start_paused = true)]
async fn a_conflicting_turn_with_an_event_id_backs_off_before_its_re_run() {
    let store = ContendedStore::new(1);
    let a = agent(&store, ConflictPolicy::Retry(3), BACKOFF).unwrap();
    let t0 = Instant::now();
    let r = a
        .respond_with("s", "hi", &TurnOptions::event("evt-1"))
        .await
        .unwrap();
    let waited = t0.elapsed();
    assert!(!r.duplicate);
    assert_eq!(store.saves(), 2);
    assert!(waited >= ms(5) && waited <= ms(10), "paused {waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_keeps_conflicting_still_fails_with_a_conflict_after_its_retries() {
    let store = ContendedStore::new(u32::MAX);
    let a = agent(&store, ConflictPolicy::Retry(2), BACKOFF).unwrap();
    let t0 = Instant::now();
    let err = a.respond("s", "hi").await.unwrap_err();
    let waited = t0.elapsed();
    assert!(
        matches!(err, AgentError::Store(StoreError::Conflict { .. })),
        "{err:?}"
    );
    assert_eq!(store.saves(), 3, "the first run and two re-runs");
    assert!(waited >= ms(15) && waited <= ms(30), "paused {waited:?}");
    assert!(
        a.session("s").await.unwrap().is_none(),
        "nothing was written"
    );
}

#[tokio::test(start_paused = true)]
async fn conflict_fail_and_no_backoff_do_not_pause() {
    let store = ContendedStore::new(1);
    let a = agent(&store, ConflictPolicy::Fail, BACKOFF).unwrap();
    let t0 = Instant::now();
    assert!(a.respond("s", "hi").await.is_err());
    assert_eq!((store.saves(), t0.elapsed()), (1, Duration::ZERO));

    let store = ContendedStore::new(2);
    let a = agent(&store, ConflictPolicy::Retry(3), ConflictBackoff::NONE).unwrap();
    let t0 = Instant::now();
    a.respond("s", "hi").await.unwrap();
    assert_eq!((store.saves(), t0.elapsed()), (3, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_conflicting_dispatch_backs_off_too() {
    let store = ContendedStore::new(2);
    let a = agent(&store, ConflictPolicy::Retry(3), BACKOFF).unwrap();
    let t0 = Instant::now();
    a.dispatch("s", Directive::new()).await.unwrap();
    let waited = t0.elapsed();
    assert_eq!(store.saves(), 3);
    assert!(waited >= ms(15) && waited <= ms(30), "paused {waited:?}");
}

#[test]
fn a_backoff_base_longer_than_its_max_is_a_build_error() {
    let store = ContendedStore::new(0);
    let bad = ConflictBackoff {
        base: ms(100),
        max: ms(10),
    };
    let errs = agent(&store, ConflictPolicy::Retry(3), bad)
        .err()
        .unwrap()
        .0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].problem.contains("conflict_backoff"), "{errs:?}");
}
