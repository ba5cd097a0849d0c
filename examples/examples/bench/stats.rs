//! The statistics of every timing: median and 90th percentile of samples.

use std::time::Duration;

use serde::Serialize;

/// Median and 90th percentile (nearest rank) of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    /// The median.
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// Number of samples.
    pub samples: usize,
}

/// Median and p90 of `v` (NaN for no samples).
pub fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return Stats {
            median: f64::NAN,
            p90: f64::NAN,
            samples: 0,
        };
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let rank = ((0.9 * n as f64).ceil() as usize).clamp(1, n);
    Stats {
        median,
        p90: v[rank - 1],
        samples: n,
    }
}

/// A duration in µs.
pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
