//! Session leases with fencing, on every store (`lease_suite!`), and across OS
//! processes on the durable ones (`lease_process_suite!`):
//!
//! - one holder at a time, tokens that only grow, release, renewal past the ttl;
//! - an expired lease taken over: the stale holder can neither renew nor save
//!   (typed `LeaseLost`), and a leased save is still a compare-and-swap;
//! - agents: 8 agents on 8 threads (and 8 processes on a durable store), 25
//!   concurrent turns each on one session: every turn succeeds, no update is lost,
//!   and a once-tool (`Effect::Once`) with a side effect (a line appended to an
//!   external file) runs exactly once per turn: turns queue on the lease instead of
//!   conflicting and re-running;
//! - a turn waits out a crashed holder's lease (without the wait counting toward its
//!   deadline), fails with `SessionBusy` past `max_wait`, and a holder that stalled
//!   past its ttl and was taken over saves nothing;
//! - a process killed with SIGKILL while holding the lease in the middle of a turn:
//!   the next turn proceeds once the lease expires, nothing of the killed turn is
//!   stored, and its once-tool is not run again, not even when the killed turn's
//!   message is delivered again (its journaled intent has no result: an unknown
//!   outcome, failed without running).
//!
//! One file over 600 lines: the lease suite is one macro (`lease_suite!`, `lease_process_suite!`) expanded per store, so its cases cannot be spread over files.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::error::StoreError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelResponse, ToolCall};
use agent_core::session::Session;
use agent_core::store::{Lease, LeaseAttempt, LeaseConfig, SessionStore, StoredSession};
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::tool::{FnTool, ToolOutput};
use serde_json::json;

use super::{Backend, Fixture, notice, unique};
use crate::common::{Booking, Concierge};

type TestAgent = Agent<Booking, Concierge>;

const SESSION: &str = "shared";
/// The inbound event id of the turn whose process is killed.
const KILLED_EVENT: &str = "killed-turn";
const ROLE_ENV: &str = "AGENT_LEASE_ROLE";
const TOKEN_ENV: &str = "AGENT_LEASE_TOKEN";
const EFFECTS_ENV: &str = "AGENT_LEASE_EFFECTS";
const INDEX_ENV: &str = "AGENT_LEASE_INDEX";

/// Every lease test for a backend expression of type `Option<impl Backend>`.
macro_rules! lease_suite {
    ($backend:expr) => {
        $crate::conformance::lease::lease_suite!(@case one_holder_at_a_time_and_tokens_only_grow, $backend);
        $crate::conformance::lease::lease_suite!(@case a_stale_holder_taken_over_can_neither_renew_nor_save, $backend);
        $crate::conformance::lease::lease_suite!(@case a_leased_save_is_still_a_compare_and_swap, $backend);
        $crate::conformance::lease::lease_suite!(@case renewal_keeps_a_lease_past_its_ttl, $backend);
        $crate::conformance::lease::lease_suite!(@case eight_agents_on_threads_queue_on_the_lease_and_run_each_tool_once, $backend);
        $crate::conformance::lease::lease_suite!(@case a_turn_waits_out_a_crashed_holder_within_its_deadline, $backend);
        $crate::conformance::lease::lease_suite!(@case a_turn_on_a_busy_session_fails_with_session_busy_after_max_wait, $backend);
        $crate::conformance::lease::lease_suite!(@case a_stalled_holder_taken_over_saves_nothing, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::lease::$name(&b).await;
            }
        }
    };
}
pub(crate) use lease_suite;

/// The multi-process lease tests (stores shared by processes).
macro_rules! lease_process_suite {
    ($backend:expr) => {
        $crate::conformance::lease::lease_process_suite!(@case eight_processes_with_twenty_five_concurrent_turns_each_all_succeed_once, $backend);
        $crate::conformance::lease::lease_process_suite!(@case a_holder_killed_mid_turn_is_waited_out_and_nothing_is_half_applied, $backend);
    };
    (@case $name:ident, $backend:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            if let Some(b) = $backend {
                $crate::conformance::lease::$name(&b, stringify!($name)).await;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use lease_process_suite;

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn stored(id: &str, version: u64, body: &str) -> StoredSession {
    StoredSession {
        id: id.into(),
        version,
        updated_ms: version,
        bytes: body.as_bytes().to_vec(),
    }
}

async fn acquire(store: &Arc<dyn SessionStore>, id: &str, holder: &str, ttl: Duration) -> Lease {
    match store.try_acquire_lease(id, holder, ttl).await.unwrap() {
        LeaseAttempt::Acquired(l) => l,
        LeaseAttempt::Busy { holder, .. } => panic!("lease of `{id}` busy, held by {holder}"),
    }
}

async fn busy(store: &Arc<dyn SessionStore>, id: &str) -> (String, Duration) {
    match store.try_acquire_lease(id, "probe", ms(50)).await.unwrap() {
        LeaseAttempt::Busy { holder, expires_in } => (holder, expires_in),
        LeaseAttempt::Acquired(l) => panic!("expected `{id}` busy, got {l:?}"),
    }
}

/// A handle on the fixture's store for another agent: the same value for the memory
/// store, a new connection (as another process would open) for durable stores.
async fn handle(b: &impl Backend, fx: &Fixture) -> Arc<dyn SessionStore> {
    if b.name() == "memory" {
        fx.store.clone()
    } else {
        b.reopen(&fx.token).await
    }
}

/// A temporary file, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> Self {
        Self(std::env::temp_dir().join(format!("agent-lease-{tag}-{}.log", unique())))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Append one line to the effects file (one `write` with `O_APPEND`: lines from
/// several processes never interleave).
fn record(path: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// Lines of the effects file.
fn effects(path: &Path) -> Vec<String> {
    match std::fs::read_to_string(path) {
        Ok(s) => s.lines().map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    }
}

/// How the tool behaves.
#[derive(Clone, Copy)]
enum Effect {
    /// Append `{tag}\t{message}` and return.
    Record,
    /// Append, announce `HOLDING` on stdout, then never return (until killed).
    RecordAndHang,
    /// Append; for the message `stall`, block the thread (no await: the lease cannot
    /// be renewed meanwhile) for this long.
    RecordAndStall(Duration),
}

/// An agent without flows: every message makes the model call the tool `effect` with
/// the user's message, then answer "ok".
fn effect_agent(
    store: Arc<dyn SessionStore>,
    effects: &Path,
    tag: &str,
    effect: Effect,
    lease: Option<LeaseConfig>,
    turn_timeout: Option<Duration>,
) -> TestAgent {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::from_fn(|req| {
            let said = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == agent_core::provider::Role::User)
                .map(|m| m.authored().to_owned())
                .unwrap_or_default();
            Ok(ModelResponse {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "effect".into(),
                    arguments: json!({ "message": said }),
                }],
                usage: Default::default(),
                finish: Default::default(),
                id: None,
            })
        }),
    );
    p.default_answer(CallKind::ToolRound, Answer::message("ok"));
    let path = effects.to_path_buf();
    let tag = tag.to_owned();
    let tool = FnTool::<Booking, Concierge>::raw(
        "effect",
        "Record that the user's message was handled.",
        json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        move |_cx, args| {
            let path = path.clone();
            let tag = tag.clone();
            async move {
                let message = args["message"].as_str().unwrap_or_default().to_owned();
                record(&path, &format!("{tag}\t{message}"));
                match effect {
                    Effect::Record => {}
                    Effect::RecordAndHang => {
                        println!("HOLDING");
                        std::io::stdout().flush().unwrap();
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    Effect::RecordAndStall(d) => {
                        if message == "stall" {
                            std::thread::sleep(d);
                        }
                    }
                }
                Ok(ToolOutput::text("done"))
            }
        },
    )
    .effect(agent_core::tool::Effect::Once)
    // Run on the model's call (these cases are about leases, not the user's yes).
    .confirm(false);
    Agent::builder()
        .name("Concierge")
        .provider(p)
        .store_arc(store)
        .tool(tool)
        .config(AgentConfig {
            lease,
            turn_timeout,
            tool_timeout: None,
            // 200 turns of history stay verbatim (no summary call).
            history_token_budget: 10_000_000,
            ..AgentConfig::default()
        })
        .build()
        .unwrap()
}

/// Short leases for tests: 1 s ttl, a generous wait.
fn test_lease() -> LeaseConfig {
    LeaseConfig {
        ttl: Duration::from_secs(1),
        max_wait: Duration::from_secs(120),
        ..LeaseConfig::default()
    }
}

/// The stored session's user messages, counted.
async fn user_messages(
    store: &Arc<dyn SessionStore>,
) -> (Session<Booking, Concierge>, BTreeMap<String, usize>) {
    let raw = store.load(SESSION).await.unwrap().unwrap();
    let s = Session::<Booking, Concierge>::decode(&raw).unwrap();
    let mut counts = BTreeMap::new();
    for m in &s.history {
        if m.role == agent_core::provider::Role::User {
            *counts.entry(m.authored().to_owned()).or_insert(0) += 1;
        }
    }
    (s, counts)
}

/// Everything a run of `turns` messages (all successful) must leave: one version per
/// turn, each message once in the history, each tool effect once in the file.
async fn assert_each_turn_once(
    name: &str,
    store: &Arc<dyn SessionStore>,
    messages: &[String],
    effects_file: &Path,
) {
    let n = messages.len() as u64;
    let (s, counts) = user_messages(store).await;
    assert_eq!(s.turns, n, "{name}: turns lost");
    assert_eq!(s.version, n, "{name}: versions");
    for m in messages {
        assert_eq!(counts.get(m), Some(&1), "{name}: `{m}` in the history");
    }
    assert_eq!(counts.len(), messages.len(), "{name}: unexpected messages");
    let lines = effects(effects_file);
    let mut per_message: BTreeMap<String, usize> = BTreeMap::new();
    for l in &lines {
        let (_, message) = l.split_once('\t').unwrap();
        *per_message.entry(message.to_owned()).or_insert(0) += 1;
    }
    for m in messages {
        assert_eq!(
            per_message.get(m),
            Some(&1),
            "{name}: the tool ran {:?} times for `{m}` (a re-run?)",
            per_message.get(m)
        );
    }
    assert_eq!(lines.len(), messages.len(), "{name}: tool runs");
}

// ---------------------------------------------------------------------------------
// The store API
// ---------------------------------------------------------------------------------

/// A held lease is busy for everyone else; released, the next holder gets a larger
/// token; a release by a former holder changes nothing.
pub async fn one_holder_at_a_time_and_tokens_only_grow(b: &impl Backend) {
    let fx = b.create().await;
    let s = &fx.store;
    assert!(s.supports_leases(), "{}", b.name());
    let a = acquire(s, "x", "agent-a", Duration::from_secs(10)).await;
    assert_eq!((a.session_id.as_str(), a.holder.as_str()), ("x", "agent-a"));
    let (holder, left) = busy(s, "x").await;
    assert_eq!(holder, "agent-a", "{}", b.name());
    assert!(
        left <= Duration::from_secs(10) && left > Duration::from_secs(5),
        "{left:?}"
    );
    // Another session is independent.
    let other = acquire(s, "y", "agent-b", Duration::from_secs(10)).await;
    assert!(
        other.token > a.token,
        "{}: tokens come from one counter",
        b.name()
    );
    assert!(s.release_lease(&a).await.unwrap());
    assert!(!s.release_lease(&a).await.unwrap(), "released twice");
    let c = acquire(s, "x", "agent-c", Duration::from_secs(10)).await;
    assert!(c.token > other.token, "{}: {c:?} after {other:?}", b.name());
    assert!(
        !s.release_lease(&a).await.unwrap(),
        "a former holder releases nothing"
    );
    assert_eq!(busy(s, "x").await.0, "agent-c");
    // A released lease can no longer be renewed or saved under.
    assert!(s.release_lease(&c).await.unwrap());
    assert!(matches!(
        s.renew_lease(&c).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert!(matches!(
        s.save_leased(stored("x", 1, "late"), 0, &c).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert!(s.load("x").await.unwrap().is_none());
}

/// An expired lease is taken over with a larger token; the stale holder's renewal and
/// save are refused with a typed error and change nothing; the new holder saves.
/// A lease that expired without being taken is still its holder's.
pub async fn a_stale_holder_taken_over_can_neither_renew_nor_save(b: &impl Backend) {
    let fx = b.create().await;
    let s = &fx.store;
    s.save(stored("x", 1, "one"), 0).await.unwrap();
    let old = acquire(s, "x", "stale", ms(300)).await;
    tokio::time::sleep(ms(450)).await;
    // Expired, not taken: still renews and saves.
    s.renew_lease(&old).await.unwrap();
    s.save_leased(stored("x", 2, "two"), 1, &old).await.unwrap();
    tokio::time::sleep(ms(450)).await;
    let new = acquire(s, "x", "fresh", Duration::from_secs(10)).await;
    assert!(new.token > old.token);
    let err = s
        .save_leased(stored("x", 3, "stale"), 2, &old)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::LeaseLost {
            session_id: "x".into(),
            token: old.token,
            current: Some(new.token),
        },
        "{}",
        b.name()
    );
    assert!(err.to_string().contains("taken over"), "{err}");
    assert!(matches!(
        s.renew_lease(&old).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert_eq!(
        s.load("x").await.unwrap().unwrap().bytes,
        b"two",
        "nothing written"
    );
    assert_eq!(
        busy(s, "x").await.0,
        "fresh",
        "the stale renewal took nothing"
    );
    s.save_leased(stored("x", 3, "three"), 2, &new)
        .await
        .unwrap();
    assert_eq!(s.load("x").await.unwrap().unwrap().bytes, b"three");
    // A new session saved under a lease (expected version 0).
    let l = acquire(s, "fresh-session", "h", Duration::from_secs(10)).await;
    s.save_leased(stored("fresh-session", 1, "a"), 0, &l)
        .await
        .unwrap();
    // A lease of one session does not fence another.
    assert!(matches!(
        s.save_leased(stored("other", 1, "b"), 0, &l).await,
        Err(StoreError::LeaseLost { .. })
    ));
    assert!(s.load("other").await.unwrap().is_none());
}

/// Holding the lease does not bypass the compare-and-swap.
pub async fn a_leased_save_is_still_a_compare_and_swap(b: &impl Backend) {
    let fx = b.create().await;
    let s = &fx.store;
    let l = acquire(s, "x", "h", Duration::from_secs(10)).await;
    s.save_leased(stored("x", 1, "one"), 0, &l).await.unwrap();
    let err = s
        .save_leased(stored("x", 2, "two"), 0, &l)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict {
            session_id: "x".into(),
            expected: 0,
            found: 1
        }
    );
    assert!(matches!(
        s.save_leased(stored("x", 3, "three"), 2, &l).await,
        Err(StoreError::Conflict { found: 1, .. })
    ));
    s.save_leased(stored("x", 2, "two"), 1, &l).await.unwrap();
    assert_eq!(s.load("x").await.unwrap().unwrap().version, 2);
}

/// Renewed every 100 ms, a 600 ms lease stays held for two seconds.
pub async fn renewal_keeps_a_lease_past_its_ttl(b: &impl Backend) {
    let fx = b.create().await;
    let s = &fx.store;
    let l = acquire(s, "x", "long-turn", ms(600)).await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(ms(100)).await;
        s.renew_lease(&l).await.unwrap();
        assert_eq!(busy(s, "x").await.0, "long-turn", "{}", b.name());
    }
    assert!(s.release_lease(&l).await.unwrap());
    acquire(s, "x", "next", ms(300)).await;
}

// ---------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------

/// 8 agents, each on its own thread with its own runtime (and, on a durable store,
/// its own connection), send 25 concurrent turns each to one session: all 200
/// succeed, each once in the session, and the tool ran once per turn (no conflict
/// re-runs: the turns queued on the lease).
pub async fn eight_agents_on_threads_queue_on_the_lease_and_run_each_tool_once(b: &impl Backend) {
    let fx = b.create().await;
    let file = TempFile::new("threads");
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(handle(b, &fx).await);
    }
    let started = Instant::now();
    let threads: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(t, store)| {
            let path = file.0.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let a = effect_agent(
                        store,
                        &path,
                        &format!("thread{t}"),
                        Effect::Record,
                        Some(test_lease()),
                        None,
                    );
                    let turns: Vec<_> = (0..25)
                        .map(|i| {
                            let a = a.clone();
                            tokio::spawn(async move {
                                let text = format!("t{t} m{i}");
                                let r = a.respond(SESSION, &text).await;
                                (text, r)
                            })
                        })
                        .collect();
                    let mut out = Vec::new();
                    for turn in turns {
                        out.push(turn.await.unwrap());
                    }
                    out
                })
            })
        })
        .collect();
    let results = tokio::task::spawn_blocking(move || {
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let elapsed = started.elapsed();
    let mut messages = Vec::new();
    for (text, r) in results {
        if let Err(e) = &r {
            panic!("{}: `{text}` failed: {e:?}", b.name());
        }
        messages.push(text);
    }
    assert_eq!(messages.len(), 200);
    assert_each_turn_once(b.name(), &fx.store, &messages, &file.0).await;
    notice(&format!(
        "{}: 8 agents on threads x 25 concurrent turns on one session: 200 saved, 200 tool runs, in {elapsed:?}",
        b.name()
    ));
}

/// A holder that crashed (took the lease, never renews or releases it) blocks the
/// session until the lease expires; then the turn runs. The wait counts toward the
/// turn's deadline: with 1.5 s the turn waits out the 600 ms lease and runs; with
/// 300 ms it fails with `SessionBusy` at its deadline, and nothing ran.
pub async fn a_turn_waits_out_a_crashed_holder_within_its_deadline(b: &impl Backend) {
    let fx = b.create().await;
    let file = TempFile::new("crashed");
    let short = effect_agent(
        handle(b, &fx).await,
        &file.0,
        "next",
        Effect::Record,
        Some(test_lease()),
        Some(ms(300)),
    );
    let crashed = acquire(&fx.store, SESSION, "crashed-process", ms(600)).await;
    let started = Instant::now();
    let err = short.respond(SESSION, "hello").await.unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(err, AgentError::SessionBusy { .. }),
        "{}: {err:?}",
        b.name()
    );
    assert!(
        waited >= ms(250) && waited < ms(590),
        "{}: the wait was not bounded by the 300 ms deadline ({waited:?})",
        b.name()
    );
    assert!(err.to_string().contains("turn_timeout"), "{err}");
    assert!(effects(&file.0).is_empty(), "the tool ran");
    assert!(fx.store.load(SESSION).await.unwrap().is_none());

    let a = effect_agent(
        handle(b, &fx).await,
        &file.0,
        "next",
        Effect::Record,
        Some(test_lease()),
        Some(ms(1500)),
    );
    let started = Instant::now();
    let r = a.respond(SESSION, "hello").await;
    let waited = started.elapsed();
    let r = r.unwrap_or_else(|e| panic!("{}: {e:?}", b.name()));
    assert_eq!(r.version, 1);
    assert!(
        waited >= ms(150),
        "{}: the turn did not wait ({waited:?})",
        b.name()
    );
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(effects(&file.0), ["next\thello"]);
    // The crashed holder's token is dead.
    assert!(matches!(
        fx.store
            .save_leased(stored(SESSION, 2, "x"), 1, &crashed)
            .await,
        Err(StoreError::LeaseLost { .. })
    ));
    // Released after the turn: the next one does not wait.
    let started = Instant::now();
    a.respond(SESSION, "again").await.unwrap();
    assert!(started.elapsed() < ms(500), "{:?}", started.elapsed());
}

/// A session held longer than `max_wait` fails the turn with a typed `SessionBusy`
/// carrying the session, the wait and the holder; nothing runs, nothing is stored.
pub async fn a_turn_on_a_busy_session_fails_with_session_busy_after_max_wait(b: &impl Backend) {
    let fx = b.create().await;
    let file = TempFile::new("busy");
    let other = acquire(&fx.store, SESSION, "other-agent", Duration::from_secs(30)).await;
    let a = effect_agent(
        handle(b, &fx).await,
        &file.0,
        "waiting",
        Effect::Record,
        Some(LeaseConfig {
            max_wait: ms(250),
            ..test_lease()
        }),
        None,
    );
    let started = Instant::now();
    let err = a.respond(SESSION, "hello").await.unwrap_err();
    let AgentError::SessionBusy {
        session_id,
        waited,
        holder,
    } = &err
    else {
        panic!("{}: {err:?}", b.name());
    };
    assert_eq!(session_id, SESSION);
    assert!(
        *waited >= ms(250) && started.elapsed() < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(holder.as_deref(), Some("other-agent"));
    assert!(err.to_string().contains("max_wait"), "{err}");
    assert!(effects(&file.0).is_empty(), "the tool ran");
    assert!(fx.store.load(SESSION).await.unwrap().is_none());
    fx.store.release_lease(&other).await.unwrap();
    assert_eq!(a.respond(SESSION, "now").await.unwrap().version, 1);
}

/// Agent A's turn stalls its thread (no renewal) past its 200 ms ttl; agent B takes
/// the expired lease and saves its turn; when A wakes, its save is refused
/// (`LeaseLost`): the session holds B's turn only.
pub async fn a_stalled_holder_taken_over_saves_nothing(b: &impl Backend) {
    let fx = b.create().await;
    let file = TempFile::new("stalled");
    let lease = LeaseConfig {
        ttl: ms(200),
        ..test_lease()
    };
    let (sa, sb) = (handle(b, &fx).await, handle(b, &fx).await);
    let path = file.0.clone();
    let stalled = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let a = effect_agent(
                sa,
                &path,
                "a",
                Effect::RecordAndStall(ms(1500)),
                Some(lease),
                None,
            );
            a.respond(SESSION, "stall").await
        })
    });
    // Wait until A's tool ran (it holds the lease and stalls).
    let t = Instant::now();
    while effects(&file.0).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(10), "A never ran");
        tokio::time::sleep(ms(5)).await;
    }
    let bagent = effect_agent(sb, &file.0, "b", Effect::Record, Some(lease), None);
    let rb = bagent.respond(SESSION, "from b").await.unwrap();
    assert_eq!(rb.version, 1);
    let ra = tokio::task::spawn_blocking(move || stalled.join().unwrap())
        .await
        .unwrap();
    assert!(
        matches!(ra, Err(AgentError::Store(StoreError::LeaseLost { .. }))),
        "{}: {ra:?}",
        b.name()
    );
    let (s, counts) = user_messages(&fx.store).await;
    assert_eq!(s.version, 1);
    assert_eq!(counts.keys().collect::<Vec<_>>(), ["from b"]);
    assert_eq!(effects(&file.0), ["a\tstall", "b\tfrom b"]);
}

// ---------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------

fn child(test: &str, role: &str, token: &str, effects: &Path, index: usize) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, role)
        .env(TOKEN_ENV, token)
        .env(EFFECTS_ENV, effects)
        .env(INDEX_ENV, index.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

struct ChildEnv {
    role: String,
    token: String,
    effects: PathBuf,
    index: usize,
}

fn child_env() -> Option<ChildEnv> {
    Some(ChildEnv {
        role: std::env::var(ROLE_ENV).ok()?,
        token: std::env::var(TOKEN_ENV).ok()?,
        effects: std::env::var(EFFECTS_ENV).ok()?.into(),
        index: std::env::var(INDEX_ENV).ok()?.parse().ok()?,
    })
}

/// The child side: 25 concurrent turns; prints `RESULT ok N` or the failures.
async fn child_turns(b: &impl Backend, env: &ChildEnv) {
    let store = b.reopen(&env.token).await;
    let p = env.index;
    let a = effect_agent(
        store,
        &env.effects,
        &format!("p{p}"),
        Effect::Record,
        Some(test_lease()),
        None,
    );
    let turns: Vec<_> = (0..25)
        .map(|i| {
            let a = a.clone();
            tokio::spawn(async move {
                let text = format!("p{p} m{i}");
                (a.respond(SESSION, &text).await, text)
            })
        })
        .collect();
    let mut ok = 0;
    for t in turns {
        match t.await.unwrap() {
            (Ok(_), _) => ok += 1,
            (Err(e), text) => println!("RESULT failed `{text}`: {e:?}"),
        }
    }
    println!("RESULT ok {ok}");
}

/// 8 processes (this test binary, re-run as children), each sending 25 concurrent
/// turns to one session on a shared durable store: every one of the 200 turns
/// succeeds, each is once in the session, and the tool's external effect (a line in
/// a file) happened exactly once per turn.
pub async fn eight_processes_with_twenty_five_concurrent_turns_each_all_succeed_once(
    b: &impl Backend,
    test: &str,
) {
    if let Some(env) = child_env() {
        if env.role == "turns" {
            child_turns(b, &env).await;
        }
        return;
    }
    let fx = b.create().await;
    let file = TempFile::new("processes");
    let started = Instant::now();
    let children: Vec<_> = (0..8)
        .map(|i| child(test, "turns", &fx.token, &file.0, i).spawn().unwrap())
        .collect();
    let outputs: Vec<_> = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect()
    })
    .await
    .unwrap();
    let elapsed = started.elapsed();
    for (i, out) in outputs.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("RESULT ok 25"),
            "{}: process {i} ({}): {stdout}\n{}",
            b.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let messages: Vec<String> = (0..8)
        .flat_map(|p| (0..25).map(move |i| format!("p{p} m{i}")))
        .collect();
    assert_each_turn_once(b.name(), &fx.store, &messages, &file.0).await;
    notice(&format!(
        "{}: 8 processes x 25 concurrent turns on one session: 200 saved, 200 tool runs, in {elapsed:?}",
        b.name()
    ));
}

/// The child side: one turn whose tool records its effect, announces `HOLDING` and
/// hangs (holding the lease, renewing it) until the parent kills the process.
async fn child_hold(b: &impl Backend, env: &ChildEnv) {
    let store = b.reopen(&env.token).await;
    let a = effect_agent(
        store,
        &env.effects,
        "killed",
        Effect::RecordAndHang,
        Some(test_lease()),
        None,
    );
    let r = a
        .respond_with(SESSION, "never saved", &TurnOptions::event(KILLED_EVENT))
        .await;
    println!("RESULT unexpected end: {r:?}");
}

/// A process holding the lease in the middle of a turn (its tool ran and hangs) is
/// killed with SIGKILL. The lease is still held right after; the next turn, from
/// this process, waits for it to expire (1 s ttl) and succeeds; the stored session
/// has the turns before and after, nothing of the killed turn; the killed turn's
/// tool ran once and was not run again.
pub async fn a_holder_killed_mid_turn_is_waited_out_and_nothing_is_half_applied(
    b: &impl Backend,
    test: &str,
) {
    if let Some(env) = child_env() {
        if env.role == "hold" {
            child_hold(b, &env).await;
        }
        return;
    }
    let fx = b.create().await;
    let file = TempFile::new("killed");
    // The deadline outlasts the killed holder's lease (at most 1 s left): the wait
    // for it counts toward the deadline.
    let a = effect_agent(
        handle(b, &fx).await,
        &file.0,
        "parent",
        Effect::Record,
        Some(test_lease()),
        Some(ms(2000)),
    );
    a.respond(SESSION, "before").await.unwrap();
    let before = fx.store.load(SESSION).await.unwrap().unwrap();

    let mut c = child(test, "hold", &fx.token, &file.0, 0).spawn().unwrap();
    let stdout = c.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (holding, seen) = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let mut seen = Vec::new();
        while t.elapsed() < Duration::from_secs(60) {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(l) if l.contains("HOLDING") => return (true, seen),
                Ok(l) => seen.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(_) => return (false, seen),
            }
        }
        (false, seen)
    })
    .await
    .unwrap();
    if !holding {
        let _ = c.kill();
        let out = c.wait_with_output().unwrap();
        panic!(
            "{}: the child never held the lease: {seen:?} {}",
            b.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Let it renew at least once (every ttl/3), then kill it mid-turn.
    tokio::time::sleep(ms(500)).await;
    c.kill().unwrap(); // SIGKILL
    c.wait().unwrap();
    reader.join().unwrap();
    let (holder, left) = busy(&fx.store, SESSION).await;
    assert!(holder.starts_with("Concierge/pid"), "{holder}");
    assert!(
        left > Duration::ZERO && left <= Duration::from_secs(1),
        "{left:?}"
    );

    let started = Instant::now();
    let r = a.respond(SESSION, "after").await;
    let waited = started.elapsed();
    let r = r.unwrap_or_else(|e| panic!("{}: the next turn: {e:?}", b.name()));
    assert_eq!(r.version, 2, "{}", b.name());
    assert!(
        waited >= left.saturating_sub(ms(100)),
        "{waited:?} < {left:?}"
    );
    let (s, counts) = user_messages(&fx.store).await;
    assert_eq!(s.version, 2);
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        ["after", "before"],
        "{}: nothing of the killed turn",
        b.name()
    );
    let first = Session::<Booking, Concierge>::decode(&before).unwrap();
    assert_eq!(&s.history[..first.history.len()], &first.history[..]);
    // The channel delivers the killed turn's message again: its once-tool call has an
    // intent and no result, so it is not run; the call fails (no outcome hook) and
    // the model sees that, and the turn is saved.
    let again = a
        .respond_with(SESSION, "never saved", &TurnOptions::event(KILLED_EVENT))
        .await
        .unwrap_or_else(|e| panic!("{}: the redelivered turn: {e:?}", b.name()));
    assert_eq!(again.version, 3, "{}", b.name());
    assert!(
        again.tool_calls.iter().all(|c| !c.ok),
        "{}: {:?}",
        b.name(),
        again.tool_calls
    );
    assert_eq!(
        effects(&file.0),
        ["parent\tbefore", "killed\tnever saved", "parent\tafter"],
        "{}: the killed turn's once-tool ran once, not again, not on redelivery",
        b.name()
    );
    notice(&format!(
        "{}: holder killed (SIGKILL) mid-turn with {left:?} of lease left; the next turn waited {waited:?} and saved version 2; the killed turn redelivered did not run its once-tool again",
        b.name()
    ));
}
