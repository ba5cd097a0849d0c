//! Effect classes of tools (issue 16, item 2): every call's idempotency key is the
//! same on every run of the same call; a once-tool's result is journaled and reused
//! by a re-run or redelivered turn; an intent without a result goes to the
//! application's `on_unknown_outcome` hook and is never run again silently.
//!
//! One file over 600 lines: every test drives the same once-tool fixture (its journal, its crash points) through whole turns, so the fixture and its scenarios stay together.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::error::{ProviderError, StoreError};
use agent_core::journal::{JournalBegin, Resolution, UnknownOutcome};
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::store::{SessionInfo, StoredSession};
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::Effect;
use async_trait::async_trait;
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Notes {
    /// The payment's receipt
    receipt: Option<String>,
}

/// A memory store that loses its next `conflicts` saves (another writer saved first;
/// with `advance`, that writer's save really happens: the session moves on a turn),
/// fails its next `lost_results` journal results (the process died between the
/// call and its record), and, with `journal = false`, keeps no journal at all.
struct TestStore {
    inner: MemoryStore,
    conflicts: AtomicU32,
    lost_results: AtomicU32,
    journal: bool,
    advance: bool,
}

impl TestStore {
    fn new(conflicts: u32) -> Arc<Self> {
        Arc::new(Self {
            inner: MemoryStore::new(),
            conflicts: AtomicU32::new(conflicts),
            lost_results: AtomicU32::new(0),
            journal: true,
            advance: false,
        })
    }
    fn take(counter: &AtomicU32) -> bool {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

#[async_trait]
impl SessionStore for TestStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        self.inner.load(id).await
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        if Self::take(&self.conflicts) {
            if self.advance {
                self.inner.save(session.clone(), expected).await?;
            }
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
    fn supports_journal(&self) -> bool {
        self.journal
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
        if Self::take(&self.lost_results) {
            return Err(StoreError::Backend("connection reset".into()));
        }
        self.inner.journal_finish(session_id, key, result).await
    }
}

/// What a payment tool saw: how often it ran and the keys of its calls.
#[derive(Default, Clone)]
struct Charges {
    runs: Arc<AtomicUsize>,
    keys: Arc<Mutex<Vec<String>>>,
}

impl Charges {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
    fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    /// Amount in cents
    cents: u64,
}

/// `pay`: counts its runs, records its key, writes the receipt into the data.
fn pay(effect: Effect, charges: &Charges) -> FnTool<Notes, ()> {
    let c = charges.clone();
    FnTool::new(
        "pay",
        "Charge the card.",
        move |cx: ToolCx<Notes, ()>, a: Amount| {
            let c = c.clone();
            async move {
                let n = c.runs.fetch_add(1, Ordering::SeqCst) + 1;
                c.keys.lock().unwrap().push(cx.idempotency_key().to_owned());
                let receipt = format!("R{n}-{}", a.cents);
                Ok(
                    ToolOutput::text(format!("charged {} cents, receipt {receipt}", a.cents))
                        .data(json!({ "receipt": receipt }).as_object().cloned().unwrap()),
                )
            }
        },
    )
    .effect(effect)
    // What re-running a call does is tested here; the user's yes in `agreement.rs`.
    .confirm(false)
    // The model converts the euros the user names into cents.
    .derived_args(["cents"])
}

fn agent_with(
    p: &ScriptedProvider,
    store: &Arc<TestStore>,
    tool: FnTool<Notes, ()>,
    hook: Option<Arc<Mutex<Vec<UnknownOutcome>>>>,
    answer: Resolution,
) -> Agent<Notes, ()> {
    let mut b = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .tool(tool);
    if let Some(seen) = hook {
        b = b.on_unknown_outcome(move |u| {
            seen.lock().unwrap().push(u);
            let answer = answer.clone();
            async move { answer }
        });
    }
    b.build().unwrap()
}

/// One attempt of a turn: the model calls `pay` with `cents`, then answers `reply`.
fn script_pay(p: &ScriptedProvider, cents: u64, reply: &str) {
    p.respond(Answer::tool("pay", json!({ "cents": cents })));
    p.tool_round(Answer::message(reply));
}

/// The tool results the model was shown, in order.
fn tool_results(p: &ScriptedProvider) -> Vec<String> {
    p.requests()
        .iter()
        .filter(|r| r.kind == CallKind::ToolRound)
        .filter_map(|r| r.messages.last())
        .map(|m| m.content.to_string())
        .collect()
}

#[tokio::test]
async fn the_idempotency_key_is_the_same_when_a_conflicting_turn_re_runs() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(1);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Idempotent, &charges),
        None,
        Resolution::RunAgain,
    );
    script_pay(&p, 500, "Paid.");
    script_pay(&p, 500, "Paid.");
    let r = a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(r.message, "Paid.");
    assert_eq!(
        charges.runs(),
        2,
        "an idempotent tool re-runs with the turn"
    );
    let keys = charges.keys();
    assert_eq!(keys[0], keys[1], "same call, same key: {keys:?}");
    assert!(keys[0].len() <= 70 && keys[0].chars().all(|c| c.is_ascii_hexdigit() || c == '-'));

    // The next turn (even with the same message and arguments) is another call.
    script_pay(&p, 500, "Paid again.");
    a.respond("s", "pay 5 euros").await.unwrap();
    assert_ne!(charges.keys()[2], keys[0]);
    // So is another session's.
    script_pay(&p, 500, "Paid.");
    a.respond("other", "pay 5 euros").await.unwrap();
    let keys = charges.keys();
    assert!(keys[3] != keys[0] && keys[3] != keys[2], "{keys:?}");
}

#[tokio::test]
async fn a_once_tool_runs_once_when_a_conflicting_turn_re_runs_and_its_writes_are_replayed() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(2);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        None,
        Resolution::RunAgain,
    );
    for _ in 0..3 {
        script_pay(&p, 500, "Paid.");
    }
    let r = a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(charges.runs(), 1, "two re-runs reused the recorded result");
    assert_eq!(r.message, "Paid.");
    assert_eq!(
        r.data.receipt.as_deref(),
        Some("R1-500"),
        "the recorded write applies"
    );
    assert_eq!(r.tool_calls.len(), 1);
    assert!(r.tool_calls[0].ok);
    let shown = tool_results(&p);
    assert_eq!(shown.len(), 3);
    assert!(
        shown.iter().all(|s| s.contains("receipt R1-500")),
        "{shown:?}"
    );
}

#[tokio::test]
async fn a_pure_tool_is_re_run_by_a_conflicting_turn() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(1);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Pure, &charges),
        None,
        Resolution::RunAgain,
    );
    script_pay(&p, 500, "Looked up.");
    script_pay(&p, 500, "Looked up.");
    let r = a.respond("s", "price?").await.unwrap();
    assert_eq!(charges.runs(), 2);
    assert_eq!(
        r.data.receipt.as_deref(),
        Some("R2-500"),
        "the second run's result"
    );
}

#[tokio::test]
async fn a_re_run_whose_call_differs_in_arguments_is_a_new_call() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(2);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        None,
        Resolution::RunAgain,
    );
    script_pay(&p, 500, "Paid.");
    script_pay(&p, 700, "Paid 7.");
    script_pay(&p, 700, "Paid 7.");
    let r = a.respond("s", "pay").await.unwrap();
    assert_eq!(
        charges.runs(),
        2,
        "other arguments: another call; the same: reused"
    );
    assert_eq!(r.data.receipt.as_deref(), Some("R2-700"));
    let keys = charges.keys();
    assert_ne!(keys[0], keys[1]);
}

#[tokio::test]
async fn a_once_tool_is_not_repeated_when_another_writer_saved_the_session_meanwhile() {
    let p = ScriptedProvider::new();
    let store = Arc::new(TestStore {
        inner: MemoryStore::new(),
        conflicts: AtomicU32::new(1),
        lost_results: AtomicU32::new(0),
        journal: true,
        advance: true,
    });
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        None,
        Resolution::RunAgain,
    );
    script_pay(&p, 500, "Paid.");
    script_pay(&p, 500, "Paid.");
    a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(
        a.session("s").await.unwrap().map(|s| s.turns),
        Some(2),
        "the other writer's turn and this one"
    );
    assert_eq!(
        charges.runs(),
        1,
        "the re-run on the moved-on session is the same turn"
    );
}

#[tokio::test]
async fn a_redelivered_event_after_a_failed_turn_reuses_the_recorded_result() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(0);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        None,
        Resolution::RunAgain,
    );
    // The turn fails after the payment (the model API breaks): nothing is saved.
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::error(ProviderError::Other("model down".into())));
    let opts = TurnOptions::event("msg-1");
    a.respond_with("s", "pay 5 euros", &opts).await.unwrap_err();
    assert_eq!(charges.runs(), 1);
    assert!(a.session("s").await.unwrap().is_none_or(|s| s.turns == 0));
    // The channel delivers the message again.
    script_pay(&p, 500, "Paid.");
    let r = a.respond_with("s", "pay 5 euros", &opts).await.unwrap();
    assert_eq!(charges.runs(), 1, "not charged twice");
    assert_eq!(r.data.receipt.as_deref(), Some("R1-500"));
    // Without the event id the same message is a new turn of the session: a new call.
    script_pay(&p, 500, "Paid.");
    a.respond("s", "pay 5 euros").await.unwrap();
    assert_eq!(charges.runs(), 2);
}

/// The first attempt runs the tool but its result is never journaled, and the turn
/// fails: the process "died" between the call and its record.
async fn interrupted(p: &ScriptedProvider, a: &Agent<Notes, ()>, store: &TestStore) {
    store.lost_results.store(1, Ordering::SeqCst);
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::error(ProviderError::Other("process died".into())));
    a.respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap_err();
}

#[tokio::test]
async fn an_intent_without_a_result_goes_to_the_hook_and_is_not_run_again() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(0);
    let charges = Charges::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answer = Resolution::Fail("the bank has no record of it; ask the user to retry".into());
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        Some(seen.clone()),
        answer,
    );
    interrupted(&p, &a, &store).await;
    assert_eq!(charges.runs(), 1);

    script_pay(&p, 500, "Sorry, please try again.");
    let r = a
        .respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap();
    assert_eq!(
        charges.runs(),
        1,
        "an unknown outcome is never re-run silently"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].session_id, "s");
    assert_eq!(seen[0].tool, "pay");
    assert_eq!(seen[0].arguments, json!({ "cents": 500 }));
    assert_eq!(seen[0].key, charges.keys()[0], "the key the first run saw");
    assert!(!r.tool_calls[0].ok);
    assert_eq!(r.data.receipt, None);
    let shown = tool_results(&p);
    assert!(
        shown
            .last()
            .unwrap()
            .contains("the bank has no record of it"),
        "{shown:?}"
    );
}

#[tokio::test]
async fn without_a_hook_an_unknown_outcome_fails_the_call_without_running_it() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(0);
    let charges = Charges::default();
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        None,
        Resolution::RunAgain,
    );
    interrupted(&p, &a, &store).await;
    script_pay(&p, 500, "Something went wrong.");
    let r = a
        .respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert!(!r.tool_calls[0].ok);
    assert!(
        r.tool_calls[0].output.contains("outcome is unknown"),
        "{}",
        r.tool_calls[0].output
    );
}

#[tokio::test]
async fn the_hook_may_supply_the_result_which_is_then_recorded() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(0);
    let charges = Charges::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let found = ToolOutput::text("charged 500 cents (confirmed by the bank)");
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        Some(seen.clone()),
        Resolution::Record(found),
    );
    interrupted(&p, &a, &store).await;
    // The next delivery fails too, after the hook answered: its answer is recorded.
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::error(ProviderError::Other("model down".into())));
    a.respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap_err();
    script_pay(&p, 500, "Paid.");
    let r = a
        .respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(seen.lock().unwrap().len(), 1, "asked once; then replayed");
    assert!(r.tool_calls[0].ok);
    assert_eq!(
        r.tool_calls[0].output,
        "charged 500 cents (confirmed by the bank)"
    );
}

#[tokio::test]
async fn the_hook_may_have_the_call_run_again() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(0);
    let charges = Charges::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a = agent_with(
        &p,
        &store,
        pay(Effect::Once, &charges),
        Some(seen.clone()),
        Resolution::RunAgain,
    );
    interrupted(&p, &a, &store).await;
    script_pay(&p, 500, "Paid.");
    let r = a
        .respond_with("s", "pay 5 euros", &TurnOptions::event("msg-1"))
        .await
        .unwrap();
    assert_eq!(
        charges.runs(),
        2,
        "the application said it had not happened"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    let keys = charges.keys();
    assert_eq!(keys[0], keys[1], "run again under the same key");
    assert_eq!(r.data.receipt.as_deref(), Some("R2-500"));
}

fn without_journal() -> Arc<TestStore> {
    Arc::new(TestStore {
        inner: MemoryStore::new(),
        conflicts: AtomicU32::new(0),
        lost_results: AtomicU32::new(0),
        journal: false,
        advance: false,
    })
}

#[test]
fn an_agent_with_a_once_tool_and_a_store_without_a_journal_fails_to_build() {
    let charges = Charges::default();
    let err = Agent::<Notes, ()>::builder()
        .provider(ScriptedProvider::new())
        .store_arc(without_journal())
        .tool(pay(Effect::Once, &charges))
        .tool(FnTool::new(
            "refund",
            "Refund the card.",
            |_cx: ToolCx<Notes, ()>, _a: Amount| async move { Ok(ToolOutput::text("refunded")) },
        ))
        .build()
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("tool `pay` runs at most once"), "{text}");
    assert!(!text.contains("refund"), "{text}");
}

#[tokio::test]
async fn a_once_call_on_a_store_without_a_journal_fails_without_running() {
    // A tool the builder never saw (a code flow's ad-hoc `ctx.tool`) fails at the call.
    let p = ScriptedProvider::new();
    let charges = Charges::default();
    let tool = pay(Effect::Once, &charges).into_arc();
    let flow = CodeFlow::new("checkout", move |ctx: FlowCx<Notes, ()>| {
        let tool = tool.clone();
        async move {
            let failure = ctx.tool(tool, json!({ "cents": 900 })).await.unwrap_err();
            ctx.say(failure.message).await;
            ctx.end("not paid")
        }
    });
    let a = Agent::builder()
        .provider(p.clone())
        .store_arc(without_journal())
        .code_flow(flow)
        .build()
        .unwrap();
    let r = a.respond("s", "checkout").await.unwrap();
    assert_eq!(charges.runs(), 0);
    assert!(r.message.contains("keeps no tool journal"), "{}", r.message);
}

#[tokio::test]
async fn a_failed_once_call_is_recorded_and_replayed_as_it_failed() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let n = runs.clone();
    let declined = FnTool::new(
        "pay",
        "Charge the card.",
        move |_cx: ToolCx<Notes, ()>, _a: Value| {
            let n = n.clone();
            async move {
                n.fetch_add(1, Ordering::SeqCst);
                Err::<ToolOutput, _>(ToolError::msg("card declined"))
            }
        },
    )
    .effect(Effect::Once)
    .confirm(false);
    let a = agent_with(&p, &store, declined, None, Resolution::RunAgain);
    script_pay(&p, 500, "Declined.");
    script_pay(&p, 500, "Declined.");
    let r = a.respond("s", "pay").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(r.tool_calls[0].output, "ERROR: tool failed: card declined");
    let shown = tool_results(&p);
    assert_eq!(
        shown[0], shown[1],
        "the re-run shows the model the same failure"
    );
}

#[tokio::test]
async fn code_flows_ctx_tool_follows_the_same_rules() {
    let p = ScriptedProvider::new();
    let store = TestStore::new(1);
    let charges = Charges::default();
    let tool = pay(Effect::Once, &charges).into_arc();
    let flow = CodeFlow::new("checkout", move |ctx: FlowCx<Notes, ()>| {
        let tool = tool.clone();
        async move {
            let out = ctx.tool(tool, json!({ "cents": 900 })).await?;
            ctx.say(out).await;
            ctx.end("paid")
        }
    });
    let a = Agent::builder()
        .provider(p.clone())
        .store_arc(store.clone())
        .code_flow(flow)
        .build()
        .unwrap();
    let r = a.respond("s", "checkout").await.unwrap();
    assert_eq!(
        charges.runs(),
        1,
        "the conflicting first attempt's call was reused"
    );
    assert!(r.message.contains("receipt R1-900"), "{}", r.message);
}

/// A fresh SQLite file's path (removed with its WAL files on drop).
#[cfg(feature = "sqlite")]
struct TempDb(std::path::PathBuf);

#[cfg(feature = "sqlite")]
impl TempDb {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join("agent-core-tool-effects");
        std::fs::create_dir_all(&dir).unwrap();
        let n = N.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Self(dir.join(format!("{tag}-{}-{nanos}-{n}.db", std::process::id())))
    }
}

#[cfg(feature = "sqlite")]
impl Drop for TempDb {
    fn drop(&mut self) {
        for ext in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(ext);
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_once_tool_on_sqlite_runs_once_across_agents_sharing_the_file() {
    let db = TempDb::new("agents");
    let path = &db.0;
    let charges = Charges::default();
    let p = ScriptedProvider::new();
    let agent = || {
        Agent::builder()
            .provider(p.clone())
            .store(agent_core::store::SqliteStore::open(path).unwrap())
            .tool(pay(Effect::Once, &charges))
            .build()
            .unwrap()
    };
    let first = agent();
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.tool_round(Answer::error(ProviderError::Other("process died".into())));
    first
        .respond_with("s", "pay", &TurnOptions::event("m"))
        .await
        .unwrap_err();
    drop(first);
    let second = agent();
    script_pay(&p, 500, "Paid.");
    let r = second
        .respond_with("s", "pay", &TurnOptions::event("m"))
        .await
        .unwrap();
    assert_eq!(charges.runs(), 1);
    assert_eq!(r.data.receipt.as_deref(), Some("R1-500"));
}
