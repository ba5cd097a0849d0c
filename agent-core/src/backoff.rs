//! The pause before re-running a turn whose save conflicted: jittered exponential
//! backoff, so writers racing on one session (several agent processes on a shared
//! store) spread out instead of colliding again at once. The same shape paces the
//! attempts of a turn waiting for a busy session's lease
//! ([`crate::store::LeaseConfig::poll`]).

use std::hash::BuildHasher;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Backoff between re-runs of a conflicting turn (with
/// [`ConflictPolicy::Retry`](crate::agent::ConflictPolicy::Retry)) and of a conflicting
/// [`Agent::dispatch`](crate::agent::Agent::dispatch). Re-run `n` (1-based) waits a
/// random time between half and all of `min(max, base × 2^(n-1))`: never zero, so two
/// racing writers do separate, and never longer than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConflictBackoff {
    /// The first re-run's longest pause; zero re-runs at once.
    pub base: Duration,
    /// The longest pause of any re-run (at least `base`, checked by `build()`).
    pub max: Duration,
}

impl Default for ConflictBackoff {
    /// 20 ms, doubling, at most 500 ms: small next to a model call.
    fn default() -> Self {
        Self {
            base: Duration::from_millis(20),
            max: Duration::from_millis(500),
        }
    }
}

impl ConflictBackoff {
    /// No pause: re-run at once.
    pub const NONE: Self = Self {
        base: Duration::ZERO,
        max: Duration::ZERO,
    };

    /// The longest pause before re-run `attempt` (1-based).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.base.saturating_mul(1 << doublings).min(self.max)
    }

    /// The pause before re-run `attempt` for a jitter `unit` in `[0, 1)`: between half
    /// and all of the ceiling.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling = self.ceiling(attempt);
        let half = ceiling / 2;
        // Out-of-range units (NaN included) are clamped: `mul_f64` panics on them.
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.0
        };
        half + (ceiling - half).mul_f64(unit)
    }

    /// Wait before re-run `attempt` of a turn on `session_id`.
    pub(crate) async fn pause(&self, session_id: &str, attempt: u32) {
        let d = self.delay(attempt, jitter(session_id, attempt));
        if !d.is_zero() {
            tracing::debug!(
                session = session_id,
                attempt,
                delay_ms = d.as_millis() as u64,
                "save conflict; backing off"
            );
            tokio::time::sleep(d).await;
        }
    }
}

/// A value in `[0, 1)` that differs between processes, sessions, attempts and moments:
/// std's randomly keyed hasher over the three (no random-number crate needed; this only
/// spreads writers apart).
pub(crate) fn jitter(session_id: &str, attempt: u32) -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let h = std::hash::RandomState::new().hash_one((session_id, attempt, nanos));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_ceiling_doubles_from_base_up_to_max() {
        let b = ConflictBackoff {
            base: ms(10),
            max: ms(50),
        };
        let got: Vec<Duration> = (1..=5).map(|n| b.ceiling(n)).collect();
        assert_eq!(got, [ms(10), ms(20), ms(40), ms(50), ms(50)]);
        assert_eq!(b.ceiling(u32::MAX), ms(50), "no overflow");
    }

    #[test]
    fn the_delay_lies_between_half_and_all_of_the_ceiling() {
        let b = ConflictBackoff {
            base: ms(10),
            max: ms(50),
        };
        assert_eq!(b.delay(2, 0.0), ms(10));
        assert_eq!(b.delay(2, 1.0), ms(20));
        for i in 0..100 {
            let d = b.delay(3, jitter("s", i));
            assert!(d >= ms(20) && d <= ms(40), "{d:?}");
        }
        assert_eq!(ConflictBackoff::NONE.delay(7, 0.5), Duration::ZERO);
        assert_eq!(
            b.delay(1, f64::NAN),
            ms(5),
            "bad units are clamped, never a panic"
        );
        assert_eq!(b.delay(1, 7.0), ms(10));
    }

    #[test]
    fn jitter_is_a_unit_fraction_and_varies() {
        let units: Vec<f64> = (0..64).map(|i| jitter("session", i)).collect();
        assert!(units.iter().all(|u| (0.0..1.0).contains(u)), "{units:?}");
        let first = units[0];
        assert!(units.iter().any(|u| *u != first), "{units:?}");
    }
}
