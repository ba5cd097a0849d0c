//! What a run found, per run, scenario and suite; as a terminal table, Markdown and
//! JSON (serde).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use serde_json::{Map, Value};

use super::options::RunOptions;
use super::recorder::CallStats;
use super::scenario::Scenario;
use super::score::{ReplyScore, median_p90};

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every expectation of the run held.
    Passed,
    /// An expectation did not hold, or the model's answer was unusable: a quality
    /// figure.
    Failed,
    /// The model server failed (unreachable, overloaded, past the deadline): the run
    /// says nothing about the agent.
    Errored,
    /// Our side failed: a panic, a hang, an engine error on a usable answer, a broken
    /// protocol. CI fails on these.
    Fault,
}

/// Why a run did not pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The turn (0-based), `None` for the end checks or the whole run.
    pub turn: Option<usize>,
    /// Whether it came from the end checks.
    #[serde(default)]
    pub end: bool,
    /// What was wrong, in words (the expectation and what was observed).
    pub reason: String,
}

impl Failure {
    pub(crate) fn turn(n: usize, reason: String) -> Self {
        Self {
            turn: Some(n),
            end: false,
            reason,
        }
    }
    pub(crate) fn end(reason: String) -> Self {
        Self {
            turn: None,
            end: true,
            reason,
        }
    }
    pub(crate) fn run(reason: String) -> Self {
        Self {
            turn: None,
            end: false,
            reason,
        }
    }
    fn at(&self) -> String {
        match (self.turn, self.end) {
            (Some(n), _) => format!("turn {}", n + 1),
            (None, true) => "end".to_owned(),
            (None, false) => "run".to_owned(),
        }
    }
}

/// One turn of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnStats {
    /// What the user said.
    pub user: String,
    /// What the agent replied (empty when the turn failed).
    pub reply: String,
    /// The step after the turn.
    pub step: Option<String>,
    /// Wall time of the turn.
    pub latency_ms: f64,
    /// How many model calls the turn made.
    pub calls: usize,
    /// Prompt tokens of those calls.
    pub prompt_tokens: u64,
    /// Tokens the model generated in those calls.
    pub completion_tokens: u64,
    /// The turn's error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stored data after the turn (JSON of the agent's data type).
    #[serde(default)]
    pub data: Map<String, Value>,
    /// Whether the turn waited for a value (it stopped for input at a step that
    /// collects a field still unset).
    #[serde(default)]
    pub waits: bool,
    /// What the reply scored (`None` when the turn failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<ReplyScore>,
    /// The fields whose values the turn stored from what the model read
    /// (`set_value` and `correct_value` commands, confirmed values included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<String>,
    /// The values shown back to the user for a yes after the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tentative: Vec<crate::response::TentativeValue>,
    /// The commands the turn handled, as their directive sources name them
    /// (`set_value city`, `start_flow billing`, `cancel_flow`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Why the turn stopped, as suite files name it (`needs_input`, `flow_cancelled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The flow after the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
}

impl TurnStats {
    pub(crate) fn new(user: &str, latency: Duration, calls: &[CallStats]) -> Self {
        Self {
            user: user.to_owned(),
            reply: String::new(),
            step: None,
            latency_ms: latency.as_secs_f64() * 1000.0,
            calls: calls.len(),
            prompt_tokens: calls.iter().map(|c| c.prompt_tokens).sum(),
            completion_tokens: calls.iter().map(|c| c.completion_tokens).sum(),
            error: None,
            data: Map::new(),
            waits: false,
            score: None,
            stored: Vec::new(),
            tentative: Vec::new(),
            commands: Vec::new(),
            stopped: None,
            flow: None,
        }
    }
}

/// One run of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Sampling temperature of the run.
    pub temperature: f32,
    /// Seed of the run (`None`: the greedy run).
    pub seed: Option<u64>,
    /// Which phrasing of the turns the run said (0: each turn's first).
    #[serde(default)]
    pub variant: usize,
    /// How the run ended: passed, failed or errored.
    pub outcome: Outcome,
    /// Why it did not pass.
    pub failures: Vec<Failure>,
    /// Figures of each turn of the run, in order.
    pub turns: Vec<TurnStats>,
    /// Figures of each model call of the run, in order.
    pub calls: Vec<CallStats>,
    /// Fields the run stored that the scenario names in no `data` or `present`
    /// expectation (`field = value (turn n)`): values nobody was expected to give.
    #[serde(default)]
    pub unexpected: Vec<String>,
    /// `reply_not` expectations that failed.
    #[serde(default)]
    pub reply_not_failed: usize,
    /// `data` expectations that failed (a value missed or wrong).
    #[serde(default)]
    pub values_missed: usize,
}

impl RunReport {
    pub(crate) fn new(temperature: f32, seed: Option<u64>) -> Self {
        Self {
            temperature,
            seed,
            variant: 0,
            outcome: Outcome::Failed,
            failures: Vec::new(),
            turns: Vec::new(),
            calls: Vec::new(),
            unexpected: Vec::new(),
            reply_not_failed: 0,
            values_missed: 0,
        }
    }
    pub(crate) fn fault(mut self, turn: Option<usize>, reason: String) -> Self {
        self.outcome = Outcome::Fault;
        self.failures.push(match turn {
            Some(n) => Failure::turn(n, reason),
            None => Failure::run(reason),
        });
        self
    }
    fn label(&self) -> String {
        let run = match self.seed {
            None => "t=0".to_owned(),
            Some(s) => format!("t={} seed {s}", self.temperature),
        };
        if self.variant > 0 {
            format!("{run}, phrasing {}", self.variant + 1)
        } else {
            run
        }
    }
}

/// Every run of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// The scenario's name, as the suite file gives it.
    pub name: String,
    /// The scenario's tags.
    pub tags: Vec<String>,
    /// Whether the greedy (temperature 0) run passed; `None` when not run.
    pub pass_1: Option<bool>,
    /// Whether all k runs passed; `None` when k is 0.
    pub pass_k: Option<bool>,
    /// The runs: the greedy run first, then by seed.
    pub runs: Vec<RunReport>,
}

impl ScenarioReport {
    pub(crate) fn new(s: &Scenario) -> Self {
        Self {
            name: s.name.clone(),
            tags: s.tags.clone(),
            pass_1: None,
            pass_k: None,
            runs: Vec::new(),
        }
    }
    pub(crate) fn settle(&mut self, greedy: bool, k: u32) {
        let passed = |r: &RunReport| r.outcome == Outcome::Passed;
        if greedy {
            self.pass_1 = Some(self.runs.iter().filter(|r| r.seed.is_none()).all(passed));
        }
        if k > 0 {
            self.pass_k = Some(self.runs.iter().filter(|r| r.seed.is_some()).all(passed));
        }
    }
}

/// Figures of one suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many scenarios the suite ran.
    pub scenarios: usize,
    /// Share of scenarios whose greedy runs (one per phrasing) all passed (errored runs
    /// count as not passed).
    pub pass_1: Option<f64>,
    /// Share of scenarios whose k runs all passed (tau-bench's pass^k).
    pub pass_k: Option<f64>,
    /// How many runs ended each way (`passed`, `failed`, `errored`).
    pub runs: BTreeMap<String, usize>,
    /// How many turns the runs made in all.
    pub turns: usize,
    /// Model calls per turn.
    pub calls_per_turn: f64,
    /// Prompt tokens per turn.
    pub prompt_tokens_per_turn: f64,
    /// Generated tokens per turn.
    pub completion_tokens_per_turn: f64,
    /// Mean wall time per turn.
    pub latency_ms_per_turn: f64,
    /// Wall time of the slowest turn.
    pub latency_ms_max: f64,
    /// Over every call after a run's first: bytes of the request body equal to the
    /// previous call's body from the start, over the body's length.
    pub cacheable_prefix: f64,
    /// The same, per call kind.
    pub cacheable_prefix_by_kind: BTreeMap<String, f64>,
    /// Over every call: prompt tokens the provider read from its prompt cache, over all
    /// prompt tokens (what the cache saved in fact; a run's first call counts too, since
    /// sessions share the static prefix). `None` when the provider reports no cache use.
    #[serde(default)]
    pub cached_prompt_share: Option<f64>,
    /// What the replies scored.
    #[serde(default)]
    pub replies: ReplyFigures,
}

/// What the replies of a suite scored (see [`ReplyScore`] for each rule).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReplyFigures {
    /// Replies scored (turns that succeeded).
    pub replies: usize,
    /// Median words per reply.
    pub words_median: f64,
    /// 90th percentile of words per reply.
    pub words_p90: f64,
    /// Sentences repeated within a reply, over all replies.
    pub repeated: usize,
    /// Sentences repeated from the previous reply, over all replies.
    pub echoed: usize,
    /// Replies that leaked instruction text or a field identifier.
    pub leaked: usize,
    /// Turns waiting for a value.
    pub waiting: usize,
    /// Of those, replies that asked no question.
    pub unasked: usize,
    /// Replies naming a value the state does not hold.
    pub contradicting: usize,
    /// Replies claiming an outcome without its tool.
    pub claiming: usize,
    /// Hand-written `reply_not` expectations that failed.
    pub reply_not_failed: usize,
    /// Hand-written `data` expectations that failed.
    pub values_missed: usize,
    /// Values stored that the scenarios name nowhere (per run and field).
    pub unexpected_stored: usize,
    /// Values stored from what the model read, over all turns.
    #[serde(default)]
    pub values_stored: usize,
    /// Values shown back for a yes instead, over all turns.
    #[serde(default)]
    pub values_tentative: usize,
    /// Turns run over runs that passed (a passed run is a task done): how many turns
    /// a done task costs, counting the turns of runs that did not get there. `None`
    /// when no run passed.
    #[serde(default)]
    pub turns_per_task: Option<f64>,
}

impl ReplyFigures {
    /// Share of the values read that were shown back for a yes rather than stored.
    pub fn tentative_share(&self) -> Option<f64> {
        let all = self.values_stored + self.values_tentative;
        (all > 0).then(|| self.values_tentative as f64 / all as f64)
    }
}

/// Everything one suite run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// The suite's name.
    pub suite: String,
    /// Provider name (vendor and model).
    pub model: String,
    /// How many runs per scenario pass^k counts (k).
    pub k: u32,
    /// Temperature of the k runs.
    pub temperature: f32,
    /// Wall time of the suite.
    pub elapsed_s: f64,
    /// The suite's aggregate figures (pass rates, calls, tokens, latency).
    pub summary: Summary,
    /// The report of each scenario, in suite order.
    pub scenarios: Vec<ScenarioReport>,
}

impl SuiteReport {
    /// The plain-text table of this suite alone, with its failing runs
    /// ([`EvalReport::table`]).
    pub fn table(&self) -> String {
        EvalReport {
            suites: vec![self.clone()],
        }
        .table()
    }

    pub(crate) fn new(
        suite: &str,
        model: &str,
        o: &RunOptions,
        scenarios: Vec<ScenarioReport>,
        elapsed: Duration,
    ) -> Self {
        let summary = summarize(&scenarios);
        Self {
            suite: suite.to_owned(),
            model: model.to_owned(),
            k: o.k,
            temperature: o.temperature,
            elapsed_s: elapsed.as_secs_f64(),
            summary,
            scenarios,
        }
    }

    /// Runs that ended in a fault (CI fails on these).
    pub fn faults(&self) -> usize {
        self.runs().filter(|r| r.outcome == Outcome::Fault).count()
    }

    fn runs(&self) -> impl Iterator<Item = &RunReport> {
        self.scenarios.iter().flat_map(|s| s.runs.iter())
    }

    /// Every run that did not pass, one line each, with its reasons.
    pub fn failure_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.scenarios {
            for r in s.runs.iter().filter(|r| r.outcome != Outcome::Passed) {
                let reasons: Vec<String> = r
                    .failures
                    .iter()
                    .map(|f| format!("{}: {}", f.at(), f.reason))
                    .collect();
                out.push(format!(
                    "{} [{}] {:?}: {}",
                    s.name,
                    r.label(),
                    r.outcome,
                    reasons.join("; ")
                ));
            }
        }
        out
    }
}

fn summarize(scenarios: &[ScenarioReport]) -> Summary {
    let share = |f: &dyn Fn(&ScenarioReport) -> Option<bool>| {
        let v: Vec<bool> = scenarios.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| v.iter().filter(|b| **b).count() as f64 / v.len() as f64)
    };
    let runs: Vec<&RunReport> = scenarios.iter().flat_map(|s| s.runs.iter()).collect();
    let mut by_outcome = BTreeMap::new();
    for r in &runs {
        let key = serde_json::to_value(r.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        *by_outcome.entry(key).or_insert(0) += 1;
    }
    let turns: Vec<&TurnStats> = runs.iter().flat_map(|r| r.turns.iter()).collect();
    let n = turns.len().max(1) as f64;
    let per_turn = |f: &dyn Fn(&TurnStats) -> f64| turns.iter().map(|t| f(t)).sum::<f64>() / n;
    let mut prefix = (0usize, 0usize);
    let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in runs
        .iter()
        .flat_map(|r| r.calls.iter())
        .filter(|c| !c.first)
    {
        prefix.0 += c.prefix_bytes;
        prefix.1 += c.body_bytes;
        let kind = serde_json::to_value(c.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let e = by_kind.entry(kind).or_default();
        e.0 += c.prefix_bytes;
        e.1 += c.body_bytes;
    }
    let ratio = |(a, b): (usize, usize)| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let calls = || runs.iter().flat_map(|r| r.calls.iter());
    let cached: u64 = calls().map(|c| c.cached_tokens).sum();
    let prompt: u64 = calls().map(|c| c.prompt_tokens).sum();
    Summary {
        scenarios: scenarios.len(),
        pass_1: share(&|s| s.pass_1),
        pass_k: share(&|s| s.pass_k),
        runs: by_outcome,
        turns: turns.len(),
        calls_per_turn: per_turn(&|t| t.calls as f64),
        prompt_tokens_per_turn: per_turn(&|t| t.prompt_tokens as f64),
        completion_tokens_per_turn: per_turn(&|t| t.completion_tokens as f64),
        latency_ms_per_turn: per_turn(&|t| t.latency_ms),
        latency_ms_max: turns.iter().map(|t| t.latency_ms).fold(0.0, f64::max),
        cacheable_prefix: ratio(prefix),
        cacheable_prefix_by_kind: by_kind.into_iter().map(|(k, v)| (k, ratio(v))).collect(),
        cached_prompt_share: (cached > 0 && prompt > 0).then(|| cached as f64 / prompt as f64),
        replies: reply_figures(&runs),
    }
}

fn reply_figures(runs: &[&RunReport]) -> ReplyFigures {
    let scores: Vec<&ReplyScore> = runs
        .iter()
        .flat_map(|r| r.turns.iter())
        .filter_map(|t| t.score.as_ref())
        .collect();
    let turns = || runs.iter().flat_map(|r| r.turns.iter());
    let mut words: Vec<usize> = scores.iter().map(|s| s.words).collect();
    let (words_median, words_p90) = median_p90(&mut words);
    let waiting = runs
        .iter()
        .flat_map(|r| r.turns.iter())
        .filter(|t| t.score.is_some() && t.waits)
        .count();
    ReplyFigures {
        replies: scores.len(),
        words_median,
        words_p90,
        repeated: scores.iter().map(|s| s.repeated).sum(),
        echoed: scores.iter().map(|s| s.echoed).sum(),
        leaked: scores.iter().filter(|s| !s.leaked.is_empty()).count(),
        waiting,
        unasked: scores.iter().filter(|s| s.unasked).count(),
        contradicting: scores
            .iter()
            .filter(|s| !s.contradictions.is_empty())
            .count(),
        claiming: scores.iter().filter(|s| !s.claims.is_empty()).count(),
        reply_not_failed: runs.iter().map(|r| r.reply_not_failed).sum(),
        values_missed: runs.iter().map(|r| r.values_missed).sum(),
        unexpected_stored: runs.iter().map(|r| r.unexpected.len()).sum(),
        values_stored: turns().map(|t| t.stored.len()).sum(),
        values_tentative: turns().map(|t| t.tentative.len()).sum(),
        turns_per_task: {
            let passed = runs.iter().filter(|r| r.outcome == Outcome::Passed).count();
            (passed > 0).then(|| turns().count() as f64 / passed as f64)
        },
    }
}

/// Columns padded to their widest cell.
fn text_table<const N: usize>(columns: &[&str; N], rows: &[[String; N]]) -> String {
    let mut width = columns.map(str::len);
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (c, w) in cells.iter().zip(width) {
            let _ = write!(l, "{c:<w$}  ");
        }
        l.trim_end().to_owned() + "\n"
    };
    let mut out = line(&columns.map(str::to_owned));
    for r in rows {
        out += &line(r);
    }
    out
}

/// Several suites on one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The report of each suite run.
    pub suites: Vec<SuiteReport>,
}

const COLUMNS: [&str; 11] = [
    "suite",
    "scenarios",
    "pass^1",
    "pass^k",
    "runs ok/failed/errored/fault",
    "calls/turn",
    "prompt tok/turn",
    "output tok/turn",
    "s/turn",
    "cacheable prefix",
    "cached prompt",
];

const REPLY_COLUMNS: [&str; 13] = [
    "suite",
    "replies",
    "words median/p90",
    "repeated",
    "echoed",
    "leaked",
    "unasked/waiting",
    "contradicting",
    "claiming",
    "reply_not/values missed",
    "unexpected stored",
    "tentative/stored values",
    "turns per task",
];

impl EvalReport {
    fn reply_rows(&self) -> Vec<[String; 13]> {
        self.suites
            .iter()
            .map(|s| {
                let r = &s.summary.replies;
                [
                    s.suite.clone(),
                    r.replies.to_string(),
                    format!("{:.0}/{:.0}", r.words_median, r.words_p90),
                    r.repeated.to_string(),
                    r.echoed.to_string(),
                    r.leaked.to_string(),
                    format!("{}/{}", r.unasked, r.waiting),
                    r.contradicting.to_string(),
                    r.claiming.to_string(),
                    format!("{}/{}", r.reply_not_failed, r.values_missed),
                    r.unexpected_stored.to_string(),
                    format!(
                        "{}/{}{}",
                        r.values_tentative,
                        r.values_stored,
                        r.tentative_share()
                            .map_or(String::new(), |v| format!(" ({:.0} %)", v * 100.0))
                    ),
                    r.turns_per_task
                        .map_or("-".to_owned(), |v| format!("{v:.2}")),
                ]
            })
            .collect()
    }

    /// Runs that ended in a fault, over all suites.
    pub fn faults(&self) -> usize {
        self.suites.iter().map(SuiteReport::faults).sum()
    }

    fn rows(&self) -> Vec<[String; 11]> {
        self.suites
            .iter()
            .map(|s| {
                let m = &s.summary;
                let pct =
                    |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.0} %", v * 100.0));
                let count = |k: &str| m.runs.get(k).copied().unwrap_or(0);
                [
                    s.suite.clone(),
                    m.scenarios.to_string(),
                    pct(m.pass_1),
                    if s.k > 0 {
                        format!("{} (k={})", pct(m.pass_k), s.k)
                    } else {
                        "-".to_owned()
                    },
                    format!(
                        "{}/{}/{}/{}",
                        count("passed"),
                        count("failed"),
                        count("errored"),
                        count("fault")
                    ),
                    format!("{:.2}", m.calls_per_turn),
                    format!("{:.0}", m.prompt_tokens_per_turn),
                    format!("{:.0}", m.completion_tokens_per_turn),
                    format!("{:.1}", m.latency_ms_per_turn / 1000.0),
                    pct(Some(m.cacheable_prefix)),
                    pct(m.cached_prompt_share),
                ]
            })
            .collect()
    }

    /// A plain-text table with the failing runs below it.
    pub fn table(&self) -> String {
        let mut out = String::new();
        if let Some(s) = self.suites.first() {
            let _ = writeln!(out, "model: {}", s.model);
        }
        out += &text_table(&COLUMNS, &self.rows());
        out.push('\n');
        out += &text_table(&REPLY_COLUMNS, &self.reply_rows());
        for s in &self.suites {
            let fails = s.failure_lines();
            if !fails.is_empty() {
                let _ = writeln!(out, "\n{}: runs that did not pass", s.suite);
                for f in fails {
                    let _ = writeln!(out, "  - {f}");
                }
            }
        }
        out
    }

    /// A Markdown report: the table, the call kinds' cacheable prefix, the failures.
    pub fn markdown(&self) -> String {
        let mut out = String::from("# Eval report\n\n");
        if let Some(s) = self.suites.first() {
            let _ = writeln!(
                out,
                "Model: `{}`. pass^1: the run at temperature 0; pass^k: all of k runs at temperature {} (seeds 1..k).\n",
                s.model, s.temperature
            );
        }
        let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(COLUMNS.len()));
        for r in self.rows() {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        let _ = writeln!(out, "\nWhat the replies scored:\n");
        let _ = writeln!(out, "| {} |", REPLY_COLUMNS.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(REPLY_COLUMNS.len()));
        for r in self.reply_rows() {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        for s in &self.suites {
            let _ = writeln!(out, "\n## {}\n", s.suite);
            let kinds: Vec<String> = s
                .summary
                .cacheable_prefix_by_kind
                .iter()
                .map(|(k, v)| format!("{k} {:.0} %", v * 100.0))
                .collect();
            let _ = writeln!(
                out,
                "Cacheable prefix by call kind: {}. Mean turn {:.1} s, slowest {:.1} s; suite took {:.0} s.\n",
                if kinds.is_empty() {
                    "-".to_owned()
                } else {
                    kinds.join(", ")
                },
                s.summary.latency_ms_per_turn / 1000.0,
                s.summary.latency_ms_max / 1000.0,
                s.elapsed_s
            );
            let _ = writeln!(out, "| scenario | pass^1 | pass^k |\n|---|---|---|");
            for sc in &s.scenarios {
                let mark = |v: Option<bool>| match v {
                    Some(true) => "pass",
                    Some(false) => "FAIL",
                    None => "-",
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    sc.name,
                    mark(sc.pass_1),
                    mark(sc.pass_k)
                );
            }
            let fails = s.failure_lines();
            if !fails.is_empty() {
                let _ = writeln!(out, "\nRuns that did not pass:\n");
                for f in fails {
                    let _ = writeln!(out, "- {}", f.replace('|', "\\|"));
                }
            }
        }
        out
    }
}
