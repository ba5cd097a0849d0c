//! Session stores: load, save with compare-and-swap on a version, delete, list, prune.
//! The in-memory store is built in; durable stores implement the same trait, each
//! behind a cargo feature of `agent-core`:
//!
//! | store | feature | for |
//! | --- | --- | --- |
//! | [`MemoryStore`] | (built in) | tests, single-process agents that may lose sessions |
//! | `sqlite::SqliteStore` | `sqlite` | the embedded durable default: one file, WAL mode |
//! | `postgres::PostgresStore` | `postgres` | agent processes on many machines |
//! | `redis::RedisStore` | `redis` | agent processes on many machines |
//!
//! Every store's `save` is one atomic compare-and-swap in the backend (an `UPDATE …
//! WHERE version = ?`, an `INSERT` that fails on an existing key, a Lua script), never a
//! read-compare-write from the client, so several processes can share one store: the
//! engine re-runs a turn that lost the race on fresh state or reports a typed
//! conflict ([`crate::ConflictPolicy`]). A save either happened completely or not at
//! all: a process that dies during a save leaves the previous version.
//!
//! # Session leases (one turn at a time across processes)
//!
//! The compare-and-swap alone keeps updates from being lost, but a turn that loses the
//! race re-runs from the start, tools included. So every store here also keeps a
//! **lease** per session: before a turn the agent takes it
//! ([`SessionStore::try_acquire_lease`], waiting while another holder has it), renews
//! it while the turn runs, saves with it ([`SessionStore::save_leased`]) and releases
//! it. A lease carries a **fencing token**, drawn from a counter of the store that only
//! grows, so a later holder always has a larger token than an earlier one:
//!
//! - a lease that is not renewed expires after its time to live (a crashed holder
//!   blocks the session at most that long), and the next acquirer gets a new token;
//! - `save_leased` is accepted only while the session's current lease token is the
//!   saver's, checked atomically with the compare-and-swap: a holder whose lease
//!   expired *and was taken over*, or who released it, cannot save
//!   ([`StoreError::LeaseLost`]). A holder whose lease expired without anyone taking
//!   it still saves: nobody else can have written under a lease since;
//! - a plain [`SessionStore::save`] ignores leases (it stays a compare-and-swap);
//! - a holder may give the lease up before its turn ends
//!   ([`SessionStore::release_lease`]; a turn that pauses for a person's approval
//!   does), after which it can neither renew nor save under it.
//!
//! | store | lease record | token counter | save check |
//! | --- | --- | --- | --- |
//! | [`MemoryStore`] | map entry under a mutex | atomic counter | same mutex |
//! | SQLite | row of `agent_leases`, written in a `BEGIN IMMEDIATE` transaction | one-row table | in the save's transaction |
//! | PostgreSQL | row of `{table}_leases` (expiry by the server's clock) | a sequence | `FOR SHARE` on the lease row in the save statement |
//! | Redis | key `{prefix}lease:{id}` with `PX` expiry, token in `{prefix}fence:{id}` | `INCR` of `{prefix}fences` | the save script |
//!
//! A store of another crate that does not override the lease methods reports
//! [`SessionStore::supports_leases`] `false`; the agent then runs turns without a
//! lease, with the compare-and-swap (and its re-runs) as the only guard.
//!
//! # The once-tool journal
//!
//! A turn can still run twice (a crash, a redelivered event), so tools declared
//! `effect = once` ([`crate::tool::Effect::Once`]) journal each call in the store,
//! apart from the session: [`SessionStore::journal_begin`] writes the call's intent
//! unless a record exists (atomically: one attempt starts a call) and
//! [`SessionStore::journal_finish`] its result, both durable when they return (see
//! [`crate::journal`]). Records are keyed by session and call key and go with their
//! session (`delete`) or by the age of their intent (`prune`).
//!
//! | store | journal record | intent (insert if absent) |
//! | --- | --- | --- |
//! | [`MemoryStore`] | map entry under a mutex | same mutex |
//! | SQLite | row of `agent_tool_journal`, key `(session_id, call_key)` | `INSERT … ON CONFLICT DO NOTHING` |
//! | PostgreSQL | row of `{table}_journal`, key `(session_id, call_key)` | `INSERT … ON CONFLICT DO NOTHING` |
//! | Redis | fields `i:{key}`, `r:{key}` of the hash `{prefix}journal:{id}` | `HSETNX` in a script |
//!
//! A store of another crate that does not override the journal methods reports
//! [`SessionStore::supports_journal`] `false`; `once` calls then fail without running.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::StoreError;
pub use crate::journal::JournalBegin;

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

#[cfg(feature = "postgres")]
pub use self::postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
#[cfg(feature = "sqlite")]
pub use self::sqlite::SqliteStore;

/// A session as bytes, as stores keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// Session id.
    pub id: String,
    /// Version of these bytes.
    pub version: u64,
    /// Last save time (ms since the Unix epoch).
    pub updated_ms: u64,
    /// Encoded session.
    pub bytes: Vec<u8>,
}

/// What `list` returns per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// Current version.
    pub version: u64,
    /// Last save time (ms since the Unix epoch).
    pub updated_ms: u64,
}

/// Where sessions live.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Load a session, `None` if it does not exist.
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError>;
    /// Save `session` (whose `version` is the new version) only if the stored version is
    /// `expected` (`0` = the session must not exist yet). Atomic; on mismatch returns
    /// [`StoreError::Conflict`] and changes nothing.
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError>;
    /// Delete a session; whether it existed.
    async fn delete(&self, id: &str) -> Result<bool, StoreError>;
    /// All sessions.
    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError>;
    /// Delete sessions last saved before `cutoff_ms`; how many were deleted.
    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError>;

    /// Whether this store keeps session leases (every store of this crate does). The
    /// default `false` is for stores written before leases existed: the agent then
    /// runs turns without a lease, guarded by the compare-and-swap only, and the other
    /// lease methods are never called. A store that wraps another (metrics, caching)
    /// must forward this and the four lease methods, or its agents run without
    /// leases.
    fn supports_leases(&self) -> bool {
        false
    }

    /// Take the lease of session `id` for `holder` (a name for messages) for `ttl`,
    /// if nobody holds it (no lease, or the last one expired or was released): the
    /// new lease's fencing token is larger than any token this store issued before.
    /// Does not wait: a held lease is [`LeaseAttempt::Busy`]. The session itself
    /// need not exist.
    ///
    /// The default (a store without leases) fails with
    /// [`StoreError::LeasesUnsupported`].
    async fn try_acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        let _ = (holder, ttl);
        Err(StoreError::LeasesUnsupported {
            session_id: id.to_owned(),
        })
    }

    /// Extend `lease` to `lease.ttl` from now. Fails with [`StoreError::LeaseLost`]
    /// when the lease was released or another holder took it since (it expired and
    /// was acquired again); a lease that expired without being taken is renewed.
    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        Err(StoreError::LeasesUnsupported {
            session_id: lease.session_id.clone(),
        })
    }

    /// Give `lease` up now, so the next turn need not wait for it to expire; whether
    /// it was still this holder's (`false`: it had been taken over or released,
    /// nothing changed). A released lease can no longer be renewed or saved under.
    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        Err(StoreError::LeasesUnsupported {
            session_id: lease.session_id.clone(),
        })
    }

    /// [`SessionStore::save`] under `lease` (of the same session): atomically, the
    /// session's current lease token must be `lease.token`
    /// ([`StoreError::LeaseLost`] otherwise) and the stored version `expected`
    /// ([`StoreError::Conflict`] otherwise); either failure writes nothing.
    async fn save_leased(
        &self,
        session: StoredSession,
        expected: u64,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let _ = (session, expected);
        Err(StoreError::LeasesUnsupported {
            session_id: lease.session_id.clone(),
        })
    }

    /// Whether this store keeps the once-tool journal ([`crate::journal`]; every store
    /// of this crate does). The default `false` is for stores written before it
    /// existed: calls of tools declared `effect = once` then fail without running.
    /// A store that wraps another must forward this and the two journal methods.
    fn supports_journal(&self) -> bool {
        false
    }

    /// Write the intent of once-tool call `key` of session `session_id` (tool `tool`,
    /// at `now_ms`) unless a record of that call exists, atomically: what was there
    /// decides what the caller does ([`JournalBegin`]). Durable before it returns.
    /// The records of a session go with it (`delete`, `prune`).
    ///
    /// The default (a store without a journal) fails with
    /// [`StoreError::JournalUnsupported`].
    async fn journal_begin(
        &self,
        session_id: &str,
        key: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<JournalBegin, StoreError> {
        let _ = (key, tool, now_ms);
        Err(StoreError::JournalUnsupported {
            session_id: session_id.to_owned(),
        })
    }

    /// Record the result of call `key` (whose intent was written), durably, before it
    /// returns.
    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        let _ = (key, result);
        Err(StoreError::JournalUnsupported {
            session_id: session_id.to_owned(),
        })
    }
}

/// A held session lease: whoever holds it runs the session's turns; saves under it
/// carry its fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session_id: String,
    /// Who holds it (for messages; the token is what counts).
    pub holder: String,
    /// The fencing token: larger than every token the store issued before this one.
    pub token: u64,
    /// Time to live from the last acquire or renew.
    pub ttl: Duration,
}

/// What [`SessionStore::try_acquire_lease`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAttempt {
    /// The lease is the caller's.
    Acquired(Lease),
    /// Another holder has it.
    Busy {
        /// Who holds it.
        holder: String,
        /// When it expires unless renewed (as the store sees it).
        expires_in: Duration,
    },
}

/// How an agent takes session leases ([`crate::AgentConfig::lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Time to live of a lease: a holder that crashed (or hangs without renewing)
    /// blocks its session at most this long. A running turn renews its lease every
    /// third of it, so a turn may take longer. Default 30 s.
    pub ttl: Duration,
    /// Longest time a turn waits for a session another holder is using, before
    /// failing with [`crate::error::AgentError::SessionBusy`]. Waiting does not count
    /// toward [`crate::AgentConfig::turn_timeout`]. Default 60 s: twice the `ttl`, so
    /// a turn outlasts the lease of a crashed holder.
    pub max_wait: Duration,
    /// Pause between attempts while waiting: jittered, from `poll.base` doubling up to
    /// `poll.max`, never past the busy lease's expiry. Default 2 ms up to 100 ms.
    pub poll: crate::backoff::ConflictBackoff,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(30),
            max_wait: Duration::from_secs(60),
            poll: crate::backoff::ConflictBackoff {
                base: Duration::from_millis(2),
                max: Duration::from_millis(100),
            },
        }
    }
}

/// Why [`acquire_lease`] gave up.
#[derive(Debug)]
pub(crate) enum AcquireFailure {
    /// Still held by someone else after the longest wait.
    Busy {
        waited: Duration,
        holder: Option<String>,
    },
    /// The store failed.
    Store(StoreError),
    /// Waiting needs a Tokio runtime with timers.
    NoTimer,
}

/// Take the lease of session `id`, waiting (polling with jittered backoff) while
/// another holder has it, at most `config.max_wait`.
pub(crate) async fn acquire_lease(
    store: &dyn SessionStore,
    id: &str,
    holder: &str,
    config: &LeaseConfig,
) -> Result<Lease, AcquireFailure> {
    let started = tokio::time::Instant::now();
    let mut attempt = 0u32;
    loop {
        let busy = match store.try_acquire_lease(id, holder, config.ttl).await {
            Ok(LeaseAttempt::Acquired(lease)) => return Ok(lease),
            Ok(LeaseAttempt::Busy { holder, expires_in }) => (holder, expires_in),
            Err(e) => return Err(AcquireFailure::Store(e)),
        };
        let waited = started.elapsed();
        if waited >= config.max_wait {
            return Err(AcquireFailure::Busy {
                waited,
                holder: Some(busy.0),
            });
        }
        attempt = attempt.saturating_add(1);
        // Wake at the expiry at the latest (a crashed holder's lease ends then), and
        // never past the longest wait.
        let pause = config
            .poll
            .delay(attempt, crate::backoff::jitter(id, attempt))
            .min(busy.1.saturating_add(Duration::from_millis(1)))
            .min(config.max_wait - waited)
            .max(Duration::from_micros(100));
        match sleep(pause) {
            Some(timer) => timer.await,
            None => return Err(AcquireFailure::NoTimer),
        }
    }
}

/// A Tokio sleep, or `None` outside a Tokio runtime or in one without timers (where
/// creating it would panic).
fn sleep(d: Duration) -> Option<std::pin::Pin<Box<tokio::time::Sleep>>> {
    tokio::runtime::Handle::try_current().ok()?;
    std::panic::catch_unwind(|| Box::pin(tokio::time::sleep(d))).ok()
}

/// A lease an agent holds for a turn. Release it with [`HeldLease::release`] (a turn
/// that pauses for a person's approval gives the session up this way); one dropped
/// unreleased (a cancelled turn) is released in the background, so the session is
/// not blocked until the lease expires.
pub(crate) struct HeldLease {
    store: Arc<dyn SessionStore>,
    lease: Lease,
    released: AtomicBool,
}

impl std::fmt::Debug for HeldLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldLease")
            .field("lease", &self.lease)
            .field("released", &self.released)
            .finish_non_exhaustive()
    }
}

impl HeldLease {
    pub(crate) fn new(store: Arc<dyn SessionStore>, lease: Lease) -> Self {
        Self {
            store,
            lease,
            released: AtomicBool::new(false),
        }
    }

    /// The lease (for fenced saves).
    pub(crate) fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Give the session up now (once; later calls do nothing). Renewal stops.
    pub(crate) async fn release(&self) -> Result<bool, StoreError> {
        if self.released.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        self.store.release_lease(&self.lease).await
    }

    fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    /// Run `fut` while keeping the lease alive: renew it every third of its time to
    /// live, until `fut` ends or the lease is released. A renewal that finds the lease
    /// taken over stops `fut` (dropped where it awaits) and returns
    /// [`StoreError::LeaseLost`]: another holder runs the session now, and the fenced
    /// save would be refused anyway. A renewal that fails otherwise (the backend is
    /// briefly unreachable) is retried sooner.
    pub(crate) async fn hold<F: Future>(&self, fut: F) -> Result<F::Output, StoreError> {
        let every = (self.lease.ttl / 3).max(Duration::from_millis(1));
        let renew = async {
            let mut next = every;
            loop {
                let Some(timer) = sleep(next) else {
                    tracing::warn!(session = %self.lease.session_id, "no Tokio timer: the session lease is not renewed (a turn longer than its ttl loses it)");
                    return std::future::pending::<StoreError>().await;
                };
                timer.await;
                if self.is_released() {
                    return std::future::pending::<StoreError>().await;
                }
                match self.store.renew_lease(&self.lease).await {
                    Ok(()) => next = every,
                    Err(e @ StoreError::LeaseLost { .. }) if !self.is_released() => return e,
                    Err(e) => {
                        if self.is_released() {
                            return std::future::pending::<StoreError>().await;
                        }
                        tracing::warn!(session = %self.lease.session_id, error = %e, "renewing the session lease failed; retrying");
                        next = (every / 4).max(Duration::from_millis(1));
                    }
                }
            }
        };
        tokio::pin!(fut);
        tokio::pin!(renew);
        tokio::select! {
            biased;
            out = &mut fut => Ok(out),
            lost = &mut renew => Err(lost),
        }
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        if self.is_released() {
            return;
        }
        // Dropped mid-turn (the caller gave up on the turn): release in the background.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            let lease = self.lease.clone();
            rt.spawn(async move {
                if let Err(e) = store.release_lease(&lease).await {
                    tracing::warn!(session = %lease.session_id, error = %e, "releasing the lease of a cancelled turn failed; it expires after its ttl");
                }
            });
        }
    }
}

/// Save under `lease` when there is one, else a plain compare-and-swap.
pub(crate) async fn save_fenced(
    store: &dyn SessionStore,
    session: StoredSession,
    expected: u64,
    lease: Option<&Lease>,
) -> Result<(), StoreError> {
    match lease {
        Some(l) => store.save_leased(session, expected, l).await,
        None => store.save(session, expected).await,
    }
}

/// The error of a fenced save (or renewal) whose lease was taken over.
pub(crate) fn lease_lost(lease: &Lease, current: Option<u64>) -> StoreError {
    StoreError::LeaseLost {
        session_id: lease.session_id.clone(),
        token: lease.token,
        current,
    }
}

/// Milliseconds since the Unix epoch (the SQLite store's lease clock).
#[cfg(feature = "sqlite")]
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// In-process store (the default). Sessions are lost when the process exits.
/// Leases live in the same process: they keep several [`crate::Agent`]s over one
/// store (threads, tasks) to one turn at a time per session.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<String, StoredSession>>,
    /// The once-tool journal: per session, per call key, intent time and result.
    journal: Mutex<HashMap<String, HashMap<String, MemoryRecord>>>,
    leases: Mutex<HashMap<String, MemoryLease>>,
    tokens: AtomicU64,
}

/// A once-tool call's record in memory.
#[derive(Debug)]
struct MemoryRecord {
    intent_ms: u64,
    result: Option<Vec<u8>>,
}

/// A session's lease entry; kept when released (reused by the next acquire, so a
/// turn allocates nothing for it), dropped by `prune` with its session.
#[derive(Debug)]
struct MemoryLease {
    holder: String,
    token: u64,
    /// `None`: a time to live too long to represent (never expires).
    expires: Option<Instant>,
    released: bool,
}

impl MemoryLease {
    /// Time left, `None` once expired or released.
    fn live(&self, now: Instant) -> Option<Duration> {
        if self.released {
            return None;
        }
        match self.expires {
            None => Some(Duration::MAX),
            Some(e) => e.checked_duration_since(now).filter(|d| !d.is_zero()),
        }
    }

    /// The token saves and renewals must carry (`None` once released).
    fn current(&self) -> Option<u64> {
        (!self.released).then_some(self.token)
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredSession>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn lock_journal(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<String, MemoryRecord>>> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn lock_leases(&self) -> std::sync::MutexGuard<'_, HashMap<String, MemoryLease>> {
        self.leases.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn cas(
        map: &mut HashMap<String, StoredSession>,
        session: StoredSession,
        expected: u64,
    ) -> Result<(), StoreError> {
        let found = map.get(&session.id).map_or(0, |s| s.version);
        if found != expected {
            return Err(StoreError::Conflict {
                session_id: session.id,
                expected,
                found,
            });
        }
        match map.get_mut(&session.id) {
            Some(slot) => *slot = session,
            None => {
                map.insert(session.id.clone(), session);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        Self::cas(&mut self.lock(), session, expected)
    }
    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.lock_journal().remove(id);
        Ok(self.lock().remove(id).is_some())
    }
    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let mut v: Vec<SessionInfo> = self
            .lock()
            .values()
            .map(|s| SessionInfo {
                id: s.id.clone(),
                version: s.version,
                updated_ms: s.updated_ms,
            })
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(v)
    }
    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, s| s.updated_ms >= cutoff_ms);
        let pruned = before - map.len();
        drop(map);
        let mut journal = self.lock_journal();
        for records in journal.values_mut() {
            records.retain(|_, r| r.intent_ms >= cutoff_ms);
        }
        journal.retain(|_, records| !records.is_empty());
        drop(journal);
        // Lease entries of sessions that are gone and not held (tokens never repeat:
        // they come from the store's counter).
        // Lock order: leases, then sessions (as in `save_leased`).
        let now = Instant::now();
        let mut leases = self.lock_leases();
        let map = self.lock();
        leases.retain(|id, l| l.live(now).is_some() || map.contains_key(id));
        Ok(pruned)
    }

    fn supports_leases(&self) -> bool {
        true
    }

    fn supports_journal(&self) -> bool {
        true
    }

    async fn journal_begin(
        &self,
        session_id: &str,
        key: &str,
        _tool: &str,
        now_ms: u64,
    ) -> Result<JournalBegin, StoreError> {
        let mut journal = self.lock_journal();
        let records = journal.entry(session_id.to_owned()).or_default();
        Ok(match records.get(key) {
            Some(MemoryRecord {
                result: Some(r), ..
            }) => JournalBegin::Done(r.clone()),
            Some(MemoryRecord { intent_ms, .. }) => JournalBegin::Pending {
                intent_ms: *intent_ms,
            },
            None => {
                records.insert(
                    key.to_owned(),
                    MemoryRecord {
                        intent_ms: now_ms,
                        result: None,
                    },
                );
                JournalBegin::Started
            }
        })
    }

    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        let mut journal = self.lock_journal();
        let records = journal.entry(session_id.to_owned()).or_default();
        match records.get_mut(key) {
            Some(r) => r.result = Some(result.to_vec()),
            None => {
                records.insert(
                    key.to_owned(),
                    MemoryRecord {
                        intent_ms: crate::journal::now_ms(),
                        result: Some(result.to_vec()),
                    },
                );
            }
        }
        Ok(())
    }

    async fn try_acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        let now = Instant::now();
        let mut leases = self.lock_leases();
        if let Some(l) = leases.get(id)
            && let Some(left) = l.live(now)
        {
            return Ok(LeaseAttempt::Busy {
                holder: l.holder.clone(),
                expires_in: left,
            });
        }
        let token = self.tokens.fetch_add(1, Ordering::Relaxed) + 1;
        let expires = now.checked_add(ttl);
        match leases.get_mut(id) {
            Some(l) => {
                if l.holder != holder {
                    l.holder.clear();
                    l.holder.push_str(holder);
                }
                l.token = token;
                l.expires = expires;
                l.released = false;
            }
            None => {
                leases.insert(
                    id.to_owned(),
                    MemoryLease {
                        holder: holder.to_owned(),
                        token,
                        expires,
                        released: false,
                    },
                );
            }
        }
        Ok(LeaseAttempt::Acquired(Lease {
            session_id: id.to_owned(),
            holder: holder.to_owned(),
            token,
            ttl,
        }))
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let mut leases = self.lock_leases();
        match leases.get_mut(&lease.session_id) {
            Some(l) if l.current() == Some(lease.token) => {
                l.expires = Instant::now().checked_add(lease.ttl);
                Ok(())
            }
            other => Err(lease_lost(lease, other.and_then(|l| l.current()))),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let mut leases = self.lock_leases();
        match leases.get_mut(&lease.session_id) {
            Some(l) if l.current() == Some(lease.token) => {
                l.released = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn save_leased(
        &self,
        session: StoredSession,
        expected: u64,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        // Lock order: leases, then sessions (as in `prune`).
        let leases = self.lock_leases();
        let current = leases.get(&session.id).and_then(MemoryLease::current);
        if session.id != lease.session_id || current != Some(lease.token) {
            return Err(lease_lost(lease, current));
        }
        Self::cas(&mut self.lock(), session, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: &str, version: u64, at: u64, body: &str) -> StoredSession {
        StoredSession {
            id: id.into(),
            version,
            updated_ms: at,
            bytes: body.as_bytes().to_vec(),
        }
    }

    #[tokio::test]
    async fn save_is_a_compare_and_swap_on_the_version() {
        let store = MemoryStore::new();
        store.save(s("a", 1, 0, "one"), 0).await.unwrap();
        let err = store.save(s("a", 1, 0, "other"), 0).await.unwrap_err();
        assert_eq!(
            err,
            StoreError::Conflict {
                session_id: "a".into(),
                expected: 0,
                found: 1
            }
        );
        assert_eq!(store.load("a").await.unwrap().unwrap().bytes, b"one");
        store.save(s("a", 2, 0, "two"), 1).await.unwrap();
        assert_eq!(store.load("a").await.unwrap().unwrap().version, 2);
    }

    #[tokio::test]
    async fn list_delete_and_prune() {
        let store = MemoryStore::new();
        store.save(s("old", 1, 10, "x"), 0).await.unwrap();
        store.save(s("new", 1, 100, "y"), 0).await.unwrap();
        let ids: Vec<String> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(ids, ["new", "old"]);
        assert_eq!(store.prune(50).await.unwrap(), 1);
        assert!(store.load("old").await.unwrap().is_none());
        assert!(store.delete("new").await.unwrap());
        assert!(!store.delete("new").await.unwrap());
        assert!(store.list().await.unwrap().is_empty());
    }
}
