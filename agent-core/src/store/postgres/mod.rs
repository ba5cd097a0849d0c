//! The PostgreSQL session store (feature `postgres`): sessions shared by agent
//! processes on many machines.
//!
//! ```no_run
//! # async fn f() -> Result<(), agent_core::error::StoreError> {
//! use agent_core::store::PostgresStore;
//! let store = PostgresStore::connect("postgres://agent@127.0.0.1:5432/agent").await?;
//! // Agent::builder().store(store) …
//! # drop(store);
//! # Ok(()) }
//! ```
//!
//! # Guarantees
//!
//! - `save` is one statement, so one atomic compare-and-swap inside the server: a
//!   conditional `UPDATE … WHERE id = $1 AND version = $5` for an existing session, an
//!   `INSERT … ON CONFLICT (id) DO NOTHING` for a new one; zero rows affected is a
//!   [`StoreError::Conflict`].
//! - A client that dies or is cancelled during a save leaves the previous version (the
//!   statement commits whole or not at all); a committed save is as durable as the
//!   server's `synchronous_commit` makes it.
//! - Session leases (see [`crate::store`]) are rows of `{table}_leases`, expiring by
//!   the server's clock (so agent machines' clocks do not matter); fencing tokens
//!   come from the sequence `{table}_lease_tokens`. `save_leased` is one statement
//!   that locks the lease row `FOR SHARE` with the expected token and only then runs
//!   the compare-and-swap, so a lease taken over at the same moment either waits for
//!   the save or makes it fail. Renewals and releases commit without waiting for the
//!   disk (one connection with `synchronous_commit = off`): losing one in a server
//!   crash only moves the lease's end, which fencing makes safe. Taking a lease is
//!   the function `{table}_lease_take`, serialized per session by an advisory lock:
//!   waiters queue in `{table}_lease_queue` (a row per ticket, first come, first
//!   served; see [`SessionStore::acquire_lease_queued`]).
//! - The once-tool journal is the table `{table}_journal`,
//!   primary key `(session_id, call_key)`: the intent is an `INSERT … ON CONFLICT DO
//!   NOTHING` (exactly one writer wins; the others read the record), the result an
//!   upsert of its `result` column, both committed synchronously. Rows go with their
//!   session (`delete`) and by age of their intent (`prune`).
//! - Session ids (see [`crate::store::check_session_id`]) are the rows' keys, except
//!   an id longer than [`HASHED_ABOVE_BYTES`] (2560) bytes: an index row holds at
//!   most 2704 bytes, so such a session is keyed by `\u{1}sha256:` and the id's
//!   SHA-256 in hex in every table, and the id itself is kept in the sessions' column
//!   `long_id` (added to an existing table on connect), which `list` returns.
//! - Errors carry the server's cause: SQLSTATE, message, detail and hint.
//! - Plain TCP (no TLS): keep the server on a private network or a local socket
//!   proxy.
//!
//! Calls are spread over a few connections (each pipelines concurrent queries); a
//! connection that broke is replaced on the next call.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio_postgres::{Client, Config, NoTls};

use self::sql::Conn;
use super::{
    HASHED_ABOVE_BYTES, JournalBegin, Lease, LeaseAttempt, QueuedAttempt, SessionInfo,
    SessionStore, StoredSession, lease_lost,
};
use crate::error::StoreError;

mod sql;

/// Tuning of a [`PostgresStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Table holding the sessions (created if missing, with `{table}_leases`,
    /// `{table}_journal` and the sequence `{table}_lease_tokens` beside it). ASCII letters, digits and `_`, not
    /// starting with a digit, at most 50 bytes (so the names beside it fit
    /// PostgreSQL's 63). Default `agent_sessions`.
    pub table: String,
    /// Connections to the server (each pipelines concurrent calls). Default 4.
    pub connections: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            table: "agent_sessions".into(),
            connections: 4,
        }
    }
}

impl PostgresOptions {
    /// Keep sessions in the table `table` (and the tables beside it named after it), for
    /// several agents or environments in one database.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }
    /// Use this many connections.
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n;
        self
    }
}

/// Sessions in a PostgreSQL table. Cheap to clone (shared).
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    table: String,
    slots: Vec<tokio::sync::Mutex<Option<Arc<Conn>>>>,
    /// The connection renewing and releasing leases, with `synchronous_commit = off`.
    lease_slot: tokio::sync::Mutex<Option<Arc<Conn>>>,
    next: AtomicUsize,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config may hold a password: show only where it points.
        f.debug_struct("PostgresStore")
            .field("hosts", &self.inner.config.get_hosts())
            .field("ports", &self.inner.config.get_ports())
            .field("dbname", &self.inner.config.get_dbname())
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

/// Longest table name: `{table}_lease_tokens` must fit PostgreSQL's 63 bytes.
const MAX_TABLE: usize = 50;

fn backend(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("PostgreSQL store: {what} failed: {e}"))
}

/// A client or server error with its cause: for an error the server reported, its
/// SQLSTATE, message, detail and hint (the client error's own text is only "db
/// error"); otherwise the client error and the chain of its sources.
fn db(what: &str, e: tokio_postgres::Error) -> StoreError {
    backend(what, cause(&e))
}

pub(super) fn cause(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        let mut s = format!(
            "{} SQLSTATE {}: {}",
            d.severity(),
            d.code().code(),
            d.message()
        );
        if let Some(detail) = d.detail() {
            s.push_str(&format!("; detail: {detail}"));
        }
        if let Some(hint) = d.hint() {
            s.push_str(&format!("; hint: {hint}"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        s.push_str(&format!(": {c}"));
        source = c.source();
    }
    s
}

/// The key of session `id` in the store's tables: the id itself, or, for an id longer
/// than [`HASHED_ABOVE_BYTES`] bytes, `\u{1}sha256:` and the id's SHA-256 in hex (the
/// id is kept beside it, in the column `long_id`). An index row of PostgreSQL holds
/// at most 2704 bytes; no valid id contains U+0001, so a hashed key is never another
/// id's.
fn row_key(id: &str) -> Cow<'_, str> {
    if id.len() <= HASHED_ABOVE_BYTES {
        return Cow::Borrowed(id);
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    let mut k = String::with_capacity(HASHED_PREFIX.len() + 64);
    k.push_str(HASHED_PREFIX);
    for b in digest.iter() {
        k.push(char::from(HEX[usize::from(b >> 4)]));
        k.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    Cow::Owned(k)
}

/// The start of a hashed key (U+0001 is a control character, which no valid id has).
const HASHED_PREFIX: &str = "\u{1}sha256:";
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The `long_id` column of a session row: the id when its key is a hash.
fn long_id(id: &str) -> Option<&str> {
    (id.len() > HASHED_ABOVE_BYTES).then_some(id)
}

fn to_i64(what: &str, v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| backend(what, format!("{v} does not fit a BIGINT")))
}

fn to_u64(what: &str, v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| backend(what, format!("negative value {v} in the table")))
}

fn valid_table(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= MAX_TABLE
        && !t.as_bytes()[0].is_ascii_digit()
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl PostgresStore {
    /// Connect with default options (table `agent_sessions`, 4 connections) to a
    /// `postgres://user:password@host:port/dbname` URL (or a `key=value` string), and
    /// create the table if it is missing.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`PostgresStore::connect`] with tuning: the table name and the connection count.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        if !valid_table(&options.table) {
            return Err(StoreError::Backend(format!(
                "PostgreSQL store: invalid table name `{}`; use ASCII letters, digits and `_`, not starting with a digit, at most {MAX_TABLE} bytes",
                options.table
            )));
        }
        let config: Config = url.parse().map_err(|e| {
            db(
                "parsing the URL (expected postgres://user:password@host:port/dbname)",
                e,
            )
        })?;
        let slots = (0..options.connections.max(1))
            .map(|_| tokio::sync::Mutex::new(None))
            .collect();
        let store = Self {
            inner: Arc::new(Inner {
                config,
                table: options.table,
                slots,
                lease_slot: tokio::sync::Mutex::new(None),
                next: AtomicUsize::new(0),
            }),
        };
        let client = store.raw_connect().await?;
        // Concurrent first starts (many processes) must not race on CREATE TABLE.
        let t = &store.inner.table;
        client
            .batch_execute(&sql::schema(t))
            .await
            .map_err(|e| db(&format!("creating table `{t}`"), e))?;
        let conn = store.prepare(client).await?;
        if let Some(slot) = store.inner.slots.first() {
            *slot.lock().await = Some(Arc::new(conn));
        }
        Ok(store)
    }

    /// The table this store writes.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    async fn raw_connect(&self) -> Result<Client, StoreError> {
        let (client, connection) = self.inner.config.connect(NoTls).await.map_err(|e| {
            db(
                "connecting (check the URL, that the server runs and accepts TCP connections without TLS)",
                e,
            )
        })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "PostgreSQL session store connection closed");
            }
        });
        Ok(client)
    }

    /// The connection for renewals and releases: they commit without waiting for
    /// the disk (`synchronous_commit = off`), saving a flush per turn. Safe: a renewal
    /// or release lost in a server crash only makes the lease end earlier (then
    /// fencing refuses the holder's save) or later (at its ttl). Taking a lease and
    /// saving stay synchronous.
    async fn lease_conn(&self) -> Result<Arc<Conn>, StoreError> {
        let mut slot = self.inner.lease_slot.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.client.is_closed()
        {
            return Ok(c.clone());
        }
        let client = self.raw_connect().await?;
        client
            .batch_execute("SET synchronous_commit = off")
            .await
            .map_err(|e| db("configuring the lease connection", e))?;
        let c = Arc::new(self.prepare(client).await?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// A live connection, round robin; a broken one is replaced.
    async fn conn(&self) -> Result<Arc<Conn>, StoreError> {
        let n = self.inner.slots.len();
        let i = self.inner.next.fetch_add(1, Ordering::Relaxed) % n;
        let Some(slot) = self.inner.slots.get(i) else {
            return Err(backend("picking a connection", "no connection slots"));
        };
        let mut slot = slot.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.client.is_closed()
        {
            return Ok(c.clone());
        }
        let client = self.raw_connect().await?;
        let c = Arc::new(self.prepare(client).await?);
        *slot = Some(c.clone());
        Ok(c)
    }
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let c = self.conn().await?;
        let row = c
            .client
            .query_opt(&c.load, &[&row_key(id)])
            .await
            .map_err(|e| db("loading a session", e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let version: i64 = row.try_get(0).map_err(|e| db("reading version", e))?;
        let updated_ms: i64 = row.try_get(1).map_err(|e| db("reading updated_ms", e))?;
        let bytes: Vec<u8> = row.try_get(2).map_err(|e| db("reading bytes", e))?;
        Ok(Some(StoredSession {
            id: id.to_owned(),
            version: to_u64("loading a session", version)?,
            updated_ms: to_u64("loading a session", updated_ms)?,
            bytes,
        }))
    }

    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        self.save_with(session, expected, None).await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let c = self.conn().await?;
        let n = c
            .client
            .execute(&c.delete, &[&row_key(id)])
            .await
            .map_err(|e| db("deleting a session", e))?;
        c.client
            .execute(&c.journal_delete, &[&row_key(id)])
            .await
            .map_err(|e| db("deleting a session's tool journal", e))?;
        Ok(n > 0)
    }

    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let c = self.conn().await?;
        let rows = c
            .client
            .query(&c.list, &[])
            .await
            .map_err(|e| db("listing sessions", e))?;
        rows.iter()
            .map(|r| {
                let id: String = r.try_get(0).map_err(|e| db("reading id", e))?;
                let version: i64 = r.try_get(1).map_err(|e| db("reading version", e))?;
                let updated_ms: i64 = r.try_get(2).map_err(|e| db("reading updated_ms", e))?;
                Ok(SessionInfo {
                    id,
                    version: to_u64("listing sessions", version)?,
                    updated_ms: to_u64("listing sessions", updated_ms)?,
                })
            })
            .collect()
    }

    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let c = self.conn().await?;
        // A cutoff beyond BIGINT deletes everything, like any cutoff above every time.
        let cutoff = i64::try_from(cutoff_ms).unwrap_or(i64::MAX);
        let n = c
            .client
            .execute(&c.prune, &[&cutoff])
            .await
            .map_err(|e| db("pruning sessions", e))?;
        // Expired leases of sessions that are gone (tokens never repeat: they come
        // from the sequence).
        c.client
            .execute(&c.prune_leases, &[])
            .await
            .map_err(|e| db("pruning leases", e))?;
        c.client
            .execute(&c.prune_queue, &[])
            .await
            .map_err(|e| db("pruning the lease queue", e))?;
        c.client
            .execute(&c.journal_prune, &[&cutoff])
            .await
            .map_err(|e| db("pruning the tool journal", e))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
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
        let c = self.conn().await?;
        let session_id = row_key(session_id);
        let now = to_i64("journaling a tool call's intent", now_ms)?;
        let n = c
            .client
            .execute(&c.journal_intent, &[&session_id, &key, &tool, &now])
            .await
            .map_err(|e| db("journaling a tool call's intent", e))?;
        if n == 1 {
            return Ok(JournalBegin::Started);
        }
        // The record exists (the insert waited for its writer to commit).
        let row = c
            .client
            .query_one(&c.journal_get, &[&session_id, &key])
            .await
            .map_err(|e| db("reading a tool call's journal record", e))?;
        let intent_ms: i64 = row.try_get(0).map_err(|e| db("reading intent_ms", e))?;
        let result: Option<Vec<u8>> = row.try_get(1).map_err(|e| db("reading result", e))?;
        Ok(match result {
            Some(bytes) => JournalBegin::Done(bytes),
            None => JournalBegin::Pending {
                intent_ms: to_u64("reading a tool call's journal record", intent_ms)?,
            },
        })
    }

    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        let c = self.conn().await?;
        let session_id = row_key(session_id);
        let now = to_i64("journaling a tool call's result", super::now_ms())?;
        c.client
            .execute(&c.journal_result, &[&session_id, &key, &now, &result])
            .await
            .map_err(|e| db("journaling a tool call's result", e))?;
        Ok(())
    }

    async fn try_acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        Ok(self.take(id, holder, ttl, None, None).await?.into())
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
        self.take(id, holder, ttl, ticket, Some(ticket_ttl)).await
    }

    async fn leave_lease_queue(&self, id: &str, ticket: u64) -> Result<(), StoreError> {
        let c = self.lease_conn().await?;
        let ticket = to_i64("leaving the lease queue", ticket)?;
        c.client
            .execute(&c.leave_queue, &[&row_key(id), &ticket])
            .await
            .map_err(|e| db("leaving the lease queue", e))?;
        Ok(())
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let c = self.lease_conn().await?;
        let token = to_i64("renewing a lease", lease.token)?;
        let ttl_ms = i64::try_from(lease.ttl.as_millis()).unwrap_or(i64::MAX / 4);
        let n = c
            .client
            .execute(&c.renew, &[&row_key(&lease.session_id), &token, &ttl_ms])
            .await
            .map_err(|e| db("renewing a lease", e))?;
        if n == 1 {
            return Ok(());
        }
        let current = self.current_token(&c, &lease.session_id).await?;
        Err(lease_lost(lease, current))
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let c = self.lease_conn().await?;
        let token = to_i64("releasing a lease", lease.token)?;
        let n = c
            .client
            .execute(&c.release, &[&row_key(&lease.session_id), &token])
            .await
            .map_err(|e| db("releasing a lease", e))?;
        Ok(n > 0)
    }

    async fn save_leased(
        &self,
        session: StoredSession,
        expected: u64,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        if session.id != lease.session_id {
            return Err(lease_lost(lease, None));
        }
        self.save_with(session, expected, Some(lease)).await
    }
}

impl PostgresStore {
    /// The function `{table}_lease_take` (see `sql.rs`); without a `ticket_ttl`
    /// (plain `try_acquire_lease`) the caller draws no ticket.
    async fn take(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Option<Duration>,
    ) -> Result<QueuedAttempt, StoreError> {
        let c = self.conn().await?;
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4);
        let ticket_i = ticket.map(|t| to_i64("taking a lease", t)).transpose()?;
        let row = c
            .client
            .query_one(
                &c.acquire,
                &[
                    &row_key(id),
                    &holder,
                    &ms(ttl),
                    &ticket_i,
                    &ms(ticket_ttl.unwrap_or_default()),
                    &ticket_ttl.is_some(),
                ],
            )
            .await
            .map_err(|e| db("taking a lease", e))?;
        let read = |e| db("reading a lease", e);
        let acquired: bool = row.try_get(0).map_err(read)?;
        if acquired {
            let token: i64 = row.try_get(1).map_err(read)?;
            return Ok(QueuedAttempt::Acquired(Lease {
                session_id: id.to_owned(),
                holder: holder.to_owned(),
                token: to_u64("taking a lease", token)?,
                ttl,
            }));
        }
        let mine: Option<i64> = row.try_get(2).map_err(read)?;
        let ahead: i64 = row.try_get(3).map_err(read)?;
        let busy: String = row.try_get(4).map_err(read)?;
        let left: i64 = row.try_get(5).map_err(read)?;
        Ok(QueuedAttempt::Waiting {
            ticket: mine.map(|t| to_u64("taking a lease", t)).transpose()?,
            ahead: u64::try_from(ahead).unwrap_or(0),
            holder: busy,
            expires_in: Duration::from_millis(u64::try_from(left).unwrap_or(0)),
        })
    }

    async fn current_token(&self, c: &Conn, id: &str) -> Result<Option<u64>, StoreError> {
        c.client
            .query_opt(&c.lease_token, &[&row_key(id)])
            .await
            .map_err(|e| db("reading a lease token", e))?
            .map(|r| r.try_get::<_, i64>(0))
            .transpose()
            .map_err(|e| db("reading a lease token", e))?
            .map(|t| to_u64("reading a lease token", t))
            .transpose()
    }

    /// One statement: (with a lease: lock the lease row holding its token `FOR
    /// SHARE`, then) the compare-and-swap.
    async fn save_with(
        &self,
        session: StoredSession,
        expected: u64,
        lease: Option<&Lease>,
    ) -> Result<(), StoreError> {
        let c = self.conn().await?;
        let version = to_i64("saving a session", session.version)?;
        let updated_ms = to_i64("saving a session", session.updated_ms)?;
        let token = lease
            .map(|l| to_i64("saving a session", l.token))
            .transpose()?;
        let expected_i = to_i64("saving a session", expected)?;
        let (id, bytes) = (&row_key(&session.id), &session.bytes);
        let long = long_id(&session.id);
        let changed = match (expected, &token) {
            (0, None) => {
                c.client
                    .execute(&c.insert, &[id, &version, &updated_ms, bytes, &long])
                    .await
            }
            (0, Some(t)) => {
                c.client
                    .execute(
                        &c.insert_leased,
                        &[id, &version, &updated_ms, bytes, t, &long],
                    )
                    .await
            }
            (_, None) => {
                c.client
                    .execute(&c.update, &[id, &version, &updated_ms, bytes, &expected_i])
                    .await
            }
            (_, Some(t)) => {
                c.client
                    .execute(
                        &c.update_leased,
                        &[id, &version, &updated_ms, bytes, &expected_i, t],
                    )
                    .await
            }
        }
        .map_err(|e| db("saving a session", e))?;
        if changed == 1 {
            return Ok(());
        }
        if let Some(lease) = lease {
            let current = self.current_token(&c, &session.id).await?;
            if current != Some(lease.token) {
                return Err(lease_lost(lease, current));
            }
        }
        let found = c
            .client
            .query_opt(&c.version, &[id])
            .await
            .map_err(|e| db("reading the conflicting version", e))?
            .map(|r| r.try_get::<_, i64>(0))
            .transpose()
            .map_err(|e| db("reading the conflicting version", e))?
            .unwrap_or(0);
        Err(StoreError::Conflict {
            session_id: session.id,
            expected,
            found: to_u64("reading the conflicting version", found)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::valid_table;

    #[test]
    fn table_names_are_plain_identifiers() {
        assert!(valid_table("agent_sessions"));
        assert!(valid_table("_t1"));
        assert!(!valid_table(""));
        assert!(!valid_table("1t"));
        assert!(!valid_table("t; DROP TABLE x"));
        assert!(!valid_table("t-1"));
        assert!(!valid_table(&"t".repeat(64)));
    }
}
