//! The command line (`--quick`, `--json`, `--help`) and how much work each measurement
//! does in quick and full mode ([`Sizes`]).

use serde::Serialize;

use super::BoxError;

/// Command-line options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Fewer iterations (for tests; the numbers are rough).
    pub quick: bool,
    /// Print JSON instead of the Markdown table.
    pub json: bool,
}

impl Options {
    /// Quick mode, Markdown output.
    pub fn quick() -> Self {
        Self {
            quick: true,
            json: false,
        }
    }

    /// Parse the arguments after the program name; `None` when help was asked for.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Self>, BoxError> {
        let mut o = Options::default();
        for a in args {
            match a.as_str() {
                "--quick" => o.quick = true,
                "--json" => o.json = true,
                "-h" | "--help" => return Ok(None),
                // `cargo bench`-style harness flags are harmless.
                "--bench" => {}
                other => {
                    return Err(format!(
                        "unknown option `{other}` (expected --quick, --json or --help)"
                    )
                    .into());
                }
            }
        }
        Ok(Some(o))
    }

    pub(crate) fn sizes(&self) -> Sizes {
        if self.quick {
            Sizes {
                warmup: 1,
                batches: 5,
                turns_per_batch: 40,
                sessions: 16,
                batches_per_sample: 1,
                store_samples: 3,
                store_batches_per_sample: 1,
                lease_turns_per_batch: 40,
                process_turns: 20,
                process_warmup_turns: 4,
                process_samples: 1,
                stream_turns_per_batch: 20,
                provider_calls: 1_000,
            }
        } else {
            Sizes {
                warmup: 3,
                batches: 30,
                turns_per_batch: 2_000,
                sessions: 64,
                batches_per_sample: 8,
                store_samples: 20,
                store_batches_per_sample: 2,
                lease_turns_per_batch: 400,
                process_turns: 500,
                process_warmup_turns: 20,
                process_samples: 3,
                stream_turns_per_batch: 500,
                provider_calls: 200_000,
            }
        }
    }
}

/// How much work each measurement does.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sizes {
    /// Warm-up batches (not measured) before each measurement.
    pub warmup: usize,
    /// Measured batches (samples) per timing.
    pub batches: usize,
    /// Turns per batch for the framework time (a multiple of 4: whole sessions).
    pub turns_per_batch: usize,
    /// Concurrent sessions per batch (4 turns each) for the throughput rows.
    pub sessions: usize,
    /// Batches per sample for turns/s on independent sessions.
    pub batches_per_sample: usize,
    /// Samples per store.
    pub store_samples: usize,
    /// Batches per store sample.
    pub store_batches_per_sample: usize,
    /// Sequential turns per batch of the lease overhead (with, then without).
    pub lease_turns_per_batch: usize,
    /// Measured turns of each process in the multi-process measurement.
    pub process_turns: usize,
    /// Warm-up turns of each process (its own sessions, before the measured turns).
    pub process_warmup_turns: usize,
    /// Runs of the process set per multi-process row.
    pub process_samples: usize,
    /// Streamed turns per batch for the first-delta latency.
    pub stream_turns_per_batch: usize,
    /// Calls timed to measure the instant provider's own cost.
    pub provider_calls: usize,
}
