//! Flows: graphs of steps with their own required/optional data, hooks, tools and
//! instructions. `FlowBuilder::build` checks everything that can be checked without the
//! other flows and reports all problems of the flow at once.

use std::fmt;
use std::sync::Arc;

use crate::branch::Target;
use crate::data::Patch;
use crate::directive::{Directive, Position};
use crate::error::ConfigErrors;
use crate::hook::{Cx, NotifyHook, PostHook, PreHook, Predicate};
use crate::instruction::Instruction;
use crate::step::Step;
use crate::tool::Tool;

mod builder;
mod check;
pub(crate) mod edges;

pub use builder::FlowBuilder;
pub(crate) use check::{assign_owned_fields, suggest};

/// The callbacks a flow runs at its moments: on enter, on complete, on exit, and after the
/// data or the context changed. Set through the `FlowBuilder`'s `on_*` methods.
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

/// A flow that passed validation: an id, its steps and branches, the fields it requires,
/// its routing condition and hooks. Built by `Flow::builder(..).build()` or by `#[flow]`;
/// register it with `AgentBuilder::flow`.
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
    pub(crate) interrupted: Interruption,
    /// Fields a cancel clears beside those the flow owns.
    pub(crate) cancel_clears: Vec<Arc<str>>,
    /// What a cancel says once one of the flow's once-tools ran.
    pub(crate) cancel_after_tool: Option<String>,
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
    /// Rendered once at build, per step: how a reply names what it asks for
    /// (`reply_asks_for`), for model steps; see `prompt::reply_labels`.
    pub(crate) reply_labels: Vec<Option<Arc<str>>>,
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
    /// Start defining a flow with id `id` (unique per agent): add steps, required fields,
    /// hooks, then `build()`. The runtime form of `#[flow]`, for flows built in code or from
    /// configuration.
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
            interrupted: Interruption::default(),
            cancel_clears: Vec::new(),
            cancel_after_tool: None,
            hooks: FlowHooks::default(),
            tools: Vec::new(),
            instructions: Vec::new(),
            steps: Vec::new(),
        }
    }
    /// The flow's id: what `go_to`, branches and the session's `flow` name.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The human title, shown to the router and in diagrams (the id when none was given).
    pub fn title(&self) -> &str {
        &self.title
    }
    /// What becomes of the flow when another flow interrupts it (steps may say
    /// otherwise: [`Step::interruption`](crate::step::Step::interruption)).
    pub fn interrupted(&self) -> Interruption {
        self.interrupted
    }
    /// Fields a cancel clears beside those the flow owns.
    pub fn cancel_clears(&self) -> &[Arc<str>] {
        &self.cancel_clears
    }
    /// What a cancel says once one of the flow's once-tools ran.
    pub fn cancel_after_tool(&self) -> Option<&str> {
        self.cancel_after_tool.as_deref()
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
    /// Where the agent's own code decides what an answer at step `idx` leads to:
    /// `(the step's own, a later step's)`. The step's own are its `prepare` hook and
    /// the conditions of its branches; a later step's are the `when` conditions of
    /// the steps the walk may take next ([`Self::successors`]). The built-in reading
    /// of an answer (the digression check, code's reading of a bare value) leaves
    /// such a step to those rules.
    pub(crate) fn own_rules(&self, idx: usize) -> (bool, bool) {
        let step = &self.steps[idx];
        let own = step.prepare.is_some() || step.branch_table().iter().any(|b| !b.when.is_empty());
        let later = self
            .successors(idx)
            .iter()
            .any(|&k| self.steps[k].when.is_some());
        (own, later)
    }
    /// The flow a branch target of this flow leads to, if it leads to another flow.
    pub(crate) fn flow_target(&self, t: &Target) -> Option<String> {
        match t {
            Target::Flow(id) => Some(id.clone()),
            Target::Id(id) if self.step_pos(id).is_none() => Some(id.clone()),
            _ => None,
        }
    }
    /// The flows step `idx` sends the user to, when all it does is pick one (a front
    /// desk): it collects nothing, and each of its conditions leads to another flow.
    /// `None` for any other step.
    pub(crate) fn routes_to(&self, idx: usize) -> Option<Vec<String>> {
        let step = self.steps.get(idx)?;
        if !step.collect.is_empty() {
            return None;
        }
        let mut to = Vec::new();
        for b in step.branch_table().iter().filter(|b| !b.when.is_empty()) {
            let id = self.flow_target(&b.then)?;
            if !to.contains(&id) {
                to.push(id);
            }
        }
        (!to.is_empty()).then_some(to)
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
    /// Whether the user may skip step `j`'s question ([`Command::SkipQuestion`]): a
    /// model step that asks for fields none of which the flow needs (in its
    /// `required`, or a step's `requires`).
    ///
    /// [`Command::SkipQuestion`]: crate::command::Command::SkipQuestion
    pub(crate) fn may_skip(&self, j: usize) -> bool {
        let Some(s) = self.steps.get(j) else {
            return false;
        };
        matches!(s.kind, crate::step::StepKind::Model)
            && !s.collect.is_empty()
            && s.collect.iter().all(|f| {
                !self.required.contains(f) && !self.steps.iter().any(|t| t.requires.contains(f))
            })
    }
    /// Whether some step of the flow asks a question the user may skip.
    pub(crate) fn has_skippable(&self) -> bool {
        (0..self.steps.len()).any(|j| self.may_skip(j))
    }
    pub(crate) fn is_eligible(&self, cx: &Cx<'_, D, C>) -> bool {
        self.if_.as_ref().is_none_or(|p| {
            crate::guard::test(p, cx, || format!("`if` predicate of flow `{}`", self.id))
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

/// What becomes of a flow when the model starts another one while it is under way
/// (see [`crate::command`], "The dialogue stack").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interruption {
    /// It waits on the dialogue stack and resumes at its step, asking its question
    /// again, when the other flow completes or is cancelled. The default.
    #[default]
    Resume,
    /// It waits on the dialogue stack and starts over when it resumes: the values it
    /// owns are cleared and its first step asks again (a quote whose answers the
    /// interruption may have made stale).
    Restart,
    /// It ends (left without completing, its values kept), as a front desk whose
    /// only task is to send the user on.
    End,
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
