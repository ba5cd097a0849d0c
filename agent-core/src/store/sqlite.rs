//! The SQLite session store (feature `sqlite`): the embedded default for durable
//! sessions. One file, WAL mode, SQLite compiled in (no system library needed).
//!
//! ```no_run
//! # fn main() -> Result<(), agent_core::error::StoreError> {
//! use agent_core::store::SqliteStore;
//! let store = SqliteStore::open("sessions.db")?;
//! // Agent::builder().store(store) …
//! # drop(store);
//! # Ok(()) }
//! ```
//!
//! # Guarantees
//!
//! - `save` is one `BEGIN IMMEDIATE` transaction holding a conditional
//!   `UPDATE … WHERE id = ? AND version = ?` (or, for a new session, an `INSERT` that does
//!   nothing when the id exists): the compare-and-swap happens inside SQLite, so several
//!   processes (and several [`crate::Agent`]s) may share one file.
//! - A process killed during a save leaves the previous version: an uncommitted WAL
//!   transaction is discarded on the next open.
//! - Session leases (see [`crate::store`]) are rows of `agent_leases`, taken, renewed
//!   and released in `BEGIN IMMEDIATE` transactions; fencing tokens come from the
//!   one-row table `agent_lease_tokens`; `save_leased` checks the token inside the
//!   save's transaction. Waiters queue in `agent_lease_queue` (one row per ticket,
//!   first come, first served; see [`SessionStore::acquire_lease_queued`]), in the
//!   same transactions. Expiry uses the system clock of the processes sharing the
//!   file (one machine).
//! - The once-tool journal is the table `agent_tool_journal`,
//!   primary key `(session_id, call_key)`: the intent is an `INSERT … ON CONFLICT DO
//!   NOTHING` (exactly one writer wins), the result an `UPDATE` of its `result` column,
//!   each committed before it returns (as durable as saves: see `full_sync`). Rows go
//!   with their session (`delete`) and by age of their intent (`prune`).
//! - `synchronous = NORMAL` (the default here) survives process crashes; a power loss
//!   may lose the last saves but never corrupts the file. [`SqliteOptions::full_sync`]
//!   makes every save survive power loss too, at the cost of an fsync per save.
//!
//! SQLite calls are blocking: they run on tokio's blocking pool
//! (`tokio::task::spawn_blocking`). Loads and lists use a small pool of reading
//! connections and proceed while a save runs (WAL); saves, deletes and prunes of one
//! process queue for one writing connection, and wait for other processes' writers up
//! to [`SqliteOptions::busy_timeout`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};

use super::{
    JournalBegin, Lease, LeaseAttempt, QueuedAttempt, SessionInfo, SessionStore, StoredSession,
    lease_lost, now_ms,
};
use crate::error::StoreError;

/// Tuning of a [`SqliteStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Reading connections kept open between calls (more are opened under load and
    /// closed afterwards). Writes go through one more, dedicated connection. Default 4.
    pub max_idle_connections: usize,
    /// How long a save waits for another writer (this or another process) to release
    /// the write lock before failing with a backend error. Default 5 s.
    pub busy_timeout: Duration,
    /// `PRAGMA synchronous = FULL`: every save is flushed to disk before it returns
    /// (survives power loss). Default `false` (`NORMAL`: survives process crashes).
    pub full_sync: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            max_idle_connections: 4,
            busy_timeout: Duration::from_secs(5),
            full_sync: false,
        }
    }
}

/// Sessions in one SQLite file (WAL mode). Cheap to clone (shared).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    options: SqliteOptions,
    /// Reading connections.
    idle: Mutex<Vec<Connection>>,
    /// The writing connection: writers of this process queue here instead of
    /// sleeping in SQLite's busy handler; other processes are waited for up to
    /// `busy_timeout`.
    writer: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS agent_sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    version    INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    bytes      BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_sessions_updated_ms ON agent_sessions (updated_ms);
CREATE TABLE IF NOT EXISTS agent_leases (
    id         TEXT PRIMARY KEY NOT NULL,
    holder     TEXT NOT NULL,
    token      INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_lease_tokens (
    only INTEGER PRIMARY KEY CHECK (only = 1),
    last INTEGER NOT NULL
);
INSERT OR IGNORE INTO agent_lease_tokens (only, last) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS agent_lease_queue (
    id         TEXT NOT NULL,
    ticket     INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    PRIMARY KEY (id, ticket)
);
CREATE TABLE IF NOT EXISTS agent_tool_journal (
    session_id TEXT NOT NULL,
    call_key   TEXT NOT NULL,
    tool       TEXT NOT NULL,
    intent_ms  INTEGER NOT NULL,
    result     BLOB,
    PRIMARY KEY (session_id, call_key)
);
CREATE INDEX IF NOT EXISTS agent_tool_journal_intent_ms ON agent_tool_journal (intent_ms);";

/// SQLite integers are signed: versions and times are stored as `i64`.
fn get_u64(r: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    let v: i64 = r.get(i)?;
    u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(i, v))
}

fn to_i64(path: &Path, v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| {
        backend(
            path,
            "saving a session",
            format!("{v} does not fit an INTEGER"),
        )
    })
}

fn backend(path: &Path, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!(
        "SQLite store `{}`: {what} failed: {e}",
        path.display()
    ))
}

impl SqliteStore {
    /// Open (creating if needed) the session file at `path` with default options.
    /// Switches the file to WAL mode and creates the `agent_sessions` table.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`SqliteStore::open`] with tuning: connection counts, the busy timeout, full
    /// synchronous writes.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let writer = connect(&path, &options)?;
        writer
            .execute_batch(SCHEMA)
            .map_err(|e| backend(&path, "creating the sessions table", e))?;
        let reader = connect(&path, &options)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                options,
                idle: Mutex::new(vec![reader]),
                writer: Mutex::new(Some(writer)),
            }),
        })
    }

    /// The file this store writes.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Run `f` on the writing connection on tokio's blocking pool. The work runs to
    /// completion even if the caller's future is dropped, so a save is never cut in
    /// half by a cancelled turn.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut slot = inner.writer.lock().unwrap_or_else(|e| e.into_inner());
            let mut conn = match slot.take() {
                Some(c) => c,
                None => connect(&inner.path, &inner.options)?,
            };
            let out = f(&mut conn, &inner.path);
            // A connection left inside a transaction (an error mid-way) is replaced.
            if conn.is_autocommit() {
                *slot = Some(conn);
            }
            out
        })
        .await
        .map_err(|e| backend(&self.inner.path, "a blocking store task", e))?
    }

    /// Run `f` on a pooled reading connection on tokio's blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let mut conn = match pooled {
                Some(c) => c,
                None => connect(&inner.path, &inner.options)?,
            };
            let out = f(&mut conn, &inner.path);
            // A connection left inside a transaction (an error mid-way) is not reused.
            if conn.is_autocommit() {
                let mut idle = inner.idle.lock().unwrap_or_else(|e| e.into_inner());
                if idle.len() < inner.options.max_idle_connections.max(1) {
                    idle.push(conn);
                }
            }
            out
        })
        .await
        .map_err(|e| backend(&self.inner.path, "a blocking store task", e))?
    }
}

fn connect(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| {
        backend(
            path,
            "opening the file (check that its directory exists and is writable)",
            e,
        )
    })?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(|e| backend(path, "setting busy_timeout", e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| backend(path, "switching to WAL mode", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(backend(
            path,
            "switching to WAL mode",
            format!("SQLite kept journal mode `{mode}` (in-memory databases cannot use WAL)"),
        ));
    }
    let sync = if options.full_sync { "FULL" } else { "NORMAL" };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(|e| backend(path, "setting synchronous", e))?;
    Ok(conn)
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT version, updated_ms, bytes FROM agent_sessions WHERE id = ?1",
                )
                .map_err(|e| backend(path, "preparing load", e))?;
            let row = stmt
                .query_row(params![id], |r| {
                    Ok((get_u64(r, 0)?, get_u64(r, 1)?, r.get(2)?))
                })
                .optional()
                .map_err(|e| backend(path, "loading a session", e))?;
            Ok(row.map(|(version, updated_ms, bytes)| StoredSession {
                id,
                version,
                updated_ms,
                bytes,
            }))
        })
        .await
    }

    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        self.write(move |conn, path| save_tx(conn, path, session, expected, None))
            .await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.write(move |conn, path| {
            let n = conn
                .prepare_cached("DELETE FROM agent_sessions WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id]))
                .map_err(|e| backend(path, "deleting a session", e))?;
            conn.prepare_cached("DELETE FROM agent_tool_journal WHERE session_id = ?1")
                .and_then(|mut s| s.execute(params![id]))
                .map_err(|e| backend(path, "deleting a session's tool journal", e))?;
            Ok(n > 0)
        })
        .await
    }

    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.read(move |conn, path| {
            let mut stmt = conn
                .prepare_cached("SELECT id, version, updated_ms FROM agent_sessions ORDER BY id")
                .map_err(|e| backend(path, "preparing list", e))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(SessionInfo {
                        id: r.get(0)?,
                        version: get_u64(r, 1)?,
                        updated_ms: get_u64(r, 2)?,
                    })
                })
                .map_err(|e| backend(path, "listing sessions", e))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|e| backend(path, "listing sessions", e))
        })
        .await
    }

    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        // A cutoff beyond INTEGER deletes everything, like any cutoff above every time.
        let cutoff = i64::try_from(cutoff_ms).unwrap_or(i64::MAX);
        self.write(move |conn, path| {
            let n = conn
                .prepare_cached("DELETE FROM agent_sessions WHERE updated_ms < ?1")
                .and_then(|mut s| s.execute(params![cutoff]))
                .map_err(|e| backend(path, "pruning sessions", e))?;
            // Expired leases of sessions that are gone (tokens never repeat: they come
            // from the counter table).
            let now = to_i64(path, now_ms())?;
            conn.prepare_cached(
                "DELETE FROM agent_leases WHERE expires_ms <= ?1 \
                 AND id NOT IN (SELECT id FROM agent_sessions)",
            )
            .and_then(|mut s| s.execute(params![now]))
            .map_err(|e| backend(path, "pruning leases", e))?;
            conn.prepare_cached("DELETE FROM agent_lease_queue WHERE expires_ms <= ?1")
                .and_then(|mut s| s.execute(params![now]))
                .map_err(|e| backend(path, "pruning the lease queue", e))?;
            conn.prepare_cached("DELETE FROM agent_tool_journal WHERE intent_ms < ?1")
                .and_then(|mut s| s.execute(params![cutoff]))
                .map_err(|e| backend(path, "pruning the tool journal", e))?;
            Ok(n)
        })
        .await
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
        tool: &str,
        now_ms: u64,
    ) -> Result<JournalBegin, StoreError> {
        let (id, key, tool) = (session_id.to_owned(), key.to_owned(), tool.to_owned());
        self.write(move |conn, path| {
            let now = to_i64(path, now_ms)?;
            let n = conn
                .prepare_cached(
                    "INSERT INTO agent_tool_journal (session_id, call_key, tool, intent_ms) \
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (session_id, call_key) DO NOTHING",
                )
                .and_then(|mut s| s.execute(params![id, key, tool, now]))
                .map_err(|e| backend(path, "journaling a tool call's intent", e))?;
            if n == 1 {
                return Ok(JournalBegin::Started);
            }
            let (intent_ms, result): (u64, Option<Vec<u8>>) = conn
                .prepare_cached(
                    "SELECT intent_ms, result FROM agent_tool_journal \
                     WHERE session_id = ?1 AND call_key = ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![id, key], |r| Ok((get_u64(r, 0)?, r.get(1)?)))
                })
                .map_err(|e| backend(path, "reading a tool call's journal record", e))?;
            Ok(match result {
                Some(bytes) => JournalBegin::Done(bytes),
                None => JournalBegin::Pending { intent_ms },
            })
        })
        .await
    }

    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        let (id, key, result) = (session_id.to_owned(), key.to_owned(), result.to_vec());
        self.write(move |conn, path| {
            let now = to_i64(path, now_ms())?;
            conn.prepare_cached(
                "INSERT INTO agent_tool_journal (session_id, call_key, tool, intent_ms, result) \
                 VALUES (?1, ?2, '', ?3, ?4) ON CONFLICT (session_id, call_key) \
                 DO UPDATE SET result = excluded.result",
            )
            .and_then(|mut s| s.execute(params![id, key, now, result]))
            .map_err(|e| backend(path, "journaling a tool call's result", e))?;
            Ok(())
        })
        .await
    }

    async fn try_acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        let (id, holder) = (id.to_owned(), holder.to_owned());
        let got = self
            .write(move |conn, path| take_in_turn(conn, path, id, holder, ttl, None, None))
            .await?;
        Ok(got.into())
    }

    fn supports_lease_queue(&self) -> bool {
        true
    }

    async fn acquire_lease_queued(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Duration,
    ) -> Result<QueuedAttempt, StoreError> {
        let (id, holder) = (id.to_owned(), holder.to_owned());
        self.write(move |conn, path| {
            take_in_turn(conn, path, id, holder, ttl, ticket, Some(ticket_ttl))
        })
        .await
    }

    async fn leave_lease_queue(&self, id: &str, ticket: u64) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |conn, path| {
            let ticket = to_i64(path, ticket)?;
            conn.prepare_cached("DELETE FROM agent_lease_queue WHERE id = ?1 AND ticket = ?2")
                .and_then(|mut s| s.execute(params![id, ticket]))
                .map_err(|e| backend(path, "leaving the lease queue", e))?;
            Ok(())
        })
        .await
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |conn, path| {
            let ttl_ms = u64::try_from(lease.ttl.as_millis()).unwrap_or(u64::MAX);
            let expires = i64::try_from(now_ms().saturating_add(ttl_ms)).unwrap_or(i64::MAX);
            let token = to_i64(path, lease.token)?;
            let n = conn
                .prepare_cached(
                    "UPDATE agent_leases SET expires_ms = ?3 WHERE id = ?1 AND token = ?2",
                )
                .and_then(|mut s| s.execute(params![lease.session_id, token, expires]))
                .map_err(|e| backend(path, "renewing a lease", e))?;
            if n == 1 {
                return Ok(());
            }
            let current = current_token(conn, path, &lease.session_id)?;
            Err(lease_lost(&lease, current))
        })
        .await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(move |conn, path| {
            let token = to_i64(path, lease.token)?;
            let n = conn
                .prepare_cached("DELETE FROM agent_leases WHERE id = ?1 AND token = ?2")
                .and_then(|mut s| s.execute(params![lease.session_id, token]))
                .map_err(|e| backend(path, "releasing a lease", e))?;
            Ok(n > 0)
        })
        .await
    }

    async fn save_leased(
        &self,
        session: StoredSession,
        expected: u64,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let lease = lease.clone();
        self.write(move |conn, path| save_tx(conn, path, session, expected, Some(&lease)))
            .await
    }
}

/// [`SessionStore::acquire_lease_queued`] in one `BEGIN IMMEDIATE` transaction;
/// without a `ticket_ttl` (plain `try_acquire_lease`) the caller draws no ticket.
fn take_in_turn(
    conn: &mut Connection,
    path: &Path,
    id: String,
    holder: String,
    ttl: Duration,
    ticket: Option<u64>,
    ticket_ttl: Option<Duration>,
) -> Result<QueuedAttempt, StoreError> {
    let now = now_ms();
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let at = |d: Duration| i64::try_from(now.saturating_add(ms(d))).unwrap_or(i64::MAX);
    let now_i = to_i64(path, now)?;
    let ticket_i = ticket.map(|t| to_i64(path, t)).transpose()?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| backend(path, "starting a lease acquisition", e))?;
    let q = |e| backend(path, "keeping the lease queue", e);
    tx.prepare_cached("DELETE FROM agent_lease_queue WHERE id = ?1 AND expires_ms <= ?2")
        .and_then(|mut s| s.execute(params![id, now_i]))
        .map_err(q)?;
    if let (Some(t), Some(live)) = (ticket_i, ticket_ttl) {
        tx.prepare_cached(
            "INSERT INTO agent_lease_queue (id, ticket, expires_ms) VALUES (?1, ?2, ?3) \
             ON CONFLICT (id, ticket) DO UPDATE SET expires_ms = excluded.expires_ms",
        )
        .and_then(|mut s| s.execute(params![id, t, at(live)]))
        .map_err(q)?;
    }
    let head: Option<i64> = tx
        .prepare_cached("SELECT min(ticket) FROM agent_lease_queue WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
        .map_err(q)?;
    let held: Option<(String, i64)> = tx
        .prepare_cached("SELECT holder, expires_ms FROM agent_leases WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(|e| backend(path, "reading a lease", e))?;
    let busy = held.filter(|(_, expires_ms)| *expires_ms > now_i);
    if busy.is_none() && (head.is_none() || head == ticket_i) {
        let token: u64 = tx
            .prepare_cached(
                "UPDATE agent_lease_tokens SET last = last + 1 WHERE only = 1 RETURNING last",
            )
            .and_then(|mut s| s.query_row([], |r| get_u64(r, 0)))
            .map_err(|e| backend(path, "drawing a fencing token", e))?;
        let token_i = to_i64(path, token)?;
        tx.prepare_cached(
            "INSERT INTO agent_leases (id, holder, token, expires_ms) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, \
             token = excluded.token, expires_ms = excluded.expires_ms",
        )
        .and_then(|mut s| s.execute(params![id, holder, token_i, at(ttl)]))
        .map_err(|e| backend(path, "taking a lease", e))?;
        if let Some(t) = ticket_i {
            tx.prepare_cached("DELETE FROM agent_lease_queue WHERE id = ?1 AND ticket = ?2")
                .and_then(|mut s| s.execute(params![id, t]))
                .map_err(q)?;
        }
        tx.commit()
            .map_err(|e| backend(path, "committing a lease", e))?;
        return Ok(QueuedAttempt::Acquired(Lease {
            session_id: id,
            holder,
            token,
            ttl,
        }));
    }
    let mine = match (ticket_i, ticket_ttl) {
        (Some(t), _) => Some(t),
        (None, Some(live)) => {
            // Tickets come from the fencing tokens' counter: it only grows.
            let t: i64 = tx
                .prepare_cached(
                    "UPDATE agent_lease_tokens SET last = last + 1 WHERE only = 1 RETURNING last",
                )
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(|e| backend(path, "drawing a ticket", e))?;
            tx.prepare_cached(
                "INSERT INTO agent_lease_queue (id, ticket, expires_ms) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![id, t, at(live)]))
            .map_err(q)?;
            Some(t)
        }
        (None, None) => None,
    };
    let ahead: i64 = tx
        .prepare_cached(
            "SELECT count(*) FROM agent_lease_queue WHERE id = ?1 AND ticket < coalesce(?2, 9223372036854775807)",
        )
        .and_then(|mut s| s.query_row(params![id, mine], |r| r.get(0)))
        .map_err(q)?;
    tx.commit()
        .map_err(|e| backend(path, "committing the lease queue", e))?;
    let (holder, expires_in) = match busy {
        Some((h, expires_ms)) => (
            h,
            Duration::from_millis(u64::try_from(expires_ms - now_i).unwrap_or(0)),
        ),
        None => (String::new(), Duration::ZERO),
    };
    Ok(QueuedAttempt::Waiting {
        ticket: mine.and_then(|t| u64::try_from(t).ok()),
        ahead: u64::try_from(ahead).unwrap_or(0),
        holder,
        expires_in,
    })
}

/// The session's current lease token, if it has a lease row.
fn current_token(conn: &Connection, path: &Path, id: &str) -> Result<Option<u64>, StoreError> {
    conn.prepare_cached("SELECT token FROM agent_leases WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![id], |r| get_u64(r, 0)).optional())
        .map_err(|e| backend(path, "reading a lease token", e))
}

/// One save in one `BEGIN IMMEDIATE` transaction: the fencing check (with a lease),
/// then the compare-and-swap.
fn save_tx(
    conn: &mut Connection,
    path: &Path,
    session: StoredSession,
    expected: u64,
    lease: Option<&Lease>,
) -> Result<(), StoreError> {
    let version = to_i64(path, session.version)?;
    let updated_ms = to_i64(path, session.updated_ms)?;
    let expected_i = to_i64(path, expected)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| backend(path, "starting a save", e))?;
    if let Some(lease) = lease {
        let current = current_token(&tx, path, &session.id)?;
        if session.id != lease.session_id || current != Some(lease.token) {
            // Dropping the transaction rolls it back (nothing was written).
            return Err(lease_lost(lease, current));
        }
    }
    let changed = if expected == 0 {
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO agent_sessions (id, version, updated_ms, bytes) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (id) DO NOTHING",
            )
            .map_err(|e| backend(path, "preparing insert", e))?;
        stmt.execute(params![session.id, version, updated_ms, session.bytes])
    } else {
        let mut stmt = tx
            .prepare_cached(
                "UPDATE agent_sessions SET version = ?2, updated_ms = ?3, bytes = ?4 \
                 WHERE id = ?1 AND version = ?5",
            )
            .map_err(|e| backend(path, "preparing update", e))?;
        stmt.execute(params![
            session.id,
            version,
            updated_ms,
            session.bytes,
            expected_i
        ])
    }
    .map_err(|e| backend(path, "saving a session", e))?;
    if changed == 0 {
        let found: Option<u64> = tx
            .query_row(
                "SELECT version FROM agent_sessions WHERE id = ?1",
                params![session.id],
                |r| get_u64(r, 0),
            )
            .optional()
            .map_err(|e| backend(path, "reading the conflicting version", e))?;
        // Dropping the transaction rolls it back (nothing was written).
        drop(tx);
        return Err(StoreError::Conflict {
            session_id: session.id,
            expected,
            found: found.unwrap_or(0),
        });
    }
    tx.commit()
        .map_err(|e| backend(path, "committing a save", e))
}
