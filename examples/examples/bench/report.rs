//! What the benchmark found ([`Report`] and its rows), as the table and the JSON show
//! it.

use serde::{Deserialize, Serialize};

use super::options::Sizes;
use super::stats::Stats;

/// Everything the table shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where and how it ran.
    pub machine: Machine,
    /// How much work each measurement did.
    pub sizes: Sizes,
    /// Framework time per turn for the three scripts.
    pub turn_time: Vec<TurnTime>,
    /// The instant provider's own cost per call, timed alone (not subtracted).
    pub provider_ns_per_call: f64,
    /// Model calls in the booking conversation.
    pub model_calls: ModelCalls,
    /// Turns per second on independent sessions across all cores.
    pub throughput: Throughput,
    /// Stored size of an idle session.
    pub idle_session: IdleSession,
    /// Turns per second by store.
    pub stores: Vec<StoreRow>,
    /// What the session lease adds to a turn, by store.
    pub lease: Vec<LeaseRow>,
    /// Turns per second of several OS processes sharing PostgreSQL.
    pub processes: Vec<ProcessesRow>,
    /// Streaming first-delta latency.
    pub streaming: Streaming,
}

/// Where and how the benchmark ran.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Cores available to this process.
    pub cores: usize,
    /// CPU model, when the OS says.
    pub cpu: Option<String>,
    /// `release` or `debug`.
    pub profile: &'static str,
    /// `quick` or `full`.
    pub mode: &'static str,
}

/// Framework time per turn of one script.
#[derive(Debug, Clone, Serialize)]
pub struct TurnTime {
    /// The script.
    pub script: &'static str,
    /// µs per turn over batches.
    pub us_per_turn: Stats,
    /// The TypeScript figure, µs per turn: quoted from the project design
    /// (`targets::TS_REFERENCE_US`), not measured.
    pub ts_reference_us: f64,
}

/// Model calls counted from `AgentResponse::model_calls`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelCalls {
    /// One field per turn: calls of each turn (greeting, city, date, guests).
    pub one_field_per_turn: Vec<u32>,
    /// The step after each of those turns.
    pub one_field_steps: Vec<Option<String>>,
    /// Calls the provider saw in that conversation (cross-check).
    pub one_field_provider_calls: usize,
    /// All data in one message: calls of that turn.
    pub all_in_one_calls: u32,
    /// The step after that turn (`confirm` when it landed there).
    pub all_in_one_step: Option<String>,
    /// Turns the all-in-one conversation needed to reach `confirm`.
    pub all_in_one_turns: u32,
    /// Calls the provider saw in that conversation (cross-check).
    pub all_in_one_provider_calls: usize,
}

impl ModelCalls {
    /// Mean calls per turn, one field per turn.
    pub fn one_field_mean(&self) -> f64 {
        let n = self.one_field_per_turn.len().max(1) as f64;
        self.one_field_per_turn
            .iter()
            .map(|&c| f64::from(c))
            .sum::<f64>()
            / n
    }
}

/// Turns per second on independent sessions.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// Runtime worker threads.
    pub workers: usize,
    /// Sessions in flight at once.
    pub sessions: usize,
    /// Turns per second.
    pub rate: Rate,
}

/// A rate from per-sample times: the median sample and the slow (p90) sample.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rate {
    /// Turns per second of the median sample.
    pub median_turns_per_s: f64,
    /// Turns per second of the 90th-percentile (slow) sample.
    pub p90_turns_per_s: f64,
    /// Samples.
    pub samples: usize,
}

impl Rate {
    pub(crate) fn from_us_per_turn(s: Stats) -> Self {
        Rate {
            median_turns_per_s: 1e6 / s.median,
            p90_turns_per_s: 1e6 / s.p90,
            samples: s.samples,
        }
    }
}

/// Stored size of a session after the booking conversation.
#[derive(Debug, Clone, Serialize)]
pub struct IdleSession {
    /// Turns of the conversation.
    pub turns: usize,
    /// Encoded bytes in the store.
    pub stored_bytes: usize,
    /// Bytes of message text in the history.
    pub history_text_bytes: usize,
    /// Stored bytes minus the history text.
    pub without_history_bytes: usize,
}

/// One store's throughput, or why it was not measured.
#[derive(Debug, Clone, Serialize)]
pub struct StoreRow {
    /// Store name.
    pub store: &'static str,
    /// Turns per second, when measured.
    pub rate: Option<Rate>,
    /// Why not measured.
    pub note: Option<String>,
}

/// What the session lease adds to a turn on one store, or why it was not measured.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseRow {
    /// Store name.
    pub store: &'static str,
    /// µs per sequential turn with the lease (the default).
    pub with_lease_us: Option<Stats>,
    /// µs per sequential turn without it (compare-and-swap only).
    pub without_lease_us: Option<Stats>,
    /// µs of one acquire + release pair on the store alone.
    pub acquire_release_us: Option<Stats>,
    /// Why not measured.
    pub note: Option<String>,
}

impl LeaseRow {
    /// Median µs the lease adds per turn.
    pub fn overhead_us(&self) -> Option<f64> {
        Some(self.with_lease_us?.median - self.without_lease_us?.median)
    }
}

/// Turns per second of several OS processes sharing one store, or why not measured.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessesRow {
    /// Store name.
    pub store: &'static str,
    /// Which sessions the processes take turns on.
    pub sessions: SessionMode,
    /// OS processes.
    pub processes: usize,
    /// Measured turns of each process.
    pub turns_per_process: usize,
    /// Turns of all processes over the wall time of the set (first turn started to
    /// last turn ended), by run.
    pub rate: Option<Rate>,
    /// µs of each turn as its process saw it (waiting for the lease included), all
    /// processes and runs.
    pub turn_us: Option<Stats>,
    /// The slowest turn, µs.
    pub slowest_turn_us: Option<f64>,
    /// When the first process had done all its turns, as a share of the wall time
    /// (median over runs): near 1 when the processes shared the store evenly.
    pub first_done_share: Option<f64>,
    /// Why not measured, or what failed.
    pub note: Option<String>,
}

/// Sessions of the processes of the multi-process measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    /// Each process on sessions of its own (a new one every 4 turns).
    Distinct,
    /// All processes on one session (turns queue behind its lease).
    Hot,
}

impl SessionMode {
    pub(crate) fn label(self) -> &'static str {
        match self {
            SessionMode::Distinct => "distinct sessions",
            SessionMode::Hot => "one hot session",
        }
    }
}

/// Streaming first-delta latency.
#[derive(Debug, Clone, Serialize)]
pub struct Streaming {
    /// µs from the provider's first chunk to the consumer's first text delta.
    pub first_delta_us: Stats,
    /// Turns streamed.
    pub turns: usize,
    /// Turns whose first delta reached the consumer while the model was still writing.
    pub live_turns: usize,
}
