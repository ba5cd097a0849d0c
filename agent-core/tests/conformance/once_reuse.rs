//! A once-tool's journaled result reused on a session that moved on, on every store
//! (`once_reuse_suite!`): nothing another turn saved and acknowledged is lost.
//!
//! The tool appends an item to a list field (its write is the whole list, computed
//! on the data it saw). Holder A runs it and journals the result, then freezes (a
//! store handle that stops answering after the journal write, renewals included:
//! the process is stalled, simulated in-process with a lease of 300 ms); B saves
//! "after" in between; A resumes. Then:
//!
//! - with leases: A's save is refused (`LeaseLost`); the same event delivered again
//!   reuses the result (the tool does not run again) but does not apply it: the turn
//!   fails with `OnceResultStale`, which carries the journaled output, and the list
//!   keeps "after"; with an `on_stale_once_result` hook the result is merged
//!   (`[before, after, held turn]`);
//! - without leases, `ConflictPolicy::Retry`: A's save conflicts and its re-run
//!   reuses the result: the same `OnceResultStale`, "after" kept;
//! - without leases, `ConflictPolicy::Fail`: A's conflict says the effect happened
//!   (`ConflictAfterEffects` with the journaled output), not a bare `Conflict`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::error::StoreError;
use agent_core::journal::StaleOnceResult;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelResponse, Role, ToolCall};
use agent_core::store::{
    JournalBegin, Lease, LeaseAttempt, LeaseConfig, QueuedAttempt, SessionInfo, StoredSession,
};
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{Backend, Fixture};

/// Every case for a backend expression of type `Option<impl Backend>`.
macro_rules! once_reuse_suite {
    ($backend:expr) => {
        $crate::conformance::once_reuse::once_reuse_suite!(@case a_redelivered_once_result_on_a_session_saved_since_keeps_what_was_saved, $backend);
        $crate::conformance::once_reuse::once_reuse_suite!(@case a_redelivered_stale_once_result_is_merged_by_the_hook, $backend);
        $crate::conformance::once_reuse::once_reuse_suite!(@case without_a_lease_a_re_run_after_a_conflict_keeps_what_was_saved, $backend);
        $crate::conformance::once_reuse::once_reuse_suite!(@case a_conflict_after_a_once_effect_says_the_effect_happened, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::once_reuse::$name(&b).await;
            }
        }
    };
}
pub(crate) use once_reuse_suite;

const SESSION: &str = "cart";
/// How long any wait of these tests may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(20);

#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Cart {
    /// Items in the cart
    pub items: Vec<String>,
}

/// A store handle of a process that can freeze: armed, it stops answering once it
/// has journaled a once-tool's result (the call returns only when thawed), and its
/// lease renewals wait for the thaw too, so its lease expires meanwhile.
struct Freezing {
    inner: Arc<dyn SessionStore>,
    armed: AtomicBool,
    frozen: watch::Sender<bool>,
    thawed: watch::Sender<bool>,
}

impl Freezing {
    fn new(inner: Arc<dyn SessionStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            armed: AtomicBool::new(true),
            frozen: watch::channel(false).0,
            thawed: watch::channel(false).0,
        })
    }
    async fn frozen(&self) {
        let mut rx = self.frozen.subscribe();
        tokio::time::timeout(HANG, rx.wait_for(|f| *f))
            .await
            .expect("the holder never journaled its call")
            .unwrap();
    }
    fn thaw(&self) {
        self.thawed.send_replace(true);
    }
    async fn stalled(&self) {
        if *self.frozen.borrow() {
            let mut rx = self.thawed.subscribe();
            let _ = rx.wait_for(|t| *t).await;
        }
    }
}

#[async_trait]
impl SessionStore for Freezing {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        self.inner.load(id).await
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
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
    fn supports_leases(&self) -> bool {
        self.inner.supports_leases()
    }
    async fn try_acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        self.inner.try_acquire_lease(id, holder, ttl).await
    }
    fn supports_lease_queue(&self) -> bool {
        self.inner.supports_lease_queue()
    }
    async fn acquire_lease_queued(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Duration,
    ) -> Result<QueuedAttempt, StoreError> {
        self.inner
            .acquire_lease_queued(id, holder, ttl, ticket, ticket_ttl)
            .await
    }
    async fn leave_lease_queue(&self, id: &str, ticket: u64) -> Result<(), StoreError> {
        self.inner.leave_lease_queue(id, ticket).await
    }
    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.stalled().await;
        self.inner.renew_lease(lease).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        self.inner.release_lease(lease).await
    }
    async fn save_leased(
        &self,
        session: StoredSession,
        expected: u64,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        self.inner.save_leased(session, expected, lease).await
    }
    fn supports_journal(&self) -> bool {
        self.inner.supports_journal()
    }
    async fn journal_begin(
        &self,
        session_id: &str,
        key: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<JournalBegin, StoreError> {
        self.inner
            .journal_begin(session_id, key, tool, now_ms)
            .await
    }
    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        self.inner.journal_finish(session_id, key, result).await?;
        if self.armed.swap(false, Ordering::SeqCst) {
            self.frozen.send_replace(true);
            let mut rx = self.thawed.subscribe();
            let _ = rx.wait_for(|t| *t).await;
        }
        Ok(())
    }
}

/// A handle on the fixture's store for another agent (another process for durable
/// stores).
async fn handle(b: &impl Backend, fx: &Fixture) -> Arc<dyn SessionStore> {
    if b.name() == "memory" {
        fx.store.clone()
    } else {
        b.reopen(&fx.token).await
    }
}

/// The once-tool `add`: appends its `item` to the cart's list as the tool saw it,
/// writing the whole list; counts its runs.
fn add(runs: &Arc<AtomicUsize>) -> FnTool<Cart, ()> {
    let runs = runs.clone();
    FnTool::raw(
        "add",
        "Add an item to the cart.",
        json!({"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}),
        move |cx: ToolCx<Cart, ()>, args: Value| {
            runs.fetch_add(1, Ordering::SeqCst);
            let item = args["item"].as_str().unwrap_or_default().to_owned();
            let mut items = cx.data().items.clone();
            items.push(item.clone());
            async move {
                Ok(ToolOutput::text(format!("added {item}"))
                    .data(json!({ "items": items }).as_object().cloned().unwrap()))
            }
        },
    )
    .effect(agent_core::tool::Effect::Once)
    // The reuse of a result is tested here; the user's yes in `agreement.rs`.
    .confirm(false)
}

/// An agent whose model adds what the user's message names after "add ".
fn agent(
    store: Arc<dyn SessionStore>,
    runs: &Arc<AtomicUsize>,
    lease: Option<LeaseConfig>,
    conflict: ConflictPolicy,
    merge: bool,
) -> Agent<Cart, ()> {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::from_fn(|req| {
            let said = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.authored().to_owned())
                .unwrap_or_default();
            let item = said.strip_prefix("add ").unwrap_or(&said).to_owned();
            Ok(ModelResponse {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "add".into(),
                    arguments: json!({ "item": item }),
                }],
                usage: Default::default(),
                finish: Default::default(),
                id: None,
            })
        }),
    );
    p.default_answer(CallKind::ToolRound, Answer::message("Added."));
    let mut b = Agent::builder()
        .provider(p)
        .store_arc(store)
        .tool(add(runs))
        .config(AgentConfig {
            lease,
            conflict,
            ..AgentConfig::default()
        });
    if merge {
        b = b.on_stale_once_result(merge_items);
    }
    b.build().unwrap()
}

/// Keep the list as it is now and add what the result added to the list it saw.
fn merge_items(s: &StaleOnceResult) -> Option<ToolOutput> {
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned();
    let base = list(s.base.get("items"))?;
    let mut items = list(s.current.get("items"))?;
    let written = list(s.effect.directive.data.as_ref()?.get("items"))?;
    items.extend(written.into_iter().skip(base.len()));
    Some(
        ToolOutput::text(s.effect.output.clone())
            .data(json!({ "items": items }).as_object().cloned().unwrap()),
    )
}

/// A 300 ms lease (renewed every 100 ms by a live holder), waits long enough.
fn short_lease() -> LeaseConfig {
    LeaseConfig {
        ttl: Duration::from_millis(300),
        max_wait: HANG,
        ..LeaseConfig::default()
    }
}

async fn items(store: &Arc<dyn SessionStore>) -> Vec<String> {
    let raw = store.load(SESSION).await.unwrap().unwrap();
    agent_core::session::Session::<Cart, ()>::decode(&raw)
        .unwrap()
        .data
        .items
}

async fn say(
    a: &Agent<Cart, ()>,
    text: &str,
    event: &str,
) -> Result<AgentResponse<Cart>, AgentError> {
    tokio::time::timeout(
        HANG,
        a.respond_with(SESSION, text, &TurnOptions::event(event)),
    )
    .await
    .expect("the turn hung")
}

/// The shared sequence: B adds "before"; A adds "held turn" (event `held`) and
/// freezes after journaling it; B adds "after"; A thaws. A's result and the store.
async fn frozen_holder_then_another_save(
    b: &impl Backend,
    lease: Option<LeaseConfig>,
    conflict: ConflictPolicy,
    runs: &Arc<AtomicUsize>,
) -> (Fixture, Result<AgentResponse<Cart>, AgentError>) {
    let fx = b.create().await;
    let other = agent(handle(b, &fx).await, runs, lease, conflict, false);
    say(&other, "add before", "first").await.unwrap();
    let frozen = Freezing::new(handle(b, &fx).await);
    let holder = agent(frozen.clone(), runs, lease, conflict, false);
    let held = tokio::spawn(async move { say(&holder, "add held turn", "held").await });
    frozen.frozen().await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "{}: the held call ran",
        b.name()
    );
    // Waits for the frozen holder's lease to expire, when there is one.
    say(&other, "add after", "after").await.unwrap();
    assert_eq!(items(&fx.store).await, ["before", "after"], "{}", b.name());
    frozen.thaw();
    let r = held.await.unwrap();
    (fx, r)
}

fn assert_stale(name: &str, r: &Result<AgentResponse<Cart>, AgentError>) {
    match r {
        Err(AgentError::OnceResultStale(s)) => {
            assert_eq!(s.effect.tool, "add", "{name}");
            assert_eq!(
                s.effect.output, "added held turn",
                "{name}: the journaled output"
            );
            assert!(s.effect.reused, "{name}");
            assert_eq!(s.changed, ["items"], "{name}");
            assert_eq!(s.base["items"], json!(["before"]), "{name}");
            assert_eq!(s.current["items"], json!(["before", "after"]), "{name}");
            let text = r.as_ref().unwrap_err().to_string();
            assert!(text.contains("effect happened"), "{name}: {text}");
        }
        other => panic!("{name}: expected OnceResultStale, got {other:?}"),
    }
}

/// N1 with leases: the frozen holder's save is refused, and the redelivered event
/// reuses the result without erasing "after".
pub async fn a_redelivered_once_result_on_a_session_saved_since_keeps_what_was_saved(
    b: &impl Backend,
) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (fx, r) =
        frozen_holder_then_another_save(b, Some(short_lease()), ConflictPolicy::Retry(3), &runs)
            .await;
    assert!(
        matches!(r, Err(AgentError::Store(StoreError::LeaseLost { .. }))),
        "{}: {r:?}",
        b.name()
    );
    assert_eq!(items(&fx.store).await, ["before", "after"], "{}", b.name());
    // The event is delivered again (to another process).
    let again = agent(
        handle(b, &fx).await,
        &runs,
        Some(short_lease()),
        ConflictPolicy::Retry(3),
        false,
    );
    let r = say(&again, "add held turn", "held").await;
    assert_stale(b.name(), &r);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "{}: not run again",
        b.name()
    );
    assert_eq!(
        items(&fx.store).await,
        ["before", "after"],
        "{}: nothing acknowledged is lost",
        b.name()
    );
    // Delivered once more: the same answer, still not run.
    let r = say(&again, "add held turn", "held").await;
    assert_stale(b.name(), &r);
    assert_eq!(runs.load(Ordering::SeqCst), 3, "{}", b.name());
}

/// The same sequence with a merge hook: the redelivered turn saves the merge.
pub async fn a_redelivered_stale_once_result_is_merged_by_the_hook(b: &impl Backend) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (fx, r) =
        frozen_holder_then_another_save(b, Some(short_lease()), ConflictPolicy::Retry(3), &runs)
            .await;
    assert!(r.is_err(), "{}: {r:?}", b.name());
    let merging = agent(
        handle(b, &fx).await,
        &runs,
        Some(short_lease()),
        ConflictPolicy::Retry(3),
        true,
    );
    let r = say(&merging, "add held turn", "held").await.unwrap();
    assert_eq!(
        r.data.items,
        ["before", "after", "held turn"],
        "{}",
        b.name()
    );
    assert_eq!(r.tool_calls[0].output, "added held turn", "{}", b.name());
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "{}: not run again",
        b.name()
    );
    assert_eq!(
        items(&fx.store).await,
        ["before", "after", "held turn"],
        "{}",
        b.name()
    );
}

/// N1 without leases: the holder's save conflicts and its re-run reuses the result
/// on the moved-on session: not applied, "after" kept, the effect reported.
pub async fn without_a_lease_a_re_run_after_a_conflict_keeps_what_was_saved(b: &impl Backend) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (fx, r) = frozen_holder_then_another_save(b, None, ConflictPolicy::Retry(3), &runs).await;
    assert_stale(b.name(), &r);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "{}: not run again",
        b.name()
    );
    assert_eq!(
        items(&fx.store).await,
        ["before", "after"],
        "{}: nothing acknowledged is lost",
        b.name()
    );
}

/// Without leases and without re-runs, the conflict says the effect happened.
pub async fn a_conflict_after_a_once_effect_says_the_effect_happened(b: &impl Backend) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (fx, r) = frozen_holder_then_another_save(b, None, ConflictPolicy::Fail, &runs).await;
    match &r {
        Err(AgentError::ConflictAfterEffects { conflict, effects }) => {
            assert!(
                matches!(conflict, StoreError::Conflict { .. }),
                "{}",
                b.name()
            );
            assert_eq!(effects.len(), 1, "{}", b.name());
            assert_eq!(effects[0].tool, "add");
            assert_eq!(effects[0].output, "added held turn");
            assert!(!effects[0].reused);
            let text = r.as_ref().unwrap_err().to_string();
            assert!(text.contains("already run"), "{text}");
        }
        other => panic!("{}: expected ConflictAfterEffects, got {other:?}", b.name()),
    }
    assert_eq!(items(&fx.store).await, ["before", "after"], "{}", b.name());
}
