//! Typed directive construction. [`Directive`] is a namespace of constructors returning
//! a [`TypedDirective`] whose type tracks its position field and reply, so that the
//! compiler rejects a directive with two positions or with `reply` and `abort`:
//!
//! ```compile_fail
//! use agent_core::typed::prelude::*;
//! let d = Directive::complete().reset(); // a directive holds at most one position field
//! ```
//!
//! ```compile_fail
//! use agent_core::typed::prelude::*;
//! let d = Directive::abort("spam").reply("bye"); // `reply` cannot be combined with `abort`
//! ```
//!
//! Every typed directive converts into the runtime [`crate::directive::Directive`]
//! (`.into()`), which is what hooks with several possible outcomes return.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::directive as rt;
use crate::error::DirectiveError;
use crate::tool::Tool;

use super::data::{IntoContextPatch, IntoDataPatch};
use super::flow::StepId;
use crate::codeflow::FlowRef;

/// Position and reply states of a [`TypedDirective`].
pub mod state {
    /// No position field yet.
    #[derive(Debug, Clone, Copy)]
    pub enum NoPosition {}
    /// `go_to` a flow.
    #[derive(Debug, Clone, Copy)]
    pub enum JumpToFlow {}
    /// `go_to_step`.
    #[derive(Debug, Clone, Copy)]
    pub enum JumpToStep {}
    /// `complete`.
    #[derive(Debug, Clone, Copy)]
    pub enum CompleteFlow {}
    /// `abort`.
    #[derive(Debug, Clone, Copy)]
    pub enum AbortConversation {}
    /// `reset`.
    #[derive(Debug, Clone, Copy)]
    pub enum ResetFlow {}
    /// `complete_then(abort)`: the flow completes, then the conversation ends (so no
    /// `reply`, and no other position).
    #[derive(Debug, Clone, Copy)]
    pub enum CompleteThenAbort {}
    /// No verbatim reply.
    #[derive(Debug, Clone, Copy)]
    pub enum NoReply {}
    /// Has a verbatim reply.
    #[derive(Debug, Clone, Copy)]
    pub enum WithReply {}
}

use state::*;

/// Satisfied while a directive has no position field yet.
#[diagnostic::on_unimplemented(
    message = "this directive already has a position field (`{Self}`): a directive holds at most one of `go_to`, `go_to_step`, `complete`, `abort`, `reset`",
    label = "second position field",
    note = "to move on after completing the flow, use `Directive::complete_then(next)`"
)]
pub trait Unpositioned {}
impl Unpositioned for NoPosition {}

/// Satisfied by every position except `abort`.
#[diagnostic::on_unimplemented(
    message = "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply",
    label = "`reply` on an `abort` directive",
    note = "put the farewell in the abort reason, or use `complete` instead of `abort`"
)]
pub trait AllowsReply {}
impl AllowsReply for NoPosition {}
impl AllowsReply for JumpToFlow {}
impl AllowsReply for JumpToStep {}
impl AllowsReply for CompleteFlow {}
impl AllowsReply for ResetFlow {}

/// The state of `complete_then(next)` for a `next` in state `Self`: [`CompleteFlow`],
/// or [`CompleteThenAbort`] when `next` aborts (an aborted conversation delivers no
/// reply, so the chain cannot take one).
pub trait ThenState {
    /// The chained directive's state.
    type After;
}
impl ThenState for NoPosition {
    type After = CompleteFlow;
}
impl ThenState for JumpToFlow {
    type After = CompleteFlow;
}
impl ThenState for JumpToStep {
    type After = CompleteFlow;
}
impl ThenState for CompleteFlow {
    type After = CompleteFlow;
}
impl ThenState for ResetFlow {
    type After = CompleteFlow;
}
impl ThenState for AbortConversation {
    type After = CompleteThenAbort;
}
impl ThenState for CompleteThenAbort {
    type After = CompleteThenAbort;
}

/// Satisfied while a directive has no reply.
#[diagnostic::on_unimplemented(
    message = "`abort` cannot be combined with `reply`: an aborted conversation delivers no reply",
    label = "`abort` on a directive with a `reply`",
    note = "drop the `reply`, or use `complete` instead of `abort`"
)]
pub trait NoReplyYet {}
impl NoReplyYet for NoReply {}

/// Constructors of typed post-LLM directives (`Directive::go_to::<FeedbackFlow>()`).
/// The values are [`TypedDirective`]s.
#[derive(Debug, Clone, Copy)]
pub struct Directive;

/// A directive under construction; the type parameters record its position field and
/// whether it has a reply (see [`state`]).
#[must_use = "a directive does nothing until it is returned or dispatched"]
pub struct TypedDirective<P = NoPosition, R = NoReply> {
    inner: rt::Directive,
    _state: PhantomData<fn() -> (P, R)>,
}

impl<P, R> Clone for TypedDirective<P, R> {
    fn clone(&self) -> Self {
        Self::wrap(self.inner.clone())
    }
}

impl<P, R> std::fmt::Debug for TypedDirective<P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<P, R> TypedDirective<P, R> {
    fn wrap(inner: rt::Directive) -> Self {
        Self {
            inner,
            _state: PhantomData,
        }
    }
    fn retype<P2, R2>(self) -> TypedDirective<P2, R2> {
        TypedDirective::wrap(self.inner)
    }
    fn with_position<P2>(mut self, d: rt::Directive) -> TypedDirective<P2, R> {
        self.inner.position = d.position;
        self.retype()
    }

    /// Jump to flow `F` (a `#[flow]` type: a declarative flow's entry step, or the
    /// start of a code flow).
    pub fn go_to<F: FlowRef>(self) -> TypedDirective<JumpToFlow, R>
    where
        P: Unpositioned,
    {
        self.with_position(rt::Directive::go_to(F::ID))
    }
    /// Jump to a step (`booking::Step::confirm`), of this flow or another.
    pub fn go_to_step<S: StepId>(self, step: S) -> TypedDirective<JumpToStep, R>
    where
        P: Unpositioned,
    {
        self.with_position(rt::Directive::go_to_step_in(S::FLOW_ID, step.id()))
    }
    /// Complete the current flow.
    pub fn complete(self) -> TypedDirective<CompleteFlow, R>
    where
        P: Unpositioned,
    {
        self.with_position(rt::Directive::complete())
    }
    /// End the conversation.
    pub fn abort(self, reason: impl Into<String>) -> TypedDirective<AbortConversation, R>
    where
        P: Unpositioned,
        R: NoReplyYet,
    {
        self.with_position(rt::Directive::abort(reason))
    }
    /// Restart the current flow.
    pub fn reset(self) -> TypedDirective<ResetFlow, R>
    where
        P: Unpositioned,
    {
        self.with_position(rt::Directive::reset())
    }
    /// A verbatim reply (the model is bypassed for the message body).
    pub fn reply(self, text: impl Into<String>) -> TypedDirective<P, WithReply>
    where
        P: AllowsReply,
    {
        let inner = self.inner.reply(text);
        TypedDirective::wrap(inner)
    }
    /// Write session data (`Booking::patch().city("Lisbon")`); shallow-merged.
    pub fn data(self, patch: impl IntoDataPatch) -> Self {
        Self::wrap(self.inner.data(patch.into_data_patch()))
    }
    /// Write session context (`Concierge::patch().tier("gold")`); shallow-merged.
    pub fn context(self, patch: impl IntoContextPatch) -> Self {
        Self::wrap(self.inner.context(patch.into_context_patch()))
    }
    /// Attach a reason to the position (for traces).
    pub fn because(self, reason: impl Into<String>) -> Self {
        Self::wrap(self.inner.because(reason))
    }
    /// The runtime directive.
    pub fn into_runtime(self) -> rt::Directive {
        self.inner
    }
    /// The runtime directive, by reference.
    pub fn as_runtime(&self) -> &rt::Directive {
        &self.inner
    }
}

impl Directive {
    /// An empty directive (add `reply`, `data`, `context`, or a position).
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> TypedDirective {
        TypedDirective::wrap(rt::Directive::new())
    }
    /// Jump to flow `F` (a `#[flow]` type such as `FeedbackFlow`, or a code flow such
    /// as `TutorFlow`).
    pub fn go_to<F: FlowRef>() -> TypedDirective<JumpToFlow> {
        Self::new().go_to::<F>()
    }
    /// Jump to a step (`booking::Step::confirm`), of this flow or another.
    pub fn go_to_step<S: StepId>(step: S) -> TypedDirective<JumpToStep> {
        Self::new().go_to_step(step)
    }
    /// Complete the current flow.
    pub fn complete() -> TypedDirective<CompleteFlow> {
        Self::new().complete()
    }
    /// Complete the current flow, then apply `next` (typically a `go_to`). When `next`
    /// aborts, the result takes no `reply` (the abort would swallow it).
    pub fn complete_then<P: ThenState, R>(next: TypedDirective<P, R>) -> TypedDirective<P::After> {
        TypedDirective::wrap(rt::Directive::complete_then(next.inner))
    }
    /// End the conversation.
    pub fn abort(reason: impl Into<String>) -> TypedDirective<AbortConversation> {
        Self::new().abort(reason)
    }
    /// End the conversation and delete the stored session.
    pub fn abort_and_clear(reason: impl Into<String>) -> TypedDirective<AbortConversation> {
        TypedDirective::wrap(rt::Directive::abort_and_clear(reason))
    }
    /// Restart the current flow, keeping its data.
    pub fn reset() -> TypedDirective<ResetFlow> {
        Self::new().reset()
    }
    /// Restart the current flow and clear the fields it declares.
    pub fn reset_clearing_data() -> TypedDirective<ResetFlow> {
        TypedDirective::wrap(rt::Directive::reset_clearing_data())
    }
    /// A verbatim reply and nothing else.
    pub fn reply(text: impl Into<String>) -> TypedDirective<NoPosition, WithReply> {
        Self::new().reply(text)
    }
    /// A data write and nothing else.
    pub fn data(patch: impl IntoDataPatch) -> TypedDirective {
        Self::new().data(patch)
    }
    /// A context write and nothing else.
    pub fn context(patch: impl IntoContextPatch) -> TypedDirective {
        Self::new().context(patch)
    }
}

impl<P, R> From<TypedDirective<P, R>> for rt::Directive {
    fn from(d: TypedDirective<P, R>) -> Self {
        d.inner
    }
}

/// A post-LLM directive: what tool results, `finalize` hooks, `on_complete` and branch
/// targets carry. Typed directives and runtime directives qualify; pre-directives do not.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a post-LLM directive",
    label = "only a `Directive` is allowed here",
    note = "`append_prompt`, `inject_tool` and `halt` exist only before the model call (`prepare`, `on_enter`); tool results, `finalize`, `on_complete` and branch targets take a `Directive` such as `Directive::complete()`"
)]
pub trait IntoDirective {
    /// The runtime directive.
    fn into_directive(self) -> rt::Directive;
}

// Not listed in errors: the `on_unimplemented` note names what is allowed.
#[diagnostic::do_not_recommend]
impl<P, R> IntoDirective for TypedDirective<P, R> {
    fn into_directive(self) -> rt::Directive {
        self.inner
    }
}

#[diagnostic::do_not_recommend]
impl IntoDirective for rt::Directive {
    fn into_directive(self) -> rt::Directive {
        self
    }
}

/// A pre-LLM directive under construction: what `prepare` and `on_enter` hooks return. Adds
/// `append_prompt`, `inject_tool` and `halt` (this turn only) to a [`Directive`].
#[must_use = "a pre-directive does nothing until it is returned"]
pub struct PreDirective<D, C> {
    inner: rt::PreDirective<D, C>,
    /// A second position field given by a later `.directive(..)` (the runtime
    /// pre-directive keeps one), reported where a `#[flow]` hook's result is converted.
    conflict: Option<DirectiveError>,
}

impl<D, C> Default for PreDirective<D, C> {
    fn default() -> Self {
        Self {
            inner: rt::PreDirective::default(),
            conflict: None,
        }
    }
}

impl<D, C> std::fmt::Debug for PreDirective<D, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<D, C> PreDirective<D, C> {
    /// An empty pre-directive.
    pub fn new() -> Self {
        Self::default()
    }
    /// Append a sentence to this turn's system prompt.
    pub fn append_prompt(mut self, text: impl Into<String>) -> Self {
        self.inner = self.inner.append_prompt(text);
        self
    }
    /// Offer a tool (a `#[tool]`) for this turn only.
    pub fn inject_tool(mut self, tool: impl Tool<D, C> + 'static) -> Self {
        self.inner = self.inner.inject_tool(Arc::new(tool));
        self
    }
    /// Offer a shared tool for this turn only.
    pub fn inject_tool_arc(mut self, tool: Arc<dyn Tool<D, C>>) -> Self {
        self.inner = self.inner.inject_tool(tool);
        self
    }
    /// Skip this turn's model call (a `reply`, if set, becomes the message).
    pub fn halt(mut self) -> Self {
        self.inner = self.inner.halt();
        self
    }
    /// Merge a directive (position, reply, data, context) into this one. A directive
    /// holds one position: a second one (`.directive(complete())` then
    /// `.directive(go_to::<F>())`) makes the turn fail with
    /// [`AgentError::Directive`](crate::error::AgentError::Directive) naming the hook
    /// when a `#[flow]` hook returns it (see [`Self::try_into_runtime`]).
    pub fn directive(mut self, d: impl IntoDirective) -> Self {
        let d = d.into_directive();
        if let (Some(a), Some(b)) = (&self.inner.base.position, &d.position)
            && self.conflict.is_none()
        {
            self.conflict = Some(DirectiveError::MultiplePositions {
                fields: vec![a.field_name().to_owned(), b.field_name().to_owned()],
            });
        }
        self.inner = self.inner.directive(d);
        self
    }
    /// Set a verbatim reply.
    pub fn reply(mut self, text: impl Into<String>) -> Self {
        self.inner = self.inner.reply(text);
        self
    }
    /// Write session data.
    pub fn data(mut self, patch: impl IntoDataPatch) -> Self {
        self.inner = self.inner.data(patch.into_data_patch());
        self
    }
    /// Write session context.
    pub fn context(mut self, patch: impl IntoContextPatch) -> Self {
        self.inner = self.inner.context(patch.into_context_patch());
        self
    }
    /// The runtime pre-directive, or why it breaks the rules: two position fields
    /// given by separate `.directive(..)` calls, or `reply` with `abort`. The hooks
    /// `#[flow]` generates convert with it; a hook given to the runtime builders can too.
    pub fn try_into_runtime(self) -> Result<rt::PreDirective<D, C>, DirectiveError> {
        if let Some(e) = self.conflict {
            return Err(e);
        }
        self.inner.base.validate()?;
        Ok(self.inner)
    }
    /// The runtime pre-directive (unchecked: a second position field replaced or
    /// outranked the first by the runtime merge; see [`Self::try_into_runtime`]).
    pub fn into_runtime(self) -> rt::PreDirective<D, C> {
        self.inner
    }
}

impl<D, C> From<PreDirective<D, C>> for rt::PreDirective<D, C> {
    fn from(p: PreDirective<D, C>) -> Self {
        p.inner
    }
}

/// What a pre-LLM hook (`prepare`, `on_enter`) may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a pre-LLM hook",
    label = "expected a `PreDirective<D, C>` or a `Directive`",
    note = "`prepare` and `on_enter` hooks return `PreDirective::new()...` or a `Directive`; async hooks must be declared inside the flow module"
)]
pub trait IntoPreDirective<D, C> {
    /// The runtime pre-directive.
    fn into_pre_directive(self) -> rt::PreDirective<D, C>;
    /// The runtime pre-directive, or why it breaks a rule the conversion can see (a
    /// typed [`PreDirective`] given two position fields by separate `.directive(..)`
    /// calls). The rest (`reply` with `abort`, targets) is checked when it is applied.
    fn try_into_pre_directive(self) -> Result<rt::PreDirective<D, C>, DirectiveError>
    where
        Self: Sized,
    {
        Ok(self.into_pre_directive())
    }
}

impl<D, C> IntoPreDirective<D, C> for PreDirective<D, C> {
    fn into_pre_directive(self) -> rt::PreDirective<D, C> {
        self.inner
    }
    fn try_into_pre_directive(self) -> Result<rt::PreDirective<D, C>, DirectiveError> {
        match self.conflict {
            Some(e) => Err(e),
            None => Ok(self.inner),
        }
    }
}
impl<D, C> IntoPreDirective<D, C> for rt::PreDirective<D, C> {
    fn into_pre_directive(self) -> rt::PreDirective<D, C> {
        self
    }
}
impl<D, C, P, R> IntoPreDirective<D, C> for TypedDirective<P, R> {
    fn into_pre_directive(self) -> rt::PreDirective<D, C> {
        self.inner.into()
    }
}
impl<D, C> IntoPreDirective<D, C> for rt::Directive {
    fn into_pre_directive(self) -> rt::PreDirective<D, C> {
        self.into()
    }
}
