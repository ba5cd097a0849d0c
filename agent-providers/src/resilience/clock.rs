//! Injectable time for the resilience layer: backoff waits and timeouts both go through
//! a [`Clock`], so tests drive time by hand and never sleep.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::future::BoxFuture;

/// A monotonic clock that can sleep.
pub trait Clock: Send + Sync + 'static {
    /// Time since an arbitrary, fixed origin.
    fn now(&self) -> Duration;
    /// A future that completes `duration` from now.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Real time, through tokio's timer (so tokio's paused test time applies too).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl Default for TokioClock {
    fn default() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

struct Sleeper {
    id: u64,
    deadline: Duration,
    waker: Option<Waker>,
}

#[derive(Default)]
struct ManualState {
    now: Duration,
    next_id: u64,
    sleepers: Vec<Sleeper>,
    requested: Vec<Duration>,
}

/// A clock that moves only when told: for tests.
///
/// - [`ManualClock::new`]: sleeps complete when [`advance`](Self::advance) moves time past
///   their deadline; [`sleeping`](Self::sleeping) waits until the code under test is
///   asleep. Drives timeouts and backoff step by step.
/// - [`ManualClock::auto_advance`]: a sleep completes as soon as it is polled, moving time
///   forward by its length. For backoff tests; a timeout timer around a call that answers
///   at once is never polled and so costs no time, but around a call that waits on I/O it
///   would fire at once.
///
/// Every sleep is recorded ([`requested`](Self::requested)): when created on a manual
/// clock, when first polled on an auto-advancing one.
#[derive(Clone, Default)]
pub struct ManualClock {
    state: Arc<Mutex<ManualState>>,
    registered: Arc<tokio::sync::Notify>,
    auto: bool,
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("ManualClock")
            .field("now", &s.now)
            .field("sleepers", &s.sleepers.len())
            .field("auto", &self.auto)
            .finish()
    }
}

impl ManualClock {
    /// A clock at zero that moves only on [`advance`](Self::advance).
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock whose sleeps complete at once, moving time forward.
    pub fn auto_advance() -> Self {
        Self {
            auto: true,
            ..Self::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, ManualState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Move time forward, waking the sleeps that are due.
    pub fn advance(&self, by: Duration) {
        let wakers: Vec<Waker> = {
            let mut s = self.lock();
            s.now += by;
            let now = s.now;
            s.sleepers
                .iter_mut()
                .filter(|sl| sl.deadline <= now)
                .filter_map(|sl| sl.waker.take())
                .collect()
        };
        for w in wakers {
            w.wake();
        }
    }

    /// Move time to the earliest pending sleep's deadline (waking it); returns how far
    /// time moved, or `None` when nothing sleeps.
    pub fn advance_to_next(&self) -> Option<Duration> {
        let step = {
            let s = self.lock();
            let now = s.now;
            let next = s
                .sleepers
                .iter()
                .map(|sl| sl.deadline)
                .filter(|d| *d > now)
                .min()?;
            next - now
        };
        self.advance(step);
        Some(step)
    }

    /// Every sleep requested so far, in order (backoff waits and timeout timers).
    pub fn requested(&self) -> Vec<Duration> {
        self.lock().requested.clone()
    }

    /// How many sleeps are pending now (not yet due).
    pub fn pending(&self) -> usize {
        let s = self.lock();
        s.sleepers.iter().filter(|sl| sl.deadline > s.now).count()
    }

    /// Wait until at least `n` sleeps are pending (the code under test is waiting on
    /// the clock).
    pub async fn sleeping(&self, n: usize) {
        loop {
            let notified = self.registered.notified();
            if self.pending() >= n {
                return;
            }
            notified.await;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        self.lock().now
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        if self.auto {
            let state = self.state.clone();
            return Box::pin(async move {
                let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                s.requested.push(duration);
                s.now += duration;
            });
        }
        let mut s = self.lock();
        s.requested.push(duration);
        let id = s.next_id;
        s.next_id += 1;
        let deadline = s.now + duration;
        s.sleepers.push(Sleeper {
            id,
            deadline,
            waker: None,
        });
        drop(s);
        self.registered.notify_waiters();
        Box::pin(ManualSleep {
            state: self.state.clone(),
            id,
            deadline,
        })
    }
}

struct ManualSleep {
    state: Arc<Mutex<ManualState>>,
    id: u64,
    deadline: Duration,
}

impl Future for ManualSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.now >= self.deadline {
            let id = self.id;
            s.sleepers.retain(|sl| sl.id != id);
            return Poll::Ready(());
        }
        if let Some(sl) = s.sleepers.iter_mut().find(|sl| sl.id == self.id) {
            sl.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let id = self.id;
        s.sleepers.retain(|sl| sl.id != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn manual_sleeps_wake_only_when_time_moves() {
        let c = ManualClock::new();
        let c2 = c.clone();
        let h = tokio::spawn(async move { c2.sleep(Duration::from_secs(5)).await });
        c.sleeping(1).await;
        c.advance(Duration::from_secs(4));
        tokio::task::yield_now().await;
        assert!(!h.is_finished());
        assert_eq!(c.advance_to_next(), Some(Duration::from_secs(1)));
        h.await.unwrap();
        assert_eq!(c.now(), Duration::from_secs(5));
        assert_eq!(c.pending(), 0);
        assert_eq!(c.requested(), vec![Duration::from_secs(5)]);
    }

    #[tokio::test]
    async fn auto_advance_completes_at_once_and_moves_time() {
        let c = ManualClock::auto_advance();
        c.sleep(Duration::from_millis(700)).await;
        c.sleep(Duration::from_millis(300)).await;
        assert_eq!(c.now(), Duration::from_secs(1));
    }
}
