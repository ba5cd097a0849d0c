//! The session lease's configuration and its edges that do not depend on a store
//! (the store behaviours are in `conformance/lease.rs`, run by each `store_*.rs`):
//! defaults, settings refused at `build()`, a store without lease support (turns run
//! on the compare-and-swap alone), and a cancelled turn giving its lease back at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use agent_core::ConflictBackoff;
use agent_core::error::StoreError;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::store::{
    LeaseAttempt, LeaseConfig, MemoryStore, SessionInfo, SessionStore, StoredSession,
};
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::{FnTool, ToolOutput};
use async_trait::async_trait;
use serde_json::json;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Notes {
    /// A note
    note: Option<String>,
}

fn build(
    store: Arc<dyn SessionStore>,
    lease: Option<LeaseConfig>,
) -> Result<Agent<Notes, ()>, ConfigErrors> {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("ok"));
    Agent::builder()
        .name("Notes")
        .provider(p)
        .store_arc(store)
        .config(AgentConfig {
            lease,
            ..AgentConfig::default()
        })
        .build()
}

#[test]
fn the_lease_is_on_by_default_with_a_30_s_ttl_and_a_60_s_wait() {
    let l = AgentConfig::default().lease.unwrap();
    assert_eq!(l, LeaseConfig::default());
    assert_eq!(l.ttl, Duration::from_secs(30));
    assert_eq!(l.max_wait, Duration::from_secs(60));
    assert!(
        l.max_wait > l.ttl,
        "a waiting turn outlasts a crashed holder's lease"
    );
    assert!(l.poll.base <= l.poll.max);
}

#[test]
fn a_ttl_too_short_to_renew_and_a_poll_base_over_its_max_are_build_errors() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let bad = LeaseConfig {
        ttl: Duration::from_millis(5),
        poll: ConflictBackoff {
            base: Duration::from_millis(50),
            max: Duration::from_millis(10),
        },
        ..LeaseConfig::default()
    };
    let err = build(store.clone(), Some(bad)).err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("lease.ttl"), "{text}");
    assert!(text.contains("lease.poll.base"), "{text}");
    assert!(
        build(store.clone(), None).is_ok(),
        "no lease is a valid choice"
    );
    assert!(build(store, Some(LeaseConfig::default())).is_ok());
}

/// A store of another crate, written before leases: it implements only the five
/// original methods and counts saves.
#[derive(Default)]
struct Legacy {
    inner: MemoryStore,
    saves: AtomicU32,
}

#[async_trait]
impl SessionStore for Legacy {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        self.inner.load(id).await
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
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

#[tokio::test]
async fn a_store_without_lease_support_runs_turns_on_the_compare_and_swap() {
    let legacy = Arc::new(Legacy::default());
    assert!(!legacy.supports_leases());
    let err = legacy
        .try_acquire_lease("s", "me", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::LeasesUnsupported {
            session_id: "s".into()
        }
    );
    assert!(err.to_string().contains("lease = None"), "{err}");
    let a = build(legacy.clone(), Some(LeaseConfig::default())).unwrap();
    assert_eq!(a.respond("s", "hi").await.unwrap().version, 1);
    assert_eq!(a.respond("s", "again").await.unwrap().version, 2);
    a.dispatch("s", Directive::reset()).await.unwrap();
    assert_eq!(legacy.saves.load(Ordering::SeqCst), 3, "plain saves");
}

#[tokio::test]
async fn a_dispatch_waits_for_the_lease_like_a_turn() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let a = build(
        store.clone(),
        Some(LeaseConfig {
            max_wait: Duration::from_millis(100),
            ..LeaseConfig::default()
        }),
    )
    .unwrap();
    let LeaseAttempt::Acquired(other) = store
        .try_acquire_lease("s", "other", Duration::from_secs(30))
        .await
        .unwrap()
    else {
        panic!("free")
    };
    let err = a.dispatch("s", Directive::reset()).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::SessionBusy { session_id, .. } if session_id == "s"),
        "{err:?}"
    );
    assert!(store.load("s").await.unwrap().is_none(), "nothing saved");
    store.release_lease(&other).await.unwrap();
    a.dispatch("s", Directive::reset()).await.unwrap();
    assert_eq!(store.load("s").await.unwrap().unwrap().version, 1);
}

/// A turn dropped mid-way (the caller gave up, e.g. a closed HTTP request) releases
/// its lease in the background: the next turn does not wait for the 30 s ttl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_gives_its_lease_back_at_once() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let p = ScriptedProvider::new();
    p.respond(Answer::tool("hang", json!({})));
    p.default_answer(CallKind::Respond, Answer::message("ok"));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let hang = FnTool::<Notes, ()>::raw(
        "hang",
        "Never returns.",
        json!({"type": "object"}),
        move |_cx, _args| {
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(ToolOutput::text("never"))
            }
        },
    );
    let a: Agent<Notes, ()> = Agent::builder()
        .name("Notes")
        .provider(p)
        .store_arc(store.clone())
        .tool(hang)
        .config(AgentConfig {
            tool_timeout: None,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let turn = tokio::spawn({
        let a = a.clone();
        async move { a.respond("s", "hang").await }
    });
    started_rx.await.unwrap();
    assert!(matches!(
        store
            .try_acquire_lease("s", "probe", Duration::from_secs(1))
            .await
            .unwrap(),
        LeaseAttempt::Busy { .. }
    ));
    turn.abort();
    assert!(turn.await.unwrap_err().is_cancelled());
    let t = Instant::now();
    let r = a.respond("s", "next").await.unwrap();
    assert_eq!(r.version, 1, "the cancelled turn saved nothing");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// A lease held for ever (a ttl too long to represent) is busy, never a panic.
#[tokio::test]
async fn a_lease_without_end_keeps_the_session_busy() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let LeaseAttempt::Acquired(_forever) = store
        .try_acquire_lease("s", "forever", Duration::MAX)
        .await
        .unwrap()
    else {
        panic!("free")
    };
    let a = build(
        store.clone(),
        Some(LeaseConfig {
            max_wait: Duration::from_millis(30),
            ..LeaseConfig::default()
        }),
    )
    .unwrap();
    let err = a.respond("s", "hi").await.unwrap_err();
    assert!(
        matches!(&err, AgentError::SessionBusy { holder: Some(h), .. } if h == "forever"),
        "{err:?}"
    );
}

#[test]
fn session_busy_names_the_session_the_wait_and_the_holder() {
    let e = AgentError::SessionBusy {
        session_id: "s-1".into(),
        waited: Duration::from_secs(60),
        holder: Some("Concierge/pid7/abc".into()),
    };
    let text = e.to_string();
    assert!(text.contains("`s-1`") && text.contains("60s"), "{text}");
    assert!(
        text.contains("Concierge/pid7/abc") && text.contains("max_wait"),
        "{text}"
    );
    let lost = StoreError::LeaseLost {
        session_id: "s-1".into(),
        token: 4,
        current: Some(9),
    };
    assert!(lost.to_string().contains("token 4") && lost.to_string().contains("current token 9"));
}
