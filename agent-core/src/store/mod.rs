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

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::StoreError;

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
}

/// In-process store (the default). Sessions are lost when the process exits.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<String, StoredSession>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredSession>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }
    async fn save(&self, session: StoredSession, expected: u64) -> Result<(), StoreError> {
        let mut map = self.lock();
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
    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
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
        Ok(before - map.len())
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
