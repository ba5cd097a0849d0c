//! The built-in in-process store: the default for tests and single-process agents, and
//! the reference the durable stores' conformance is measured against.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{
    JournalBegin, Lease, LeaseAttempt, QueuedAttempt, SessionInfo, SessionStore, StoredSession,
    lease_lost, now_ms,
};
use crate::error::StoreError;

/// In-process store (the default). Sessions are lost when the process exits.
/// Leases live in the same process: they keep several [`crate::Agent`]s over one
/// store (threads, tasks) to one turn at a time per session.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<String, StoredSession>>,
    /// The once-tool journal: per session, per call key, intent time and result.
    journal: Mutex<HashMap<String, HashMap<String, MemoryRecord>>>,
    leases: Mutex<HashMap<String, MemoryLease>>,
    /// Per session, the live tickets of waiters for its lease and when each expires
    /// (locked after `leases`).
    queues: Mutex<HashMap<String, BTreeMap<u64, Instant>>>,
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
    /// An empty in-memory store: sessions last as long as the process (the agent's default
    /// store; use SQLite, PostgreSQL or Redis to keep them).
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
    /// [`SessionStore::acquire_lease_queued`]; without a `ticket_ttl` (plain
    /// `try_acquire_lease`) the caller draws no ticket.
    fn take_in_turn(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        ticket: Option<u64>,
        ticket_ttl: Option<Duration>,
    ) -> QueuedAttempt {
        let now = Instant::now();
        let mut leases = self.lock_leases();
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let queue = queues.entry(id.to_owned()).or_default();
        queue.retain(|_, expires| *expires > now);
        if let (Some(t), Some(live)) = (ticket, ticket_ttl) {
            queue.insert(t, now.checked_add(live).unwrap_or(now));
        }
        let head = queue.keys().next().copied();
        let busy = leases
            .get(id)
            .and_then(|l| l.live(now).map(|left| (l.holder.clone(), left)));
        if busy.is_none() && (head.is_none() || head == ticket) {
            if let Some(t) = ticket {
                queue.remove(&t);
            }
            if queue.is_empty() {
                queues.remove(id);
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
            return QueuedAttempt::Acquired(Lease {
                session_id: id.to_owned(),
                holder: holder.to_owned(),
                token,
                ttl,
            });
        }
        let mine = match (ticket, ticket_ttl) {
            (Some(t), _) => Some(t),
            (None, Some(live)) => {
                let t = self.tokens.fetch_add(1, Ordering::Relaxed) + 1;
                queue.insert(t, now.checked_add(live).unwrap_or(now));
                Some(t)
            }
            (None, None) => None,
        };
        let ahead = match mine {
            Some(t) => queue.range(..t).count(),
            None => queue.len(),
        };
        if queue.is_empty() {
            queues.remove(id);
        }
        let (holder, expires_in) = busy.unwrap_or_default();
        QueuedAttempt::Waiting {
            ticket: mine,
            ahead: u64::try_from(ahead).unwrap_or(u64::MAX),
            holder,
            expires_in,
        }
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
                        intent_ms: now_ms(),
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
        Ok(self.take_in_turn(id, holder, ttl, None, None).into())
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
        Ok(self.take_in_turn(id, holder, ttl, ticket, Some(ticket_ttl)))
    }

    async fn leave_lease_queue(&self, id: &str, ticket: u64) -> Result<(), StoreError> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(q) = queues.get_mut(id) {
            q.remove(&ticket);
            if q.is_empty() {
                queues.remove(id);
            }
        }
        Ok(())
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
