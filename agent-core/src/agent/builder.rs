//! Building an agent: registering flows, tools, signals and settings, and validating the
//! whole registry once at `build()`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::clock::{Clock, SystemClock};
use crate::codeflow::{CodeFlow, Fallback, IntoCodeFlow, ResponseHook, ResponseMeta, Router};
use crate::data::{AgentContext, AgentData, DataSchema};
use crate::error::{ConfigErrors, FlowConfigurationError};
use crate::flow::IntoFlow;
use crate::flow::{Flow, suggest};
use crate::fxhash::FxHashMap;
use crate::hook::PreHook;
use crate::instruction::Instruction;
use crate::provider::Provider;
use crate::response::AgentResponse;
use crate::session::Session;
use crate::signal::Signal;
use crate::store::{MemoryStore, SessionStore};
use crate::tool::{IntoTool, Tool, ToolOutput, check_tool};

use super::Agent;
use super::checks::{check_config, check_journal, lease_holder};
use crate::config::AgentConfig;
use crate::pipeline::{AgentInner, FlowVersionChange, Migration};

/// Builder for [`Agent`]; `build()` validates the whole registry.
pub struct AgentBuilder<D, C> {
    name: String,
    persona: Option<String>,
    goal: Option<String>,
    instructions: Vec<Instruction<D, C>>,
    glossary: Vec<(String, String)>,
    knowledge: Vec<String>,
    flows: Vec<Flow<D, C>>,
    code_flows: Vec<CodeFlow<D, C>>,
    router: Router,
    on_response: Option<ResponseHook<D>>,
    on_unknown_outcome: Option<crate::journal::UnknownOutcomeHook>,
    on_stale_once_result: Option<crate::journal::StaleHook>,
    flow_errors: Vec<FlowConfigurationError>,
    tools: Vec<Arc<dyn Tool<D, C>>>,
    signals: Vec<Signal<D, C>>,
    on_enter: Option<Arc<dyn PreHook<D, C>>>,
    migrate: Option<Migration<D, C>>,
    provider: Option<Arc<dyn Provider>>,
    store: Option<Arc<dyn SessionStore>>,
    context: Option<C>,
    config: AgentConfig,
    clock: Option<Arc<dyn Clock>>,
    constraints: Vec<(String, serde_json::Value)>,
    checks: Vec<crate::data::custom::FieldCheck>,
    claims: Vec<(String, Vec<String>)>,
    human_handoff: super::HumanHandoff,
    approvals_resolved: bool,
}

impl<D: AgentData, C: AgentContext> AgentBuilder<D, C> {
    /// An empty definition with the defaults ([`Agent::builder`]).
    pub(super) fn new() -> Self {
        AgentBuilder {
            name: "Assistant".into(),
            persona: None,
            goal: None,
            instructions: Vec::new(),
            glossary: Vec::new(),
            knowledge: Vec::new(),
            flows: Vec::new(),
            code_flows: Vec::new(),
            router: Router::default(),
            on_response: None,
            on_unknown_outcome: None,
            on_stale_once_result: None,
            flow_errors: Vec::new(),
            tools: Vec::new(),
            signals: Vec::new(),
            on_enter: None,
            migrate: None,
            provider: None,
            store: None,
            context: None,
            config: AgentConfig::default(),
            clock: None,
            constraints: Vec::new(),
            checks: Vec::new(),
            claims: Vec::new(),
            human_handoff: super::HumanHandoff::default(),
            approvals_resolved: false,
        }
    }
    /// The agent's name (used in the prompt).
    pub fn name(mut self, n: impl Into<String>) -> Self {
        self.name = n.into();
        self
    }
    /// Who the agent is, in a sentence ("A friendly hotel concierge. Short answers."): the
    /// first section of every prompt.
    pub fn persona(mut self, p: impl Into<String>) -> Self {
        self.persona = Some(p.into());
        self
    }
    /// What the agent is for, in a sentence, stated in the prompt so the model can tell an
    /// on-topic request from an off-topic one.
    pub fn goal(mut self, g: impl Into<String>) -> Self {
        self.goal = Some(g.into());
        self
    }
    /// Add an instruction that applies to every flow and step of the agent (use
    /// `FlowBuilder::instruction` or `Step::instruction` for a narrower scope).
    pub fn instruction(mut self, i: Instruction<D, C>) -> Self {
        self.instructions.push(i);
        self
    }
    /// Add a term and its definition to the glossary the prompt carries, so the model reads
    /// domain words the way the business means them.
    pub fn term(mut self, term: impl Into<String>, definition: impl Into<String>) -> Self {
        self.glossary.push((term.into(), definition.into()));
        self
    }
    /// Add a fact to the knowledge section the prompt carries (opening hours, policies), for
    /// the model to answer side questions from.
    pub fn knowledge(mut self, text: impl Into<String>) -> Self {
        self.knowledge.push(text.into());
        self
    }
    /// Add a flow to the agent (from `Flow::builder(..).build()` or a `#[flow]`); `build()`
    /// checks that every flow a branch or directive names is registered.
    pub fn flow(mut self, f: impl IntoFlow<D, C>) -> Self {
        // A flow that failed its own checks is reported by `build()`, with the rest.
        match f.into_flow() {
            Ok(f) => self.flows.push(f),
            Err(e) => self.flow_errors.extend(e.0),
        }
        self
    }
    /// Register a code flow (an async fn; see [`crate::codeflow`]).
    pub fn code_flow(mut self, f: impl IntoCodeFlow<D, C>) -> Self {
        self.code_flows.push(f.into_code_flow());
        self
    }
    /// How a flow is picked when none is active (default: a detector without
    /// threshold, falling back to the classic reply).
    pub fn router(mut self, r: Router) -> Self {
        self.router = r;
        self
    }
    /// Run `f` once per completed turn, on both paths (classic and code flow), with
    /// the path, the flow and the handoff source. Duplicates answered from the store
    /// do not run it.
    pub fn on_response(
        mut self,
        f: impl Fn(&AgentResponse<D>, &ResponseMeta) + Send + Sync + 'static,
    ) -> Self {
        self.on_response = Some(Arc::new(f));
        self
    }
    /// Offer a tool in every flow and step (and outside flows); offer it on a flow or a step
    /// instead to keep it out of the other turns' model calls.
    pub fn tool(mut self, t: impl IntoTool<D, C>) -> Self {
        self.tools.push(t.into_tool());
        self
    }
    /// Decide a once-tool call ([`crate::tool::Effect::Once`]) whose earlier attempt
    /// journaled its intent but no result, so whether its effect happened is unknown
    /// (the process stopped between the two). Such a call is never run again
    /// silently: without this hook it fails with a message saying so; with it, the
    /// application answers (for example after asking the payment provider about the
    /// call's key) with a [`Resolution`](crate::journal::Resolution): fail, a result
    /// it found, or run it again.
    pub fn on_unknown_outcome<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(crate::journal::UnknownOutcome) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::journal::Resolution> + Send + 'static,
    {
        self.on_unknown_outcome = Some(Arc::new(move |u| Box::pin(f(u))));
        self
    }
    /// Merge a once-tool's ([`crate::tool::Effect::Once`]) journaled result that is
    /// reused on data another turn changed since the result was computed (see
    /// [`StaleOnceResult`](crate::journal::StaleOnceResult)): the hook gets the call,
    /// its journaled output, and the base and current values of the fields it writes,
    /// and returns the output to use instead (its directive replaces the journaled
    /// writes and the directives the tool dispatched; the tool does not run, and the
    /// journal keeps the original), or `None` to fail the turn with
    /// [`AgentError::OnceResultStale`](crate::error::AgentError::OnceResultStale).
    /// Without this hook every such turn fails that way; nothing another turn saved is
    /// overwritten either way. A hook that panics counts as `None`.
    ///
    /// For a list the tool appended to, keep what is there now and add what the
    /// result adds:
    ///
    /// ```
    /// # use agent_core::prelude::*;
    /// # use agent_core::journal::StaleOnceResult;
    /// # #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// # struct Order { items: Vec<String> }
    /// fn merge(s: &StaleOnceResult) -> Option<ToolOutput> {
    ///     let list = |m: &Patch| m.get("items")?.as_array().cloned();
    ///     let (base, now) = (list(&s.base)?, list(&s.current)?);
    ///     let written = s.effect.directive.data.as_ref()?.get("items")?.as_array()?.clone();
    ///     let mut items = now;
    ///     items.extend(written.into_iter().skip(base.len()));
    ///     let mut patch = Patch::new();
    ///     patch.insert("items".into(), items.into());
    ///     Some(ToolOutput::text(s.effect.output.clone()).data(patch))
    /// }
    /// let builder = Agent::<Order, ()>::builder().on_stale_once_result(merge);
    /// ```
    pub fn on_stale_once_result(
        mut self,
        f: impl Fn(&crate::journal::StaleOnceResult) -> Option<ToolOutput> + Send + Sync + 'static,
    ) -> Self {
        self.on_stale_once_result = Some(Arc::new(f));
        self
    }
    /// Add a signal, checked every turn whatever flow is active; ids must be unique.
    pub fn signal(mut self, s: Signal<D, C>) -> Self {
        self.signals.push(s);
        self
    }
    /// Hook run on a session's first turn.
    pub fn on_enter(mut self, h: impl PreHook<D, C> + 'static) -> Self {
        self.on_enter = Some(Arc::new(h));
        self
    }
    /// Upgrade sessions whose active flow changed incompatibly (its step is gone, or
    /// the flow is). Without it such sessions fail with `IncompatibleSession`.
    pub fn migrate(
        mut self,
        f: impl Fn(&mut Session<D, C>, &FlowVersionChange) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.migrate = Some(Arc::new(f));
        self
    }
    /// The model the agent calls (a provider from `agent-providers`, or the scripted provider
    /// in tests). Required: `build()` fails without one.
    pub fn provider(mut self, p: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(p));
        self
    }
    /// [`Self::provider`] for a provider already behind an `Arc`, to share one client (and
    /// its connection pool) between agents.
    pub fn provider_arc(mut self, p: Arc<dyn Provider>) -> Self {
        self.provider = Some(p);
        self
    }
    /// Keep sessions in `s` (default: in memory, lost when the process ends): a SQLite file,
    /// PostgreSQL or Redis for sessions that survive restarts or are shared by processes.
    pub fn store(mut self, s: impl SessionStore + 'static) -> Self {
        self.store = Some(Arc::new(s));
        self
    }
    /// [`Self::store`] for a store already behind an `Arc`, to share one store between
    /// agents.
    pub fn store_arc(mut self, s: Arc<dyn SessionStore>) -> Self {
        self.store = Some(s);
        self
    }
    /// The context new sessions start with (default: `C::default()`).
    pub fn context(mut self, c: C) -> Self {
        self.context = Some(c);
        self
    }
    /// Replace the engine's settings (limits, timeouts, reply style, conflict policy); start
    /// from `AgentConfig::default()` and change the fields you need.
    pub fn config(mut self, c: AgentConfig) -> Self {
        self.config = c;
        self
    }
    /// Constrain a data field (the builder form of `#[field(...)]`): JSON-schema
    /// keywords such as `{"minimum": 1, "maximum": 12}`, `{"pattern": "^INV-\\d+$"}`,
    /// `{"enum": ["single", "double"]}`, `{"format": "date"}`, `{"x-inferred": true}`
    /// or `{"x-not-past": true}` (see [`Self::not_past`]). They are sent to the model
    /// and checked on every write; an unknown field or a pattern that does not compile
    /// fails `build()`.
    pub fn constrain(mut self, field: impl Into<String>, constraints: serde_json::Value) -> Self {
        self.constraints.push((field.into(), constraints));
        self
    }
    /// Refuse a day before today in a date or date-time field (the builder form of
    /// `#[field(not_past)]`): "today" is the agent's [`Self::clock`] in
    /// [`AgentConfig::time_zone`], so a check-in date the model resolved to last year
    /// is asked for again instead of stored.
    pub fn not_past(self, field: impl Into<String>) -> Self {
        self.constrain(field, serde_json::json!({ "x-not-past": true }))
    }
    /// What users say for one of a field's values when the words are not the value
    /// itself (the builder form of `#[field(synonyms(...))]`): `synonyms("guests", 1,
    /// ["just me", "only me"])` lets grounding accept "Just me" as stating one guest,
    /// and the field list in the prompt shows them to the model. Calls add up per value.
    pub fn synonyms<I, S>(
        self,
        field: impl Into<String>,
        value: impl Into<serde_json::Value>,
        phrases: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let key = match value.into() {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => crate::data::ground::number_key(&n),
            other => other.to_string(),
        };
        let phrases: Vec<String> = phrases.into_iter().map(Into::into).collect();
        self.constrain(field, serde_json::json!({ "x-synonyms": { key: phrases } }))
    }
    /// A custom check on a field, run on every write after its schema constraints: `Ok`
    /// with the value to store (return it unchanged, or normalised: trimmed, title-cased;
    /// keep normalisers idempotent), or `Err` with a message the user may be shown. A
    /// model value it refuses is asked for again with the message; a tool's write fails
    /// the tool call; a hook's or dispatch's write fails the turn with
    /// [`crate::error::DataError::Rejected`]. `#[field(validate = path)]` on a `#[data]`
    /// field does the same for flows built with `#[flow]`. An unknown field fails `build()`.
    pub fn validate<T, F>(mut self, field: impl Into<String>, f: F) -> Self
    where
        T: serde::Serialize + serde::de::DeserializeOwned + 'static,
        F: Fn(T) -> Result<T, String> + Send + Sync + 'static,
    {
        self.checks
            .push(crate::data::custom::FieldCheck::typed(field, f));
        self
    }
    /// A claim guard: a model-written reply that matches `pattern` (a regular
    /// expression, e.g. `(?i)\b(booked|confirmed)\b`) needs every field of `requires`
    /// set, checked after the turn's tools and hooks wrote their data. A reply that
    /// claims it without them is rendered again once, told what is not so; if it still
    /// does, its claiming sentences are removed and listed in
    /// [`AgentResponse::withheld_claims`](crate::response::AgentResponse). Verbatim
    /// replies (templates, directives) are code's own text and are not checked. With a
    /// guard, a reply streams once checked rather than as it is generated. A pattern
    /// that does not compile or an unknown field fails `build()`.
    ///
    /// Deprecated: a tool declares the words that state its outcome
    /// ([`crate::tool::Tool::outcome_words`], `#[tool(outcome = [..])]`,
    /// [`crate::tool::FnTool::outcome`]), and one rule checks every model-written reply
    /// against the state (outcomes and field values), with no pattern per agent.
    #[deprecated(
        since = "0.1.0",
        note = "declare the tool's outcome words instead: `#[tool(outcome = [..])]` or `FnTool::outcome`"
    )]
    pub fn guard_claim<I, S>(mut self, pattern: impl Into<String>, requires: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.claims.push((
            pattern.into(),
            requires.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// What the agent does when the user asks for a person (by default the session
    /// is handed over and waits for the host: [`super::HumanHandoff::hand_over`]).
    pub fn human_handoff(mut self, h: super::HumanHandoff) -> Self {
        self.human_handoff = h;
        self
    }

    /// A warning naming the tools that need a person's approval when nothing says who
    /// gives it.
    fn warn_unresolved_approvals(&self) {
        let no_args = serde_json::Value::Object(serde_json::Map::new());
        let mut held: Vec<&str> = self
            .tools
            .iter()
            .chain(self.flows.iter().flat_map(|f| f.tools.iter()))
            .chain(
                self.flows
                    .iter()
                    .flat_map(|f| f.steps.iter().flat_map(|s| s.tools.iter())),
            )
            .filter(|t| t.needs_approval(&no_args))
            .map(|t| t.name())
            .collect();
        held.sort_unstable();
        held.dedup();
        if !held.is_empty() {
            tracing::warn!(
                target: "agent_core::approval",
                tools = %held.join(", "),
                "tools need a person's approval and nothing declares who gives it: their calls wait until `Agent::resolve_approval` decides them; call `AgentBuilder::approvals_resolved()` once the application does, or run them without approval (`McpServer::trusted`, `McpTool::approval(false)`)"
            );
        }
    }

    /// The clock the agent reads (default: the system clock): the date and time in the
    /// prompt, signal cooldowns, session timestamps. Inject a fixed or manual clock in tests
    /// and evals.
    pub fn clock(mut self, c: impl Clock + 'static) -> Self {
        self.clock = Some(Arc::new(c));
        self
    }

    /// Declare that the application decides the calls that wait for a person's
    /// approval ([`crate::approval`]: it calls `Agent::resolve_approval`, or serves the
    /// agent with an operator credential). Without it, `build()` logs a warning when a
    /// tool needs approval (an MCP tool that may change something does by default),
    /// since such calls would wait for ever.
    pub fn approvals_resolved(mut self) -> Self {
        self.approvals_resolved = true;
        self
    }

    /// Check the whole definition and build the agent: every flow, step, branch, tool and
    /// directive target must exist and be consistent. All problems are reported at once in
    /// [`ConfigErrors`], each with how to fix it.
    pub fn build(self) -> Result<Agent<D, C>, ConfigErrors> {
        if !self.approvals_resolved {
            self.warn_unresolved_approvals();
        }
        let mut errs = self.flow_errors;
        let agent_err = |problem: String, help: String| FlowConfigurationError {
            flow: String::new(),
            step: None,
            problem,
            help,
        };
        let Some(provider) = self.provider else {
            return Err(ConfigErrors(vec![agent_err(
                "no provider".into(),
                "call `.provider(..)`; `agent_core::testing::ScriptedProvider` works offline"
                    .into(),
            )]));
        };
        let mut flow_index = HashMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            if flow_index.insert(f.id.to_string(), i).is_some() {
                errs.push(FlowConfigurationError {
                    flow: f.id.to_string(),
                    step: None,
                    problem: format!("duplicate flow id `{}`", f.id),
                    help: "flow ids must be unique within an agent".into(),
                });
            }
        }
        for c in &self.code_flows {
            if flow_index.contains_key(c.id.as_ref())
                || self.code_flows.iter().filter(|o| o.id == c.id).count() > 1
            {
                errs.push(FlowConfigurationError {
                    flow: c.id.to_string(),
                    step: None,
                    problem: format!("duplicate flow id `{}` (code flow)", c.id),
                    help: "flow ids must be unique within an agent, code flows included".into(),
                });
            }
            if c.id.is_empty() {
                errs.push(agent_err(
                    "a code flow has an empty id".into(),
                    "give it an id: `CodeFlow::new(\"tutor\", tutor)`".into(),
                ));
            }
        }
        let mut flow_ids: Vec<String> = self.flows.iter().map(|f| f.id.to_string()).collect();
        flow_ids.extend(self.code_flows.iter().map(|f| f.id.to_string()));
        if let Fallback::Flow(id) = self.router.fallback()
            && !flow_ids.contains(id)
        {
            errs.push(agent_err(
                format!("router fallback `{id}` is not a registered flow"),
                suggest(id, &flow_ids, "flows"),
            ));
        }
        for f in &self.flows {
            for (step, target, target_step) in f.flow_targets() {
                if target_step.is_none() && self.code_flows.iter().any(|c| c.id.as_ref() == target)
                {
                    continue;
                }
                match self.flows.iter().find(|g| g.id.as_ref() == target) {
                    None => errs.push(FlowConfigurationError {
                        flow: f.id.to_string(),
                        step: step.clone(),
                        problem: format!(
                            "target `{target}` is neither a step of this flow nor a registered flow"
                        ),
                        help: match &step {
                            Some(_) => format!(
                                "{}; steps of `{}`: {}",
                                suggest(&target, &flow_ids, "flows"),
                                f.id,
                                f.step_ids().join(", ")
                            ),
                            None => suggest(&target, &flow_ids, "flows"),
                        },
                    }),
                    Some(g) => {
                        if let Some(ts) = target_step
                            && g.step(&ts).is_none()
                        {
                            errs.push(FlowConfigurationError {
                                flow: f.id.to_string(),
                                step,
                                problem: format!(
                                    "target step `{ts}` does not exist in flow `{target}`"
                                ),
                                help: suggest(&ts, &g.step_ids(), "steps"),
                            });
                        }
                    }
                }
            }
        }
        for f in &self.flows {
            for st in &f.steps {
                for t in &st.must_call {
                    let offered = st
                        .tools
                        .iter()
                        .chain(&f.tools)
                        .chain(&self.tools)
                        .any(|x| x.name() == t.as_ref());
                    if !offered {
                        let names: Vec<String> = st
                            .tools
                            .iter()
                            .chain(&f.tools)
                            .chain(&self.tools)
                            .map(|x| x.name().to_owned())
                            .collect();
                        errs.push(FlowConfigurationError {
                            flow: f.id.to_string(),
                            step: Some(st.id.to_string()),
                            problem: format!(
                                "`requires_tool({t})`: no tool `{t}` is offered at this step"
                            ),
                            help: suggest(t, &names, "tools"),
                        });
                    }
                }
            }
        }
        let mut names = HashSet::new();
        for t in &self.tools {
            check_tool(t.as_ref(), "", None, &mut errs);
            if !names.insert(t.name().to_owned()) {
                errs.push(agent_err(
                    format!("duplicate agent tool `{}`", t.name()),
                    "tool names must be unique".into(),
                ));
            }
        }
        if self.store.as_ref().is_some_and(|s| !s.supports_journal()) {
            errs.extend(check_journal(&self.tools, &self.flows));
        }
        errs.extend(check_config(&self.config));
        let mut sig_ids = HashSet::new();
        for s in &self.signals {
            if !sig_ids.insert(s.id.clone()) {
                errs.push(agent_err(
                    format!("duplicate signal id `{}`", s.id),
                    "signal ids must be unique".into(),
                ));
            }
            if s.handler.is_none() {
                errs.push(agent_err(
                    format!("signal `{}` has no handler", s.id),
                    "call `.handle(..)`".into(),
                ));
            }
        }
        if !errs.is_empty() {
            return Err(ConfigErrors(errs));
        }
        let mut signals = self.signals;
        // Higher priority first; stable, so ties keep declaration order.
        signals.sort_by_key(|s| std::cmp::Reverse(s.priority));
        let mut flows = self.flows;
        for (i, f) in flows.iter_mut().enumerate() {
            f.index = i;
        }
        crate::flow::assign_owned_fields(&mut flows);
        let section = crate::prompt::render_agent_section(
            &self.name,
            self.persona.as_deref(),
            self.goal.as_deref(),
            &self.instructions,
            &self.glossary,
            &self.knowledge,
        );
        let route_descs = flows
            .iter()
            .map(|f| crate::prompt::route_description(&f.title, f.when.as_deref(), &f.description))
            .collect();
        let code_route_descs = self
            .code_flows
            .iter()
            .map(|f| f.route_description())
            .collect();
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let mut schema = DataSchema::of::<D>()
            .with_max_value_bytes(self.config.max_value_bytes)
            .with_model_string_chars(self.config.max_model_string_chars)
            .with_calendar(crate::clock::Calendar::new(
                clock.clone(),
                self.config.time_zone.clone(),
            ));
        for (field, c) in &self.constraints {
            if let Err(e) = schema.constrain(field, c) {
                errs.push(agent_err(
                    format!("cannot constrain `{field}`: {e}"),
                    suggest(
                        field,
                        &schema
                            .fields()
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                        "fields",
                    ),
                ));
            }
        }
        // The data type's own checks come with its `#[flow]`s (every flow of the agent
        // shares the type, so the first flow that carries them has them all), then the
        // builder's.
        let type_checks = flows
            .iter()
            .find(|f| !f.field_checks.is_empty())
            .map(|f| f.field_checks.clone())
            .unwrap_or_default();
        for check in type_checks.into_iter().chain(self.checks) {
            let field = check.field.clone();
            if let Err(e) = schema.add_check(check) {
                errs.push(agent_err(
                    format!("cannot validate `{field}`: {e}"),
                    suggest(
                        &field,
                        &schema
                            .fields()
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                        "fields",
                    ),
                ));
            }
        }
        // Each flow's static prompt sections are rendered here, once, from the agent's
        // schema (with the builder's constraints): the prompt layer sits above flows.
        for f in &mut flows {
            crate::prompt::render_flow_sections(f, &schema);
        }
        let switches =
            crate::prompt::render_switch_sections(&flows, &schema, self.config.preview_handoffs);
        for (p, e) in schema.invalid_patterns() {
            errs.push(agent_err(
                format!("the field pattern `{p}` does not compile: {e}"),
                "fix the regular expression in `#[field(pattern = ...)]` or `constrain`".into(),
            ));
        }
        let mut claim_guards = Vec::with_capacity(self.claims.len());
        for (pattern, requires) in self.claims {
            let known: Vec<String> = schema.fields().iter().map(|f| f.to_string()).collect();
            let mut ok = true;
            for f in requires.iter().filter(|f| schema.index_of(f).is_none()) {
                ok = false;
                errs.push(agent_err(
                    format!(
                        "the claim guard `{pattern}` requires `{f}`, which is not a data field"
                    ),
                    suggest(f, &known, "fields"),
                ));
            }
            if requires.is_empty() {
                ok = false;
                errs.push(agent_err(
                    format!("the claim guard `{pattern}` requires no field"),
                    "name the fields that must be set before a reply may say it".into(),
                ));
            }
            match regex::Regex::new(&pattern) {
                Ok(re) if ok => claim_guards.push(crate::claim::ClaimGuard {
                    pattern: re,
                    requires: requires.into_iter().map(Arc::from).collect(),
                }),
                Ok(_) => {}
                Err(e) => errs.push(agent_err(
                    format!("the claim guard pattern `{pattern}` does not compile: {e}"),
                    "fix the regular expression passed to `guard_claim`".into(),
                )),
            }
        }
        // The outcomes a reply may state only when their tool succeeded: every tool
        // offered anywhere, once by name.
        let mut outcomes: Vec<crate::claim::OutcomeTool> = Vec::new();
        let offered = self.tools.iter().chain(flows.iter().flat_map(|f| {
            f.tools
                .iter()
                .chain(f.steps.iter().flat_map(|s| s.tools.iter()))
        }));
        for t in offered {
            if !outcomes.iter().any(|o| o.tool.as_ref() == t.name())
                && let Some(o) = crate::claim::OutcomeTool::of(t.name(), t.outcome_words())
            {
                outcomes.push(o);
            }
        }
        if let super::HumanHandoff::Flow(id) = &self.human_handoff
            && !flow_ids.contains(id)
        {
            errs.push(agent_err(
                format!("the human handoff flow `{id}` is not a registered flow"),
                suggest(id, &flow_ids, "flows"),
            ));
        }
        if !errs.is_empty() {
            return Err(ConfigErrors(errs));
        }
        let schema = Arc::new(schema);
        // Every new session starts from `D::default()`: its presence set is the same.
        let fresh_present = schema.present(&D::default());
        let lease_holder = lease_holder(&self.name);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                name: self.name,
                flows: flows.into_iter().map(Arc::new).collect(),
                code_flows: self.code_flows.into_iter().map(Arc::new).collect(),
                router: self.router,
                on_response: self.on_response,
                on_unknown_outcome: self.on_unknown_outcome,
                on_stale_once_result: self.on_stale_once_result,
                switch_sections: switches.sections,
                switch_ids: switches.ids,
                switch_fields: switches.fields,
                flow_index,
                tools: self.tools,
                signals,
                instructions: self.instructions,
                on_enter: self.on_enter,
                migrate: self.migrate,
                provider,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                context: self.context.unwrap_or_default(),
                config: self.config,
                clock,
                schema,
                claim_guards,
                outcomes,
                human_handoff: self.human_handoff,
                fresh_present,
                route_descs,
                code_route_descs,
                prompt_len: std::sync::atomic::AtomicUsize::new(0),
                section,
                lease_holder,
                locks: Mutex::new(FxHashMap::default()),
                schema_cache: Mutex::new(FxHashMap::default()),
                read_backs: crate::reply::ReadBackCache::default(),
                decoded: Mutex::new(FxHashMap::default()),
            }),
        })
    }
}
