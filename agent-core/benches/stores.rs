//! Turns per second with each session store: the same agent (one booking flow, the
//! scripted provider answering instantly) over the memory store and each durable
//! store compiled in, on independent sessions (64 at a time, 4 turns each) on a
//! two-worker tokio runtime.
//!
//! ```text
//! cargo bench -p agent-core --bench stores --features sqlite,postgres,redis
//! ```
//!
//! PostgreSQL and Redis are measured when `AGENT_TEST_POSTGRES_URL` /
//! `AGENT_TEST_REDIS_URL` are set (`eval "$(bash scripts/services.sh start)"`). It
//! prints a table first (`STORES_SECONDS` per store, default 3), then runs the
//! criterion benchmarks (throughput in turns: `thrpt` is turns per second);
//! `STORES_TABLE_ONLY=1` stops after the table.

#![allow(missing_docs)] // criterion's macros generate undocumented items

mod script;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_core::prelude::*;
use agent_core::store::{MemoryStore, SessionStore};
use agent_core::testing::ScriptedProvider;
use criterion::{Criterion, Throughput};
use script::Booking;

/// Sessions in flight at once.
const CONCURRENT: usize = 64;
/// Turns per session (then a fresh session).
const TURNS_PER_SESSION: usize = 4;
/// Turns per measured batch.
const BATCH: usize = CONCURRENT * TURNS_PER_SESSION;

fn fail<T>(what: &str, e: impl std::fmt::Display) -> T {
    eprintln!("stores bench: {what}: {e}");
    std::process::exit(1)
}

struct Bench {
    name: &'static str,
    store: Arc<dyn SessionStore>,
    agent: Agent<Booking, ()>,
    provider: ScriptedProvider,
    next_session: AtomicU64,
}

impl Bench {
    fn new(name: &'static str, store: Arc<dyn SessionStore>) -> Self {
        let provider = script::scripted();
        let agent = script::agent(provider.clone(), store.clone(), 1, false)
            .unwrap_or_else(|e| fail("agent", e));
        Self {
            name,
            store,
            agent,
            provider,
            next_session: AtomicU64::new(0),
        }
    }

    /// One batch: `CONCURRENT` new sessions, `TURNS_PER_SESSION` turns each, all at once.
    async fn batch(&self) -> Duration {
        let first = self
            .next_session
            .fetch_add(CONCURRENT as u64, Ordering::Relaxed);
        let started = Instant::now();
        let tasks: Vec<_> = (0..CONCURRENT as u64)
            .map(|i| {
                let agent = self.agent.clone();
                tokio::spawn(async move {
                    let id = format!("bench-{}", first + i);
                    for _ in 0..TURNS_PER_SESSION {
                        if let Err(e) = agent.respond(&id, script::MESSAGE).await {
                            fail::<()>("turn", e);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            if let Err(e) = t.await {
                fail::<()>("task", e);
            }
        }
        let elapsed = started.elapsed();
        // Keep memory and tables bounded (not measured).
        self.provider.clear_requests();
        if let Err(e) = self.store.prune(u64::MAX).await {
            fail::<()>("prune", e);
        }
        elapsed
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail("runtime", e))
}

/// Removes the SQLite file and its WAL companions.
#[cfg(feature = "sqlite")]
struct TempDb(std::path::PathBuf);

#[cfg(feature = "sqlite")]
impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

type Guards = Vec<Box<dyn std::any::Any>>;

fn stores(rt: &tokio::runtime::Runtime, guards: &mut Guards) -> Vec<Bench> {
    let memory = Some(Bench::new("memory", Arc::new(MemoryStore::new())));
    [memory, sqlite(guards), postgres(rt), redis(rt)]
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(feature = "sqlite")]
fn sqlite(guards: &mut Guards) -> Option<Bench> {
    let path = std::env::temp_dir().join(format!("agent-bench-{}.db", std::process::id()));
    let store = agent_core::store::SqliteStore::open(&path).unwrap_or_else(|e| fail("sqlite", e));
    guards.push(Box::new(TempDb(path)));
    Some(Bench::new("sqlite", Arc::new(store)))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite(_: &mut Guards) -> Option<Bench> {
    println!("sqlite: skipped (feature `sqlite` is off)");
    None
}

#[cfg(feature = "postgres")]
fn postgres(rt: &tokio::runtime::Runtime) -> Option<Bench> {
    let Some(url) = std::env::var("AGENT_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("postgres: skipped (AGENT_TEST_POSTGRES_URL is not set)");
        return None;
    };
    let options = agent_core::store::postgres::PostgresOptions::default()
        .table(format!("agent_bench_{}", std::process::id()));
    let store = rt
        .block_on(agent_core::store::PostgresStore::connect_with(
            &url, options,
        ))
        .unwrap_or_else(|e| fail("postgres", e));
    Some(Bench::new("postgres", Arc::new(store)))
}

#[cfg(not(feature = "postgres"))]
fn postgres(_: &tokio::runtime::Runtime) -> Option<Bench> {
    println!("postgres: skipped (feature `postgres` is off)");
    None
}

#[cfg(feature = "redis")]
fn redis(rt: &tokio::runtime::Runtime) -> Option<Bench> {
    let Some(url) = std::env::var("AGENT_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("redis: skipped (AGENT_TEST_REDIS_URL is not set)");
        return None;
    };
    let options = agent_core::store::redis::RedisOptions::default()
        .prefix(format!("agent-bench:{}:", std::process::id()));
    let store = rt
        .block_on(agent_core::store::RedisStore::connect_with(&url, options))
        .unwrap_or_else(|e| fail("redis", e));
    Some(Bench::new("redis", Arc::new(store)))
}

#[cfg(not(feature = "redis"))]
fn redis(_: &tokio::runtime::Runtime) -> Option<Bench> {
    println!("redis: skipped (feature `redis` is off)");
    None
}

fn table(rt: &tokio::runtime::Runtime, benches: &[Bench]) {
    let seconds: u64 = std::env::var("STORES_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    println!(
        "turns per second by store: scripted provider, 1 flow, {CONCURRENT} independent sessions at a time x {TURNS_PER_SESSION} turns, 2 runtime workers, {seconds} s each"
    );
    println!("{:<10} {:>12} {:>12}", "store", "turns/s", "us/turn");
    for b in benches {
        rt.block_on(async {
            b.batch().await; // warm up
            let mut turns = 0usize;
            let mut busy = Duration::ZERO;
            while busy < Duration::from_secs(seconds) {
                busy += b.batch().await;
                turns += BATCH;
            }
            let per_s = turns as f64 / busy.as_secs_f64();
            println!(
                "{:<10} {:>12.0} {:>12.1}",
                b.name,
                per_s,
                1e6 / per_s.max(f64::MIN_POSITIVE)
            );
        });
    }
}

fn main() {
    let rt = runtime();
    let mut guards = Guards::new();
    let benches = stores(&rt, &mut guards);
    table(&rt, &benches);
    if std::env::var("STORES_TABLE_ONLY").is_ok_and(|v| v == "1") {
        return;
    }
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = c.benchmark_group("store_turns");
    group.throughput(Throughput::Elements(BATCH as u64));
    for b in &benches {
        group.bench_function(b.name, |bencher| {
            bencher.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += b.batch().await;
                    }
                    total
                })
            })
        });
    }
    group.finish();
    c.final_summary();
}
