//! Store throughput by store and what the session lease adds to a turn (rows 5 and 7):
//! memory and SQLite always, PostgreSQL and Redis when `AGENT_TEST_POSTGRES_URL` /
//! `AGENT_TEST_REDIS_URL` are set.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_core::prelude::*;
use async_trait::async_trait;

use super::measure::{concurrent_samples, multi_thread, sequential_batch};
use super::options::Sizes;
use super::report::{LeaseRow, Rate, StoreRow};
use super::stats::{micros, stats};
use super::{BoxError, script};

/// Workers of the store benchmark (as `benches/stores.rs`).
pub(crate) const STORE_WORKERS: usize = 2;

/// Row 5: turns per second by store, as `benches/stores.rs`: the scripted provider,
/// the 1-flow script, independent sessions on a two-worker runtime.
pub(crate) fn store_throughput(sizes: &Sizes) -> Result<Vec<StoreRow>, BoxError> {
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

pub(crate) fn env_url(var: &str) -> Option<String> {
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
pub(crate) fn lease_overhead(sizes: &Sizes) -> Result<Vec<LeaseRow>, BoxError> {
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
