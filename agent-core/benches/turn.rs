//! Framework time per turn with an instant provider, for three scripts (1 flow;
//! 2 flows; 2 flows + 1 signal), and the stored size of an idle session.
//!
//! `cargo bench -p agent-core`. The provider answers from constants, so what is
//! measured is the engine: routing, walk, prompt assembly, parsing, merging, saving.

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

mod script;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::Agent;
use agent_core::error::ConfigErrors;
use agent_core::store::{MemoryStore, SessionStore};
use criterion::{Criterion, criterion_group};
use script::{Booking, Instant, MESSAGE};

fn unreachable_config<T>(e: ConfigErrors) -> T {
    eprintln!("{e}");
    std::process::exit(1)
}

fn agent(flows: usize, signal: bool) -> Agent<Booking, ()> {
    agent_on(Instant::default(), flows, signal)
}

fn agent_on(model: Instant, flows: usize, signal: bool) -> Agent<Booking, ()> {
    script::agent(model, Arc::new(MemoryStore::new()), flows, signal)
        .unwrap_or_else(unreachable_config)
}

const TURNS: u64 = 4;

fn bench_turns(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
    let mut group = c.benchmark_group("turn");
    for (name, flows, signal) in [
        ("1_flow", 1, false),
        ("2_flows", 2, false),
        ("2_flows_1_signal", 2, true),
    ] {
        let a = agent(flows, signal);
        // The turns of a sample run inside one `block_on`, so what is timed is the
        // engine, not the harness; a new session every TURNS turns keeps history short.
        let n = AtomicU64::new(0);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut id = String::new();
                    let start = std::time::Instant::now();
                    for _ in 0..iters {
                        let i = n.fetch_add(1, Ordering::Relaxed);
                        if i.is_multiple_of(TURNS) || id.is_empty() {
                            id = format!("s{}", i / TURNS);
                        }
                        black_box(a.respond(&id, MESSAGE).await.ok());
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

fn report_idle_session_size() {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return,
    };
    rt.block_on(async {
        let store = Arc::new(MemoryStore::new());
        let a = script::agent(Instant::default(), store.clone(), 1, false).unwrap_or_else(unreachable_config);
        for _ in 0..TURNS {
            let _ = a.respond("idle", MESSAGE).await;
        }
        if let Ok(Some(stored)) = store.load("idle").await
            && let Ok(Some(s)) = a.session("idle").await
        {
            let history: usize = s.history.iter().map(|m| m.content.len()).sum();
            println!(
                "idle session after {TURNS} turns: {} bytes stored, {} bytes of history text, {} bytes without history",
                stored.bytes.len(),
                history,
                stored.bytes.len().saturating_sub(history)
            );
        }
    });
}

criterion_group!(benches, bench_turns);

/// `TURN_PROFILE=N` (and `TURN_PROFILE_SCRIPT=1|2|3`, `TURN_PROFILE_MODEL=small` for a
/// model profiled as small): run N turns of a script and exit, for instruction counting
/// under callgrind, which needs a fixed amount of work.
fn profile_run(n: u64) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    let script = std::env::var("TURN_PROFILE_SCRIPT").unwrap_or_default();
    let model = || match std::env::var("TURN_PROFILE_MODEL").as_deref() {
        Ok("small") => Instant::small(),
        _ => Instant::default(),
    };
    let a = match script.as_str() {
        "2" => agent_on(model(), 2, false),
        "3" => agent_on(model(), 2, true),
        _ => agent_on(model(), 1, false),
    };
    rt.block_on(async {
        for i in 0..n {
            let id = format!("s{}", i / TURNS);
            black_box(a.respond(&id, MESSAGE).await.ok());
        }
    });
}

fn main() {
    if let Some(n) = std::env::var("TURN_PROFILE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        profile_run(n);
        return;
    }
    report_idle_session_size();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
