//! The benchmark table: framework time per turn, model calls per turn, turns per second
//! on independent sessions, bytes per idle session, store throughput and streaming
//! first-delta latency, printed as a Markdown table ready for the README.
//!
//! ```text
//! cargo run --release -p examples --example bench              # the table
//! cargo run --release -p examples --example bench -- --quick   # fewer iterations
//! cargo run --release -p examples --example bench -- --json    # machine-readable
//! ```
//!
//! The scripts are those of `agent-core/benches/turn.rs` (framework time, a provider
//! answering from constants), `agent-core/benches/stores.rs` (store throughput, the
//! scripted provider) and `agent-core/tests/booking.rs` (model calls), so this table
//! and the criterion benchmarks measure the same things. Every timing is a median
//! (and 90th percentile) over repeated batches after warm-up batches.
//! PostgreSQL and Redis are measured when `AGENT_TEST_POSTGRES_URL` /
//! `AGENT_TEST_REDIS_URL` are set (`eval "$(bash scripts/services.sh start)"`).
//! The session lease's cost per turn is measured on each store by timing the same
//! sequential turns with the lease and without it (a store handle that reports no
//! lease support, so the agent runs on the compare-and-swap alone).
//! With PostgreSQL, turns per second of 4 OS processes sharing it are measured too: the
//! example runs 4 copies of its own executable (the child role is selected by the
//! environment variable `AGENT_BENCH_CHILD`), first each on its own sessions, then all
//! 4 on one hot session, where turns queue behind the session lease.
//!
//! The modules: `options` (the command line, the sizes), `measure` (running everything;
//! the in-memory timings), `conversation` (model calls, idle session), `stores` (store
//! throughput, session lease), `streaming` (first-delta latency), `processes` (several
//! processes sharing PostgreSQL), `stats`, `report` (what was found), `targets` (the
//! budgets and the quoted TypeScript figures) and `table` (the Markdown and JSON output).

/// The scripts of `cargo bench -p agent-core` (`turn`, `stores`), shared as they are.
#[path = "../../../agent-core/benches/script/mod.rs"]
mod script;

mod conversation;
mod measure;
mod options;
mod processes;
mod report;
mod stats;
mod stores;
mod streaming;
mod table;
mod targets;

use std::error::Error;

// The API of the bench: the test includes this file as a module (`#[path]`), and uses a
// part of it.
#[allow(unused_imports)]
pub use self::{
    measure::run,
    options::{Options, Sizes},
    report::{
        IdleSession, LeaseRow, Machine, ModelCalls, ProcessesRow, Rate, Report, SessionMode,
        StoreRow, Streaming, Throughput, TurnTime,
    },
    stats::{Stats, stats},
    table::ROW_LABELS,
};
use processes::{CHILD_ENV, child};

/// Errors of the measurements (they run on several threads).
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Turns per session in the timing scripts (then a fresh session), as in the benches.
const TURNS_PER_SESSION: u64 = 4;
/// What the user says in the timing scripts: the model keeps re-asking for the city.
const USER_MESSAGE: &str = script::MESSAGE;

fn main() -> std::process::ExitCode {
    if let Some(spec) = std::env::var_os(CHILD_ENV) {
        // One of the processes of the multi-process measurement.
        let unsend = |e: BoxError| -> Box<dyn Error> { e };
        return examples::exit::report(child(&spec).map_err(unsend));
    }
    examples::exit::report(bench())
}

/// Parse the options, measure, print the report.
fn bench() -> Result<(), Box<dyn Error>> {
    // `Box<dyn Error + Send + Sync>` coerces to `Box<dyn Error>` (no `From` for `?`).
    let unsend = |e: BoxError| -> Box<dyn Error> { e };
    let Some(options) = Options::parse(std::env::args().skip(1)).map_err(unsend)? else {
        println!("usage: bench [--quick] [--json]");
        return Ok(());
    };
    let report = run(&options).map_err(unsend)?;
    if options.json {
        println!("{}", report.to_json()?);
    } else {
        print!("{}", report.to_markdown());
    }
    Ok(())
}
