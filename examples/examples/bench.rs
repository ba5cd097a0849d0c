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

/// The scripts of `cargo bench -p agent-core` (`turn`, `stores`), shared as they are.
#[path = "../../agent-core/benches/script/mod.rs"]
mod script;

use std::error::Error;
use std::fmt::Write as _;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use agent_core::error::ProviderError;
use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest, ModelResponse, StreamChunk};
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

/// Errors of the measurements (they run on several threads).
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Turns per session in the timing scripts (then a fresh session), as in the benches.
const TURNS_PER_SESSION: u64 = 4;
/// What the user says in the timing scripts: the model keeps re-asking for the city.
const USER_MESSAGE: &str = script::MESSAGE;
/// The TypeScript reference implementation, µs per turn (1 flow, 2 flows, 2 flows + 1 signal).
const TS_REFERENCE_US: [f64; 3] = [47.0, 65.0, 80.0];
/// Budget: framework time per turn in memory.
const BUDGET_TURN_US: f64 = 5.0;
/// Budget: turns per second across independent sessions, per core (200k on 2 cores).
const BUDGET_TURNS_PER_S_PER_CORE: f64 = 100_000.0;
/// Budget: bytes per idle session, history text excluded.
const BUDGET_IDLE_BYTES: usize = 2048;
/// Budget: µs added between the provider's first chunk and the consumer's first delta.
const BUDGET_FIRST_DELTA_US: f64 = 50.0;

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

// ---------------------------------------------------------------------------------
// Options and sizes
// ---------------------------------------------------------------------------------

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

    fn sizes(&self) -> Sizes {
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

// ---------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------

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

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------
// Providers
// ---------------------------------------------------------------------------------

/// Timestamps taken inside the streaming provider, read by the consumer.
#[derive(Default)]
struct Probe {
    /// When the provider's stream yielded its first chunk this turn.
    first_chunk: Mutex<Option<Instant>>,
    /// Whether the provider's stream has yielded its final answer this turn.
    finished: AtomicBool,
    /// Whether the consumer has received the first text delta this turn.
    delta_seen: AtomicBool,
}

impl Probe {
    fn reset(&self) {
        *self.first_chunk.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.finished.store(false, Ordering::SeqCst);
        self.delta_seen.store(false, Ordering::SeqCst);
    }
    fn mark_first_chunk(&self) {
        let mut first = self.first_chunk.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(Instant::now());
        }
    }
    fn first_chunk(&self) -> Option<Instant> {
        *self.first_chunk.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The instant provider, streaming: its answer in three chunks, the first ending inside
/// the message. After the first chunk the stream waits, as a model still writing, until
/// the consumer has the first delta (or, when no text streams live, for a bounded
/// number of polls), so the consumer sees the first delta as soon as the engine
/// releases it and the rest of the answer is not in the measured time.
struct StreamingProvider {
    probe: Arc<Probe>,
}

#[async_trait]
impl Provider for StreamingProvider {
    fn name(&self) -> &str {
        "instant-streaming"
    }
    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        Ok(script::instant_response(req.kind))
    }
    fn generate_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        Box::pin(ChunkStream::new(
            script::instant_response(req.kind),
            self.probe.clone(),
        ))
    }
}

/// A scripted answer as a stream of chunks.
struct ChunkStream {
    parts: std::collections::VecDeque<String>,
    done: Option<ModelResponse>,
    sent_first: bool,
    /// Polls spent waiting after the first chunk.
    waits: u32,
    probe: Arc<Probe>,
}

/// Most polls the stream waits after its first chunk for a delta that never comes.
const MAX_WAITS: u32 = 64;

impl ChunkStream {
    fn new(resp: ModelResponse, probe: Arc<Probe>) -> Self {
        const KEY: &str = "\"message\":\"";
        let content = resp.content.as_str();
        // The first chunk ends a few characters into the message value.
        let cut = content
            .find(KEY)
            .map_or(content.len() / 2, |i| i + KEY.len() + 6)
            .min(content.len());
        let mut parts = std::collections::VecDeque::new();
        match content.split_at_checked(cut) {
            Some((head, rest)) => {
                parts.push_back(head.to_owned());
                let half = rest.len() / 2;
                match rest.split_at_checked(half) {
                    Some((a, b)) => {
                        parts.push_back(a.to_owned());
                        parts.push_back(b.to_owned());
                    }
                    None => parts.push_back(rest.to_owned()),
                }
            }
            None => parts.push_back(content.to_owned()),
        }
        parts.retain(|p| !p.is_empty());
        Self {
            parts,
            done: Some(resp),
            sent_first: false,
            waits: 0,
            probe,
        }
    }
}

impl futures::Stream for ChunkStream {
    type Item = Result<StreamChunk, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.sent_first
            && this.waits < MAX_WAITS
            && !this.probe.delta_seen.load(Ordering::SeqCst)
        {
            // The next tokens have not "arrived" yet: let the consumer run.
            this.waits += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if this.sent_first {
            this.waits = MAX_WAITS; // released: no more waiting this answer
        }
        if let Some(part) = this.parts.pop_front() {
            if !this.sent_first {
                this.sent_first = true;
                this.probe.mark_first_chunk();
            }
            return Poll::Ready(Some(Ok(StreamChunk::Text(part))));
        }
        if let Some(done) = this.done.take() {
            this.probe.finished.store(true, Ordering::SeqCst);
            return Poll::Ready(Some(Ok(StreamChunk::Done(done))));
        }
        Poll::Ready(None)
    }
}

// ---------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------

/// The booking conversation of `agent-core/tests/booking.rs` (its `common` agent).
mod conversation {
    use agent_core::prelude::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    /// What the concierge collects.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct Booking {
        /// City the guest wants to stay in
        pub city: Option<String>,
        /// Check-in date, ISO 8601
        pub check_in: Option<String>,
        /// Number of guests, 1 to 12
        pub guests: Option<u8>,
        /// Confirmation id
        pub booking_id: Option<String>,
        /// Free-text feedback
        pub feedback: Option<String>,
    }

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct Concierge {
        pub tier: String,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// Hotel name
        hotel: String,
    }

    fn book_room() -> FnTool<Booking, Concierge> {
        FnTool::new(
            "book_room",
            "Book the room.",
            |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
                let id = format!("BK-{}", a.hotel.len());
                Ok(ToolOutput::text(format!("booked {id}"))
                    .data(patch_of(&json!({ "booking_id": id })).map_err(ToolError::msg)?)
                    .directive(Directive::complete()))
            },
        )
    }

    /// ask_city → ask_date → ask_guests → route (auto) → confirm (end) | large_group
    pub fn booking_flow() -> Result<Flow<Booking, Concierge>, ConfigErrors> {
        Flow::builder("booking")
            .title("Hotel booking")
            .when("the user wants to book a hotel room")
            .required(["city", "check_in", "guests"])
            .step(
                Step::model("ask_city")
                    .prompt("Ask which city the user wants to stay in.")
                    .collect(["city"]),
            )
            .step(
                Step::model("ask_date")
                    .prompt("Ask for the check-in date.")
                    .collect(["check_in"])
                    .requires(["city"]),
            )
            .step(
                Step::model("ask_guests")
                    .prompt("Ask how many guests.")
                    .collect(["guests"]),
            )
            .step(
                Step::auto("route")
                    .requires(["city", "check_in", "guests"])
                    .branch(Branch::to_step("large_group").if_(
                        |cx: &Cx<'_, Booking, Concierge>| cx.data().guests.is_some_and(|g| g > 8),
                    ))
                    .branch(Branch::to_step("confirm")),
            )
            .step(
                Step::model("confirm")
                    .prompt("Confirm the booking.")
                    .tool(book_room())
                    .end(),
            )
            .step(Step::reply("large_group", "A specialist will call you about groups.").end())
            .build()
    }
}

// ---------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------

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
    /// The TypeScript reference, µs per turn.
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
    fn from_us_per_turn(s: Stats) -> Self {
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
    fn label(self) -> &'static str {
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

// ---------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------

/// Run every measurement.
pub fn run(options: &Options) -> Result<Report, BoxError> {
    let sizes = options.sizes();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine = Machine {
        cores,
        cpu: cpu_model(),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        mode: if options.quick { "quick" } else { "full" },
    };
    progress("framework time per turn");
    let turn_time = turn_times(&sizes)?;
    let provider_ns_per_call = provider_cost(&sizes)?;
    progress("model calls and idle session size");
    let (model_calls, idle_session) = booking_conversation()?;
    progress("turns/s on independent sessions");
    let throughput = throughput(&sizes, cores)?;
    progress("store throughput");
    let stores = store_throughput(&sizes)?;
    progress("session lease overhead");
    let lease = lease_overhead(&sizes)?;
    progress("turns/s of 4 processes sharing PostgreSQL");
    let processes = processes(&sizes);
    progress("streaming first-delta latency");
    let streaming = streaming(&sizes)?;
    Ok(Report {
        machine,
        sizes,
        turn_time,
        provider_ns_per_call,
        model_calls,
        throughput,
        idle_session,
        stores,
        lease,
        processes,
        streaming,
    })
}

fn progress(what: &str) {
    eprintln!("bench: {what}…");
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// A current-thread runtime without an I/O driver, as `benches/turn.rs` uses (the
/// timer drives the turn deadline).
fn current_thread() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?)
}

fn multi_thread(workers: usize) -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()?)
}

/// Sequential turns of the timing script inside the caller's `block_on`, a new session
/// every 4 turns; only the turns are timed.
async fn sequential_batch<D: AgentData>(
    agent: &Agent<D, ()>,
    next: &mut u64,
    turns: usize,
) -> Result<Duration, BoxError> {
    let mut id = String::new();
    let start = Instant::now();
    for _ in 0..turns {
        let i = *next;
        *next += 1;
        if i.is_multiple_of(TURNS_PER_SESSION) || id.is_empty() {
            id = format!("s{}", i / TURNS_PER_SESSION);
        }
        black_box(agent.respond(&id, USER_MESSAGE).await?);
    }
    Ok(start.elapsed())
}

/// Row 1: framework time per turn, three scripts, on one thread.
fn turn_times(sizes: &Sizes) -> Result<Vec<TurnTime>, BoxError> {
    let rt = current_thread()?;
    let turns = sizes
        .turns_per_batch
        .next_multiple_of(TURNS_PER_SESSION as usize);
    let mut out = Vec::new();
    for ((script, flows, signal), ts) in [
        ("1 flow", 1, false),
        ("2 flows", 2, false),
        ("2 flows + 1 signal", 2, true),
    ]
    .into_iter()
    .zip(TS_REFERENCE_US)
    {
        let store = Arc::new(MemoryStore::new());
        let agent = script::agent(script::Instant, store.clone(), flows, signal)?;
        let samples = rt.block_on(async {
            let mut next = 0u64;
            let mut samples = Vec::with_capacity(sizes.batches);
            for b in 0..sizes.warmup + sizes.batches {
                let elapsed = sequential_batch(&agent, &mut next, turns).await?;
                // Keep the store small and steady (not timed).
                store.prune(u64::MAX).await?;
                if b >= sizes.warmup {
                    samples.push(micros(elapsed) / turns as f64);
                }
            }
            Ok::<_, BoxError>(samples)
        })?;
        out.push(TurnTime {
            script,
            us_per_turn: stats(samples),
            ts_reference_us: ts,
        });
    }
    Ok(out)
}

/// The instant provider's own cost per call, timed alone.
fn provider_cost(sizes: &Sizes) -> Result<f64, BoxError> {
    let rt = current_thread()?;
    let req = ModelRequest {
        kind: CallKind::Respond,
        system: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        output: None,
        max_tokens: None,
        temperature: None,
        seed: None,
    };
    let p = script::Instant;
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..sizes.provider_calls {
            black_box(p.generate(black_box(&req)).await?);
        }
        Ok(start.elapsed().as_secs_f64() * 1e9 / sizes.provider_calls.max(1) as f64)
    })
}

/// Rows 2 and 4: the booking conversation of `tests/booking.rs` with the scripted
/// provider: one field per turn, then all data in one message; and the stored size of
/// the first session once idle.
fn booking_conversation() -> Result<(ModelCalls, IdleSession), BoxError> {
    use conversation::{Booking, Concierge, booking_flow};
    use serde_json::json;

    let rt = current_thread()?;
    rt.block_on(async {
        // One field per turn.
        let p = ScriptedProvider::new();
        let store = Arc::new(MemoryStore::new());
        let a: Agent<Booking, Concierge> = Agent::builder()
            .name("Concierge")
            .provider(p.clone())
            .store_arc(store.clone())
            .flow(booking_flow()?)
            .build()?;
        p.respond(Answer::message("Which city?"));
        p.respond(
            Answer::message("Check-in date?")
                .with_data(json!({"city": "Lisbon"}))
                .claiming("ask_date"),
        );
        p.respond(
            Answer::message("How many guests?")
                .with_data(json!({"check_in": "2026-07-01"}))
                .claiming("ask_guests"),
        );
        p.respond(
            Answer::message("Shall I book?")
                .with_data(json!({"guests": 2}))
                .claiming("confirm"),
        );
        let mut per_turn = Vec::new();
        let mut steps = Vec::new();
        for said in ["I want to book a hotel", "Lisbon", "July 1", "two of us"] {
            let r = a.respond("one-field", said).await?;
            per_turn.push(r.model_calls);
            steps.push(r.step);
        }
        let one_field_provider_calls = p.calls();

        // The idle session it left behind.
        let stored = store
            .load("one-field")
            .await?
            .ok_or("the booking session was not stored")?;
        let session = a
            .session("one-field")
            .await?
            .ok_or("the booking session was not stored")?;
        let history_text_bytes: usize = session.history.iter().map(|m| m.content.len()).sum();
        let idle = IdleSession {
            turns: per_turn.len(),
            stored_bytes: stored.bytes.len(),
            history_text_bytes,
            without_history_bytes: stored.bytes.len().saturating_sub(history_text_bytes),
        };

        // All data in one message.
        let p = ScriptedProvider::new();
        let a: Agent<Booking, Concierge> = Agent::builder()
            .name("Concierge")
            .provider(p.clone())
            .flow(booking_flow()?)
            .build()?;
        p.respond(
            Answer::message("Which city?")
                .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})),
        );
        p.respond(Answer::message("Lisbon, July 1, 2 guests. Shall I book?"));
        let r = a.respond("all-in-one", "Lisbon, July 1, two of us").await?;
        let calls = ModelCalls {
            one_field_per_turn: per_turn,
            one_field_steps: steps,
            one_field_provider_calls,
            all_in_one_calls: r.model_calls,
            all_in_one_turns: 1,
            all_in_one_step: r.step,
            all_in_one_provider_calls: p.calls(),
        };
        Ok((calls, idle))
    })
}

/// `sessions` new sessions, 4 turns each, all in flight at once on the runtime's
/// workers; the elapsed time of the whole batch.
async fn concurrent_batch<D: AgentData>(
    agent: &Agent<D, ()>,
    next: &AtomicU64,
    sessions: usize,
) -> Result<Duration, BoxError> {
    let first = next.fetch_add(sessions as u64, Ordering::Relaxed);
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions as u64)
        .map(|i| {
            let agent = agent.clone();
            tokio::spawn(async move {
                let id = format!("bench-{}", first + i);
                for _ in 0..TURNS_PER_SESSION {
                    black_box(agent.respond(&id, USER_MESSAGE).await?);
                }
                Ok::<(), AgentError>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(started.elapsed())
}

/// Samples of µs per turn: each sample is `per_sample` concurrent batches (cleanup
/// between batches not timed).
async fn concurrent_samples<D: AgentData>(
    agent: &Agent<D, ()>,
    store: &dyn SessionStore,
    after_batch: &(dyn Fn() + Sync),
    sessions: usize,
    warmup: usize,
    samples: usize,
    per_sample: usize,
) -> Result<Vec<f64>, BoxError> {
    let next = AtomicU64::new(0);
    let mut out = Vec::with_capacity(samples);
    for s in 0..warmup + samples {
        let mut busy = Duration::ZERO;
        for _ in 0..per_sample.max(1) {
            busy += concurrent_batch(agent, &next, sessions).await?;
            after_batch();
            store.prune(u64::MAX).await?;
        }
        if s >= warmup {
            let turns = sessions * per_sample.max(1) * TURNS_PER_SESSION as usize;
            out.push(micros(busy) / turns as f64);
        }
    }
    Ok(out)
}

/// Row 3: turns per second on independent sessions, one worker per core, the instant
/// provider, the memory store (the 1-flow script).
fn throughput(sizes: &Sizes, cores: usize) -> Result<Throughput, BoxError> {
    let rt = multi_thread(cores)?;
    let store = Arc::new(MemoryStore::new());
    let agent = script::agent(script::Instant, store.clone(), 1, false)?;
    let samples = rt.block_on(concurrent_samples(
        &agent,
        store.as_ref(),
        &|| {},
        sizes.sessions,
        sizes.warmup,
        sizes.batches,
        sizes.batches_per_sample,
    ))?;
    Ok(Throughput {
        workers: cores,
        sessions: sizes.sessions,
        rate: Rate::from_us_per_turn(stats(samples)),
    })
}

/// Workers of the store benchmark (as `benches/stores.rs`).
const STORE_WORKERS: usize = 2;

/// Row 5: turns per second by store, as `benches/stores.rs`: the scripted provider,
/// the 1-flow script, independent sessions on a two-worker runtime.
fn store_throughput(sizes: &Sizes) -> Result<Vec<StoreRow>, BoxError> {
    let rt = multi_thread(STORE_WORKERS)?;
    let mut rows = Vec::new();
    let memory: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    rows.push(measure_store(&rt, sizes, "memory", memory)?);

    let db = TempDb::new()?;
    let sqlite: Arc<dyn SessionStore> = Arc::new(agent_core::store::SqliteStore::open(&db.0)?);
    rows.push(measure_store(&rt, sizes, "SQLite", sqlite)?);
    drop(db);

    match env_url("AGENT_TEST_POSTGRES_URL") {
        Some(url) => {
            let options = agent_core::store::postgres::PostgresOptions::default()
                .table(format!("agent_bench_{}", std::process::id()));
            let store = rt.block_on(agent_core::store::PostgresStore::connect_with(
                &url, options,
            ))?;
            rows.push(measure_store(&rt, sizes, "PostgreSQL", Arc::new(store))?);
        }
        None => rows.push(not_configured("PostgreSQL", "AGENT_TEST_POSTGRES_URL")),
    }
    match env_url("AGENT_TEST_REDIS_URL") {
        Some(url) => {
            let options = agent_core::store::redis::RedisOptions::default()
                .prefix(format!("agent-bench:{}:", std::process::id()));
            let store = rt.block_on(agent_core::store::RedisStore::connect_with(&url, options))?;
            rows.push(measure_store(&rt, sizes, "Redis", Arc::new(store))?);
        }
        None => rows.push(not_configured("Redis", "AGENT_TEST_REDIS_URL")),
    }
    Ok(rows)
}

fn env_url(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|u| !u.trim().is_empty())
}

fn not_configured(store: &'static str, var: &str) -> StoreRow {
    StoreRow {
        store,
        rate: None,
        note: Some(format!("not configured (set {var})")),
    }
}

fn measure_store(
    rt: &tokio::runtime::Runtime,
    sizes: &Sizes,
    name: &'static str,
    store: Arc<dyn SessionStore>,
) -> Result<StoreRow, BoxError> {
    let provider = script::scripted();
    let agent = script::agent(provider.clone(), store.clone(), 1, false)?;
    // Keep the provider's request log bounded (not timed).
    let clear = || provider.clear_requests();
    let samples = rt.block_on(concurrent_samples(
        &agent,
        store.as_ref(),
        &clear,
        sizes.sessions,
        1,
        sizes.store_samples,
        sizes.store_batches_per_sample,
    ))?;
    Ok(StoreRow {
        store: name,
        rate: Some(Rate::from_us_per_turn(stats(samples))),
        note: None,
    })
}

/// Row 6: the session lease's cost per turn on each store: sequential turns (the
/// scripted provider, the 1-flow script, a new session every 4 turns) on one thread,
/// batches with and without the lease alternating; and one acquire + release pair
/// timed alone.
fn lease_overhead(sizes: &Sizes) -> Result<Vec<LeaseRow>, BoxError> {
    // One thread; with I/O for the server stores.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    let memory: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    rows.push(measure_lease(&rt, sizes, "memory", memory)?);

    let db = TempDb::new()?;
    let sqlite: Arc<dyn SessionStore> = Arc::new(agent_core::store::SqliteStore::open(&db.0)?);
    rows.push(measure_lease(&rt, sizes, "SQLite", sqlite)?);
    drop(db);

    match env_url("AGENT_TEST_POSTGRES_URL") {
        Some(url) => {
            let options = agent_core::store::postgres::PostgresOptions::default()
                .table(format!("agent_bench_lease_{}", std::process::id()));
            let store = rt.block_on(agent_core::store::PostgresStore::connect_with(
                &url, options,
            ))?;
            rows.push(measure_lease(&rt, sizes, "PostgreSQL", Arc::new(store))?);
        }
        None => rows.push(lease_not_configured(
            "PostgreSQL",
            "AGENT_TEST_POSTGRES_URL",
        )),
    }
    match env_url("AGENT_TEST_REDIS_URL") {
        Some(url) => {
            let options = agent_core::store::redis::RedisOptions::default()
                .prefix(format!("agent-bench-lease:{}:", std::process::id()));
            let store = rt.block_on(agent_core::store::RedisStore::connect_with(&url, options))?;
            rows.push(measure_lease(&rt, sizes, "Redis", Arc::new(store))?);
        }
        None => rows.push(lease_not_configured("Redis", "AGENT_TEST_REDIS_URL")),
    }
    Ok(rows)
}

fn lease_not_configured(store: &'static str, var: &str) -> LeaseRow {
    LeaseRow {
        store,
        with_lease_us: None,
        without_lease_us: None,
        acquire_release_us: None,
        note: Some(format!("not configured (set {var})")),
    }
}

/// A store handle without lease support: the agent runs on the compare-and-swap alone.
struct WithoutLeases(Arc<dyn SessionStore>);

#[async_trait]
impl SessionStore for WithoutLeases {
    async fn load(
        &self,
        id: &str,
    ) -> Result<Option<agent_core::store::StoredSession>, agent_core::error::StoreError> {
        self.0.load(id).await
    }
    async fn save(
        &self,
        session: agent_core::store::StoredSession,
        expected: u64,
    ) -> Result<(), agent_core::error::StoreError> {
        self.0.save(session, expected).await
    }
    async fn delete(&self, id: &str) -> Result<bool, agent_core::error::StoreError> {
        self.0.delete(id).await
    }
    async fn list(
        &self,
    ) -> Result<Vec<agent_core::store::SessionInfo>, agent_core::error::StoreError> {
        self.0.list().await
    }
    async fn prune(&self, cutoff_ms: u64) -> Result<usize, agent_core::error::StoreError> {
        self.0.prune(cutoff_ms).await
    }
}

fn measure_lease(
    rt: &tokio::runtime::Runtime,
    sizes: &Sizes,
    name: &'static str,
    store: Arc<dyn SessionStore>,
) -> Result<LeaseRow, BoxError> {
    let provider = script::scripted();
    let leased = script::agent(provider.clone(), store.clone(), 1, false)?;
    let plain = script::agent(
        provider.clone(),
        Arc::new(WithoutLeases(store.clone())),
        1,
        false,
    )?;
    let turns = sizes.lease_turns_per_batch;
    rt.block_on(async {
        let (mut with, mut without, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        let mut next = 0u64;
        for b in 0..sizes.warmup + sizes.store_samples {
            let t_with = sequential_batch(&leased, &mut next, turns).await?;
            provider.clear_requests();
            store.prune(u64::MAX).await?;
            let t_without = sequential_batch(&plain, &mut next, turns).await?;
            provider.clear_requests();
            store.prune(u64::MAX).await?;
            let started = Instant::now();
            for i in 0..turns {
                let id = format!("lease-{i}");
                let ttl = Duration::from_secs(30);
                match store.try_acquire_lease(&id, "bench", ttl).await? {
                    agent_core::store::LeaseAttempt::Acquired(l) => {
                        black_box(store.release_lease(&l).await?);
                    }
                    agent_core::store::LeaseAttempt::Busy { holder, .. } => {
                        return Err(format!("{name}: lease `{id}` busy ({holder})").into());
                    }
                }
            }
            let t_pairs = started.elapsed();
            if b >= sizes.warmup {
                with.push(micros(t_with) / turns as f64);
                without.push(micros(t_without) / turns as f64);
                pairs.push(micros(t_pairs) / turns as f64);
            }
        }
        Ok(LeaseRow {
            store: name,
            with_lease_us: Some(stats(with)),
            without_lease_us: Some(stats(without)),
            acquire_release_us: Some(stats(pairs)),
            note: None,
        })
    })
}

/// A temporary SQLite file, removed with its WAL companions.
struct TempDb(std::path::PathBuf);

impl TempDb {
    fn new() -> Result<Self, BoxError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .subsec_nanos();
        let n = N.fetch_add(1, Ordering::Relaxed);
        Ok(Self(std::env::temp_dir().join(format!(
            "agent-bench-{}-{nanos}-{n}.db",
            std::process::id()
        ))))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Row 6: time from the provider's stream yielding its first chunk to the consumer of
/// `respond_stream` receiving the first text delta (the 1-flow script, one thread).
fn streaming(sizes: &Sizes) -> Result<Streaming, BoxError> {
    let rt = current_thread()?;
    let probe = Arc::new(Probe::default());
    let store = Arc::new(MemoryStore::new());
    let agent = script::agent(
        StreamingProvider {
            probe: probe.clone(),
        },
        store.clone(),
        1,
        false,
    )?;
    let per_batch = sizes
        .stream_turns_per_batch
        .next_multiple_of(TURNS_PER_SESSION as usize);
    rt.block_on(async {
        let mut samples = Vec::new();
        let mut turns = 0;
        let mut live_turns = 0;
        let mut next = 0u64;
        for b in 0..sizes.warmup + sizes.batches {
            for _ in 0..per_batch {
                let id = format!("s{}", next / TURNS_PER_SESSION);
                next += 1;
                probe.reset();
                let mut events = agent.respond_stream(&id, USER_MESSAGE);
                let mut first: Option<(Instant, bool)> = None;
                while let Some(event) = events.next().await {
                    match event {
                        Event::TextDelta(_) if first.is_none() => {
                            let now = Instant::now();
                            probe.delta_seen.store(true, Ordering::SeqCst);
                            first = Some((now, !probe.finished.load(Ordering::SeqCst)));
                        }
                        Event::Error(e) => return Err(BoxError::from(e)),
                        other => {
                            black_box(other);
                        }
                    }
                }
                if b < sizes.warmup {
                    continue;
                }
                turns += 1;
                if let (Some((at, true)), Some(chunk)) = (first, probe.first_chunk()) {
                    live_turns += 1;
                    samples.push(micros(at.saturating_duration_since(chunk)));
                } else {
                    tracing::debug!(
                        turn = (next - 1) % TURNS_PER_SESSION,
                        live = ?first.map(|f| f.1),
                        chunk = probe.first_chunk().is_some(),
                        "first delta not live"
                    );
                }
            }
            store.prune(u64::MAX).await?;
        }
        Ok(Streaming {
            first_delta_us: stats(samples),
            turns,
            live_turns,
        })
    })
}

// ---------------------------------------------------------------------------------
// Several processes sharing PostgreSQL
// ---------------------------------------------------------------------------------

/// The environment variable that makes this executable one process of the
/// multi-process measurement; its value is a [`ChildSpec`] as JSON.
const CHILD_ENV: &str = "AGENT_BENCH_CHILD";
/// OS processes of the multi-process measurement.
const PROCESSES: usize = 4;
/// Turns on one hot session before the processes move on to the next one, so its
/// history stays short (no summarization; the scripted provider has no answer for it).
const HOT_TURNS_PER_SESSION: u64 = 100;
/// Longest wait for the processes to connect and warm up.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for the measured turns: this plus [`RUN_TIMEOUT_PER_TURN`] per turn.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// See [`RUN_TIMEOUT`].
const RUN_TIMEOUT_PER_TURN: Duration = Duration::from_millis(50);
/// Longest wait for a process to exit after its result.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one process of the multi-process measurement does.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChildSpec {
    /// Its sessions.
    mode: SessionMode,
    /// Which process of the set (part of its session ids).
    index: usize,
    /// Which run (part of every session id).
    run: usize,
    /// Measured turns.
    turns: usize,
    /// Turns before saying it is ready, on sessions of its own.
    warmup_turns: usize,
    /// The PostgreSQL table.
    table: String,
}

/// What one process reports, on one line of its stdout after `result `.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChildResult {
    /// Turns done.
    turns: usize,
    /// When the first measured turn started, µs since the Unix epoch.
    start_us: u64,
    /// When the last measured turn ended, µs since the Unix epoch.
    end_us: u64,
    /// µs of each turn.
    turn_us: Vec<f64>,
}

fn epoch_us() -> Result<u64, BoxError> {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    Ok(u64::try_from(since.as_micros())?)
}

/// A process of the multi-process measurement: connect, warm up, say `ready`, wait
/// for `go` on stdin, take the turns, print `result {json}`.
fn child(spec: &std::ffi::OsStr) -> Result<(), BoxError> {
    use std::io::Write as _;
    let spec: ChildSpec = serde_json::from_str(
        spec.to_str()
            .ok_or_else(|| format!("{CHILD_ENV} is not UTF-8"))?,
    )
    .map_err(|e| format!("{CHILD_ENV}: {e}"))?;
    let url = env_url("AGENT_TEST_POSTGRES_URL").ok_or("AGENT_TEST_POSTGRES_URL is not set")?;
    // One thread, as the lease measurement; with I/O for the server.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let options = agent_core::store::postgres::PostgresOptions::default().table(spec.table.clone());
    let store = rt.block_on(agent_core::store::PostgresStore::connect_with(
        &url, options,
    ))?;
    let provider = script::scripted();
    let agent = script::agent(provider.clone(), Arc::new(store), 1, false)?;
    rt.block_on(async {
        for i in 0..spec.warmup_turns as u64 {
            let id = format!(
                "warm-r{}-p{}-s{}",
                spec.run,
                spec.index,
                i / TURNS_PER_SESSION
            );
            black_box(agent.respond(&id, USER_MESSAGE).await?);
            provider.clear_requests();
        }
        Ok::<_, AgentError>(())
    })?;

    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if line.trim() != "go" {
        return Err("the benchmark did not say `go` (did it stop?)".into());
    }

    let mut turn_us = Vec::with_capacity(spec.turns);
    let start_us = epoch_us()?;
    rt.block_on(async {
        let mut hot = 0u64;
        for i in 0..spec.turns as u64 {
            let id = match spec.mode {
                SessionMode::Distinct => {
                    format!("r{}-p{}-s{}", spec.run, spec.index, i / TURNS_PER_SESSION)
                }
                SessionMode::Hot => format!("r{}-hot{hot}", spec.run),
            };
            let started = Instant::now();
            let r = agent.respond(&id, USER_MESSAGE).await?;
            turn_us.push(micros(started.elapsed()));
            // Every process moves on once it sees the hot session full.
            if r.version >= HOT_TURNS_PER_SESSION {
                hot += 1;
            }
            black_box(r);
            provider.clear_requests();
        }
        Ok::<_, AgentError>(())
    })?;
    let end_us = epoch_us()?;
    let result = ChildResult {
        turns: turn_us.len(),
        start_us,
        end_us,
        turn_us,
    };
    writeln!(out, "result {}", serde_json::to_string(&result)?)?;
    out.flush()?;
    Ok(())
}

/// The processes of one run; those still running when it is dropped are killed (by
/// their handles) and every one is waited for.
#[derive(Default)]
struct ProcessSet(Vec<std::process::Child>);

impl ProcessSet {
    fn end(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

impl Drop for ProcessSet {
    fn drop(&mut self) {
        self.end();
    }
}

/// A line from a process, or the end of its stdout.
enum FromChild {
    Line(usize, String),
    Closed(usize),
}

/// One run of the process set: all results, in process order.
fn run_processes(
    template: &ChildSpec,
    exe: &std::path::Path,
) -> Result<Vec<ChildResult>, BoxError> {
    use std::io::{BufRead as _, Read as _, Write as _};
    use std::process::{Command, Stdio};
    let (tx, rx) = std::sync::mpsc::channel();
    let mut set = ProcessSet::default();
    let mut stdins = Vec::new();
    let mut stderrs = Vec::new();
    for index in 0..PROCESSES {
        let spec = ChildSpec {
            index,
            ..template.clone()
        };
        let mut child = Command::new(exe)
            .env(CHILD_ENV, serde_json::to_string(&spec)?)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting process {index} ({}): {e}", exe.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            set.0.push(child);
            return Err("a process has no stdin, stdout or stderr pipe".into());
        };
        set.0.push(child);
        stdins.push(stdin);
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(FromChild::Line(index, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(FromChild::Closed(index));
        });
        stderrs.push(std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::BufReader::new(stderr).read_to_string(&mut text);
            text
        }));
    }
    drop(tx);

    let run_timeout = RUN_TIMEOUT + RUN_TIMEOUT_PER_TURN * (template.turns * PROCESSES) as u32;
    let outcome = (|| -> Result<Vec<ChildResult>, BoxError> {
        // The next line, or which processes are late.
        let recv = |deadline: Instant,
                    limit: Duration,
                    waiting: &[bool],
                    what: &str|
         -> Result<FromChild, BoxError> {
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .map_err(|e| match e {
                    std::sync::mpsc::RecvTimeoutError::Timeout => {
                        let late: Vec<String> = (0..PROCESSES)
                            .filter(|&i| waiting.get(i).copied().unwrap_or(false))
                            .map(|i| i.to_string())
                            .collect();
                        format!(
                            "timed out: process(es) {} not {what} after {} s",
                            late.join(", "),
                            limit.as_secs()
                        )
                        .into()
                    }
                    std::sync::mpsc::RecvTimeoutError::Disconnected => {
                        BoxError::from("every process closed its stdout")
                    }
                })
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut waiting = [true; PROCESSES];
        while waiting.contains(&true) {
            match recv(deadline, READY_TIMEOUT, &waiting, "ready")? {
                FromChild::Line(i, l) if l == "ready" => {
                    if let Some(w) = waiting.get_mut(i) {
                        *w = false;
                    }
                }
                FromChild::Line(i, l) => {
                    return Err(format!("process {i} said `{l}` instead of `ready`").into());
                }
                FromChild::Closed(i) => {
                    return Err(format!("process {i} ended before it was ready").into());
                }
            }
        }
        for mut stdin in stdins.drain(..) {
            writeln!(stdin, "go")?;
            stdin.flush()?;
        }
        let deadline = Instant::now() + run_timeout;
        let mut results: Vec<Option<ChildResult>> = (0..PROCESSES).map(|_| None).collect();
        while results.iter().any(Option::is_none) {
            let waiting = results.iter().map(Option::is_none).collect::<Vec<_>>();
            match recv(deadline, run_timeout, &waiting, "done with their turns")? {
                FromChild::Line(i, l) => {
                    let json = l
                        .strip_prefix("result ")
                        .ok_or_else(|| format!("process {i} said `{l}` instead of its result"))?;
                    let r: ChildResult = serde_json::from_str(json)
                        .map_err(|e| format!("process {i}'s result: {e}"))?;
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(r);
                    }
                }
                FromChild::Closed(i) => {
                    if results.get(i).is_some_and(Option::is_none) {
                        return Err(format!("process {i} ended without a result").into());
                    }
                }
            }
        }
        // Each must exit by itself, and cleanly.
        let deadline = Instant::now() + EXIT_TIMEOUT;
        for (i, c) in set.0.iter_mut().enumerate() {
            loop {
                if let Some(status) = c.try_wait()? {
                    if !status.success() {
                        return Err(format!("process {i} exited with {status}").into());
                    }
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(format!("process {i} did not exit after its result").into());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(results.into_iter().flatten().collect())
    })();
    // Closing their stdin makes processes still waiting for `go` stop by themselves.
    drop(stdins);
    if outcome.is_err() {
        set.end();
    }
    let said: Vec<String> = stderrs
        .into_iter()
        .enumerate()
        .filter_map(|(i, h)| {
            let text = h.join().unwrap_or_default();
            let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
            Some(format!("process {i}: {}", last.trim()))
        })
        .collect();
    outcome.map_err(|e| {
        if said.is_empty() {
            e
        } else {
            format!("{e} ({})", said.join("; ")).into()
        }
    })
}

/// The multi-process rows: 4 processes sharing PostgreSQL, on distinct sessions, then
/// on one hot session. Failures become the rows' notes.
fn processes(sizes: &Sizes) -> Vec<ProcessesRow> {
    let modes = [SessionMode::Distinct, SessionMode::Hot];
    let row = |mode: SessionMode, note: String| ProcessesRow {
        store: "PostgreSQL",
        sessions: mode,
        processes: PROCESSES,
        turns_per_process: sizes.process_turns,
        rate: None,
        turn_us: None,
        slowest_turn_us: None,
        first_done_share: None,
        note: Some(note),
    };
    let Some(url) = env_url("AGENT_TEST_POSTGRES_URL") else {
        return modes
            .map(|m| row(m, "not configured (set AGENT_TEST_POSTGRES_URL)".into()))
            .into();
    };
    // The children are this executable in their role: only the bench example has
    // that role (a test binary that includes this file would run its tests again).
    let is_bench = std::env::current_exe().ok().is_some_and(|exe| {
        exe.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("bench"))
    });
    if !is_bench {
        return modes
            .map(|m| row(m, "not measured here (run the bench example)".into()))
            .into();
    }
    let setup = || -> Result<_, BoxError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let table = format!("agent_bench_procs_{}", std::process::id());
        let options = agent_core::store::postgres::PostgresOptions::default().table(table);
        // Creates the table before the processes start.
        let store = rt.block_on(agent_core::store::PostgresStore::connect_with(
            &url, options,
        ))?;
        Ok((rt, store, std::env::current_exe()?))
    };
    let (rt, store, exe) = match setup() {
        Ok(s) => s,
        Err(e) => return modes.map(|m| row(m, format!("failed: {e}"))).into(),
    };

    let mut run = 0;
    let mut measure = |mode: SessionMode| -> Result<ProcessesRow, BoxError> {
        let (mut per_turn, mut all_turns, mut first_done) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..sizes.process_samples.max(1) {
            let spec = ChildSpec {
                mode,
                index: 0,
                run,
                turns: sizes.process_turns,
                warmup_turns: sizes.process_warmup_turns,
                table: store.table().to_owned(),
            };
            run += 1;
            let results = run_processes(&spec, &exe);
            // Empty the table whatever happened (not timed).
            let pruned = rt.block_on(store.prune(u64::MAX));
            let results = results?;
            pruned?;
            let start = results.iter().map(|r| r.start_us).min().unwrap_or(0);
            let end = results.iter().map(|r| r.end_us).max().unwrap_or(0);
            let first_end = results.iter().map(|r| r.end_us).min().unwrap_or(0);
            let turns: usize = results.iter().map(|r| r.turns).sum();
            let wall = end.saturating_sub(start) as f64;
            per_turn.push(wall / turns.max(1) as f64);
            first_done.push(first_end.saturating_sub(start) as f64 / wall.max(1.0));
            all_turns.extend(results.into_iter().flat_map(|r| r.turn_us));
        }
        Ok(ProcessesRow {
            store: "PostgreSQL",
            sessions: mode,
            processes: PROCESSES,
            turns_per_process: sizes.process_turns,
            rate: Some(Rate::from_us_per_turn(stats(per_turn))),
            slowest_turn_us: all_turns.iter().copied().max_by(f64::total_cmp),
            turn_us: Some(stats(all_turns)),
            first_done_share: Some(stats(first_done).median),
            note: None,
        })
    };
    modes
        .map(|m| measure(m).unwrap_or_else(|e| row(m, format!("failed: {e}"))))
        .into()
}

// ---------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------

/// Labels of the table's rows, in order (the store rows carry the store's name).
pub const ROW_LABELS: [&str; 12] = [
    "framework time per turn, 1 flow",
    "framework time per turn, 2 flows",
    "framework time per turn, 2 flows + 1 signal",
    "model calls per turn, booking, one field per turn",
    "model calls, booking, all data in one message",
    "turns/s on independent sessions",
    "bytes per idle session",
    "store throughput, memory",
    "store throughput, SQLite",
    "store throughput, PostgreSQL",
    "store throughput, Redis",
    "streaming first-delta latency",
];

fn status(met: bool) -> &'static str {
    if met { "met" } else { "**not met**" }
}

/// `1234567` → `1,234,567`.
fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// `TS ÷ ours` as "N× faster" (or "N× slower" below 1).
fn speedup(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a".into()
    } else if ratio >= 1.0 {
        format!("{ratio:.1}× faster")
    } else {
        format!("{:.1}× slower", 1.0 / ratio)
    }
}

fn us(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2} µs")
    } else {
        format!("{v:.1} µs")
    }
}

impl Report {
    /// The report as JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The Markdown table, with the machine line above and the footnotes below.
    pub fn to_markdown(&self) -> String {
        let mut rows: Vec<[String; 6]> = Vec::new();
        let dash = || "—".to_owned();

        for (t, label) in self.turn_time.iter().zip(&ROW_LABELS[..3]) {
            let s = t.us_per_turn;
            rows.push([
                format!("{label} ¹"),
                format!("{} (p90 {})", us(s.median), us(s.p90)),
                format!("{:.0} µs", t.ts_reference_us),
                speedup(t.ts_reference_us / s.median),
                format!("< {BUDGET_TURN_US:.0} µs"),
                status(s.median < BUDGET_TURN_US).into(),
            ]);
        }

        let mc = &self.model_calls;
        let mean = mc.one_field_mean();
        let total: u32 = mc.one_field_per_turn.iter().sum();
        rows.push([
            format!("{} ²", ROW_LABELS[3]),
            format!(
                "{mean:.1} ({total} calls in {} turns)",
                mc.one_field_per_turn.len()
            ),
            "2–5".into(),
            format!("{:.0}–{:.0}× fewer", 2.0 / mean, 5.0 / mean),
            "1".into(),
            status(mc.one_field_per_turn.iter().all(|&c| c == 1)).into(),
        ]);
        let landed = mc.all_in_one_step.as_deref() == Some("confirm");
        rows.push([
            format!("{} ²", ROW_LABELS[4]),
            if landed {
                format!(
                    "{} calls in {} turn",
                    mc.all_in_one_calls, mc.all_in_one_turns
                )
            } else {
                format!(
                    "{} calls, stopped at {:?} instead of confirm",
                    mc.all_in_one_calls, mc.all_in_one_step
                )
            },
            "4 turns, 2–5 calls each".into(),
            "4× fewer turns".into(),
            "≤ 2 calls, 1 turn".into(),
            status(landed && mc.all_in_one_calls <= 2).into(),
        ]);

        let tp = &self.throughput;
        let budget = BUDGET_TURNS_PER_S_PER_CORE * tp.workers as f64;
        rows.push([
            format!(
                "{}, {} cores, {} sessions in flight ³",
                ROW_LABELS[5], tp.workers, tp.sessions
            ),
            format!(
                "{} (p90 {})",
                thousands(tp.rate.median_turns_per_s),
                thousands(tp.rate.p90_turns_per_s)
            ),
            dash(),
            dash(),
            if tp.workers == 2 {
                "≥ 200,000 on 2 cores".to_owned()
            } else {
                format!("≥ {} (200,000 on 2 cores)", thousands(budget))
            },
            status(tp.rate.median_turns_per_s >= budget).into(),
        ]);

        let idle = &self.idle_session;
        rows.push([
            format!("{} ⁴", ROW_LABELS[6]),
            format!(
                "{} B + {} B history text ({} B stored)",
                thousands(idle.without_history_bytes as f64),
                thousands(idle.history_text_bytes as f64),
                thousands(idle.stored_bytes as f64)
            ),
            dash(),
            dash(),
            format!("< {} B + history", thousands(BUDGET_IDLE_BYTES as f64)),
            status(idle.without_history_bytes < BUDGET_IDLE_BYTES).into(),
        ]);

        for s in &self.stores {
            rows.push([
                format!("store throughput, {} ⁵", s.store),
                match (&s.rate, &s.note) {
                    (Some(r), _) => format!(
                        "{} turns/s (p90 {})",
                        thousands(r.median_turns_per_s),
                        thousands(r.p90_turns_per_s)
                    ),
                    (None, Some(note)) => note.clone(),
                    (None, None) => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        for l in &self.lease {
            rows.push([
                format!("session lease per turn, {} ⁷", l.store),
                match (
                    l.overhead_us(),
                    l.with_lease_us,
                    l.without_lease_us,
                    &l.note,
                ) {
                    (Some(o), Some(w), Some(wo), _) => format!(
                        "{}{} ({} with, {} without; acquire + release alone {})",
                        if o >= 0.0 { "+" } else { "" },
                        us(o),
                        us(w.median),
                        us(wo.median),
                        l.acquire_release_us
                            .map_or_else(|| "n/a".into(), |p| us(p.median)),
                    ),
                    (_, _, _, Some(note)) => note.clone(),
                    _ => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        for p in &self.processes {
            rows.push([
                format!(
                    "turns/s, {} processes sharing {}, {} ⁸",
                    p.processes,
                    p.store,
                    p.sessions.label()
                ),
                match (&p.rate, &p.turn_us, &p.note) {
                    (Some(r), Some(t), _) => {
                        let mut cell = format!(
                            "{} (p90 {}); per turn {} (p90 {}, slowest {})",
                            thousands(r.median_turns_per_s),
                            thousands(r.p90_turns_per_s),
                            us(t.median),
                            us(t.p90),
                            p.slowest_turn_us.map_or_else(|| "n/a".into(), us),
                        );
                        if let Some(share) = p.first_done_share {
                            let _ = write!(cell, "; first process done at {:.0} %", share * 100.0);
                        }
                        cell
                    }
                    (_, _, Some(note)) => note.clone(),
                    _ => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        let st = &self.streaming;
        let live = st.live_turns == st.turns && st.turns > 0;
        rows.push([
            format!("{} ⁶", ROW_LABELS[11]),
            if st.live_turns == 0 {
                "no delta arrived before the model finished".into()
            } else {
                let mut r = format!(
                    "{} (p90 {})",
                    us(st.first_delta_us.median),
                    us(st.first_delta_us.p90)
                );
                if !live {
                    let _ = write!(r, ", live in {} of {} turns", st.live_turns, st.turns);
                }
                r
            },
            dash(),
            dash(),
            format!("< {BUDGET_FIRST_DELTA_US:.0} µs added"),
            status(live && st.first_delta_us.median < BUDGET_FIRST_DELTA_US).into(),
        ]);

        let m = &self.machine;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Machine: {} cores{}; build: {}; mode: {} ({} measured batches per timing after {} warm-up).\n",
            m.cores,
            m.cpu
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            m.profile,
            m.mode,
            self.sizes.batches,
            self.sizes.warmup,
        );
        let header = [
            "measurement",
            "result (median)",
            "TypeScript (quoted, DESIGN.md §10)",
            "ratio",
            "budget",
            "status",
        ];
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for r in &rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        let sz = &self.sizes;
        let _ = write!(
            out,
            "\n¹ Median (and 90th percentile) over {batches} batches of {turns} turns on a current-thread runtime, memory store, \
the scripts of `agent-core/benches/turn.rs`: the user keeps not answering and the model re-asks, a new session every 4 turns. \
The provider answers every call from a constant string, so what is timed is the engine (routing, walk, prompt assembly, \
parsing, merging, saving); its own cost, timed alone, is {provider:.0} ns per call and is not subtracted. \
The turns of a batch run inside one `block_on` (the harness is not timed); the store is emptied between batches, untimed. \
The TypeScript column is quoted from DESIGN.md §10 (the public TypeScript implementation with an instant scripted provider), not measured here.\n\
² Counted from `AgentResponse::model_calls` with the scripted provider on the booking flow of `agent-core/tests/booking.rs` \
(one field per turn: greeting, city, date, guests; per turn: {per_turn:?}).\n\
³ {sessions} sessions of 4 turns in flight at once on a multi-thread runtime with one worker per core, memory store, \
the 1-flow script; median of {batches} samples of {per_sample} such batch(es); budget 100,000 turns/s per core.\n\
⁴ The encoded session in the store after the {idle_turns}-turn booking conversation of ², idle on the confirm step; \
history text is the message text it keeps (the budget excludes it).\n\
⁵ As `agent-core/benches/stores.rs`: the scripted provider, the 1-flow script, {sessions} independent sessions \
of 4 turns at a time on {store_workers} runtime workers; median of {store_samples} samples of {store_per_sample} batch(es); SQLite on a temp file.\n\
⁶ From the provider's stream yielding its first chunk (ending inside the reply's text) to the consumer of `respond_stream` \
receiving the first text delta, timestamps taken in the provider's stream and at the consumer; median of {stream_samples} turns \
of the 1-flow script on one thread.\n\
⁷ What the session lease (take, renew timer, fenced save, release) adds to a turn: median µs per turn of {lease_turns} sequential \
turns on one thread (the scripted provider, the 1-flow script, a new session every 4 turns) with the lease minus the same \
without it (a store handle without lease support), batches alternating, {store_samples} samples; and one acquire + release \
pair on the store alone.\n\
⁸ {processes} OS processes (copies of this executable), each with its own agent, one thread and its own connections to one \
PostgreSQL table, the scripted provider and the 1-flow script; each takes {process_turns} sequential turns after {process_warmup} \
warm-up turns and a start signal. Distinct sessions: each process on its own (a new one every 4 turns). One hot session: all \
on the same session, whose lease lets one turn run at a time (a waiting turn polls, 2 ms doubling to 100 ms); they move together \
to a new one every {hot} turns, keeping its history short. Turns/s: all turns over the wall time from the first turn's start to \
the last one's end, median (and slow p90) of {process_samples} run(s); per turn: each turn's time as its process saw it, \
waiting for the lease included; first process done: when the first process had finished, as a share of that wall time.\n",
            batches = sz.batches,
            turns = sz.turns_per_batch,
            provider = self.provider_ns_per_call,
            per_turn = mc.one_field_per_turn,
            sessions = sz.sessions,
            per_sample = sz.batches_per_sample,
            idle_turns = idle.turns,
            store_workers = STORE_WORKERS,
            store_samples = sz.store_samples,
            store_per_sample = sz.store_batches_per_sample,
            stream_samples = st.first_delta_us.samples,
            lease_turns = sz.lease_turns_per_batch,
            processes = PROCESSES,
            process_turns = sz.process_turns,
            process_warmup = sz.process_warmup_turns,
            hot = HOT_TURNS_PER_SESSION,
            process_samples = sz.process_samples,
        );
        out
    }
}
