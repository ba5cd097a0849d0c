//! Flows: graphs of steps with their own required/optional data, hooks, tools and
//! instructions. `FlowBuilder::build` checks everything that can be checked without the
//! other flows and reports all problems of the flow at once.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use crate::branch::Target;
use crate::data::{AgentData, DataSchema, Patch};
use crate::directive::{Directive, Position};
use crate::error::{ConfigErrors, FlowConfigurationError};
use crate::hook::{Cx, NotifyHook, PostHook, PreHook, Predicate};
use crate::instruction::Instruction;
use crate::step::{Step, StepKind};
use crate::tool::Tool;

/// Flow-level hooks.
pub struct FlowHooks<D, C> {
    pub(crate) on_enter: Option<Arc<dyn PreHook<D, C>>>,
    pub(crate) on_complete: Option<Arc<dyn PostHook<D, C>>>,
    pub(crate) on_exit: Option<Arc<dyn NotifyHook<D, C>>>,
    pub(crate) on_data_update: Option<Arc<dyn NotifyHook<D, C>>>,
    pub(crate) on_context_update: Option<Arc<dyn NotifyHook<D, C>>>,
}

impl<D, C> Default for FlowHooks<D, C> {
    fn default() -> Self {
        Self {
            on_enter: None,
            on_complete: None,
            on_exit: None,
            on_data_update: None,
            on_context_update: None,
        }
    }
}

/// A validated flow.
pub struct Flow<D, C> {
    pub(crate) id: Arc<str>,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) when: Option<String>,
    pub(crate) if_: Option<Predicate<D, C>>,
    pub(crate) required: Vec<Arc<str>>,
    pub(crate) optional: Vec<Arc<str>>,
    pub(crate) required_idx: Vec<usize>,
    /// Every field the model may write while this flow is active.
    pub(crate) collectable: Vec<Arc<str>>,
    pub(crate) collectable_idx: Vec<usize>,
    pub(crate) initial_data: Option<Patch>,
    pub(crate) reentrant: bool,
    /// The fields this flow owns (only it collects or requires them), with the values
    /// a new session has: written back when the flow is entered again after it
    /// completed, so it starts over (set by the agent builder, which knows the others).
    pub(crate) owned_reset: Patch,
    pub(crate) on_complete: Option<Directive>,
    /// Custom field checks of the data type (`#[field(validate = ..)]`), which the agent
    /// installs in its schema.
    pub(crate) field_checks: Vec<crate::data::custom::FieldCheck>,
    pub(crate) corrections: Corrections,
    pub(crate) hooks: FlowHooks<D, C>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) instructions: Vec<Instruction<D, C>>,
    pub(crate) steps: Vec<Step<D, C>>,
    pub(crate) step_index: crate::fxhash::FxHashMap<Arc<str>, usize>,
    /// Rendered once at build: the flow's prompt section.
    pub(crate) section: String,
    /// Rendered once at build: the fields the flow collects and their docs (static, in
    /// the system prompt; whether a call reads them from the message is per-call state).
    pub(crate) extract_section: String,
    /// Position in the agent's registry (set by the agent builder).
    pub(crate) index: usize,
    /// Structural hash of the definition (steps, shapes, fields, targets): sessions
    /// record it to detect flows that changed under them.
    pub(crate) version: String,
}

impl<D, C> fmt::Debug for Flow<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow")
            .field("id", &self.id)
            .field("title", &self.title)
            .field("required", &self.required)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl<D, C> Flow<D, C> {
    /// Start a flow definition.
    pub fn builder(id: impl Into<String>) -> FlowBuilder<D, C> {
        FlowBuilder {
            id: id.into(),
            title: None,
            description: String::new(),
            when: None,
            if_: None,
            required: Vec::new(),
            optional: Vec::new(),
            initial_data: None,
            reentrant: false,
            on_complete: None,
            field_checks: Vec::new(),
            corrections: Corrections::default(),
            hooks: FlowHooks::default(),
            tools: Vec::new(),
            instructions: Vec::new(),
            steps: Vec::new(),
        }
    }
    /// Flow id.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Title.
    pub fn title(&self) -> &str {
        &self.title
    }
    /// Structural version (a hash of steps, shapes, fields and targets).
    pub fn version(&self) -> &str {
        &self.version
    }
    /// Fields required for completion.
    pub fn required(&self) -> &[Arc<str>] {
        &self.required
    }
    /// Optional fields the model may write.
    pub fn optional(&self) -> &[Arc<str>] {
        &self.optional
    }
    /// Everything the model may write while the flow is active.
    pub fn collectable(&self) -> &[Arc<str>] {
        &self.collectable
    }
    /// Steps in declaration order.
    pub fn steps(&self) -> &[Step<D, C>] {
        &self.steps
    }
    /// A step by id.
    pub fn step(&self, id: &str) -> Option<&Step<D, C>> {
        self.step_index.get(id).map(|&i| &self.steps[i])
    }
    /// The implicit fork after step `idx` (the walk's rule, which the graph draws too):
    /// nothing after an `end` step; otherwise the following conditional steps (`if` or
    /// `when`) up to and including the first unconditional one.
    pub(crate) fn successors(&self, idx: usize) -> Vec<usize> {
        let mut out = Vec::new();
        if self.steps[idx].end {
            return out;
        }
        for (j, s) in self.steps.iter().enumerate().skip(idx + 1) {
            out.push(j);
            if s.if_.is_none() && s.when.is_none() {
                break;
            }
        }
        out
    }
    pub(crate) fn step_pos(&self, id: &str) -> Option<usize> {
        self.step_index.get(id).copied()
    }
    pub(crate) fn step_ids(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.id.to_string()).collect()
    }
    /// The first step whose `skip` does not hold is where the flow is entered.
    pub(crate) fn entry(&self) -> usize {
        0
    }
    /// Fields declared by the flow (for `reset` with `clear_data`).
    pub(crate) fn declared_fields(&self) -> &[Arc<str>] {
        &self.collectable
    }
    pub(crate) fn is_eligible(&self, cx: &Cx<'_, D, C>) -> bool {
        self.if_.as_ref().is_none_or(|p| {
            crate::pipeline::guard::test(p, cx, || format!("`if` predicate of flow `{}`", self.id))
        })
    }
    /// Every flow id this flow can reach by a static target (branch flows, directive
    /// targets, `on_complete`): checked against the registry by the agent builder.
    pub(crate) fn flow_targets(&self) -> Vec<(Option<String>, String, Option<String>)> {
        let mut out = Vec::new();
        fn from_directive(
            d: &Directive,
            step: Option<String>,
            out: &mut Vec<(Option<String>, String, Option<String>)>,
        ) {
            match &d.position {
                Some(Position::GoTo(g)) => out.push((step, g.flow.clone(), None)),
                Some(Position::GoToStep(g)) => {
                    if let Some(f) = &g.flow {
                        out.push((step, f.clone(), Some(g.step.clone())));
                    }
                }
                Some(Position::Complete(c)) => {
                    if let Some(n) = &c.next {
                        from_directive(n, step, out);
                    }
                }
                _ => {}
            }
        }
        for s in &self.steps {
            for b in s.branch_table() {
                match &b.then {
                    Target::Flow(f) | Target::Id(f) => {
                        out.push((Some(s.id.to_string()), f.clone(), None))
                    }
                    Target::Directive(d) => from_directive(d, Some(s.id.to_string()), &mut out),
                    Target::Step(_) => {}
                }
            }
        }
        if let Some(d) = &self.on_complete {
            from_directive(d, None, &mut out);
        }
        out
    }
}

/// Anything the agent builder accepts as a flow: a built flow, or the result of
/// building one (its configuration errors are then reported by `AgentBuilder::build`).
pub trait IntoFlow<D, C> {
    /// The flow, or why it is invalid.
    fn into_flow(self) -> Result<Flow<D, C>, ConfigErrors>;
}

impl<D, C> IntoFlow<D, C> for Flow<D, C> {
    fn into_flow(self) -> Result<Flow<D, C>, ConfigErrors> {
        Ok(self)
    }
}

impl<D, C> IntoFlow<D, C> for Result<Flow<D, C>, ConfigErrors> {
    fn into_flow(self) -> Result<Flow<D, C>, ConfigErrors> {
        self
    }
}

/// What a correction of a completed flow's field does, within
/// [`crate::AgentConfig::correction_window`] turns of its completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Corrections {
    /// Nothing changes; the reply tells the user the completed task cannot change any
    /// more (a booking made is made). The default: no completed work changes by a
    /// model's reading of a message.
    #[default]
    Refuse,
    /// The flow reopens with its fields kept and the corrected one changed (steps that
    /// `depends_on` it ask again), and runs on from there, so its end step (and a tool
    /// it `requires_tool`) runs again with the new value.
    Reopen,
}

/// Builder for [`Flow`].
pub struct FlowBuilder<D, C> {
    id: String,
    title: Option<String>,
    description: String,
    when: Option<String>,
    if_: Option<Predicate<D, C>>,
    required: Vec<String>,
    optional: Vec<String>,
    initial_data: Option<Patch>,
    reentrant: bool,
    on_complete: Option<Directive>,
    field_checks: Vec<crate::data::custom::FieldCheck>,
    corrections: Corrections,
    hooks: FlowHooks<D, C>,
    tools: Vec<Arc<dyn Tool<D, C>>>,
    instructions: Vec<Instruction<D, C>>,
    steps: Vec<Step<D, C>>,
}

impl<D: AgentData, C> FlowBuilder<D, C> {
    /// Human title (defaults to the id).
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }
    /// Description (shown to the router).
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }
    /// Model-judged routing condition ("the user wants to book a hotel").
    pub fn when(mut self, c: impl Into<String>) -> Self {
        self.when = Some(c.into());
        self
    }
    /// Code eligibility condition.
    pub fn if_(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.if_ = Some(Arc::new(p));
        self
    }
    /// Fields that must be present for the flow to complete.
    pub fn required<I: IntoIterator<Item = S>, S: Into<String>>(mut self, f: I) -> Self {
        self.required.extend(f.into_iter().map(Into::into));
        self
    }
    /// Fields the model may also write while the flow is active.
    pub fn optional<I: IntoIterator<Item = S>, S: Into<String>>(mut self, f: I) -> Self {
        self.optional.extend(f.into_iter().map(Into::into));
        self
    }
    /// Data written when the flow is entered.
    pub fn initial_data(mut self, p: Patch) -> Self {
        self.initial_data = Some(p);
        self
    }
    /// May be entered again after it completed.
    pub fn reentrant(mut self) -> Self {
        self.reentrant = true;
        self
    }
    /// Directive applied when the flow completes (typically `Directive::go_to(..)`).
    pub fn on_complete(mut self, d: Directive) -> Self {
        self.on_complete = Some(d);
        self
    }
    /// Hook run when the flow is entered.
    pub fn on_enter(mut self, h: impl PreHook<D, C> + 'static) -> Self {
        self.hooks.on_enter = Some(Arc::new(h));
        self
    }
    /// Hook run when the flow completes (its directive joins the post-LLM bus).
    pub fn on_complete_hook(mut self, h: impl PostHook<D, C> + 'static) -> Self {
        self.hooks.on_complete = Some(Arc::new(h));
        self
    }
    /// Hook run when the conversation leaves the flow.
    pub fn on_exit(mut self, h: impl NotifyHook<D, C> + 'static) -> Self {
        self.hooks.on_exit = Some(Arc::new(h));
        self
    }
    /// Hook run after data changed while the flow is active.
    pub fn on_data_update(mut self, h: impl NotifyHook<D, C> + 'static) -> Self {
        self.hooks.on_data_update = Some(Arc::new(h));
        self
    }
    /// Hook run after context changed while the flow is active.
    pub fn on_context_update(mut self, h: impl NotifyHook<D, C> + 'static) -> Self {
        self.hooks.on_context_update = Some(Arc::new(h));
        self
    }
    /// Offer a tool in every step of the flow.
    pub fn tool(mut self, t: impl crate::tool::IntoTool<D, C>) -> Self {
        self.tools.push(t.into_tool());
        self
    }
    /// Add a flow-scoped instruction.
    pub fn instruction(mut self, i: Instruction<D, C>) -> Self {
        self.instructions.push(i);
        self
    }
    /// What a correction of this flow's fields does after it completed (default
    /// [`Corrections::Refuse`]).
    pub fn corrections(mut self, c: Corrections) -> Self {
        self.corrections = c;
        self
    }
    /// Custom checks of the data's fields (what `#[flow]` passes from the `#[data]`
    /// type's `#[field(validate = ..)]`); the agent runs them on every write.
    pub fn checks(
        mut self,
        checks: impl IntoIterator<Item = crate::data::custom::FieldCheck>,
    ) -> Self {
        self.field_checks.extend(checks);
        self
    }
    /// Add a step (declaration order is the linear order).
    pub fn step(mut self, s: Step<D, C>) -> Self {
        self.steps.push(s);
        self
    }

    /// Validate and build. Returns every problem found.
    pub fn build(self) -> Result<Flow<D, C>, ConfigErrors> {
        let schema = Arc::new(DataSchema::of::<D>());
        let mut errs: Vec<FlowConfigurationError> = Vec::new();
        let fid = self.id.clone();
        let err = |step: Option<&str>, problem: String, help: String| FlowConfigurationError {
            flow: fid.clone(),
            step: step.map(str::to_owned),
            problem,
            help,
        };
        if self.id.trim().is_empty() {
            errs.push(err(
                None,
                "flow id is empty".into(),
                "give the flow an id".into(),
            ));
        }
        if self.steps.is_empty() {
            errs.push(err(
                None,
                "flow has no steps".into(),
                "add at least one step with `.step(..)`".into(),
            ));
        }
        let known_fields: Vec<String> = schema.fields().iter().map(|f| f.to_string()).collect();
        let check_field = |errs: &mut Vec<FlowConfigurationError>,
                           step: Option<&str>,
                           key: &str,
                           f: &str|
         -> Option<usize> {
            match schema.index_of(f) {
                Some(i) => Some(i),
                None => {
                    errs.push(err(
                        step,
                        format!("`{key}` names unknown field `{f}`"),
                        suggest(f, &known_fields, "fields"),
                    ));
                    None
                }
            }
        };
        let mut required_idx = Vec::new();
        for f in &self.required {
            if let Some(i) = check_field(&mut errs, None, "required", f) {
                required_idx.push(i);
            }
        }
        for f in &self.optional {
            check_field(&mut errs, None, "optional", f);
        }
        if let Some(p) = &self.initial_data {
            for k in p.keys() {
                check_field(&mut errs, None, "initial_data", k);
            }
        }

        let mut steps = self.steps;
        let mut step_index = crate::fxhash::FxHashMap::default();
        let step_ids: Vec<String> = steps.iter().map(|s| s.id.to_string()).collect();
        for (i, s) in steps.iter().enumerate() {
            if s.id.trim().is_empty() {
                errs.push(err(
                    None,
                    format!("step #{i} has an empty id"),
                    "give every step an id".into(),
                ));
            }
            if step_index.insert(s.id.clone(), i).is_some() {
                errs.push(err(
                    Some(&s.id),
                    format!("duplicate step id `{}`", s.id),
                    "step ids must be unique within a flow".into(),
                ));
            }
        }
        for s in &mut steps {
            let sid = s.id.clone();
            let mut cidx = Vec::new();
            for f in &s.collect {
                if let Some(i) = check_field(&mut errs, Some(&sid), "collect", f) {
                    cidx.push(i);
                }
            }
            let mut ridx = Vec::new();
            for f in &s.requires {
                if let Some(i) = check_field(&mut errs, Some(&sid), "requires", f) {
                    ridx.push(i);
                }
            }
            for f in &s.depends_on {
                check_field(&mut errs, Some(&sid), "depends_on", f);
            }
            if !s.depends_on.is_empty() && s.collect.is_empty() {
                errs.push(err(
                    Some(&sid),
                    "`depends_on` on a step that collects nothing".into(),
                    "a correction clears what the step collects: add `collect(..)` or remove `depends_on`".into(),
                ));
            }
            if let Some(t) = &s.ask {
                if s.kind == StepKind::Model {
                    for (msg, hint) in
                        template_errors(t, "ask", &s.requires, &self.required, &known_fields)
                    {
                        errs.push(err(Some(&sid), msg, hint));
                    }
                } else {
                    errs.push(err(
                        Some(&sid),
                        "`ask` on a step the model does not render".into(),
                        "`ask` writes the question of a model step; an `auto` step asks nothing and a `reply` step has its text".into(),
                    ));
                }
            }
            s.collect_idx = cidx;
            s.requires_idx = ridx;
            match &s.kind {
                StepKind::Auto => {
                    for (what, bad) in [
                        ("prompt", s.prompt.is_some()),
                        ("collect", !s.collect.is_empty()),
                        ("tools", !s.tools.is_empty()),
                    ] {
                        if bad {
                            errs.push(err(
                                Some(&sid),
                                format!("an `auto` step cannot have `{what}`"),
                                "auto steps make no model call; use a model step".into(),
                            ));
                        }
                    }
                    if s.branch_table().iter().any(|b| !b.when.is_empty()) {
                        errs.push(err(
                            Some(&sid),
                            "an `auto` step cannot have `when` branches".into(),
                            "auto steps have no model call to judge them; use `if` predicates"
                                .into(),
                        ));
                    }
                }
                StepKind::Reply(text) => {
                    for (msg, hint) in
                        template_errors(text, "reply", &s.requires, &self.required, &known_fields)
                    {
                        errs.push(err(Some(&sid), msg, hint));
                    }
                    for (what, bad) in [
                        ("prompt", s.prompt.is_some()),
                        ("collect", !s.collect.is_empty()),
                        ("tools", !s.tools.is_empty()),
                    ] {
                        if bad {
                            errs.push(err(
                                Some(&sid),
                                format!("a `reply` step cannot have `{what}`"),
                                "reply steps send a fixed message; use a model step".into(),
                            ));
                        }
                    }
                }
                StepKind::Model => {}
            }
            if let Some(table) = &mut s.branches {
                if table.is_empty() {
                    errs.push(err(
                        Some(&sid),
                        "empty branch table".into(),
                        "add at least one entry or remove `branches`".into(),
                    ));
                }
                let n = table.len();
                for (i, b) in table.iter_mut().enumerate() {
                    if b.is_unconditional() && i + 1 < n {
                        errs.push(err(
                            Some(&sid),
                            format!("unconditional branch #{} is not last", i + 1),
                            "entries after it can never be reached; move it to the end".into(),
                        ));
                    }
                    if let Target::Id(id) = &b.then
                        && step_index.contains_key(id.as_str())
                    {
                        b.then = Target::Step(id.clone());
                    }
                    match &b.then {
                        Target::Step(t) if !step_index.contains_key(t.as_str()) => {
                            errs.push(err(
                                Some(&sid),
                                format!("branch targets unknown step `{t}`"),
                                suggest(t, &step_ids, "steps"),
                            ));
                        }
                        Target::Directive(d) => {
                            if let Err(e) = d.validate() {
                                errs.push(err(
                                    Some(&sid),
                                    format!("branch directive: {e}"),
                                    String::new(),
                                ));
                            }
                            if let Some(Position::GoToStep(g)) = &d.position
                                && g.flow.is_none()
                                && !step_index.contains_key(g.step.as_str())
                            {
                                errs.push(err(
                                    Some(&sid),
                                    format!("branch directive targets unknown step `{}`", g.step),
                                    suggest(&g.step, &step_ids, "steps"),
                                ));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some(d) = &self.on_complete
            && let Err(e) = d.validate()
        {
            errs.push(err(
                None,
                format!("on_complete directive: {e}"),
                String::new(),
            ));
        }
        if self.on_complete.is_some() && self.hooks.on_complete.is_some() {
            // Two sources of the completion directive would merge silently, the
            // hook's position overriding the declared one.
            errs.push(err(
                None,
                "both `on_complete` (a directive) and `on_complete_hook` are set".into(),
                "keep one: return the directive from the hook, e.g. `Directive::go_to(..)`".into(),
            ));
        }
        let mut seen = HashSet::new();
        for t in &self.tools {
            crate::agent::check_tool(t.as_ref(), &fid, None, &mut errs);
            if !seen.insert(t.name().to_owned()) {
                errs.push(err(
                    None,
                    format!("duplicate flow tool `{}`", t.name()),
                    "tool names must be unique within a flow".into(),
                ));
            }
        }
        for s in &steps {
            let mut step_seen = HashSet::new();
            for t in &s.tools {
                crate::agent::check_tool(t.as_ref(), &fid, Some(&s.id), &mut errs);
                if !step_seen.insert(t.name().to_owned()) {
                    errs.push(err(
                        Some(&s.id),
                        format!("duplicate step tool `{}`", t.name()),
                        "tool names must be unique within a step".into(),
                    ));
                }
            }
        }
        for cycle in crate::graph::auto_cycles(&steps, &step_index) {
            let names: Vec<String> = cycle.iter().map(|s| format!("`{s}`")).collect();
            errs.push(err(
                cycle.first().map(String::as_str),
                format!("`auto` cycle with no exit: {} only lead to each other", names.join(" → ")),
                "a turn entering them loops until the auto-step cap; add a branch to a model step or another flow, or mark one `end`".into(),
            ));
        }
        if !errs.is_empty() {
            return Err(ConfigErrors(errs));
        }

        // Everything the model may write while the flow is active.
        let mut collectable: Vec<Arc<str>> = Vec::new();
        let mut push = |f: &str| {
            if !collectable.iter().any(|c| c.as_ref() == f) {
                collectable.push(Arc::from(f));
            }
        };
        for f in self.required.iter().chain(self.optional.iter()) {
            push(f);
        }
        for s in &steps {
            for f in &s.collect {
                push(f);
            }
        }
        let collectable_idx = collectable
            .iter()
            .filter_map(|f| schema.index_of(f))
            .collect();
        let title = self.title.unwrap_or_else(|| self.id.clone());
        let mut flow = Flow {
            id: Arc::from(self.id),
            title,
            description: self.description,
            when: self.when,
            if_: self.if_,
            required: self
                .required
                .iter()
                .map(|s| Arc::from(s.as_str()))
                .collect(),
            optional: self
                .optional
                .iter()
                .map(|s| Arc::from(s.as_str()))
                .collect(),
            required_idx,
            collectable,
            collectable_idx,
            initial_data: self.initial_data,
            reentrant: self.reentrant,
            owned_reset: Patch::new(),
            on_complete: self.on_complete,
            field_checks: self.field_checks,
            corrections: self.corrections,
            hooks: self.hooks,
            tools: self.tools,
            instructions: self.instructions,
            steps,
            step_index,
            section: String::new(),
            extract_section: String::new(),
            index: 0,
            version: String::new(),
        };
        flow.version = structural_version(&flow);
        crate::prompt::render_flow_sections(&mut flow, &schema);
        Ok(flow)
    }
}

/// Give each flow the fields it owns: those it collects or requires (flow `required`
/// and `optional`, step `collect` and `requires`) that no other registered flow collects
/// or requires, each with its value in `D::default()`. Computed once, at agent build.
pub(crate) fn assign_owned_fields<D: AgentData, C>(flows: &mut [Flow<D, C>]) {
    let fields_of = |f: &Flow<D, C>| -> HashSet<Arc<str>> {
        f.collectable
            .iter()
            .cloned()
            .chain(f.steps.iter().flat_map(|s| s.requires.iter().cloned()))
            .collect()
    };
    let all: Vec<HashSet<Arc<str>>> = flows.iter().map(fields_of).collect();
    let defaults = match serde_json::to_value(D::default()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => Patch::new(),
    };
    for (i, flow) in flows.iter_mut().enumerate() {
        let mut owned: Vec<&Arc<str>> = all[i]
            .iter()
            .filter(|f| {
                all.iter()
                    .enumerate()
                    .all(|(j, o)| j == i || !o.contains(*f))
            })
            .collect();
        owned.sort();
        flow.owned_reset = owned
            .into_iter()
            .map(|f| {
                let v = defaults.get(f.as_ref()).cloned();
                (f.to_string(), v.unwrap_or(serde_json::Value::Null))
            })
            .collect();
    }
}

/// A stable hash of what a stored session depends on: step ids and order, shapes,
/// collected and required fields, terminal markers and branch targets.
fn structural_version<D, C>(flow: &Flow<D, C>) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = crate::fxhash::FxHasher::default();
    flow.id.hash(&mut h);
    for f in flow.required.iter().chain(flow.optional.iter()) {
        f.hash(&mut h);
    }
    for s in &flow.steps {
        s.id.hash(&mut h);
        format!("{:?}", s.kind).hash(&mut h);
        s.end.hash(&mut h);
        for f in s.collect.iter().chain(s.requires.iter()) {
            f.hash(&mut h);
        }
        for b in s.branch_table() {
            format!("{:?}", b.then).hash(&mut h);
        }
    }
    format!("{:016x}", h.finish())
}

/// "did you mean `x`?" plus the list of valid choices.
pub(crate) fn suggest(bad: &str, known: &[String], what: &str) -> String {
    let best = known
        .iter()
        .map(|k| (distance(bad, k), k))
        .filter(|(d, k)| *d <= (k.len().max(bad.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d);
    let list = if known.is_empty() {
        "none".to_string()
    } else {
        known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match best {
        Some((_, k)) => format!("did you mean `{k}`? known {what}: {list}"),
        None => format!("known {what}: {list}"),
    }
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The problems of a `{field}` template (a `reply` step's text, a step's `ask`): its
/// syntax, and each placeholder a data field present at the step (in its `requires` or
/// the flow's `required`), as (message, hint) pairs.
fn template_errors(
    text: &str,
    what: &str,
    requires: &[Arc<str>],
    required: &[String],
    known_fields: &[String],
) -> Vec<(String, String)> {
    let names = match crate::template::placeholders(text) {
        Ok(names) => names,
        Err(why) => {
            return vec![(
                format!("the {what} template is malformed: {why}"),
                "placeholders are `{field}`; `{{` and `}}` write braces".into(),
            )];
        }
    };
    let mut out = Vec::new();
    for name in names {
        let present =
            requires.iter().any(|f| f.as_ref() == name) || required.iter().any(|f| f == name);
        if !known_fields.iter().any(|f| f == name) {
            out.push((
                format!("the {what} template names `{{{name}}}`, which is not a data field"),
                suggest(name, known_fields, "fields"),
            ));
        } else if !present {
            out.push((
                format!("the {what} template names `{{{name}}}`, which may be empty at this step"),
                format!("add `{name}` to the step's `requires` or the flow's `required`"),
            ));
        }
    }
    out
}
