//! Building a flow at run time, with every check that needs no other flow, reported
//! together.

use std::collections::HashSet;
use std::sync::Arc;

use crate::branch::Target;
use crate::data::{AgentData, DataSchema, Patch};
use crate::directive::{Directive, Position};
use crate::error::{ConfigErrors, FlowConfigurationError};
use crate::hook::{Cx, NotifyHook, PostHook, PreHook, Predicate};
use crate::instruction::Instruction;
use crate::step::{Step, StepKind};
use crate::tool::Tool;

use super::check::{structural_version, suggest, template_errors};
use super::{Corrections, Flow, FlowHooks, Interruption};

/// Builds a [`Flow`] step by step (`Flow::builder(id)`), the runtime form of `#[flow]` for
/// flows defined in code or loaded from configuration. `build()` validates it and reports
/// every problem at once.
pub struct FlowBuilder<D, C> {
    pub(super) id: String,
    pub(super) title: Option<String>,
    pub(super) description: String,
    pub(super) when: Option<String>,
    pub(super) if_: Option<Predicate<D, C>>,
    pub(super) required: Vec<String>,
    pub(super) optional: Vec<String>,
    pub(super) initial_data: Option<Patch>,
    pub(super) reentrant: bool,
    pub(super) on_complete: Option<Directive>,
    pub(super) field_checks: Vec<crate::data::custom::FieldCheck>,
    pub(super) corrections: Corrections,
    pub(super) interrupted: Interruption,
    pub(super) cancel_clears: Vec<String>,
    pub(super) cancel_after_tool: Option<String>,
    pub(super) hooks: FlowHooks<D, C>,
    pub(super) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(super) instructions: Vec<Instruction<D, C>>,
    pub(super) steps: Vec<Step<D, C>>,
}

impl<D: AgentData, C> FlowBuilder<D, C> {
    /// The title shown to the router and in diagrams (defaults to the id).
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = Some(t.into());
        self
    }
    /// A description of what the flow does, shown to the router beside the title, to tell
    /// flows apart.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }
    /// Model-judged routing condition ("the user wants to book a hotel").
    pub fn when(mut self, c: impl Into<String>) -> Self {
        self.when = Some(c.into());
        self
    }
    /// Make the flow eligible for routing only when the code predicate holds (checked before
    /// any model call; a flow whose predicate fails is never offered to the router).
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
    /// A flow it moves to speaks in the same turn: its first question follows the
    /// completing flow's message (from the step's `ask` template when it has one,
    /// otherwise one more model call), and the user's next message answers it.
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
    /// What this flow does when the model starts another one while it is under way
    /// (default [`Interruption::Resume`]).
    pub fn interrupted(mut self, i: Interruption) -> Self {
        self.interrupted = i;
        self
    }
    /// Fields a cancel of this flow clears beside those it owns (the fields it
    /// collects that no flow on the stack and no completed flow collects), for
    /// instance a value a tool of the flow wrote. `build()` checks the names.
    pub fn cancel_clears<I: IntoIterator<Item = S>, S: Into<String>>(mut self, f: I) -> Self {
        self.cancel_clears.extend(f.into_iter().map(Into::into));
        self
    }
    /// What a cancel says once one of the flow's once-tools
    /// ([`crate::tool::Effect::Once`]) ran: the effect is not undone, so "I've
    /// stopped the booking" would be false ("Your room stays booked; to cancel it,
    /// call the hotel."). Plain text. A flow whose steps offer a once-tool must say
    /// it: `build()` refuses the flow otherwise.
    pub fn cancel_after_tool(mut self, reply: impl Into<String>) -> Self {
        self.cancel_after_tool = Some(reply.into());
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
        for f in &self.cancel_clears {
            check_field(&mut errs, None, "cancel_clears", f);
        }
        if let Some(text) = &self.cancel_after_tool
            && text.trim().is_empty()
        {
            errs.push(err(
                None,
                "`cancel_after_tool` is empty".into(),
                "say what stays done after a cancel, e.g. \"Your room stays booked.\"".into(),
            ));
        }
        if let Some(text) = &self.cancel_after_tool
            && text.contains(['{', '}'])
        {
            errs.push(err(
                None,
                "`cancel_after_tool` has a `{field}` placeholder".into(),
                "it is plain text: the cancel clears the flow's values".into(),
            ));
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
        // Fields collected on every path to each step (a template may name them).
        let initial: Vec<Arc<str>> = self
            .initial_data
            .iter()
            .flat_map(|p| p.keys())
            .map(|k| Arc::from(k.as_ref()))
            .collect();
        let on_entry = super::edges::collected_on_entry(&steps, &step_index, &initial);
        for (si, s) in steps.iter_mut().enumerate() {
            let sid = s.id.clone();
            let collected: &[Arc<str>] = on_entry[si].as_deref().unwrap_or(&[]);
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
                    for (msg, hint) in template_errors(
                        t,
                        "ask",
                        &s.requires,
                        collected,
                        &self.required,
                        &known_fields,
                    ) {
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
            if s.interrupted.is_some() && s.kind != StepKind::Model {
                errs.push(err(
                    Some(&sid),
                    "`interrupted` on a step that never waits for the user".into(),
                    "only a model step waits for an answer, so only there can another flow interrupt the flow; set `interrupted` on the flow or on a model step".into(),
                ));
            }
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
                    for (msg, hint) in template_errors(
                        text,
                        "reply",
                        &s.requires,
                        collected,
                        &self.required,
                        &known_fields,
                    ) {
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
            crate::tool::check_tool(t.as_ref(), &fid, None, &mut errs);
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
                crate::tool::check_tool(t.as_ref(), &fid, Some(&s.id), &mut errs);
                if !step_seen.insert(t.name().to_owned()) {
                    errs.push(err(
                        Some(&s.id),
                        format!("duplicate step tool `{}`", t.name()),
                        "tool names must be unique within a step".into(),
                    ));
                }
            }
        }
        if self.cancel_after_tool.is_none() {
            let once = self
                .tools
                .iter()
                .chain(steps.iter().flat_map(|s| s.tools.iter()))
                .find(|t| t.effect() == crate::tool::Effect::Once);
            if let Some(t) = once {
                errs.push(err(
                    None,
                    format!(
                        "the flow offers the once-tool `{}` but does not say what a cancel says after it ran",
                        t.name()
                    ),
                    "a cancel does not undo the tool's effect, so \"I've stopped it\" would be false: add `.cancel_after_tool(\"..\")` (`cancel_after_tool = \"..\"` in `#[flow]`)".into(),
                ));
            }
        }
        for cycle in super::edges::auto_cycles(&steps, &step_index, &fid) {
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
            interrupted: self.interrupted,
            cancel_clears: self
                .cancel_clears
                .iter()
                .map(|s| Arc::from(s.as_str()))
                .collect(),
            cancel_after_tool: self.cancel_after_tool,
            hooks: self.hooks,
            tools: self.tools,
            instructions: self.instructions,
            steps,
            step_index,
            section: String::new(),
            extract_section: String::new(),
            reply_labels: Vec::new(),
            index: 0,
            version: String::new(),
        };
        flow.version = structural_version(&flow);
        Ok(flow)
    }
}
