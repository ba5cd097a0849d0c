//! How a suite is run: read by the runner and written into every report.

use std::time::Duration;

/// How a suite is run: a greedy run (pass^1), k sampled runs (pass^k) at a temperature,
/// how many scenarios run at once, the per-turn timeout and the breaker that stops a run on
/// a failing model server.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// One run at temperature 0 per scenario: pass^1.
    pub greedy: bool,
    /// Runs at [`RunOptions::temperature`] with seeds 1..=k per scenario: pass^k
    /// (0: none). At temperature 0 the k runs would be identical and prove nothing.
    pub k: u32,
    /// Temperature of the k runs.
    pub temperature: f32,
    /// Runs at once (a local server with one slot gains nothing above 1).
    pub concurrency: usize,
    /// Deadline of one turn. Past it, a turn waiting on the model is errored (the
    /// model is too slow or gone); one that is not waiting on the model is an engine
    /// fault (a hang).
    pub turn_timeout: Duration,
    /// Runs errored in a row by the model's side after which the remaining runs are
    /// marked errored without running (a server that died must not cost a deadline
    /// per turn).
    pub breaker: u32,
    /// Print a progress line on stderr after each run.
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            greedy: true,
            k: 3,
            temperature: 0.7,
            concurrency: 1,
            turn_timeout: Duration::from_secs(180),
            breaker: 3,
            progress: true,
        }
    }
}
