//! Running suites: k runs per scenario, bounded concurrency, deadlines, a breaker for
//! a model server that went away, and a progress line.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;

use super::Suite;
use super::file::{Catalog, SuiteError};
use super::options::RunOptions;
use super::recorder::Recorder;
use super::report::{Failure, Outcome, RunReport, ScenarioReport, SuiteReport, TurnStats};
use super::scenario::{Expect, Observed, Scenario, same};
use super::score::{self, Outcomes, ReplyScore, TurnFacts};
use crate::agent::{Agent, AgentBuilder};
use crate::clock::ManualClock;
use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, ConfigErrors, ProviderError};
use crate::provider::Provider;
use crate::response::StoppedReason;
use serde_json::{Map, Value};

/// What the agent factory gets for one run: the provider to use (the one under
/// evaluation, wrapped to record calls and set temperature and seed), the scenario's
/// fixed clock and its context.
pub struct Setup<C> {
    /// The provider for this run.
    pub provider: Arc<dyn Provider>,
    /// The scenario's fixed clock, if it sets one.
    pub clock: Option<ManualClock>,
    /// The scenario's context, if it sets one.
    pub context: Option<C>,
}

impl<C: AgentContext> Setup<C> {
    /// Put the provider, clock and context on an agent definition.
    pub fn apply<D: AgentData>(self, builder: AgentBuilder<D, C>) -> AgentBuilder<D, C> {
        let mut b = builder.provider_arc(self.provider);
        if let Some(clock) = self.clock {
            b = b.clock(clock);
        }
        if let Some(context) = self.context {
            b = b.context(context);
        }
        b
    }
}

type Factory<D, C> = Arc<dyn Fn(Setup<C>) -> Result<Agent<D, C>, ConfigErrors> + Send + Sync>;
type Start<D, C> =
    Arc<dyn Fn(Agent<D, C>, String) -> BoxFuture<'static, Result<(), AgentError>> + Send + Sync>;

/// Runs eval suites against one provider: builds a fresh agent for every run from your
/// builder function, plays the scenario's turns and scores them into a
/// [`SuiteReport`](super::SuiteReport).
pub struct Runner<D, C> {
    provider: Arc<dyn Provider>,
    factory: Factory<D, C>,
    start: Option<Start<D, C>>,
    options: RunOptions,
}

/// Why an eval cannot start: the agent does not build, or the suite file is wrong.
/// Nothing has run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The agent's definition has errors.
    #[error("the agent does not build: {0}")]
    Agent(#[from] ConfigErrors),
    /// The suite file cannot run: every problem, each with its line.
    #[error(transparent)]
    Suite(#[from] SuiteError),
}

impl<D: AgentData, C: AgentContext> Runner<D, C> {
    /// Evaluate `provider` on the agent `agent` defines: `agent` returns its builder as
    /// the application makes it, and is called for every run (a fresh agent each time);
    /// the runner puts the provider, the scenario's clock and its context on it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_core::eval::{RunOptions, Runner};
    /// use agent_core::prelude::*;
    /// use agent_core::testing::{Answer, ScriptedProvider};
    ///
    /// #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Booking { city: Option<String> }
    ///
    /// fn booking_agent() -> Result<AgentBuilder<Booking, ()>, ConfigErrors> {
    ///     let flow = Flow::builder("booking")
    ///         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
    ///         .build()?;
    ///     Ok(Agent::builder().flow(flow))
    /// }
    ///
    /// # let path = std::env::temp_dir().join(format!("booking-{}.toml", std::process::id()));
    /// # std::fs::write(&path, "[[scenario]]\nname = \"hi stores nothing\"\n[[scenario.turn]]\nuser = \"hi\"\nstep = \"ask_city\"\nabsent = [\"city\"]\n").unwrap();
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// # let model = ScriptedProvider::new();
    /// # model.respond(Answer::message("Which city?"));
    /// # let provider: Arc<dyn agent_core::provider::Provider> = Arc::new(model);
    /// let runner = Runner::of(provider, booking_agent)
    ///     .options(RunOptions { k: 0, ..RunOptions::default() });
    /// let suite = runner.load(&path)?; // checked against the agent before anything runs
    /// let report = runner.run(&suite).await;
    /// println!("{}", report.table());
    /// assert_eq!(report.summary.pass_1, Some(1.0));
    /// # Ok::<(), agent_core::eval::EvalError>(())
    /// # }).unwrap();
    /// ```
    pub fn of(
        provider: Arc<dyn Provider>,
        agent: impl Fn() -> Result<AgentBuilder<D, C>, ConfigErrors> + Send + Sync + 'static,
    ) -> Self {
        Self::new(provider, move |setup| setup.apply(agent()?).build())
    }

    /// Read the suite file at `path`, checked against this runner's agent: every
    /// problem is reported, each with its line, and nothing runs until the file is
    /// right.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Suite, EvalError> {
        let offline: Arc<dyn Provider> = Arc::new(crate::testing::ScriptedProvider::new());
        let agent = (self.factory)(Setup {
            provider: offline,
            clock: None,
            context: None,
        })?;
        Ok(Suite::load(path, &Catalog::of(&agent))?)
    }

    /// Evaluate `provider`; `factory` builds a fresh agent for every run (use
    /// [`Setup::apply`] on the agent's builder).
    pub fn new(
        provider: Arc<dyn Provider>,
        factory: impl Fn(Setup<C>) -> Result<Agent<D, C>, ConfigErrors> + Send + Sync + 'static,
    ) -> Self {
        Self {
            provider,
            factory: Arc::new(factory),
            start: None,
            options: RunOptions::default(),
        }
    }

    /// Something to do before the first turn of every run (e.g. dispatch the
    /// conversation to a front-desk flow, as the application does).
    pub fn on_start(
        mut self,
        f: impl Fn(Agent<D, C>, String) -> BoxFuture<'static, Result<(), AgentError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.start = Some(Arc::new(f));
        self
    }

    /// Replace the run options (greedy run, k, temperature, concurrency, turn timeout,
    /// breaker, progress lines).
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    /// Run every scenario of `suite` (greedy run and k runs each).
    pub async fn run(&self, suite: &Suite) -> SuiteReport {
        let o = &self.options;
        let mut jobs = Vec::new();
        for (i, scenario) in suite.scenarios.iter().enumerate() {
            for variant in 0..scenario.variants() {
                if o.greedy {
                    jobs.push((i, variant, 0.0_f32, None));
                }
                for seed in 1..=u64::from(o.k) {
                    jobs.push((i, variant, o.temperature, Some(seed)));
                }
            }
        }
        let total = jobs.len();
        let shared = Arc::new(Shared::default());
        let started = Instant::now();
        let runs: Vec<(usize, RunReport)> = futures::stream::iter(jobs)
            .map(|(i, variant, temperature, seed)| {
                let scenario = suite.scenarios[i].clone();
                let shared = shared.clone();
                let suite_name = suite.name.clone();
                let outcomes = &suite.outcomes;
                async move {
                    let report = self
                        .run_one(&scenario, variant, temperature, seed, outcomes, &shared)
                        .await;
                    shared.tally(&report, o.breaker);
                    if o.progress {
                        eprintln!(
                            "[eval] {suite_name}: {}/{total} runs ({}), {}{}",
                            shared.done.load(Ordering::SeqCst),
                            shared.counts(),
                            clock_text(started.elapsed()),
                            not_passed(&scenario.name, &report)
                        );
                    }
                    (i, report)
                }
            })
            .buffer_unordered(o.concurrency.max(1))
            .collect()
            .await;
        let mut scenarios: Vec<ScenarioReport> =
            suite.scenarios.iter().map(ScenarioReport::new).collect();
        for (i, r) in runs {
            scenarios[i].runs.push(r);
        }
        for s in &mut scenarios {
            s.runs.sort_by_key(|r| (r.seed, r.variant));
            s.settle(o.greedy, o.k);
        }
        SuiteReport::new(
            &suite.name,
            self.provider.name(),
            o,
            scenarios,
            started.elapsed(),
        )
    }

    async fn run_one(
        &self,
        scenario: &Scenario,
        variant: usize,
        temperature: f32,
        seed: Option<u64>,
        outcomes: &Outcomes,
        shared: &Shared,
    ) -> RunReport {
        let mut run = RunReport::new(temperature, seed);
        run.variant = variant;
        if shared.tripped(self.options.breaker) {
            run.outcome = Outcome::Errored;
            run.failures.push(Failure::run(format!(
                "not run: the model failed {} runs in a row (is the server still up?)",
                self.options.breaker
            )));
            return run;
        }
        let recorder = Recorder::new(self.provider.clone(), Some(temperature), seed);
        let context = match scenario.context.clone().map(serde_json::from_value::<C>) {
            None => None,
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => return run.fault(None, format!("the scenario's context: {e}")),
        };
        let setup = Setup {
            provider: Arc::new(recorder.clone()),
            clock: scenario.clock_ms.map(ManualClock::new),
            context,
        };
        let agent = match (self.factory)(setup) {
            Ok(a) => a,
            Err(e) => return run.fault(None, format!("the agent did not build: {e}")),
        };
        let collects = collected_by_step(&agent);
        let authored = authored_text(&agent);
        let session = format!("eval:{}:{}:{variant}", scenario.name, seed.unwrap_or(0));
        if let Some(start) = &self.start
            && let Err(e) = start(agent.clone(), session.clone()).await
        {
            return run.fault(None, format!("on_start failed: {e}"));
        }
        let mut last: Option<Observed> = None;
        let mut all_tools = Vec::new();
        let mut watch = Watch::new(scenario);
        for (n, turn) in scenario.turns.iter().enumerate() {
            let before = recorder.call_count();
            let begun = recorder.begun();
            let t0 = Instant::now();
            let said = turn.phrasing(variant).to_owned();
            watch.users.push(said.clone());
            let (a, s, m) = (agent.clone(), session.clone(), said.clone());
            let mut task = tokio::spawn(async move { a.respond(&s, &m).await });
            let result = tokio::time::timeout(self.options.turn_timeout, &mut task).await;
            let latency = t0.elapsed();
            let calls = recorder.calls();
            let mut stats = TurnStats::new(&said, latency, &calls[before.min(calls.len())..]);
            match result {
                Ok(Ok(Ok(r))) => {
                    let seen = Observed::of(&r);
                    stats.step = r.step.clone();
                    stats.reply = r.message.clone();
                    stats.data = seen.data.clone();
                    let dropped: Vec<(String, Value)> = r
                        .ungrounded
                        .iter()
                        .map(|d| (d.field.clone(), d.value.clone()))
                        .collect();
                    let held: Vec<(String, Value)> = r
                        .tentative
                        .iter()
                        .map(|t| (t.field.clone(), t.value.clone()))
                        .collect();
                    let waits = matches!(r.stopped, StoppedReason::NeedsInput)
                        && waits_for_value(&collects, &r.flow, &r.step, &seen.data);
                    let asks_again =
                        waits && watch.waited_at.is_some() && watch.waited_at == seen.step;
                    let score = watch.score(
                        &seen,
                        &recorder.instructions_since(begun),
                        (&dropped, &held),
                        (waits, asks_again),
                        &authored,
                        outcomes,
                    );
                    watch.waited_at = if waits { seen.step.clone() } else { None };
                    for why in scenario.bounds.check(&score) {
                        run.failures.push(Failure::turn(n, why));
                    }
                    for (field, value) in watch.unexpected(&seen.data) {
                        run.unexpected
                            .push(format!("{field} = {value} (turn {})", n + 1));
                    }
                    stats.waits = waits;
                    stats.score = Some(score);
                    // Value commands are the ones with a field.
                    stats.stored = r
                        .commands
                        .iter()
                        .filter_map(|c| c.field().map(str::to_owned))
                        .collect();
                    stats.tentative = r.tentative.clone();
                    stats.commands = r.commands.iter().map(ToString::to_string).collect();
                    stats.stopped = Some(super::scenario::stopped_kind(&r.stopped));
                    stats.flow = r.flow.clone();
                    run.turns.push(stats);
                    for e in &turn.expect {
                        if let Err(why) = e.check(&seen) {
                            match e {
                                Expect::NotReply(_) => run.reply_not_failed += 1,
                                Expect::Data { .. } => run.values_missed += 1,
                                _ => {}
                            }
                            run.failures.push(Failure::turn(n, why));
                        }
                    }
                    watch.after(&seen);
                    all_tools.extend(seen.tool_calls.iter().cloned());
                    last = Some(seen);
                }
                Ok(Ok(Err(e))) => {
                    stats.error = Some(e.to_string());
                    run.turns.push(stats);
                    match classify(&e) {
                        Blame::Model => run.failures.push(Failure::turn(
                            n,
                            format!("the model's answer was unusable: {e}"),
                        )),
                        Blame::Server => {
                            run.outcome = Outcome::Errored;
                            run.failures
                                .push(Failure::turn(n, format!("model server: {e}")));
                            break;
                        }
                        Blame::Engine => return run.fault(Some(n), format!("engine error: {e}")),
                    }
                }
                Ok(Err(join)) => {
                    run.turns.push(stats);
                    let what = if join.is_panic() {
                        "panicked"
                    } else {
                        "was cancelled"
                    };
                    return run.fault(Some(n), format!("the turn {what}: {join}"));
                }
                Err(_) => {
                    let waiting = recorder.waiting_on_model();
                    task.abort();
                    run.turns.push(stats);
                    let limit = self.options.turn_timeout;
                    if waiting {
                        run.outcome = Outcome::Errored;
                        run.failures.push(Failure::turn(
                            n,
                            format!(
                                "the model did not answer within the turn deadline ({limit:?})"
                            ),
                        ));
                        break;
                    }
                    return run.fault(
                        Some(n),
                        format!(
                            "the turn hung past its deadline ({limit:?}) with no model call pending"
                        ),
                    );
                }
            }
        }
        run.calls = recorder.calls();
        if run.outcome == Outcome::Errored {
            return run;
        }
        match last {
            Some(mut seen) => {
                seen.tool_calls = all_tools;
                for e in &scenario.end {
                    if let Err(why) = e.check(&seen) {
                        if matches!(e, Expect::Data { .. }) {
                            run.values_missed += 1;
                        }
                        run.failures.push(Failure::end(why));
                    }
                }
            }
            None if !scenario.end.is_empty() => {
                run.failures.push(Failure::end("no turn succeeded".into()));
            }
            None => {}
        }
        run.outcome = if run.failures.is_empty() {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        run
    }
}

/// The fields each model step collects, by (flow, step).
fn collected_by_step<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
) -> HashMap<(String, String), Vec<String>> {
    let mut out = HashMap::new();
    for f in &agent.inner.flows {
        for s in f.steps() {
            if !s.collect.is_empty() {
                out.insert(
                    (f.id().to_owned(), s.id().to_owned()),
                    s.collect.iter().map(|c| c.to_string()).collect(),
                );
            }
        }
    }
    out
}

/// What the agent's author wrote for the user to read, in substance: step prompts and
/// `ask` / `reply` templates.
fn authored_text<D: AgentData, C: AgentContext>(agent: &Agent<D, C>) -> Vec<String> {
    let mut out = Vec::new();
    for f in &agent.inner.flows {
        for s in f.steps() {
            out.extend(s.prompt.iter().cloned());
            out.extend(s.ask.iter().cloned());
            if let crate::step::StepKind::Reply(t) = &s.kind {
                out.push(t.to_string());
            }
        }
    }
    out
}

/// Whether the turn ended at a step that collects a field still unset.
fn waits_for_value(
    collects: &HashMap<(String, String), Vec<String>>,
    flow: &Option<String>,
    step: &Option<String>,
    data: &Map<String, Value>,
) -> bool {
    let (Some(flow), Some(step)) = (flow, step) else {
        return false;
    };
    collects
        .get(&(flow.clone(), step.clone()))
        .is_some_and(|fields| {
            fields
                .iter()
                .any(|f| data.get(f).is_none_or(Value::is_null))
        })
}

/// What a run has seen so far, for the reply scores and the unexpected stored values.
struct Watch<'a> {
    scenario: &'a Scenario,
    /// The user's messages so far.
    users: Vec<String>,
    previous_reply: Option<String>,
    previous_data: Map<String, Value>,
    /// Every value each field held in the run.
    held: Vec<(String, Value)>,
    /// Fields the scenario names in `data` or `present`.
    named: HashSet<String>,
    /// Unexpected fields already reported.
    reported: HashSet<String>,
    /// The step the previous turn waited at for a value.
    waited_at: Option<String>,
}

impl<'a> Watch<'a> {
    fn new(scenario: &'a Scenario) -> Self {
        let mut named = HashSet::new();
        let expects = scenario
            .turns
            .iter()
            .flat_map(|t| t.expect.iter())
            .chain(scenario.end.iter());
        for e in expects {
            match e {
                Expect::Data { field, .. } | Expect::Present { field } => {
                    named.insert(field.clone());
                }
                _ => {}
            }
        }
        Self {
            scenario,
            users: Vec::new(),
            previous_reply: None,
            previous_data: Map::new(),
            held: Vec::new(),
            named,
            reported: HashSet::new(),
            waited_at: None,
        }
    }

    /// Values a reply could name that are not the state's: held before, dropped this
    /// turn, or expected somewhere by the scenario.
    fn candidates(&self, dropped: &[(String, Value)]) -> Vec<(String, Value)> {
        let expected = self
            .scenario
            .turns
            .iter()
            .flat_map(|t| t.expect.iter())
            .chain(self.scenario.end.iter())
            .filter_map(|e| match e {
                Expect::Data { field, value } => Some((field.clone(), value.clone())),
                _ => None,
            });
        let mut out: Vec<(String, Value)> = Vec::new();
        for (f, v) in self
            .held
            .iter()
            .cloned()
            .chain(dropped.iter().cloned())
            .chain(expected)
        {
            if !v.is_null() && !out.iter().any(|(g, w)| *g == f && same(w, &v)) {
                out.push((f, v));
            }
        }
        out
    }

    fn score(
        &self,
        seen: &Observed,
        instructions: &[String],
        (dropped, held): (&[FieldValue], &[FieldValue]),
        (waits, asks_again): (bool, bool),
        authored: &[String],
        outcomes: &Outcomes,
    ) -> ReplyScore {
        let candidates = not_held(self.candidates(dropped), &seen.data, held);
        let succeeded: Vec<String> = seen
            .tool_results
            .iter()
            .filter(|(_, ok)| *ok)
            .map(|(n, _)| n.clone())
            .collect();
        score::score(&TurnFacts {
            reply: &seen.reply,
            previous_reply: self.previous_reply.as_deref(),
            instructions,
            user_messages: &self.users,
            data: &seen.data,
            candidates: &candidates,
            waits,
            asks_again,
            authored,
            succeeded: &succeeded,
            outcomes,
        })
    }

    /// Fields this turn set (to a new value) that the scenario never names.
    fn unexpected(&mut self, data: &Map<String, Value>) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for (field, value) in data {
            let changed = !value.is_null()
                && !same(value, self.previous_data.get(field).unwrap_or(&Value::Null));
            if changed && !self.named.contains(field) && self.reported.insert(field.clone()) {
                out.push((field.clone(), value.clone()));
            }
        }
        out
    }

    fn after(&mut self, seen: &Observed) {
        for (field, value) in &seen.data {
            if !value.is_null() && !self.held.iter().any(|(f, v)| f == field && same(v, value)) {
                self.held.push((field.clone(), value.clone()));
            }
        }
        self.previous_data = seen.data.clone();
        self.previous_reply = Some(seen.reply.clone());
    }
}

/// Who is to blame for a failed turn.
enum Blame {
    /// The model answered something unusable: a quality figure, not a fault.
    Model,
    /// The model server is unreachable, slow or overloaded.
    Server,
    /// Our code failed on a usable answer, or the protocol broke: a fault.
    Engine,
}

fn classify(e: &AgentError) -> Blame {
    match e {
        AgentError::MalformedModelOutput { .. } => Blame::Model,
        // The agent's own turn deadline: the model was too slow for it (a hang in our
        // code with no call pending is caught by the runner's deadline, which an eval
        // sets shorter than the agent's).
        AgentError::TurnTimeout { .. } => Blame::Server,
        AgentError::Provider { source, .. } => match source {
            ProviderError::Network(_)
            | ProviderError::Timeout(_)
            | ProviderError::EmptyAnswer(_) => Blame::Server,
            ProviderError::Http { status, .. } if *status >= 500 || matches!(status, 408 | 429) => {
                Blame::Server
            }
            _ => Blame::Engine,
        },
        _ => Blame::Engine,
    }
}

#[derive(Default)]
struct Shared {
    done: AtomicUsize,
    passed: AtomicUsize,
    failed: AtomicUsize,
    errored: AtomicUsize,
    faults: AtomicUsize,
    errored_in_a_row: AtomicU32,
}

impl Shared {
    fn tally(&self, r: &RunReport, breaker: u32) {
        self.done.fetch_add(1, Ordering::SeqCst);
        let counter = match r.outcome {
            Outcome::Passed => &self.passed,
            Outcome::Failed => &self.failed,
            Outcome::Errored => &self.errored,
            Outcome::Fault => &self.faults,
        };
        counter.fetch_add(1, Ordering::SeqCst);
        if r.outcome == Outcome::Errored {
            if breaker > 0 {
                self.errored_in_a_row.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            self.errored_in_a_row.store(0, Ordering::SeqCst);
        }
    }
    fn tripped(&self, breaker: u32) -> bool {
        breaker > 0 && self.errored_in_a_row.load(Ordering::SeqCst) >= breaker
    }
    fn counts(&self) -> String {
        format!(
            "{} passed, {} failed, {} errored, {} faults",
            self.passed.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
            self.errored.load(Ordering::SeqCst),
            self.faults.load(Ordering::SeqCst)
        )
    }
}

/// The progress line's tail for a run that did not pass: which one, so a long run
/// stopped early still says what failed.
fn not_passed(scenario: &str, r: &RunReport) -> String {
    let outcome = match r.outcome {
        Outcome::Passed => return String::new(),
        Outcome::Failed => "failed",
        Outcome::Errored => "errored",
        Outcome::Fault => "fault",
    };
    let run = match r.seed {
        Some(seed) => format!("seed {seed}"),
        None => "t=0".to_owned(),
    };
    format!("; {outcome}: {scenario} [{run}]")
}

fn clock_text(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}

/// A field and a value of it.
type FieldValue = (String, Value);

/// The values of `candidates` the state does not hold: neither stored in `data` nor
/// held for the user's yes (`held`: a reply showing a tentative value back names
/// what the state holds).
fn not_held(
    candidates: Vec<(String, Value)>,
    data: &Map<String, Value>,
    held: &[(String, Value)],
) -> Vec<(String, Value)> {
    candidates
        .into_iter()
        .filter(|(f, v)| {
            !same(v, data.get(f).unwrap_or(&Value::Null))
                && !held.iter().any(|(g, w)| g == f && same(w, v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_held_for_the_users_yes_is_one_the_state_holds() {
        let data: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "city": "Lisbon", "check_in": null
        }))
        .unwrap_or_default();
        let candidates = vec![
            ("check_in".to_owned(), Value::from("2027-07-01")),
            ("city".to_owned(), Value::from("Lisbon")),
            ("city".to_owned(), Value::from("Porto")),
        ];
        let held = [("check_in".to_owned(), Value::from("2027-07-01"))];
        assert_eq!(
            not_held(candidates.clone(), &data, &held),
            vec![("city".to_owned(), Value::from("Porto"))]
        );
        assert_eq!(not_held(candidates, &data, &[]).len(), 2);
    }

    fn run(outcome: Outcome, seed: Option<u64>) -> RunReport {
        let mut r = RunReport::new(0.7, seed);
        r.outcome = outcome;
        r
    }

    #[test]
    fn the_progress_line_names_a_run_that_did_not_pass() {
        assert_eq!(not_passed("greeting", &run(Outcome::Passed, Some(1))), "");
        assert_eq!(
            not_passed("greeting", &run(Outcome::Failed, Some(2))),
            "; failed: greeting [seed 2]"
        );
        assert_eq!(
            not_passed("greeting", &run(Outcome::Errored, None)),
            "; errored: greeting [t=0]"
        );
    }
}
