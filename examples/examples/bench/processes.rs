//! Turns per second of 4 OS processes sharing PostgreSQL (row 8), on distinct sessions
//! and on one hot session: the example runs copies of its own executable, each in the
//! child role selected by `AGENT_BENCH_CHILD`, and gathers their results. One file: the
//! parent and the child speak one line protocol (`ready`, `go`, `result {json}`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::prelude::*;
use serde::{Deserialize, Serialize};

use super::options::Sizes;
use super::report::{ProcessesRow, Rate, SessionMode};
use super::stats::{micros, stats};
use super::stores::env_url;
use super::{BoxError, TURNS_PER_SESSION, USER_MESSAGE, script};

/// multi-process measurement; its value is a [`ChildSpec`] as JSON.
pub(crate) const CHILD_ENV: &str = "AGENT_BENCH_CHILD";
/// OS processes of the multi-process measurement.
pub(crate) const PROCESSES: usize = 4;
/// Turns on one hot session before the processes move on to the next one, so its
/// history stays short (no summarization; the scripted provider has no answer for it).
pub(crate) const HOT_TURNS_PER_SESSION: u64 = 100;
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
pub(crate) fn child(spec: &std::ffi::OsStr) -> Result<(), BoxError> {
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
pub(crate) fn processes(sizes: &Sizes) -> Vec<ProcessesRow> {
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
