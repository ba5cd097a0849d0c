//! Session leases: the types every store's lease methods speak, and the agent's side of
//! them (waiting for a busy session, renewing while a turn runs, releasing a cancelled
//! turn's lease), kept apart from the stores so each store only implements the atomic
//! steps.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{SessionStore, StoredSession};
use crate::error::StoreError;

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
