//! Directives: the one language every emitter (hooks, tools, branches, signals,
//! `on_complete`, pending directives) uses to change where the conversation goes,
//! write state, or speak verbatim.
//!
//! A directive carries at most one [`Position`] (an enum, so two can never coexist),
//! optional data and context patches and an optional verbatim reply. [`PreDirective`]
//! adds the pre-LLM-only augmentations; the signal-only fields are in
//! [`SignalDirective`](crate::signal::SignalDirective), which moved to the signal module
//! (it names the signal's view; the directive is the lowest layer and imports nothing above it).
//! [`merge`] is the single merge function (Algorithm 4) used for every bus.

mod json;
mod merge;
mod seam;
mod source;

use std::fmt;

use crate::data::Patch;
use crate::error::DirectiveError;

pub(crate) use merge::add_tool;
pub use merge::{merge, merge_pre};
pub use seam::{CarriedTool, ToolSeam, Tools};
pub use source::DirectiveSource;

/// Where the conversation goes next: the part of a directive that moves it. When several
/// emitters give one in the same phase, the highest tier wins (abort, then complete, then
/// go_to / go_to_step, then reset; the last one within a tier).
#[derive(Debug, Clone, PartialEq)]
pub enum Position {
    /// Enter another flow at its first step (or a given step).
    GoTo(GoTo),
    /// Enter a step of the current flow, or of another flow when `flow` is set.
    GoToStep(GoToStep),
    /// Finish the current flow; `next` chains another directive afterwards.
    Complete(Complete),
    /// End the conversation: no flow stays active and the turn stops as aborted.
    Abort(Abort),
    /// Restart the current flow.
    Reset(Reset),
}

impl Position {
    /// Merge precedence tier: `abort > complete > go_to = go_to_step > reset`.
    pub fn tier(&self) -> u8 {
        match self {
            Position::Abort(_) => 4,
            Position::Complete(_) => 3,
            Position::GoTo(_) | Position::GoToStep(_) => 2,
            Position::Reset(_) => 1,
        }
    }

    /// The field name of the flat JSON shape (`goTo`, `goToStep`, ...).
    pub fn field_name(&self) -> &'static str {
        match self {
            Position::GoTo(_) => "goTo",
            Position::GoToStep(_) => "goToStep",
            Position::Complete(_) => "complete",
            Position::Abort(_) => "abort",
            Position::Reset(_) => "reset",
        }
    }
}

/// The target of a jump to another flow (a [`Directive::go_to`]), with the data written
/// before that flow is entered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoTo {
    /// The id of the flow to enter (it must be registered on the agent: `build()` checks).
    pub flow: String,
    /// Data written before the target flow is entered.
    pub data: Option<Patch>,
    /// Why the jump was made, shown in the directive's JSON in the response's
    /// `directive_chain` and in traces.
    pub reason: Option<String>,
}

/// The target of a jump to a step (a [`Directive::go_to_step`]), in the current flow or
/// another one, with the data written before the step is entered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoToStep {
    /// The id of the step to go to.
    pub step: String,
    /// Flow of the step; `None` means the current flow.
    pub flow: Option<String>,
    /// Data written before the step is entered.
    pub data: Option<Patch>,
    /// Why the jump was made, shown in the directive's JSON in the response's
    /// `directive_chain` and in traces.
    pub reason: Option<String>,
}

/// Completing the active flow (a [`Directive::complete`]): its `on_complete` runs, and an
/// optional next directive chains (typically a `go_to` to the next flow).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Complete {
    /// A directive applied after completion (typically a `go_to`).
    pub next: Option<Box<Directive>>,
    /// Why the flow was completed, shown in the directive's JSON in the response's
    /// `directive_chain` and in traces.
    pub reason: Option<String>,
}

/// Ending the conversation (a [`Directive::abort`]): the active flow is left, the turn
/// stops with `StoppedReason::Aborted`, and optionally the stored session is deleted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Abort {
    /// Why (for traces and the stopped reason).
    pub reason: Option<String>,
    /// Delete the stored session instead of saving it.
    pub clear_session: bool,
}

/// Restarting the active flow at its first step (a [`Directive::reset`]), optionally
/// clearing the data it declares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reset {
    /// Clear the fields the flow declares (required, optional, collected).
    pub clear_data: bool,
    /// Why the flow was restarted, shown in the directive's JSON in the response's
    /// `directive_chain` and in traces.
    pub reason: Option<String>,
}

/// The post-LLM directive: what tools, `finalize` hooks, `on_complete`, branch targets
/// and pending directives carry. Serializable (the flat JSON shape of the spec).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Directive {
    /// Where the conversation goes next, if this directive moves it (at most one position per
    /// directive).
    pub position: Option<Position>,
    /// Verbatim assistant message (the model is bypassed for the message body).
    pub reply: Option<String>,
    /// Values written to the session's data (merged field by field over what is stored).
    pub data: Option<Patch>,
    /// Values written to the session's context (merged field by field over what is stored).
    pub context: Option<Patch>,
}

impl Directive {
    /// Every data write it carries: its own and its position's (`go_to` with data).
    pub fn data_patches(&self) -> impl Iterator<Item = &Patch> {
        let positional = match &self.position {
            Some(Position::GoTo(g)) => g.data.as_ref(),
            Some(Position::GoToStep(g)) => g.data.as_ref(),
            _ => None,
        };
        self.data.iter().chain(positional)
    }

    /// A directive that changes nothing, to build on with the methods below (data writes, a
    /// reply, a position).
    pub fn new() -> Self {
        Self::default()
    }

    fn at(position: Position) -> Self {
        Self {
            position: Some(position),
            ..Self::default()
        }
    }

    /// Leave the current flow for the flow `flow`, entering it at its first step (steps whose
    /// fields are filled already are skipped). Use [`Self::go_to_with`] to write data first.
    pub fn go_to(flow: impl Into<String>) -> Self {
        Self::at(Position::GoTo(GoTo {
            flow: flow.into(),
            ..GoTo::default()
        }))
    }

    /// Jump to another flow, writing `data` before it is entered.
    pub fn go_to_with(flow: impl Into<String>, data: Patch) -> Self {
        Self::at(Position::GoTo(GoTo {
            flow: flow.into(),
            data: Some(data),
            reason: None,
        }))
    }

    /// Jump to a step of the current flow.
    pub fn go_to_step(step: impl Into<String>) -> Self {
        Self::at(Position::GoToStep(GoToStep {
            step: step.into(),
            ..GoToStep::default()
        }))
    }

    /// Jump to a step of another flow.
    pub fn go_to_step_in(flow: impl Into<String>, step: impl Into<String>) -> Self {
        Self::at(Position::GoToStep(GoToStep {
            step: step.into(),
            flow: Some(flow.into()),
            ..GoToStep::default()
        }))
    }

    /// Complete the current flow now: its `on_complete` runs and the conversation leaves it
    /// (a next directive, typically a `go_to`, can follow through [`Complete::next`]).
    pub fn complete() -> Self {
        Self::at(Position::Complete(Complete::default()))
    }

    /// Complete the current flow, then apply `next`; a position in `next` takes
    /// effect in the same turn (the flow it names asks its question after the
    /// completing message).
    pub fn complete_then(next: Directive) -> Self {
        Self::at(Position::Complete(Complete {
            next: Some(Box::new(next)),
            reason: None,
        }))
    }

    /// End the conversation with `reason`: the turn stops with `StoppedReason::Aborted` and
    /// no flow stays active (the highest position tier: it beats complete, go_to and reset).
    /// Use it for a user who must not continue (abuse, an unrecoverable state).
    pub fn abort(reason: impl Into<String>) -> Self {
        Self::at(Position::Abort(Abort {
            reason: Some(reason.into()),
            clear_session: false,
        }))
    }

    /// End the conversation and erase the session: its data, context, history and
    /// position are gone; only its version and processed event ids remain (so a
    /// concurrent writer or a redelivered event cannot bring it back), until `prune`.
    pub fn abort_and_clear(reason: impl Into<String>) -> Self {
        Self::at(Position::Abort(Abort {
            reason: Some(reason.into()),
            clear_session: true,
        }))
    }

    /// Restart the current flow, keeping its data.
    pub fn reset() -> Self {
        Self::at(Position::Reset(Reset::default()))
    }

    /// Restart the current flow and clear the fields it declares.
    pub fn reset_clearing_data() -> Self {
        Self::at(Position::Reset(Reset {
            clear_data: true,
            reason: None,
        }))
    }

    /// A directive that only sends `text` to the user as the reply, verbatim, without asking
    /// the model to write one.
    pub fn say(text: impl Into<String>) -> Self {
        Self {
            reply: Some(text.into()),
            ..Self::default()
        }
    }

    /// Add a verbatim reply. With `abort` this is invalid and [`validate`] rejects it.
    pub fn reply(mut self, text: impl Into<String>) -> Self {
        self.reply = Some(text.into());
        self
    }

    /// Add (shallow-merge) a data write.
    pub fn data(mut self, patch: impl Into<Patch>) -> Self {
        let patch = patch.into();
        match &mut self.data {
            Some(existing) => existing.extend(patch),
            None => self.data = Some(patch),
        }
        self
    }

    /// Add (shallow-merge) a context write.
    pub fn context(mut self, patch: impl Into<Patch>) -> Self {
        let patch = patch.into();
        match &mut self.context {
            Some(existing) => existing.extend(patch),
            None => self.context = Some(patch),
        }
        self
    }

    /// Attach a reason to the position (for traces). No effect without a position.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        let reason = Some(reason.into());
        match &mut self.position {
            Some(Position::GoTo(p)) => p.reason = reason,
            Some(Position::GoToStep(p)) => p.reason = reason,
            Some(Position::Complete(p)) => p.reason = reason,
            Some(Position::Abort(p)) => p.reason = reason,
            Some(Position::Reset(p)) => p.reason = reason,
            None => {}
        }
        self
    }

    /// Whether the directive does nothing.
    pub fn is_empty(&self) -> bool {
        self.position.is_none()
            && self.reply.is_none()
            && self.data.as_ref().is_none_or(|d| d.is_empty())
            && self.context.as_ref().is_none_or(|d| d.is_empty())
    }

    /// Check the structural rules (the spec's `flow.validate`): no `reply` with `abort`
    /// (also at the end of a `complete_then` chain),
    /// no empty flow or step id, and the same for a chained `complete.next`.
    /// Whether targets exist is checked when the directive is applied.
    pub fn validate(&self) -> Result<(), DirectiveError> {
        validate(self)
    }

    /// Parse a directive that arrived as data (the flat JSON shape of the spec) and
    /// validate it.
    pub fn from_json(value: serde_json::Value) -> Result<Self, DirectiveError> {
        json::from_value(value)
    }

    /// The directive as JSON in the spec's flat shape (`{"goTo": …, "dataUpdate": …}`), as
    /// the directive chain and traces show it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Structural validation of a directive (see [`Directive::validate`]).
pub fn validate(d: &Directive) -> Result<(), DirectiveError> {
    if d.reply.is_some() && ends_in_abort(d) {
        return Err(DirectiveError::ReplyWithAbort);
    }
    match &d.position {
        Some(Position::GoTo(g)) if g.flow.trim().is_empty() => Err(DirectiveError::EmptyTarget {
            field: "goTo",
            what: "flow id",
        }),
        Some(Position::GoToStep(g)) if g.step.trim().is_empty() => {
            Err(DirectiveError::EmptyTarget {
                field: "goToStep",
                what: "step id",
            })
        }
        Some(Position::GoToStep(GoToStep { flow: Some(f), .. })) if f.trim().is_empty() => {
            Err(DirectiveError::EmptyTarget {
                field: "goToStep.flow",
                what: "flow id",
            })
        }
        Some(Position::Complete(Complete {
            next: Some(next), ..
        })) => validate(next),
        _ => Ok(()),
    }
}

/// Whether the directive aborts, directly or at the end of a `complete_then` chain
/// (`complete_then(abort).reply(..)` would lose the reply, or the abort).
fn ends_in_abort(d: &Directive) -> bool {
    match &d.position {
        Some(Position::Abort(_)) => true,
        Some(Position::Complete(Complete {
            next: Some(next), ..
        })) => ends_in_abort(next),
        _ => false,
    }
}

/// A pre-LLM directive: what agent/flow/step `on_enter` and step `prepare` hooks return.
/// The three extra fields live for one turn and are never persisted.
pub struct PreDirective<D, C> {
    /// The post-LLM part: position, data and context writes, reply.
    pub base: Directive,
    /// Sentences appended to this turn's system prompt.
    pub append_prompt: Vec<String>,
    /// Tools added to this turn's model call.
    pub inject_tools: Vec<CarriedTool<D, C>>,
    /// Skip this turn's model call: the turn ends after the pre-model phase (with the reply,
    /// if a directive gave one).
    pub halt: bool,
}

impl<D, C> Default for PreDirective<D, C> {
    fn default() -> Self {
        Self {
            base: Directive::default(),
            append_prompt: Vec::new(),
            inject_tools: Vec::new(),
            halt: false,
        }
    }
}

impl<D, C> Clone for PreDirective<D, C> {
    fn clone(&self) -> Self {
        Self {
            base: self.base.clone(),
            append_prompt: self.append_prompt.clone(),
            inject_tools: self.inject_tools.clone(),
            halt: self.halt,
        }
    }
}

impl<D, C> fmt::Debug for PreDirective<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self.inject_tools.iter().map(seam::carried_name).collect();
        f.debug_struct("PreDirective")
            .field("base", &self.base)
            .field("append_prompt", &self.append_prompt)
            .field("inject_tools", &tools)
            .field("halt", &self.halt)
            .finish()
    }
}

impl<D, C> From<Directive> for PreDirective<D, C> {
    fn from(base: Directive) -> Self {
        Self {
            base,
            ..Self::default()
        }
    }
}

impl<D, C> PreDirective<D, C> {
    /// A pre-directive that changes nothing, to build on with the methods below.
    pub fn new() -> Self {
        Self::default()
    }
    /// Append a sentence to this turn's system prompt.
    pub fn append_prompt(mut self, text: impl Into<String>) -> Self {
        self.append_prompt.push(text.into());
        self
    }
    /// Offer a tool for this turn only.
    pub fn inject_tool(mut self, tool: CarriedTool<D, C>) -> Self {
        self.inject_tools.push(tool);
        self
    }
    /// Skip this turn's model call (a `reply`, if set, becomes the message).
    pub fn halt(mut self) -> Self {
        self.halt = true;
        self
    }
    /// Replace the base directive's position and state fields with `d`'s (merged).
    pub fn directive(mut self, d: Directive) -> Self {
        self.base = merge(std::mem::take(&mut self.base), d);
        self
    }
    /// Set a verbatim reply.
    pub fn reply(mut self, text: impl Into<String>) -> Self {
        self.base.reply = Some(text.into());
        self
    }
    /// Add a data write.
    pub fn data(mut self, patch: impl Into<Patch>) -> Self {
        self.base = self.base.data(patch);
        self
    }
    /// Add a context write.
    pub fn context(mut self, patch: impl Into<Patch>) -> Self {
        self.base = self.base.context(patch);
        self
    }
    /// Whether any pre-LLM-only field is set (they are dropped where only a post-LLM
    /// directive is allowed).
    pub fn has_pre_only_fields(&self) -> bool {
        self.halt || !self.append_prompt.is_empty() || !self.inject_tools.is_empty()
    }
}
