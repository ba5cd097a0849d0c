//! Backoff between retries of one model: exponential, linear or fixed from a base delay,
//! capped, with full jitter.

use std::time::Duration;

/// How the delay grows with each retry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackoffStrategy {
    /// `base * 2^retry`: 500 ms, 1 s, 2 s, 4 s… (the default).
    #[default]
    Exponential,
    /// `base * (retry + 1)`: 500 ms, 1 s, 1.5 s, 2 s…
    Linear,
    /// `base`: 500 ms, 500 ms, 500 ms…
    Fixed,
}

/// The delay before each retry (`retry` counts retries of one model from 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// How the delay grows.
    pub strategy: BackoffStrategy,
    /// The first delay (default 500 ms).
    pub base: Duration,
    /// Every delay is capped here (default 30 s).
    pub max: Duration,
    /// Full jitter: the actual delay is uniformly random between 0 and the computed one
    /// (default on).
    pub jitter: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            strategy: BackoffStrategy::Exponential,
            base: Duration::from_millis(500),
            max: Duration::from_secs(30),
            jitter: true,
        }
    }
}

impl Backoff {
    /// Exponential from 500 ms, capped at 30 s, with jitter (the default).
    pub fn exponential() -> Self {
        Self::default()
    }
    /// Linear from 500 ms, capped at 30 s, with jitter.
    pub fn linear() -> Self {
        Self {
            strategy: BackoffStrategy::Linear,
            ..Self::default()
        }
    }
    /// Fixed 500 ms, with jitter.
    pub fn fixed() -> Self {
        Self {
            strategy: BackoffStrategy::Fixed,
            ..Self::default()
        }
    }
    /// Replace the base delay (default 500 ms): the first wait, and the unit the strategy
    /// multiplies.
    pub fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }
    /// Replace the cap on any single wait (default 30 s).
    pub fn max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }
    /// Jitter on or off.
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// The computed delay before retry number `retry` (0-based), capped, before jitter.
    pub fn delay(&self, retry: u32) -> Duration {
        let d = match self.strategy {
            BackoffStrategy::Exponential => 2u32
                .checked_pow(retry)
                .and_then(|f| self.base.checked_mul(f)),
            BackoffStrategy::Linear => retry.checked_add(1).and_then(|f| self.base.checked_mul(f)),
            BackoffStrategy::Fixed => Some(self.base),
        };
        d.map_or(self.max, |d| d.min(self.max))
    }

    /// The delay to wait: [`delay`](Self::delay), scaled by `unit` (uniform in [0, 1))
    /// when jitter is on.
    pub fn wait(&self, retry: u32, unit: f64) -> Duration {
        let d = self.delay(retry);
        if self.jitter {
            d.mul_f64(unit.clamp(0.0, 1.0))
        } else {
            d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn strategies_follow_the_documented_formulas() {
        let e = Backoff::exponential();
        assert_eq!(
            (0..4).map(|r| e.delay(r)).collect::<Vec<_>>(),
            [ms(500), ms(1000), ms(2000), ms(4000)]
        );
        let l = Backoff::linear();
        assert_eq!(
            (0..4).map(|r| l.delay(r)).collect::<Vec<_>>(),
            [ms(500), ms(1000), ms(1500), ms(2000)]
        );
        let f = Backoff::fixed();
        assert_eq!(
            (0..3).map(|r| f.delay(r)).collect::<Vec<_>>(),
            [ms(500), ms(500), ms(500)]
        );
    }

    #[test]
    fn every_strategy_is_capped() {
        let e = Backoff::exponential();
        assert_eq!(e.delay(6), ms(30_000), "500 * 64 = 32 s, capped at 30 s");
        assert_eq!(e.delay(200), ms(30_000), "no overflow");
        let l = Backoff::linear().base(ms(10_000)).max(ms(25_000));
        assert_eq!(l.delay(5), ms(25_000));
        assert_eq!(Backoff::fixed().base(ms(40_000)).delay(0), ms(30_000));
    }

    #[test]
    fn full_jitter_scales_between_zero_and_the_delay() {
        let b = Backoff::exponential();
        assert_eq!(b.wait(1, 0.0), Duration::ZERO);
        assert_eq!(b.wait(1, 0.5), ms(500));
        assert!(b.wait(1, 0.999_999) <= ms(1000));
        assert_eq!(b.jitter(false).wait(1, 0.0), ms(1000));
    }
}
