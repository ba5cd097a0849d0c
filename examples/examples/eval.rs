//! The eval: the example agents' suites (`examples/evals/*.toml`) on a real model, with
//! pass^1, pass^k, calls, tokens and the cacheable prefix per suite.
//!
//! `cargo run --release -p examples --example eval -- [options]`
//!
//! The model comes from the environment like every example's (`examples::model`); with
//! nothing set it is the local default model (`scripts/local-llm.sh`), and
//! `LOCAL_MODEL=gemma-3-270m` picks the small one. Options:
//!
//! - `--suite NAME` (repeatable): `concierge`, `triage`, `clinic`; default: all three;
//! - `--suite PATH` (a `.toml` file of your own, repeatable): run it against one of the
//!   example agents, named by `--agent NAME` (or by the file's name when it is one of
//!   them: `my/concierge.toml`);
//! - `--scenario TEXT`: only scenarios whose name contains `TEXT` (any case);
//! - `--quick`: the development subset (tag `quick`, one greedy run each, a few minutes);
//! - `--smoke`: the CI subset (tag `smoke`, one greedy run each);
//! - `--tag TAG`: only scenarios with this tag;
//! - `--k N`: runs at temperature 0.7 per scenario for pass^k (default 3; 0 with
//!   `--quick`/`--smoke`);
//! - `--no-greedy`: skip the temperature-0 run (pass^k only, when pass^1 is already
//!   measured: a quarter less time with `--k 3`);
//! - `--concurrency N` (default 1: a local server with one slot gains nothing);
//! - `--turn-timeout SECS` (default 180);
//! - `--out DIR`: where `report.json` and `report.md` go (default `target/eval`);
//! - `--check`: load and check the suite files against the agents, run nothing.
//!
//! Exit status: 0 when every run finished (pass or fail: quality is a figure, not a
//! gate), 1 when a run hit an engine fault (a panic, a hang, an engine error on a usable
//! answer, a broken protocol), 2 for bad options or suite files, 3 when no model is
//! reachable.

#[allow(dead_code)]
#[path = "clinic.rs"]
mod clinic;
#[allow(dead_code)]
#[path = "concierge.rs"]
mod concierge;
#[allow(dead_code)]
#[path = "triage.rs"]
mod triage;

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agent_core::AgentConfig;
use agent_core::eval::{EvalReport, RunOptions, Runner, Setup, Suite, SuiteReport};
use agent_core::provider::Provider;
use agent_core::testing::ScriptedProvider;
use futures::FutureExt;

/// The suites, by name: the file and how to run it.
pub const SUITES: [&str; 3] = ["concierge", "triage", "clinic"];

/// Where the suite files live.
pub fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("evals")
}

/// One suite file to run, and the example agent it is run against.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteArg {
    /// The agent: one of [`SUITES`].
    pub agent: String,
    /// The suite file.
    pub path: PathBuf,
}

impl SuiteArg {
    /// An example's own suite (`examples/evals/NAME.toml`).
    pub fn named(name: &str) -> Self {
        Self {
            agent: name.to_owned(),
            path: suite_dir().join(format!("{name}.toml")),
        }
    }
}

/// Parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Suites to run.
    pub suites: Vec<SuiteArg>,
    /// Only scenarios with this tag.
    pub tag: Option<String>,
    /// Only scenarios whose name contains this text.
    pub scenario: Option<String>,
    /// Runs at temperature 0.7 per scenario.
    pub k: u32,
    /// Whether to run each scenario once at temperature 0 too.
    pub greedy: bool,
    /// Concurrent runs.
    pub concurrency: usize,
    /// Turn deadline.
    pub turn_timeout: Duration,
    /// Report folder.
    pub out: PathBuf,
    /// Only check the files.
    pub check: bool,
}

/// Read the options (`args` without the program name).
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        suites: Vec::new(),
        tag: None,
        scenario: None,
        k: 3,
        greedy: true,
        concurrency: 1,
        turn_timeout: Duration::from_secs(180),
        out: Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/eval"),
        check: false,
    };
    let mut k_given = false;
    // Suite files given by path, and the agent named for them.
    let mut files: Vec<PathBuf> = Vec::new();
    let mut agent: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--suite" => {
                let s = value("--suite")?;
                if SUITES.contains(&s.as_str()) {
                    o.suites.push(SuiteArg::named(&s));
                } else if s.ends_with(".toml") || s.contains(std::path::MAIN_SEPARATOR) {
                    files.push(PathBuf::from(s));
                } else {
                    return Err(format!(
                        "unknown suite `{s}`; suites: {}, or the path of a .toml suite file",
                        SUITES.join(", ")
                    ));
                }
            }
            "--agent" => {
                let a = value("--agent")?;
                if !SUITES.contains(&a.as_str()) {
                    return Err(format!(
                        "unknown agent `{a}`; agents: {}",
                        SUITES.join(", ")
                    ));
                }
                agent = Some(a);
            }
            "--scenario" => o.scenario = Some(value("--scenario")?),
            "--quick" => o.tag = Some("quick".into()),
            "--smoke" => o.tag = Some("smoke".into()),
            "--tag" => o.tag = Some(value("--tag")?),
            "--k" => {
                let v = value("--k")?;
                o.k = v
                    .parse()
                    .map_err(|_| format!("--k takes a number, got {v:?}"))?;
                k_given = true;
            }
            "--no-greedy" => o.greedy = false,
            "--concurrency" => {
                let v = value("--concurrency")?;
                o.concurrency =
                    v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        format!("--concurrency takes a number above 0, got {v:?}")
                    })?;
            }
            "--turn-timeout" => {
                let v = value("--turn-timeout")?;
                let secs: u64 = v
                    .parse()
                    .map_err(|_| format!("--turn-timeout takes seconds, got {v:?}"))?;
                o.turn_timeout = Duration::from_secs(secs);
            }
            "--out" => o.out = PathBuf::from(value("--out")?),
            "--check" => o.check = true,
            "-h" | "--help" => return Err(HELP.to_owned()),
            other => return Err(format!("unknown option `{other}`\n{HELP}")),
        }
    }
    if matches!(o.tag.as_deref(), Some("quick" | "smoke")) && !k_given {
        o.k = 0;
    }
    if !o.greedy && o.k == 0 {
        return Err("--no-greedy leaves nothing to run with --k 0".to_owned());
    }
    for path in files {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let agent = match &agent {
            Some(a) => a.clone(),
            None if SUITES.contains(&stem) => stem.to_owned(),
            None => {
                return Err(format!(
                    "which agent does {} test? name it with --agent {}",
                    path.display(),
                    SUITES.join("|")
                ));
            }
        };
        o.suites.push(SuiteArg { agent, path });
    }
    if o.suites.is_empty() {
        o.suites = SUITES.iter().map(|s| SuiteArg::named(s)).collect();
    }
    Ok(o)
}

const HELP: &str = "usage: eval [--suite concierge|triage|clinic|PATH.toml]... [--agent concierge|triage|clinic] \
                    [--quick|--smoke|--tag TAG] [--scenario TEXT] [--k N] [--no-greedy] [--concurrency N] \
                    [--turn-timeout SECS] [--out DIR] [--check]";

/// The concierge as the eval builds it for one run.
fn concierge_agent(
    config: AgentConfig,
) -> impl Fn(
    Setup<concierge::Concierge>,
) -> Result<
    agent_core::Agent<concierge::Booking, concierge::Concierge>,
    agent_core::error::ConfigErrors,
> + Send
+ Sync
+ 'static {
    move |setup| setup.apply(concierge::builder(config.clone())?).build()
}

/// The clinic as the eval builds it for one run.
fn clinic_agent(
    config: AgentConfig,
) -> impl Fn(Setup<()>) -> Result<agent_core::Agent<clinic::Visit, ()>, agent_core::error::ConfigErrors>
+ Send
+ Sync
+ 'static {
    move |setup| setup.apply(clinic::builder(config.clone())?).build()
}

/// The help desk as the eval builds it for one run.
fn triage_agent(
    config: AgentConfig,
) -> impl Fn(Setup<()>) -> Result<agent_core::Agent<triage::Case, ()>, agent_core::error::ConfigErrors>
+ Send
+ Sync
+ 'static {
    move |setup| {
        setup
            .apply(triage::builder()?.config(config.clone()))
            .build()
    }
}

/// Load one suite file, checked against the example agent it tests.
pub fn load(suite: &SuiteArg, config: &AgentConfig) -> Result<Suite, Box<dyn Error>> {
    // The file is checked against the agent, which needs no model to be built.
    let offline: Arc<dyn Provider> = Arc::new(ScriptedProvider::new());
    let path = &suite.path;
    Ok(match suite.agent.as_str() {
        "concierge" => Runner::new(offline, concierge_agent(config.clone())).load(path)?,
        "clinic" => Runner::new(offline, clinic_agent(config.clone())).load(path)?,
        _ => Runner::new(offline, triage_agent(config.clone())).load(path)?,
    })
}

async fn run_suite(
    agent: &str,
    suite: &Suite,
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    options: RunOptions,
) -> SuiteReport {
    match agent {
        "concierge" => {
            Runner::new(provider, concierge_agent(config))
                .options(options)
                .run(suite)
                .await
        }
        "clinic" => {
            Runner::new(provider, clinic_agent(config))
                .options(options)
                .run(suite)
                .await
        }
        _ => {
            Runner::new(provider, triage_agent(config))
                .on_start(|agent, session| {
                    async move { triage::start(&agent, &session).await }.boxed()
                })
                .options(options)
                .run(suite)
                .await
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // Suites are checked before any model starts: a typo costs nothing.
    let mut suites = Vec::new();
    for arg in &o.suites {
        match load(arg, &AgentConfig::default()) {
            Ok(mut s) => {
                if let Some(tag) = &o.tag {
                    s = s.only(tag);
                }
                if let Some(text) = &o.scenario {
                    s = s.named_like(text);
                }
                eprintln!(
                    "[eval] {} ({}): {} scenarios",
                    s.name,
                    arg.agent,
                    s.scenarios.len()
                );
                suites.push((arg.agent.clone(), s));
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        }
    }
    if o.check {
        let files: Vec<String> = o
            .suites
            .iter()
            .map(|s| s.path.display().to_string())
            .collect();
        println!("suite files are valid: {}", files.join(", "));
        return ExitCode::SUCCESS;
    }
    let model = match examples::model::real_only() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("no model to evaluate: {e}");
            return ExitCode::from(3);
        }
    };
    println!("{}", model.description());
    let options = RunOptions {
        k: o.k,
        greedy: o.greedy,
        concurrency: o.concurrency,
        turn_timeout: o.turn_timeout,
        ..RunOptions::default()
    };
    let mut report = EvalReport { suites: Vec::new() };
    for (name, suite) in &suites {
        let r = run_suite(
            name,
            suite,
            model.provider(),
            model.config(),
            options.clone(),
        )
        .await;
        report.suites.push(r);
    }
    println!("\n{}", report.table());
    if let Err(e) = write_reports(&o.out, &report) {
        eprintln!("could not write the reports to {}: {e}", o.out.display());
    } else {
        println!("reports: {0}/report.json, {0}/report.md", o.out.display());
    }
    let faults = report.faults();
    if faults > 0 {
        eprintln!("{faults} run(s) hit an engine fault (see above)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn write_reports(dir: &Path, report: &EvalReport) -> Result<(), Box<dyn Error>> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.json"), serde_json::to_vec_pretty(report)?)?;
    std::fs::write(dir.join("report.md"), report.markdown())?;
    Ok(())
}
