//! Running every measurement ([`run`]), and the in-memory timings: framework time per
//! turn, the instant provider's own cost and turns per second on independent sessions
//! (rows 1 and 3), with the runtimes and turn batches the other measurements share.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest};

use super::conversation::booking_conversation;
use super::options::{Options, Sizes};
use super::processes::processes;
use super::report::{Machine, Rate, Report, Throughput, TurnTime};
use super::stats::{micros, stats};
use super::stores::{lease_overhead, store_throughput};
use super::streaming::streaming;
use super::targets::TS_REFERENCE_US;
use super::{BoxError, TURNS_PER_SESSION, USER_MESSAGE, script};

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
pub(crate) fn current_thread() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?)
}

pub(crate) fn multi_thread(workers: usize) -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()?)
}

/// Sequential turns of the timing script inside the caller's `block_on`, a new session
/// every 4 turns; only the turns are timed.
pub(crate) async fn sequential_batch<D: AgentData>(
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
        let agent = script::agent(script::Instant::default(), store.clone(), flows, signal)?;
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
    let p = script::Instant::default();
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..sizes.provider_calls {
            black_box(p.generate(black_box(&req)).await?);
        }
        Ok(start.elapsed().as_secs_f64() * 1e9 / sizes.provider_calls.max(1) as f64)
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
pub(crate) async fn concurrent_samples<D: AgentData>(
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
    let agent = script::agent(script::Instant::default(), store.clone(), 1, false)?;
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
