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
    /// The id of the session the lease is for.
    pub session_id: String,
    /// Who holds it (for messages; the token is what counts).
    pub holder: String,
    /// The fencing token: larger than every token the store issued before this one.
    pub token: u64,
    /// Time to live from the last acquire or renew.
    pub ttl: Duration,
}

/// The answer to one [`SessionStore::try_acquire_lease`]: the lease, or who holds it and
/// for how long.
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

/// The answer to one [`SessionStore::acquire_lease_queued`]: the lease, or the caller's
/// place in the queue behind the holder.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueuedAttempt {
    /// The lease is the caller's (its ticket, if it had one, left the queue).
    Acquired(Lease),
    /// The caller waits: another holder has the lease, or a waiter with an earlier
    /// ticket goes first.
    Waiting {
        /// The caller's ticket, to pass to every later attempt and to
        /// [`SessionStore::leave_lease_queue`]; `None` from a store without a queue.
        ticket: Option<u64>,
        /// Live tickets drawn before the caller's.
        ahead: u64,
        /// Who holds the lease (empty when nobody does and an earlier waiter goes
        /// first).
        holder: String,
        /// When the lease expires unless renewed, as the store sees it (zero when
        /// nobody holds it).
        expires_in: Duration,
    },
}

/// A queued attempt seen by a caller that draws no ticket
/// ([`SessionStore::try_acquire_lease`] on a store with a queue): waiting is busy.
impl From<QueuedAttempt> for LeaseAttempt {
    fn from(a: QueuedAttempt) -> Self {
        match a {
            QueuedAttempt::Acquired(l) => LeaseAttempt::Acquired(l),
            QueuedAttempt::Waiting {
                holder, expires_in, ..
            } => LeaseAttempt::Busy { holder, expires_in },
        }
    }
}

/// How an agent takes session leases ([`crate::AgentConfig::lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Time to live of a lease: a holder that crashed (or hangs without renewing)
    /// blocks its session at most this long. A running turn renews its lease every
    /// third of it, so a turn may take longer. Default 30 s.
    pub ttl: Duration,
    /// Longest time a turn waits for its session, before failing with
    /// [`crate::error::AgentError::SessionBusy`]: the whole wait, behind turns of
    /// other processes and of this one. The wait also counts toward
    /// [`crate::AgentConfig::turn_timeout`], so a turn waits at most the shorter of
    /// the two and then has what is left of its deadline for its work; without a
    /// lease, turns of one agent queue in the process and that wait is bounded by
    /// `turn_timeout` alone. Default 60 s:
    /// twice the `ttl`, so a turn outlasts the lease of a crashed holder.
    ///
    /// Waiters are served first come, first served on the stores of this crate
    /// ([`crate::store::SessionStore::acquire_lease_queued`]): each holds a ticket in
    /// the session's queue, and the lease goes to the earliest live ticket.
    pub max_wait: Duration,
    /// Pause between attempts while waiting: jittered, from `poll.base` doubling up to
    /// `poll.max` for the first two waiters in line (the first from a quarter of
    /// `poll.base`; starting over when they move up, never past the busy lease's
    /// expiry, and at most about a quarter of the time one place of the queue took
    /// when it moved); waiters further back pause about half their expected wait
    /// (from how fast the queue moves). Never more than 3 s, so a
    /// waiter's ticket (dropped after 10 s without an attempt) stays live. Default 2 ms
    /// up to 100 ms.
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
    /// Still held by someone else (or by waiters ahead) after the longest wait.
    Busy {
        waited: Duration,
        holder: Option<String>,
    },
    /// The store failed.
    Store(StoreError),
    /// Waiting needs a Tokio runtime with timers.
    NoTimer,
}

/// How long a waiter's ticket stays in its session's queue without being refreshed:
/// a waiter that died holds the waiters behind it up this long.
pub(crate) const TICKET_TTL: Duration = Duration::from_secs(10);

/// Longest pause between two attempts of a waiter (each refreshes its ticket), well
/// within [`TICKET_TTL`].
pub(crate) const TICKET_REFRESH: Duration = Duration::from_secs(3);

/// Shortest pause of a waiter paced by the queue (each attempt is a round trip to the
/// store).
const MIN_PACED_PAUSE: Duration = Duration::from_micros(250);

/// A waiter's ticket, left in the background if the wait is dropped (a cancelled
/// turn), so the waiters behind it need not wait for it to expire.
struct Place {
    store: Arc<dyn SessionStore>,
    id: String,
    ticket: Option<u64>,
}

impl Place {
    async fn leave(&mut self) {
        if let Some(t) = self.ticket.take()
            && let Err(e) = self.store.leave_lease_queue(&self.id, t).await
        {
            tracing::warn!(session = %self.id, error = %e, "leaving the lease queue failed; the ticket expires by itself");
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let Some(t) = self.ticket.take() else { return };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (store, id) = (self.store.clone(), std::mem::take(&mut self.id));
            rt.spawn(async move {
                if let Err(e) = store.leave_lease_queue(&id, t).await {
                    tracing::warn!(session = %id, error = %e, "leaving the lease queue failed; the ticket expires by itself");
                }
            });
        }
    }
}

/// Take the lease of session `id`, waiting in the session's queue (first come, first
/// served on stores that keep one) while another holder has it, until `limit` after
/// `started` (the moment the turn began waiting).
///
/// Waiters poll with jittered backoff: the first two in line from `config.poll.base`
/// (the first from a quarter of it) doubling up to `config.poll.max` (starting over
/// when they move up, paced by how fast the queue moved, the first waking at the
/// lease's expiry at the latest, and either woken at once by a release in this
/// process); the others about half their expected wait, from how fast the
/// queue moved, or doubling up to [`TICKET_REFRESH`] while it does not move.
pub(crate) async fn acquire_lease(
    store: &Arc<dyn SessionStore>,
    id: &str,
    holder: &str,
    config: &LeaseConfig,
    started: tokio::time::Instant,
    limit: Duration,
    released: &tokio::sync::Notify,
) -> Result<Lease, AcquireFailure> {
    let mut place = Place {
        store: store.clone(),
        id: id.to_owned(),
        ticket: None,
    };
    let mut attempt = 0u32;
    let mut last_ahead = u64::MAX;
    let mut last_attempt = tokio::time::Instant::now();
    let mut per_place: Option<Duration> = None;
    loop {
        // Armed before the attempt, so a release in between is not missed.
        let wake = released.notified();
        tokio::pin!(wake);
        wake.as_mut().enable();
        let got = store
            .acquire_lease_queued(id, holder, config.ttl, place.ticket, TICKET_TTL)
            .await;
        let (ahead, busy, expires_in) = match got {
            Ok(QueuedAttempt::Acquired(lease)) => {
                // The store took the ticket out of the queue.
                place.ticket = None;
                return Ok(lease);
            }
            Ok(QueuedAttempt::Waiting {
                ticket,
                ahead,
                holder,
                expires_in,
            }) => {
                place.ticket = ticket.or(place.ticket);
                (ahead, holder, expires_in)
            }
            Err(e) => return Err(AcquireFailure::Store(e)),
        };
        let waited = started.elapsed();
        if waited >= limit {
            place.leave().await;
            return Err(AcquireFailure::Busy {
                waited,
                holder: (!busy.is_empty()).then_some(busy),
            });
        }
        let now = tokio::time::Instant::now();
        // How long the queue took per place lately, when it moved since the last
        // attempt: a waiter far back sleeps about half its expected wait.
        if last_ahead != u64::MAX && ahead < last_ahead {
            let moved = u32::try_from(last_ahead - ahead).unwrap_or(u32::MAX);
            per_place = Some(now.saturating_duration_since(last_attempt) / moved);
            if ahead <= 1 {
                // Next in line (or next but one) now: try soon.
                attempt = 0;
            }
        }
        last_ahead = ahead;
        last_attempt = now;
        attempt = attempt.saturating_add(1);
        let pause = next_pause(config, id, attempt, ahead, expires_in, per_place)
            .min(limit - waited)
            .max(Duration::from_micros(100));
        let Some(timer) = sleep(pause) else {
            return Err(AcquireFailure::NoTimer);
        };
        if ahead <= 1 {
            // Next (or next but one) in line: a release by a turn of this process
            // wakes it at once.
            tokio::select! {
                () = timer => {}
                () = &mut wake => {}
            }
        } else {
            timer.await;
        }
    }
}

/// The pause before a waiter's next attempt (see [`acquire_lease`]).
fn next_pause(
    config: &LeaseConfig,
    id: &str,
    attempt: u32,
    ahead: u64,
    expires_in: Duration,
    per_place: Option<Duration>,
) -> Duration {
    let unit = crate::backoff::jitter(id, attempt);
    if ahead >= 2 {
        let places = u32::try_from(ahead).unwrap_or(u32::MAX);
        let cap = config
            .poll
            .max
            .saturating_mul(places)
            .min(TICKET_REFRESH)
            .max(config.poll.base);
        let poll = crate::backoff::ConflictBackoff {
            base: config.poll.base.min(cap),
            max: cap,
        };
        let pause = poll.delay(attempt, unit);
        let Some(step) = per_place else {
            return pause;
        };
        // About half the expected wait at the pace the queue last moved, jittered: a
        // few attempts on the way to the front, however long the queue.
        let half = step.saturating_mul(places) / 2;
        let paced = half
            .clamp(config.poll.base, cap)
            .mul_f64(0.5 + unit.clamp(0.0, 1.0) / 2.0);
        return pause.min(paced);
    }
    let max = config.poll.max.min(TICKET_REFRESH).max(config.poll.base);
    // The first in line starts from a quarter of the base: it is next, and a short
    // turn ahead of it ends within a few base pauses.
    let base = if ahead == 0 {
        (config.poll.base / 4).max(MIN_PACED_PAUSE)
    } else {
        config.poll.base
    };
    let poll = crate::backoff::ConflictBackoff {
        base: base.min(max),
        max,
    };
    let mut pause = poll.delay(attempt, unit);
    if let Some(step) = per_place {
        // The pace the queue moved at: the first two in line try again within about a
        // quarter of the time one place took, so between short turns a hand-over
        // costs a fraction of a turn rather than a doubled pause.
        let paced = step
            .mul_f64(0.25 + unit.clamp(0.0, 1.0) / 4.0)
            .max(MIN_PACED_PAUSE);
        pause = pause.min(paced);
    }
    if ahead == 0 && !expires_in.is_zero() {
        // A crashed holder's lease ends then.
        pause.min(expires_in.saturating_add(Duration::from_millis(1)))
    } else {
        pause
    }
}

/// Run `fut` for at most `limit` (`None`: as long as it takes); `None` when the time
/// ran out. Without a Tokio timer the future runs unbounded.
pub(crate) async fn bounded<F: Future>(limit: Option<Duration>, fut: F) -> Option<F::Output> {
    let Some(timer) = limit.and_then(sleep) else {
        return Some(fut.await);
    };
    tokio::pin!(fut);
    tokio::select! {
        biased;
        out = &mut fut => Some(out),
        () = timer => None,
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
    /// Told once the lease is released: waiters of this process try at once.
    wake: Arc<tokio::sync::Notify>,
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
    pub(crate) fn new(
        store: Arc<dyn SessionStore>,
        lease: Lease,
        wake: Arc<tokio::sync::Notify>,
    ) -> Self {
        Self {
            store,
            lease,
            released: AtomicBool::new(false),
            wake,
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
        let out = self.store.release_lease(&self.lease).await;
        self.wake.notify_waiters();
        out
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
            let wake = self.wake.clone();
            rt.spawn(async move {
                if let Err(e) = store.release_lease(&lease).await {
                    tracing::warn!(session = %lease.session_id, error = %e, "releasing the lease of a cancelled turn failed; it expires after its ttl");
                }
                wake.notify_waiters();
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{LeaseConfig, MIN_PACED_PAUSE, next_pause};

    #[test]
    fn the_first_in_line_tries_again_sooner_than_the_one_behind_it() {
        let c = LeaseConfig::default();
        let long = Duration::from_secs(30);
        for attempt in 1..4 {
            let first = next_pause(&c, "s", attempt, 0, long, None);
            let second = next_pause(&c, "s", attempt, 1, long, None);
            assert!(first < second, "{attempt}: {first:?} vs {second:?}");
        }
        assert!(next_pause(&c, "s", 1, 0, long, None) <= c.poll.base / 4);
        // Both still back off to the longest pause (jittered: half to all of it)
        // while nothing moves.
        let p = next_pause(&c, "s", 40, 0, long, None);
        assert!(p >= c.poll.max / 2 && p <= c.poll.max, "{p:?}");
    }

    #[test]
    fn a_queue_that_moves_fast_paces_the_first_two_in_line() {
        let c = LeaseConfig::default();
        let long = Duration::from_secs(30);
        // One place took 4 ms: a waiter at the front with a long backoff tries again
        // within a quarter to a half of that.
        let step = Some(Duration::from_millis(4));
        for ahead in [0, 1] {
            let p = next_pause(&c, "s", 10, ahead, long, step);
            assert!(p <= Duration::from_millis(2), "{ahead}: {p:?}");
            assert!(p >= MIN_PACED_PAUSE, "{ahead}: {p:?}");
        }
        // A slow queue (turns of seconds) leaves the backoff as it is.
        let slow = Some(Duration::from_secs(5));
        let p = next_pause(&c, "s", 40, 0, long, slow);
        assert!(p >= c.poll.max / 2 && p <= c.poll.max, "{p:?}");
    }
}
