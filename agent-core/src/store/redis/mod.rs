//! The Redis session store (feature `redis`): sessions shared by agent processes on
//! many machines.
//!
//! ```no_run
//! # async fn f() -> Result<(), agent_core::error::StoreError> {
//! use agent_core::store::RedisStore;
//! let store = RedisStore::connect("redis://127.0.0.1:6379/0").await?;
//! // Agent::builder().store(store) …
//! # drop(store);
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! A session is a hash `{prefix}session:{id}` with fields `v` (version), `u` (last
//! save, ms) and `b` (the encoded session); the sorted set `{prefix}sessions` indexes
//! the ids by last save time, for `list` and `prune`. The default prefix is `agent:`.
//!
//! A session lease (see [`crate::store`]) is the key `{prefix}lease:{id}` (the
//! holder's name, with a `PX` expiry kept by the server), and its fencing token the
//! key `{prefix}fence:{id}`; tokens come from `INCR {prefix}fences`. Waiters for a
//! lease queue first come, first served (see
//! [`SessionStore::acquire_lease_queued`]): their tickets (drawn from the same
//! counter) are the sorted set `{prefix}queue:{id}`, each ticket's expiry a field of
//! the hash `{prefix}queue-exp:{id}`. Taking,
//! renewing and releasing are scripts; the leased save script compares the fence
//! with the saver's token before the compare-and-swap.
//!
//! The once-tool journal of a session is the hash
//! `{prefix}journal:{id}`: field `i:{call key}` holds the intent's time, `r:{call
//! key}` the result. The sorted set `{prefix}journals` indexes the sessions by the
//! time of their latest intent, for `prune`.
//!
//! # Guarantees
//!
//! - The journal's intent is one script (`HSETNX` of the intent, or the record found:
//!   exactly one writer starts a call), its result one `HSET`; as durable as the
//!   server's persistence makes any write (see below). A session's journal goes with
//!   it (`delete`), and by `prune` once its latest intent is older than the cutoff.
//! - `save` is one Lua script, so one atomic compare-and-swap inside the server: it
//!   compares `v` with the expected version and only then writes the hash and the
//!   index entry; no other command runs in between.
//! - A client that dies or is cancelled during a save leaves the previous version:
//!   Redis runs a script whole or not at all. How durable an acknowledged save is
//!   depends on the server's persistence (`appendonly yes` with `appendfsync
//!   everysec` or `always` for durable sessions; a truncated AOF tail is dropped on
//!   restart, never half applied).
//! - `prune` deletes in batches, each one script: a session saved after its cutoff is
//!   never deleted.
//! - Standalone Redis (or a primary with replicas); scripts touch keys outside their
//!   declared ones in `prune`, so Redis Cluster is not supported.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisError, Script};

use self::scripts::{
    ACQUIRE, DELETE, JOURNAL_BEGIN, LEAVE_QUEUE, PRUNE, PRUNE_JOURNALS, RELEASE, RENEW, SAVE,
    SAVE_LEASED,
};
use super::{
    JournalBegin, Lease, LeaseAttempt, QueuedAttempt, SessionInfo, SessionStore, StoredSession,
    lease_lost,
};
use crate::error::StoreError;

mod scripts;

/// Tuning of a [`RedisStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// Prefix of every key this store writes. Default `agent:`.
    pub prefix: String,
    /// How long a call waits for the server's answer. Default 10 s.
    pub response_timeout: std::time::Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: "agent:".into(),
            response_timeout: std::time::Duration::from_secs(10),
        }
    }
}

impl RedisOptions {
    /// Use this key prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

/// Sessions in Redis. Cheap to clone (shared).
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    config: AsyncConnectionConfig,
    prefix: String,
    index: String,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    save: Script,
    delete: Script,
    prune: Script,
    save_leased: Script,
    acquire: Script,
    renew: Script,
    release: Script,
    leave_queue: Script,
    fences: String,
    journals: String,
    journal_begin: Script,
    prune_journals: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The connection info may hold a password: show only the prefix.
        f.debug_struct("RedisStore")
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

const PRUNE_BATCH: usize = 500;
const LIST_BATCH: usize = 1000;

fn backend(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("Redis store: {what} failed: {e}"))
}

/// A lease's `PX`: at least 1 ms, at most 2^50 ms (Redis refuses expiries past
/// its clock's range).
fn ttl_ms(ttl: std::time::Duration) -> u64 {
    u64::try_from(ttl.as_millis())
        .unwrap_or(u64::MAX)
        .clamp(1, 1 << 50)
}

fn parse_u64(what: &str, s: &str) -> Result<u64, StoreError> {
    s.parse()
        .map_err(|_| backend(what, format!("`{s}` is not a version or time")))
}

impl RedisStore {
    /// Connect with default options (prefix `agent:`) to a `redis://[:password@]host:port/db`
    /// URL.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// [`RedisStore::connect`] with tuning: the key prefix and the response timeout.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self, StoreError> {
        let client = Client::open(url)
            .map_err(|e| backend("parsing the URL (expected redis://host:port/db)", e))?;
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(std::time::Duration::from_secs(5)));
        let store = Self {
            inner: Arc::new(Inner {
                client,
                config,
                index: format!("{}sessions", options.prefix),
                fences: format!("{}fences", options.prefix),
                journals: format!("{}journals", options.prefix),
                journal_begin: Script::new(JOURNAL_BEGIN),
                prune_journals: Script::new(PRUNE_JOURNALS),
                prefix: options.prefix,
                conn: tokio::sync::Mutex::new(None),
                save: Script::new(SAVE),
                delete: Script::new(DELETE),
                prune: Script::new(PRUNE),
                save_leased: Script::new(SAVE_LEASED),
                acquire: Script::new(ACQUIRE),
                renew: Script::new(RENEW),
                release: Script::new(RELEASE),
                leave_queue: Script::new(LEAVE_QUEUE),
            }),
        };
        // Fail now, not on the first turn, if the server cannot be reached.
        store.conn().await?;
        Ok(store)
    }

    /// The prefix of every key this store writes.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    fn key(&self, id: &str) -> String {
        format!("{}session:{id}", self.inner.prefix)
    }

    fn lease_key(&self, id: &str) -> String {
        format!("{}lease:{id}", self.inner.prefix)
    }

    fn fence_key(&self, id: &str) -> String {
        format!("{}fence:{id}", self.inner.prefix)
    }

    fn queue_key(&self, id: &str) -> String {
        format!("{}queue:{id}", self.inner.prefix)
    }

    fn queue_expiry_key(&self, id: &str) -> String {
        format!("{}queue-exp:{id}", self.inner.prefix)
    }

    fn journal_key(&self, id: &str) -> String {
        format!("{}journal:{id}", self.inner.prefix)
    }

    /// A token the server returned (`''`: none).
    fn token(what: &str, s: &str) -> Result<Option<u64>, StoreError> {
        if s.is_empty() {
            return Ok(None);
        }
        parse_u64(what, s).map(Some)
    }

    async fn conn(&self) -> Result<MultiplexedConnection, StoreError> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = self
            .inner
            .client
            .get_multiplexed_async_connection_with_config(&self.inner.config)
            .await
            .map_err(|e| backend("connecting (check the URL and that the server runs)", e))?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// The acquire script (see `scripts.rs`); without a `ticket_ttl` (plain
    /// `try_acquire_lease`) the caller draws no ticket.
    async fn take(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Option<Duration>,
    ) -> Result<QueuedAttempt, StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<(i64, String, i64, i64, i64)> = self
            .inner
            .acquire
            .key(self.lease_key(id))
            .key(self.fence_key(id))
            .key(&self.inner.fences)
            .key(self.queue_key(id))
            .key(self.queue_expiry_key(id))
            .arg(holder)
            .arg(ttl_ms(ttl))
            .arg(ticket.map(|t| t.to_string()).unwrap_or_default())
            .arg(ticket_ttl.map_or(0, ttl_ms))
            .arg(if ticket_ttl.is_some() { "1" } else { "0" })
            .invoke_async(&mut c)
            .await;
        let (taken, who, n, mine, ahead) = match got {
            Ok(t) => t,
            Err(e) => return Err(self.fail("taking a lease", e).await),
        };
        if taken == 1 {
            return Ok(QueuedAttempt::Acquired(Lease {
                session_id: id.to_owned(),
                holder: holder.to_owned(),
                token: u64::try_from(n)
                    .map_err(|_| backend("taking a lease", format!("token {n}")))?,
                ttl,
            }));
        }
        Ok(QueuedAttempt::Waiting {
            ticket: u64::try_from(mine).ok().filter(|t| *t > 0),
            ahead: u64::try_from(ahead).unwrap_or(0),
            holder: who,
            // PTTL is -1 for a key without expiry (written by something else).
            expires_in: Duration::from_millis(u64::try_from(n).unwrap_or(0)),
        })
    }

    /// Map an error; a broken connection is dropped so the next call reconnects.
    async fn fail(&self, what: &str, e: RedisError) -> StoreError {
        if e.is_unrecoverable_error() || e.is_connection_dropped() || e.is_io_error() {
            *self.inner.conn.lock().await = None;
        }
        backend(what, e)
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<(Option<String>, Option<String>, Option<Vec<u8>>)> =
            redis::cmd("HMGET")
                .arg(self.key(id))
                .arg("v")
                .arg("u")
                .arg("b")
                .query_async(&mut c)
                .await;
        let (v, u, b) = match got {
            Ok(t) => t,
            Err(e) => return Err(self.fail("loading a session", e).await),
        };
        match (v, u, b) {
            (None, None, None) => Ok(None),
            (Some(v), Some(u), Some(bytes)) => Ok(Some(StoredSession {
                id: id.to_owned(),
                version: parse_u64("loading a session", &v)?,
                updated_ms: parse_u64("loading a session", &u)?,
                bytes,
            })),
            _ => Err(StoreError::Corrupt {
                session_id: id.to_owned(),
                message: format!(
                    "Redis hash `{}` lacks one of the fields v, u, b (written by something else?)",
                    self.key(id)
                ),
            }),
        }
    }

    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<(i64, String)> = self
            .inner
            .save
            .key(self.key(&session.id))
            .key(&self.inner.index)
            .arg(expected.to_string())
            .arg(session.version.to_string())
            .arg(session.updated_ms.to_string())
            .arg(&session.bytes[..])
            .arg(&session.id)
            .invoke_async(&mut c)
            .await;
        let (saved, found) = match got {
            Ok(t) => t,
            Err(e) => return Err(self.fail("saving a session", e).await),
        };
        if saved == 1 {
            return Ok(());
        }
        Err(StoreError::Conflict {
            found: parse_u64("reading the conflicting version", &found)?,
            session_id: session.id,
            expected,
        })
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<i64> = self
            .inner
            .delete
            .key(self.key(id))
            .key(&self.inner.index)
            .key(self.journal_key(id))
            .key(&self.inner.journals)
            .arg(id)
            .invoke_async(&mut c)
            .await;
        match got {
            Ok(n) => Ok(n > 0),
            Err(e) => Err(self.fail("deleting a session", e).await),
        }
    }

    async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let mut c = self.conn().await?;
        let ids: Vec<String> = match redis::cmd("ZRANGE")
            .arg(&self.inner.index)
            .arg(0)
            .arg(-1)
            .query_async(&mut c)
            .await
        {
            Ok(ids) => ids,
            Err(e) => return Err(self.fail("listing sessions", e).await),
        };
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(LIST_BATCH) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("HMGET").arg(self.key(id)).arg("v").arg("u");
            }
            let rows: Vec<(Option<String>, Option<String>)> = match pipe.query_async(&mut c).await {
                Ok(r) => r,
                Err(e) => return Err(self.fail("listing sessions", e).await),
            };
            for (id, row) in chunk.iter().zip(rows) {
                // Deleted between the two reads: not listed.
                if let (Some(v), Some(u)) = row {
                    out.push(SessionInfo {
                        id: id.clone(),
                        version: parse_u64("listing sessions", &v)?,
                        updated_ms: parse_u64("listing sessions", &u)?,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    async fn prune(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let mut c = self.conn().await?;
        let session_prefix = format!("{}session:", self.inner.prefix);
        let mut deleted = 0usize;
        loop {
            let got: redis::RedisResult<(usize, usize)> = self
                .inner
                .prune
                .key(&self.inner.index)
                .arg(cutoff_ms.to_string())
                .arg(&session_prefix)
                .arg(PRUNE_BATCH)
                .arg(format!("{}lease:", self.inner.prefix))
                .arg(format!("{}fence:", self.inner.prefix))
                .invoke_async(&mut c)
                .await;
            let (examined, n) = match got {
                Ok(t) => t,
                Err(e) => return Err(self.fail("pruning sessions", e).await),
            };
            deleted += n;
            if examined < PRUNE_BATCH {
                break;
            }
        }
        let journal_prefix = format!("{}journal:", self.inner.prefix);
        loop {
            let got: redis::RedisResult<usize> = self
                .inner
                .prune_journals
                .key(&self.inner.journals)
                .arg(cutoff_ms.to_string())
                .arg(&journal_prefix)
                .arg(PRUNE_BATCH)
                .invoke_async(&mut c)
                .await;
            match got {
                Ok(n) if n < PRUNE_BATCH => return Ok(deleted),
                Ok(_) => {}
                Err(e) => return Err(self.fail("pruning the tool journal", e).await),
            }
        }
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
        let mut c = self.conn().await?;
        let got: redis::RedisResult<(i64, Vec<u8>)> = self
            .inner
            .journal_begin
            .key(self.journal_key(session_id))
            .key(&self.inner.journals)
            .arg(key)
            .arg(now_ms)
            .arg(session_id)
            .invoke_async(&mut c)
            .await;
        match got {
            Ok((1, _)) => Ok(JournalBegin::Started),
            Ok((2, result)) => Ok(JournalBegin::Done(result)),
            Ok((_, intent)) => Ok(JournalBegin::Pending {
                intent_ms: parse_u64(
                    "reading a tool call's intent",
                    &String::from_utf8_lossy(&intent),
                )?,
            }),
            Err(e) => Err(self.fail("journaling a tool call's intent", e).await),
        }
    }

    async fn journal_finish(
        &self,
        session_id: &str,
        key: &str,
        result: &[u8],
    ) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<i64> = redis::cmd("HSET")
            .arg(self.journal_key(session_id))
            .arg(format!("r:{key}"))
            .arg(result)
            .query_async(&mut c)
            .await;
        match got {
            Ok(_) => Ok(()),
            Err(e) => Err(self.fail("journaling a tool call's result", e).await),
        }
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
        let mut c = self.conn().await?;
        let got: redis::RedisResult<i64> = self
            .inner
            .leave_queue
            .key(self.queue_key(id))
            .key(self.queue_expiry_key(id))
            .arg(ticket.to_string())
            .invoke_async(&mut c)
            .await;
        match got {
            Ok(_) => Ok(()),
            Err(e) => Err(self.fail("leaving the lease queue", e).await),
        }
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let ttl_ms = ttl_ms(lease.ttl);
        let got: redis::RedisResult<(i64, String)> = self
            .inner
            .renew
            .key(self.lease_key(&lease.session_id))
            .key(self.fence_key(&lease.session_id))
            .arg(lease.token.to_string())
            .arg(&lease.holder)
            .arg(ttl_ms)
            .invoke_async(&mut c)
            .await;
        match got {
            Ok((1, _)) => Ok(()),
            Ok((_, fence)) => Err(lease_lost(lease, Self::token("renewing a lease", &fence)?)),
            Err(e) => Err(self.fail("renewing a lease", e).await),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let mut c = self.conn().await?;
        let got: redis::RedisResult<i64> = self
            .inner
            .release
            .key(self.lease_key(&lease.session_id))
            .key(self.fence_key(&lease.session_id))
            .arg(lease.token.to_string())
            .invoke_async(&mut c)
            .await;
        match got {
            Ok(n) => Ok(n == 1),
            Err(e) => Err(self.fail("releasing a lease", e).await),
        }
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
        let mut c = self.conn().await?;
        let got: redis::RedisResult<(i64, String)> = self
            .inner
            .save_leased
            .key(self.key(&session.id))
            .key(&self.inner.index)
            .key(self.fence_key(&session.id))
            .arg(expected.to_string())
            .arg(session.version.to_string())
            .arg(session.updated_ms.to_string())
            .arg(&session.bytes[..])
            .arg(&session.id)
            .arg(lease.token.to_string())
            .invoke_async(&mut c)
            .await;
        let (saved, found) = match got {
            Ok(t) => t,
            Err(e) => return Err(self.fail("saving a session", e).await),
        };
        match saved {
            1 => Ok(()),
            2 => Err(lease_lost(lease, Self::token("saving a session", &found)?)),
            _ => Err(StoreError::Conflict {
                found: parse_u64("reading the conflicting version", &found)?,
                session_id: session.id,
                expected,
            }),
        }
    }
}
