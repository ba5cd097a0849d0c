//! Suites written as TOML files, checked against the agent before anything runs.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;

use super::Suite;
use super::scenario::{Expect, STOPPED_KINDS, Scenario, Turn};
use super::score::{Outcomes, ReplyBounds};
use crate::agent::Agent;
use crate::data::{AgentContext, AgentData};
use crate::flow::suggest;

/// A suite file that cannot run: every problem found, each with its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} problem(s) in {path}:\n{}", problems.len(), problems.iter().map(|p| format!("  {path}:{p}")).collect::<Vec<_>>().join("\n"))]
pub struct SuiteError {
    /// The file (or the name given to the text).
    pub path: String,
    /// Each problem, as `line:column: message`.
    pub problems: Vec<String>,
}

/// What a suite may name: the agent's flows and steps, data fields, tools, and a check
/// of context values. Built from the agent with [`Catalog::of`].
pub struct Catalog {
    flows: Vec<(String, Vec<String>)>,
    code_flows: Vec<String>,
    fields: Vec<String>,
    tools: Vec<String>,
    context: ContextCheck,
}

/// Whether a JSON value fits the agent's context type.
type ContextCheck = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("flows", &self.flows)
            .field("code_flows", &self.code_flows)
            .field("fields", &self.fields)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// The names `agent` defines (flows, steps, tools, data fields), to check a suite file's
    /// expectations against before running it.
    pub fn of<D: AgentData, C: AgentContext>(agent: &Agent<D, C>) -> Self {
        let a = &agent.inner;
        let mut tools: Vec<String> = a.tools.iter().map(|t| t.name().to_owned()).collect();
        for f in &a.flows {
            tools.extend(f.tools.iter().map(|t| t.name().to_owned()));
            for s in f.steps() {
                tools.extend(s.tools.iter().map(|t| t.name().to_owned()));
            }
        }
        tools.sort();
        tools.dedup();
        Self {
            flows: a
                .flows
                .iter()
                .map(|f| {
                    (
                        f.id().to_owned(),
                        f.steps().iter().map(|s| s.id().to_owned()).collect(),
                    )
                })
                .collect(),
            code_flows: a.code_flows.iter().map(|f| f.id.to_string()).collect(),
            fields: a.schema.fields().iter().map(|f| f.to_string()).collect(),
            tools,
            context: Box::new(|v| {
                serde_json::from_value::<C>(v.clone())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        }
    }
}

impl Suite {
    /// Read a suite file and check it against `catalog`.
    pub fn load(path: impl AsRef<Path>, catalog: &Catalog) -> Result<Suite, SuiteError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError {
            path: shown.clone(),
            problems: vec![format!("1:1: cannot read the file: {e}")],
        })?;
        let name = path
            .file_stem()
            .map_or_else(|| shown.clone(), |s| s.to_string_lossy().into_owned());
        Suite::parse(&name, &shown, &text, catalog)
    }

    /// Parse suite text (`path` names it in errors) and check it against `catalog`.
    pub fn parse(
        name: &str,
        path: &str,
        text: &str,
        catalog: &Catalog,
    ) -> Result<Suite, SuiteError> {
        let lines = Lines::new(text);
        let file: FileSuite = toml::from_str(text).map_err(|e| SuiteError {
            path: path.to_owned(),
            problems: vec![format!(
                "{}: {}",
                e.span().map_or("1:1".to_owned(), |s| lines.at(&s)),
                e.message().trim()
            )],
        })?;
        let mut cx = Check {
            lines,
            catalog,
            problems: Vec::new(),
        };
        let suite = cx.suite(name, file);
        if cx.problems.is_empty() {
            Ok(suite)
        } else {
            Err(SuiteError {
                path: path.to_owned(),
                problems: cx.problems,
            })
        }
    }
}

// ---- the file's shape (serde; unknown keys are errors) ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSuite {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    defaults: FileDefaults,
    #[serde(default)]
    outcomes: BTreeMap<Spanned<String>, Vec<Spanned<String>>>,
    #[serde(default, rename = "scenario")]
    scenarios: Vec<Spanned<FileScenario>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileDefaults {
    clock: Option<Spanned<String>>,
    context: Option<Spanned<Value>>,
    reply_bounds: Option<ReplyBounds>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileScenario {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    clock: Option<Spanned<String>>,
    context: Option<Spanned<Value>>,
    reply_bounds: Option<ReplyBounds>,
    #[serde(default, rename = "turn")]
    turns: Vec<Spanned<FileExpect>>,
    end: Option<Spanned<FileExpect>>,
}

/// A turn (with `user`) or the end block (without): the same expectation keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExpect {
    user: Option<Spanned<UserText>>,
    #[serde(default)]
    data: BTreeMap<Spanned<String>, Value>,
    #[serde(default)]
    present: Vec<Spanned<String>>,
    #[serde(default)]
    absent: Vec<Spanned<String>>,
    flow: Option<Spanned<String>>,
    step: Option<Spanned<String>>,
    stopped: Option<Spanned<String>>,
    #[serde(default)]
    tools: Vec<Spanned<FileTool>>,
    #[serde(default)]
    reply: Vec<Spanned<String>>,
    #[serde(default)]
    reply_not: Vec<Spanned<String>>,
}

/// `user = "..."`, or several phrasings of the same message: `user = ["...", "..."]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum UserText {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTool {
    name: Spanned<String>,
    #[serde(default = "one")]
    times: u32,
    #[serde(default)]
    args: Map<String, Value>,
}

fn one() -> u32 {
    1
}

// ---- checking ----

/// Byte offsets to `line:column`.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { starts }
    }
    fn at(&self, span: &Range<usize>) -> String {
        let line = self.starts.partition_point(|&s| s <= span.start);
        let col = span.start - self.starts[line.saturating_sub(1)] + 1;
        format!("{line}:{col}")
    }
}

struct Check<'a> {
    lines: Lines,
    catalog: &'a Catalog,
    problems: Vec<String>,
}

impl Check<'_> {
    fn problem(&mut self, span: &Range<usize>, message: String) {
        let at = self.lines.at(span);
        self.problems.push(format!("{at}: {message}"));
    }

    fn suite(&mut self, name: &str, file: FileSuite) -> Suite {
        let default_clock = file.defaults.clock.as_ref().and_then(|c| self.clock(c));
        let default_context = file.defaults.context.as_ref().and_then(|c| self.context(c));
        let mut seen: Vec<String> = Vec::new();
        let mut scenarios = Vec::new();
        for s in file.scenarios {
            let span = s.span();
            let s = s.into_inner();
            if seen.contains(s.name.get_ref()) {
                self.problem(
                    &s.name.span(),
                    format!("a second scenario named `{}`", s.name.get_ref()),
                );
            }
            seen.push(s.name.get_ref().clone());
            if s.turns.is_empty() {
                self.problem(
                    &span,
                    format!("scenario `{}` has no [[scenario.turn]]", s.name.get_ref()),
                );
            }
            let mut turns = Vec::new();
            for t in s.turns {
                let t_span = t.span();
                let t = t.into_inner();
                let Some(user) = &t.user else {
                    self.problem(&t_span, "a turn needs `user`, the user's message".into());
                    continue;
                };
                let mut phrasings = match user.get_ref() {
                    UserText::One(one) => vec![one.clone()],
                    UserText::Many(many) => many.clone(),
                };
                if phrasings.is_empty() {
                    self.problem(
                        &user.span(),
                        "`user = []` lists no message; give at least one phrasing".into(),
                    );
                    continue;
                }
                let first = phrasings.remove(0);
                let mut turn = Turn::user(first);
                turn.alternatives = phrasings;
                turn.expect = self.expects(&t);
                turns.push(turn);
            }
            let end = match &s.end {
                Some(e) => {
                    if let Some(u) = &e.get_ref().user {
                        self.problem(
                            &u.span(),
                            "`user` belongs in a [[scenario.turn]], not in [scenario.end]".into(),
                        );
                    }
                    self.expects(e.get_ref())
                }
                None => Vec::new(),
            };
            let mut scenario = Scenario::new(s.name.into_inner());
            scenario.tags = s.tags;
            scenario.clock_ms = s
                .clock
                .as_ref()
                .and_then(|c| self.clock(c))
                .or(default_clock);
            scenario.context = s
                .context
                .as_ref()
                .and_then(|c| self.context(c))
                .or_else(|| default_context.clone());
            scenario.turns = turns;
            scenario.end = end;
            scenario.bounds = s
                .reply_bounds
                .or_else(|| file.defaults.reply_bounds.clone())
                .unwrap_or_default();
            scenarios.push(scenario);
            let _ = s.description;
        }
        let _ = file.description;
        let mut outcomes = Outcomes::new();
        for (tool, patterns) in &file.outcomes {
            if !self.catalog.tools.contains(tool.get_ref()) {
                let hint = suggest(tool.get_ref(), &self.catalog.tools, "tools");
                self.problem(
                    &tool.span(),
                    format!("unknown tool `{}` in [outcomes]; {hint}", tool.get_ref()),
                );
            }
            for p in patterns {
                match outcomes
                    .clone()
                    .pattern(tool.get_ref().clone(), p.get_ref())
                {
                    Ok(o) => outcomes = o,
                    Err(e) => self.problem(&p.span(), format!("invalid pattern: {e}")),
                }
            }
        }
        let mut suite = Suite::new(name).outcomes(outcomes);
        suite.scenarios = scenarios;
        suite
    }

    fn clock(&mut self, c: &Spanned<String>) -> Option<u64> {
        use time::OffsetDateTime;
        use time::format_description::well_known::Rfc3339;
        match OffsetDateTime::parse(c.get_ref(), &Rfc3339) {
            Ok(t) => Some((t.unix_timestamp_nanos() / 1_000_000).max(0) as u64),
            Err(e) => {
                self.problem(
                    &c.span(),
                    format!(
                        "clock `{}` is not an RFC 3339 time ({e}); write e.g. \"2026-06-15T09:30:00+01:00\"",
                        c.get_ref()
                    ),
                );
                None
            }
        }
    }

    fn context(&mut self, c: &Spanned<Value>) -> Option<Value> {
        match (self.catalog.context)(c.get_ref()) {
            Ok(()) => Some(c.get_ref().clone()),
            Err(e) => {
                self.problem(
                    &c.span(),
                    format!("context does not fit the agent's context type: {e}"),
                );
                None
            }
        }
    }

    fn field(&mut self, f: &Spanned<String>) {
        let known = &self.catalog.fields;
        if !known.iter().any(|k| k == f.get_ref()) {
            let hint = suggest(f.get_ref(), known, "fields");
            self.problem(
                &f.span(),
                format!("unknown data field `{}`; {hint}", f.get_ref()),
            );
        }
    }

    fn expects(&mut self, t: &FileExpect) -> Vec<Expect> {
        let mut out = Vec::new();
        for (field, value) in &t.data {
            self.field(field);
            out.push(Expect::data(field.get_ref().clone(), value.clone()));
        }
        for field in &t.present {
            self.field(field);
            out.push(Expect::present(field.get_ref().clone()));
        }
        for field in &t.absent {
            self.field(field);
            out.push(Expect::absent(field.get_ref().clone()));
        }
        let flow = t.flow.as_ref().map(|f| f.get_ref().as_str());
        if let Some(f) = &t.flow {
            if f.get_ref().is_empty() {
                out.push(Expect::no_flow());
            } else {
                let mut known: Vec<String> = self
                    .catalog
                    .flows
                    .iter()
                    .map(|(id, _)| id.clone())
                    .collect();
                known.extend(self.catalog.code_flows.iter().cloned());
                if !known.contains(f.get_ref()) {
                    let hint = suggest(f.get_ref(), &known, "flows");
                    self.problem(
                        &f.span(),
                        format!(
                            "unknown flow `{}` (\"\" means no flow); {hint}",
                            f.get_ref()
                        ),
                    );
                }
                out.push(Expect::flow(f.get_ref().clone()));
            }
        }
        if let Some(s) = &t.step {
            if s.get_ref().is_empty() {
                out.push(Expect::Step(None));
            } else {
                self.step(s, flow);
                out.push(Expect::step(s.get_ref().clone()));
            }
        }
        if let Some(k) = &t.stopped {
            if !STOPPED_KINDS.contains(&k.get_ref().as_str()) {
                self.problem(
                    &k.span(),
                    format!(
                        "unknown stopped kind `{}`; kinds: {}",
                        k.get_ref(),
                        STOPPED_KINDS.join(", ")
                    ),
                );
            }
            out.push(Expect::stopped(k.get_ref().clone()));
        }
        for tool in &t.tools {
            let tool = tool.get_ref();
            if !self.catalog.tools.contains(tool.name.get_ref()) {
                let hint = suggest(tool.name.get_ref(), &self.catalog.tools, "tools");
                self.problem(
                    &tool.name.span(),
                    format!("unknown tool `{}`; {hint}", tool.name.get_ref()),
                );
            }
            out.push(Expect::tool_with(
                tool.name.get_ref().clone(),
                tool.args.clone(),
                tool.times,
            ));
        }
        for (patterns, negate) in [(&t.reply, false), (&t.reply_not, true)] {
            for p in patterns {
                let made = if negate {
                    Expect::not_reply(p.get_ref())
                } else {
                    Expect::reply(p.get_ref())
                };
                match made {
                    Ok(e) => out.push(e),
                    Err(e) => self.problem(&p.span(), format!("invalid pattern: {e}")),
                }
            }
        }
        out
    }

    /// A step must exist in the named flow, or in some flow when none is named (code
    /// flows' positions are theirs to name, so any step is accepted when they exist).
    fn step(&mut self, s: &Spanned<String>, flow: Option<&str>) {
        let id = s.get_ref().as_str();
        let flows = &self.catalog.flows;
        let code_flow = |f: &str| self.catalog.code_flows.iter().any(|c| c == f);
        let (ok, known): (bool, Vec<String>) =
            match flow.and_then(|f| flows.iter().find(|(i, _)| i == f)) {
                Some((_, steps)) => (steps.iter().any(|x| x == id), steps.clone()),
                None if flow.is_some_and(code_flow) => (true, Vec::new()),
                None => (
                    flows.iter().any(|(_, steps)| steps.iter().any(|x| x == id))
                        || !self.catalog.code_flows.is_empty(),
                    flows.iter().flat_map(|(_, s)| s.iter().cloned()).collect(),
                ),
            };
        if !ok {
            let hint = suggest(id, &known, "steps");
            let within = flow.map(|f| format!(" in flow `{f}`")).unwrap_or_default();
            self.problem(&s.span(), format!("unknown step `{id}`{within}; {hint}"));
        }
    }
}
