//! Steps: the nodes of a flow, in three shapes (model step, `auto`, `reply`).

use std::fmt;
use std::sync::Arc;

use crate::branch::Branch;
use crate::hook::{Cx, PostHook, PreHook, Predicate};
use crate::instruction::Instruction;
use crate::tool::Tool;

/// What kind of step this is: the model talks (`Model`), code decides alone (`Auto`), or a
/// fixed message is sent (`Reply`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    /// Rendered by the model: asks, collects, may call tools.
    Model,
    /// No model call: hooks and code-only branches, then moves on.
    Auto,
    /// A verbatim message, no model call.
    Reply(String),
}

/// One step of a flow. Built with [`Step::model`], [`Step::auto`] or [`Step::reply`] and
/// checked when the flow is built.
pub struct Step<D, C> {
    pub(crate) id: Arc<str>,
    pub(crate) kind: StepKind,
    pub(crate) prompt: Option<String>,
    pub(crate) collect: Vec<Arc<str>>,
    pub(crate) requires: Vec<Arc<str>>,
    pub(crate) collect_idx: Vec<usize>,
    pub(crate) requires_idx: Vec<usize>,
    /// Fields whose correction clears what this step collects, so it asks again.
    pub(crate) depends_on: Vec<Arc<str>>,
    pub(crate) skip: Option<Predicate<D, C>>,
    pub(crate) if_: Option<Predicate<D, C>>,
    pub(crate) when: Option<String>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) instructions: Vec<Instruction<D, C>>,
    pub(crate) on_enter: Option<Arc<dyn PreHook<D, C>>>,
    pub(crate) prepare: Option<Arc<dyn PreHook<D, C>>>,
    pub(crate) finalize: Option<Arc<dyn PostHook<D, C>>>,
    pub(crate) branches: Option<Vec<Branch<D, C>>>,
    pub(crate) end: bool,
    /// Tools that must have run successfully before the step may end its flow.
    pub(crate) must_call: Vec<Arc<str>>,
    /// Every tool of the step waits for the user's yes (the deprecated
    /// [`Step::act_on_answer`]).
    confirm_tools: bool,
    /// The question that asks a model step, written by code (a `{field}` template).
    pub(crate) ask: Option<String>,
    /// What an interruption at this step does, over the flow's own policy.
    pub(crate) interrupted: Option<crate::flow::Interruption>,
    /// Rendered once at build: the step's prompt section.
    pub(crate) section: String,
}

impl<D, C> fmt::Debug for Step<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Step")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("prompt", &self.prompt)
            .field("collect", &self.collect)
            .field("requires", &self.requires)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<D, C> Step<D, C> {
    fn new(id: impl Into<String>, kind: StepKind) -> Self {
        Self {
            id: Arc::from(id.into()),
            kind,
            prompt: None,
            collect: Vec::new(),
            requires: Vec::new(),
            collect_idx: Vec::new(),
            requires_idx: Vec::new(),
            depends_on: Vec::new(),
            skip: None,
            if_: None,
            when: None,
            tools: Vec::new(),
            instructions: Vec::new(),
            on_enter: None,
            prepare: None,
            finalize: None,
            branches: None,
            end: false,
            must_call: Vec::new(),
            confirm_tools: false,
            ask: None,
            interrupted: None,
            section: String::new(),
        }
    }

    /// A step in which the model talks to the user: it reads the user's message, extracts the
    /// step's `collect` fields and writes the reply (or code writes it, with `ask` or a
    /// template). The usual step; use [`Step::auto`] for one that only decides in code.
    pub fn model(id: impl Into<String>) -> Self {
        Self::new(id, StepKind::Model)
    }
    /// A step without a model call: its hooks run and its code branches pick the next step,
    /// at no token cost. Use it for decisions code can make from the data (routing a large
    /// group, checking a limit).
    pub fn auto(id: impl Into<String>) -> Self {
        Self::new(id, StepKind::Auto)
    }
    /// A step that sends `text` verbatim (placeholders such as `{city}` are filled from the
    /// data) without a model call.
    pub fn reply(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, StepKind::Reply(text.into()))
    }

    /// What the model should do at this step.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }
    /// Fields this step collects from the user.
    pub fn collect<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.collect
            .extend(fields.into_iter().map(|f| Arc::from(f.as_ref())));
        self
    }
    /// Fields that must be present before this step runs.
    pub fn requires<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.requires
            .extend(fields.into_iter().map(|f| Arc::from(f.as_ref())));
        self
    }
    /// Fields this step's answer depends on: when the user corrects one of them (a
    /// stored value replaced by another), the fields this step collects are cleared, so
    /// the step asks again ("the hotel" after "actually, Porto instead of Lisbon").
    pub fn depends_on<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.depends_on
            .extend(fields.into_iter().map(|f| Arc::from(f.as_ref())));
        self
    }
    /// Skip this step when the predicate holds.
    pub fn skip(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.skip = Some(Arc::new(p));
        self
    }
    /// As a successor candidate: only when the predicate holds.
    pub fn if_(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.if_ = Some(Arc::new(p));
        self
    }
    /// As a successor candidate: only when the model judges the condition true.
    pub fn when(mut self, condition: impl Into<String>) -> Self {
        self.when = Some(condition.into());
        self
    }
    /// Offer a tool at this step only: the model can call it in this step's turns.
    pub fn tool(mut self, tool: impl crate::tool::IntoTool<D, C>) -> Self
    where
        D: Send + Sync + 'static,
        C: Send + Sync + 'static,
    {
        let tool = tool.into_tool();
        self.tools.push(if self.confirm_tools {
            Arc::new(crate::tool::Confirmed(tool))
        } else {
            tool
        });
        self
    }
    /// Add an instruction scoped to this step.
    pub fn instruction(mut self, i: Instruction<D, C>) -> Self {
        self.instructions.push(i);
        self
    }
    /// Hook run when the step is entered.
    pub fn on_enter(mut self, h: impl PreHook<D, C> + 'static) -> Self {
        self.on_enter = Some(Arc::new(h));
        self
    }
    /// Hook run before the model call that renders this step.
    ///
    /// When the user's message is expected to fill the pending step, the engine renders
    /// the step after it in the same call, so that step's `prepare` runs first. If the
    /// message turns out not to reach it, the prompt text and tools it added are
    /// withdrawn before anything else is rendered (its directive stays in the chain).
    /// Keep `prepare` free of effects that must happen only once the step is entered;
    /// `on_enter` runs only for entered steps.
    pub fn prepare(mut self, h: impl PreHook<D, C> + 'static) -> Self {
        self.prepare = Some(Arc::new(h));
        self
    }
    /// Hook run after the model call that rendered this step.
    pub fn finalize(mut self, h: impl PostHook<D, C> + 'static) -> Self {
        self.finalize = Some(Arc::new(h));
        self
    }
    /// Add a branch entry (creates the branch table).
    pub fn branch(mut self, b: Branch<D, C>) -> Self {
        self.branches.get_or_insert_with(Vec::new).push(b);
        self
    }
    /// Set the whole branch table (an empty table is a configuration error).
    pub fn branches(mut self, table: Vec<Branch<D, C>>) -> Self {
        self.branches = Some(table);
        self
    }
    /// The flow may not finish at this step until `tool` has run successfully this
    /// turn: a model reply that skipped it is not used, and the step is asked again,
    /// told that nothing was done. (A booking step can never close on "Booked!" alone.)
    pub fn requires_tool(mut self, tool: impl Into<String>) -> Self {
        self.must_call.push(Arc::from(tool.into()));
        self
    }
    /// Make every tool of this step wait for the user's yes to a summary of its call
    /// ([`crate::tool::Tool::needs_agreement`]), as if each were marked `confirm`.
    /// Deprecated: mark the tool itself (`#[tool(confirm)]`, `FnTool::confirm`, or
    /// `effect = once`, which waits by default); a step with an `ask` that offers such
    /// a tool proposes its call through that question.
    #[deprecated(
        since = "0.2.0",
        note = "mark the tool instead: `#[tool(confirm)]` or `effect = once` waits for the user's yes to its summary wherever it is offered"
    )]
    pub fn act_on_answer(mut self) -> Self
    where
        D: Send + Sync + 'static,
        C: Send + Sync + 'static,
    {
        self.confirm_tools = true;
        self.tools = self
            .tools
            .into_iter()
            .map(|t| Arc::new(crate::tool::Confirmed(t)) as Arc<dyn crate::tool::Tool<D, C>>)
            .collect();
        self
    }
    /// The question that asks this model step, written by code from the data
    /// (`{field}` placeholders, each required at the step): the turn that reaches the
    /// step sends it instead of a model-written message, so a confirmation summary says
    /// exactly what the state holds, and a turn whose data lands further than the model
    /// predicted needs no second call to ask. The model still reads the turn (data,
    /// conditions) and writes every later message at the step (an answer to an
    /// off-topic question, a re-ask with a reason). A turn with something to tell the
    /// user (a refused value, a correction refused, an action that did not run) and a
    /// reply already streamed live keep the model's message; a draft written for
    /// another step does not (code's question is sent, with no second call). The
    /// step's tools are offered from the user's answer on.
    ///
    /// On a small model ([`ModelProfile::composes_questions`](crate::policy::ModelProfile::composes_questions))
    /// a step that collects a value is asked by code even without `ask`, with a
    /// question built from the docs and constraints of the fields it still waits for
    /// ("Could you tell me the number of guests (1 to 12)?"). Such questions are in
    /// English: give `ask` to word the question yourself or in another language.
    pub fn ask(mut self, template: impl Into<String>) -> Self {
        self.ask = Some(template.into());
        self
    }
    /// What an interruption at this step does, when the step says it (over the
    /// flow's [`crate::flow::Flow::interrupted`]).
    pub fn interruption(&self) -> Option<crate::flow::Interruption> {
        self.interrupted
    }
    /// The code-written question, if any.
    pub fn ask_template(&self) -> Option<&str> {
        self.ask.as_deref()
    }
    /// What becomes of the flow when another flow interrupts it while it waits at
    /// this step, over the flow's own [`crate::flow::FlowBuilder::interrupted`] (a payment
    /// step that starts the flow over, a question that ends it). Only a model step
    /// waits for the user, so only a model step can say it: `build()` refuses it on
    /// an `auto` or a `reply` step.
    pub fn interrupted(mut self, i: crate::flow::Interruption) -> Self {
        self.interrupted = Some(i);
        self
    }
    /// Make the step terminal: the flow has no linear successor after it, and completes once it
    /// has run and the flow's required fields are present.
    pub fn end(mut self) -> Self {
        self.end = true;
        self
    }

    /// The step's id, unique within its flow: what branches and `go_to_step` name.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Whether the step calls the model, runs code only (auto) or sends a verbatim reply.
    pub fn kind(&self) -> &StepKind {
        &self.kind
    }
    /// The data fields this step asks the user for; the step is skipped when they are all
    /// filled already.
    pub fn collected_fields(&self) -> &[Arc<str>] {
        &self.collect
    }
    /// The step's branch entries in evaluation order (empty when the step has none and its
    /// successor is the next declared step).
    pub fn branch_table(&self) -> &[Branch<D, C>] {
        self.branches.as_deref().unwrap_or(&[])
    }
    /// Whether it is terminal.
    pub fn is_end(&self) -> bool {
        self.end
    }
}
