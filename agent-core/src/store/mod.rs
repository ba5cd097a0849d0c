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
//! the crate's `journal` module). Records are keyed by session and call key and go
//! with their session (`delete`) or by the age of their intent (`prune`).
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

use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreError;

mod id;
mod journal_record;
mod lease;
mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use self::id::{HASHED_ABOVE_BYTES, MAX_SESSION_ID_BYTES, check_session_id};
pub use self::journal_record::JournalBegin;
pub(crate) use self::lease::{
    AcquireFailure, HeldLease, acquire_lease, bounded, lease_lost, save_fenced,
};
pub use self::lease::{Lease, LeaseAttempt, LeaseConfig, QueuedAttempt};
pub use self::memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use self::postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
#[cfg(feature = "sqlite")]
pub use self::sqlite::SqliteStore;

/// A session as bytes, as stores keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// The session's id.
    pub id: String,
    /// Version of these bytes.
    pub version: u64,
    /// Last save time (ms since the Unix epoch).
    pub updated_ms: u64,
    /// The session encoded by the engine (opaque to the store).
    pub bytes: Vec<u8>,
}

/// What `list` returns per session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session's id.
    pub id: String,
    /// The version of the stored session (what the next save must expect).
    pub version: u64,
    /// Last save time (ms since the Unix epoch).
    pub updated_ms: u64,
}

/// Where sessions live: load, save with compare-and-swap on a version, delete, list and
/// prune, plus the leases that keep one turn at a time per session. Implemented by the
/// memory, SQLite, PostgreSQL and Redis stores; implement it for another backend, and run
/// the conformance suite against it.
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
    /// Every stored session's id, version and last save time (for listings and maintenance).
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

    /// Whether this store queues the turns that wait for a session's lease first come,
    /// first served ([`SessionStore::acquire_lease_queued`]; every store of this crate
    /// does). With the default `false`, waiting turns poll
    /// [`SessionStore::try_acquire_lease`] and whoever polls first after a release
    /// takes the lease.
    fn supports_lease_queue(&self) -> bool {
        false
    }

    /// Take the lease of session `id` in turn: like
    /// [`SessionStore::try_acquire_lease`], but a caller that cannot have it now gets
    /// a **ticket** in the session's queue, and the lease goes to the live ticket
    /// drawn first. Atomically:
    ///
    /// 1. tickets of the session not refreshed within their `ticket_ttl` are dropped
    ///    (their waiter gave up or died);
    /// 2. `ticket`, when given (the caller's from an earlier attempt), is refreshed
    ///    for `ticket_ttl` (re-entered under its number if it had been dropped);
    /// 3. when nobody holds the lease and no live ticket was drawn before the caller's
    ///    (a caller without a ticket: no live ticket at all), the lease is the
    ///    caller's ([`QueuedAttempt::Acquired`]) and its ticket leaves the queue;
    /// 4. otherwise a caller without a ticket draws one, from a counter that only
    ///    grows, and the answer is [`QueuedAttempt::Waiting`].
    ///
    /// A caller must try again with its ticket at least once per `ticket_ttl` while
    /// it waits, and call [`SessionStore::leave_lease_queue`] when it gives up. Plain
    /// [`SessionStore::try_acquire_lease`] on such a store respects the queue too (it
    /// takes the lease only when no live ticket waits) but draws no ticket.
    ///
    /// The default (a store without a queue) is `try_acquire_lease`, with no ticket.
    async fn acquire_lease_queued(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Duration,
    ) -> Result<QueuedAttempt, StoreError> {
        let _ = (ticket, ticket_ttl);
        Ok(match self.try_acquire_lease(id, holder, ttl).await? {
            LeaseAttempt::Acquired(l) => QueuedAttempt::Acquired(l),
            LeaseAttempt::Busy { holder, expires_in } => QueuedAttempt::Waiting {
                ticket: None,
                ahead: 0,
                holder,
                expires_in,
            },
        })
    }

    /// Drop `ticket` from the queue of session `id` (a waiter that gave up), so the
    /// waiters behind it need not wait for it to expire. Nothing happens when it is
    /// not there. The default does nothing.
    async fn leave_lease_queue(&self, id: &str, ticket: u64) -> Result<(), StoreError> {
        let _ = (id, ticket);
        Ok(())
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

    /// Whether this store keeps the once-tool journal (the crate's `journal` module;
    /// every store of this crate does). The default `false` is for stores written
    /// before it existed: calls of tools declared `effect = once` then fail without
    /// running.
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

/// Milliseconds since the Unix epoch: the clock of journal intents and of the SQLite
/// and PostgreSQL stores' records, compared across processes. A copy of the journal's
/// own, so the store needs nothing from the layer above it.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
