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
//! A typed directive also carries the data type of its patches and targets, so a flow
//! over `Booking` rejects `Directive::go_to::<SurveyFlow>()` for a flow over another
//! data type, or `Directive::data(Survey::patch()..)`, wherever the value comes from:
//!
//! ```compile_fail,E0277
//! use agent_core::typed::prelude::*;
//! #[data] pub struct Booking { /// City
//!     pub city: String }
//! #[data] pub struct Survey { /// Score
//!     pub score: String }
//! fn main() {
//!     // A directive cannot carry patches of two data types.
//!     let d = Directive::data(Booking::patch().city("Lisbon")).data(Survey::patch().score("5"));
//! }
//! ```
//!
//! Every typed directive converts into the runtime [`crate::directive::Directive`]
//! (`.into()`). The other way, a runtime directive enters a typed flow only through
//! [`TypedDirective::try_from_untyped`], which checks it and returns a typed error; a
//! hook whose branches build directives of different shapes returns
//! [`TypedDirective::erase`]d ones.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::directive as rt;
use crate::error::DirectiveError;
use crate::tool::Tool;

use super::data::{ContextArg, DataPatch, DataType};
use super::flow::{OfData, StepId};

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
    /// Position or reply not tracked by the type: a directive checked at run time
    /// ([`TypedDirective::try_from_untyped`]) or erased ([`TypedDirective::erase`]).
    /// It takes no further position and no reply (only `data`, `context` and
    /// `because`).
    ///
    /// [`TypedDirective::try_from_untyped`]: super::TypedDirective::try_from_untyped
    /// [`TypedDirective::erase`]: super::TypedDirective::erase
    #[derive(Debug, Clone, Copy)]
    pub enum Checked {}
    /// The data-type parameter of a directive that writes no data and names no flow or
    /// step: it fits a flow over any data type.
    #[derive(Debug, Clone, Copy)]
    pub enum AnyData {}
}

use state::*;

/// Satisfied while a directive has no position field yet.
#[diagnostic::on_unimplemented(
    message = "this directive already has a position field (`{Self}`): a directive holds at most one of `go_to`, `go_to_step`, `complete`, `abort`, `reset`",
    label = "second position field: keep one (to move on after completing the flow, use `Directive::complete_then(next)`)"
)]
pub trait Unpositioned {}
// The impls are not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl Unpositioned for NoPosition {}

/// Satisfied by every position except `abort`.
#[diagnostic::on_unimplemented(
    message = "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply",
    label = "`reply` on an `abort` directive: put the farewell in the abort reason, or use `complete` instead of `abort`"
)]
pub trait AllowsReply {}
// Not listed under an error (as for `Unpositioned`).
#[diagnostic::do_not_recommend]
impl AllowsReply for NoPosition {}
#[diagnostic::do_not_recommend]
impl AllowsReply for JumpToFlow {}
#[diagnostic::do_not_recommend]
impl AllowsReply for JumpToStep {}
#[diagnostic::do_not_recommend]
impl AllowsReply for CompleteFlow {}
#[diagnostic::do_not_recommend]
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
    label = "`abort` on a directive with a `reply`: drop the `reply`, or use `complete` instead of `abort`"
)]
pub trait NoReplyYet {}
#[diagnostic::do_not_recommend]
impl NoReplyYet for NoReply {}

/// The data type of a directive that combines a part over `Self` (its patches and
/// targets so far) with a part over `D` (a new patch or target): the one data type
/// that is not [`AnyData`]. An agent has one data type, so two others do not combine.
#[diagnostic::on_unimplemented(
    message = "a directive over `{Self}` cannot also carry a patch or target over `{D}`",
    label = "a patch or target over `{D}`: an agent has one data type; write `{Self}::patch()..` and name flows and steps with `data = {Self}`"
)]
pub trait JoinData<D> {
    /// The combined data type.
    type Out;
}
impl<D> JoinData<D> for AnyData {
    type Out = D;
}
impl<D: DataType> JoinData<AnyData> for D {
    type Out = D;
}
impl<D: DataType> JoinData<D> for D {
    type Out = D;
}

/// A patch over `Self` written where data of `D` is expected: `Self` is `D`.
#[diagnostic::on_unimplemented(
    message = "a patch of `{Self}` where the flow's data is `{D}`",
    label = "a `{Self}` patch here",
    note = "an agent has one data type: write `{D}::patch()..`"
)]
pub trait SameData<D> {}
impl<D> SameData<D> for D {}

/// A directive over `Self` fits a flow over `D`: `Self` is `D` or [`AnyData`].
#[diagnostic::on_unimplemented(
    message = "a directive over `{Self}` used in a flow with `data = {D}`",
    label = "its patch or target is over `{Self}`, not `{D}`",
    note = "an agent has one data type: write `{D}::patch()..` and name flows and steps with `data = {D}`"
)]
pub trait FitsData<D> {}
impl<D> FitsData<D> for AnyData {}
impl<D: DataType> FitsData<D> for D {}

/// Constructors of typed post-LLM directives (`Directive::go_to::<FeedbackFlow>()`).
/// The values are [`TypedDirective`]s.
#[derive(Debug, Clone, Copy)]
pub struct Directive;

/// The type-level state of a [`TypedDirective`] (no value: covariant, `Send`, `Sync`).
type State<P, R, D> = PhantomData<fn() -> (P, R, D)>;

/// A directive under construction; the type parameters record its position field,
/// whether it has a reply (see [`state`]) and the data type its patches and targets are
/// over (`D`, [`AnyData`] while it has none). A `#[flow]` over `Booking` takes only
/// directives over `Booking` or [`AnyData`], wherever the value comes from (a literal,
/// a variable, a helper fn, a generic, a closure).
#[must_use = "a directive does nothing until it is returned or dispatched"]
pub struct TypedDirective<P = NoPosition, R = NoReply, D = AnyData> {
    inner: rt::Directive,
    _state: State<P, R, D>,
}

impl<P, R, D> Clone for TypedDirective<P, R, D> {
    fn clone(&self) -> Self {
        Self::wrap(self.inner.clone())
    }
}

impl<P, R, D> std::fmt::Debug for TypedDirective<P, R, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// A runtime directive that [`TypedDirective::try_from_untyped`] refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UntypedDirectiveError {
    /// Its shape breaks the rules (`reply` with `abort`, an empty target).
    #[error(transparent)]
    Shape(#[from] DirectiveError),
    /// It writes a key the data type does not have.
    #[error("the directive writes `{key}`, which is not a field of `{data}`")]
    UnknownField {
        /// The key written.
        key: String,
        /// The data type.
        data: &'static str,
    },
}

impl<D: DataType> TypedDirective<Checked, Checked, D> {
    /// The one way in for a runtime (untyped) [`crate::directive::Directive`], such as one
    /// parsed from JSON or built by code shared with runtime-built flows: checked now,
    /// at run time, since its type says nothing. Refused when its shape breaks the
    /// rules (`reply` with `abort`, an empty target) or when it writes a key `D` does
    /// not have; its flow and step targets are checked by `build()` and when it is
    /// applied. The result takes no further position or reply.
    ///
    /// ```
    /// use agent_core::typed::prelude::*;
    /// # #[data] pub struct Booking { /// City
    /// #     pub city: String }
    /// let raw = agent_core::directive::Directive::complete();
    /// let d = TypedDirective::<_, _, Booking>::try_from_untyped(raw)?;
    /// # let _ = d;
    /// # Ok::<(), agent_core::typed::directive::UntypedDirectiveError>(())
    /// ```
    pub fn try_from_untyped(d: rt::Directive) -> Result<Self, UntypedDirectiveError> {
        d.validate()?;
        check_keys::<D>(&d)?;
        Ok(Self::wrap(d))
    }
}

fn check_keys<D: DataType>(d: &rt::Directive) -> Result<(), UntypedDirectiveError> {
    for p in d.data_patches() {
        if let Some(k) = p.keys().find(|k| !D::FIELDS.contains(&k.as_str())) {
            return Err(UntypedDirectiveError::UnknownField {
                key: k.clone(),
                data: std::any::type_name::<D>(),
            });
        }
    }
    if let Some(rt::Position::Complete(c)) = &d.position
        && let Some(next) = &c.next
    {
        check_keys::<D>(next)?;
    }
    Ok(())
}

impl<P, R, D> TypedDirective<P, R, D> {
    fn wrap(inner: rt::Directive) -> Self {
        Self {
            inner,
            _state: PhantomData,
        }
    }
    fn retype<P2, R2, D2>(self) -> TypedDirective<P2, R2, D2> {
        TypedDirective::wrap(self.inner)
    }
    fn with_position<P2, D2>(mut self, d: rt::Directive) -> TypedDirective<P2, R, D2> {
        self.inner.position = d.position;
        self.retype()
    }

    // The bounds of these methods stay on the line of the `fn` (`rustfmt::skip`): rustc
    // quotes that line under an error, so a broken rule costs five lines, not eight.

    // `go_to` names `F`'s data type through `Directive: FlowArg<F>` in its return type,
    // and `go_to_step` checks `S` through `Directive: StepArg<S>` (see `Directive::go_to`):
    // a type that is not a flow or a step is reported once, in one short error.

    /// Jump to flow `F` (a `#[flow]` type: a declarative flow's entry step, or the
    /// start of a code flow).
    #[rustfmt::skip]
    pub fn go_to<F>(self) -> TypedDirective<JumpToFlow, R, Joined<D, FlowDataOf<F>>> where Directive: FlowArg<F>, P: Unpositioned, D: JoinData<FlowDataOf<F>> {
        self.with_position(rt::Directive::go_to(<Directive as FlowArg<F>>::ID))
    }
    /// Jump to a step (`booking::Step::confirm`), of this flow or another.
    #[rustfmt::skip]
    pub fn go_to_step<S, E>(self, step: S) -> TypedDirective<JumpToStep, R, D::Out> where Directive: StepArg<S, Data = E>, P: Unpositioned, D: JoinData<E> {
        self.with_position(<Directive as StepArg<S>>::go_to_step(step))
    }
    /// Complete the current flow.
    #[rustfmt::skip]
    pub fn complete(self) -> TypedDirective<CompleteFlow, R, D> where P: Unpositioned {
        self.with_position(rt::Directive::complete())
    }
    /// End the conversation.
    #[rustfmt::skip]
    pub fn abort(self, reason: impl Into<String>) -> TypedDirective<AbortConversation, R, D> where P: Unpositioned, R: NoReplyYet {
        self.with_position(rt::Directive::abort(reason))
    }
    /// Restart the current flow.
    #[rustfmt::skip]
    pub fn reset(self) -> TypedDirective<ResetFlow, R, D> where P: Unpositioned {
        self.with_position(rt::Directive::reset())
    }
    /// A verbatim reply (the model is bypassed for the message body).
    #[rustfmt::skip]
    pub fn reply(self, text: impl Into<String>) -> TypedDirective<P, WithReply, D> where P: AllowsReply {
        TypedDirective::wrap(self.inner.reply(text))
    }
    /// Write session data (`Booking::patch().city("Lisbon")`, a patch of the data type
    /// `#[data]` generates); shallow-merged.
    #[rustfmt::skip]
    pub fn data<T, E>(self, patch: T) -> TypedDirective<P, R, D::Out> where Directive: PatchArg<T, Data = E>, D: JoinData<E> {
        TypedDirective::wrap(self.inner.data(<Directive as PatchArg<T>>::patch(patch)))
    }
    /// The same directive with its position and reply no longer tracked by the type
    /// (for a hook whose branches build directives of different shapes): it takes no
    /// further position or reply. Cannot fail: a typed directive is valid by construction.
    pub fn erase(self) -> TypedDirective<Checked, Checked, D> {
        self.retype()
    }
    /// The same directive as one over the data type `D2` (a directive over [`AnyData`],
    /// or already over `D2`), for a helper whose branches build directives that name
    /// `D2` in some branches only.
    pub fn over<D2>(self) -> TypedDirective<P, R, D2>
    where
        D: FitsData<D2>,
    {
        self.retype()
    }
    /// Write session context (`Concierge::patch().tier("gold")`); shallow-merged.
    #[rustfmt::skip]
    pub fn context<T>(self, patch: T) -> Self where Self: ContextArg<T> {
        Self::wrap(self.inner.context(<Self as ContextArg<T>>::context_arg(patch)))
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
    // `go_to` and `go_to_step` check their flow or step through `Directive: FlowArg<F>`
    // (`StepArg<S>`) and name its data type through that bound (`go_to_step`: as a
    // parameter, so that the return type does not report the argument again): rustc
    // then reports a type that is not a flow (step) once, at the call, in one short
    // error.

    /// Jump to flow `F` (a `#[flow]` type such as `FeedbackFlow`, or a code flow such
    /// as `TutorFlow`); the directive is over `F`'s data type.
    #[rustfmt::skip]
    pub fn go_to<F>() -> TypedDirective<JumpToFlow, NoReply, <Self as FlowArg<F>>::Data> where Self: FlowArg<F> {
        TypedDirective::wrap(rt::Directive::go_to(<Self as FlowArg<F>>::ID))
    }
    /// Jump to a step (`booking::Step::confirm`), of this flow or another; the directive
    /// is over its flow's data type.
    #[rustfmt::skip]
    pub fn go_to_step<S, D>(step: S) -> TypedDirective<JumpToStep, NoReply, D> where Self: StepArg<S, Data = D> {
        TypedDirective::wrap(<Self as StepArg<S>>::go_to_step(step))
    }
    /// Complete the current flow.
    pub fn complete() -> TypedDirective<CompleteFlow> {
        Self::new().complete()
    }
    /// Complete the current flow, then apply `next` (typically a `go_to`). When `next`
    /// aborts, the result takes no `reply` (the abort would swallow it).
    pub fn complete_then<P: ThenState, R, D>(
        next: TypedDirective<P, R, D>,
    ) -> TypedDirective<P::After, NoReply, D> {
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
    /// A data write and nothing else; the directive is over the patch's data type.
    #[rustfmt::skip]
    pub fn data<T, E>(patch: T) -> TypedDirective<NoPosition, NoReply, E> where Self: PatchArg<T, Data = E> {
        TypedDirective::wrap(rt::Directive::new().data(<Self as PatchArg<T>>::patch(patch)))
    }
    /// A context write and nothing else.
    #[rustfmt::skip]
    pub fn context<T>(patch: T) -> TypedDirective where Self: ContextArg<T> {
        TypedDirective::wrap(rt::Directive::new().context(<Self as ContextArg<T>>::context_arg(patch)))
    }
}

/// The data type of the flow `F` (through [`FlowArg`]).
type FlowDataOf<F> = <Directive as FlowArg<F>>::Data;
/// The data type of a directive over `D` that takes a part over `E` ([`JoinData`]).
type Joined<D, E> = <D as JoinData<E>>::Out;

/// `Directive: PatchArg<T>` holds when `T` is a typed patch of a `#[data]` type
/// ([`DataPatch`]): the bound of the typed `data(..)` writes, on the receiver so that
/// rustc reports a wrong argument at the argument in one short error.
#[diagnostic::on_unimplemented(
    message = "`{T}` is not a patch of a `#[data]` type",
    label = "expected `YourData::patch().field(value)` (generated by `#[data]`); a `#[context]` patch goes to `.context(..)`, a raw `Patch` map enters through `TypedDirective::try_from_untyped`"
)]
pub trait PatchArg<T> {
    /// The data type the patch writes.
    type Data;
    /// The JSON object written to the data.
    fn patch(patch: T) -> crate::data::Patch;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<T: DataPatch> PatchArg<T> for Directive {
    type Data = T::Data;
    fn patch(patch: T) -> crate::data::Patch {
        patch.into_data_patch()
    }
}

/// `PreDirective<D, ..>: PatchOf<E, D>` holds when a patch of `E` may be written by a
/// pre-directive over `D` (`E` is `D`).
#[diagnostic::on_unimplemented(
    message = "a patch of `{E}` where the flow's data is `{D}`",
    label = "this writes a `{E}` patch: an agent has one data type; write `{D}::patch()..`"
)]
pub trait PatchOf<E, D> {}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<D, C, P, R> PatchOf<D, D> for PreDirective<D, C, P, R> {}

/// Never applies (no patch is over [`Unmatched`]). With a single impl, rustc would take
/// the patch's data type from it (`D`) and report a type mismatch about
/// `DataPatch::Data` instead of the message above.
#[doc(hidden)]
#[diagnostic::do_not_recommend]
impl<D, C, P, R> PatchOf<(Unmatched, D), D> for PreDirective<D, C, P, R> {}

/// `Directive: FlowArg<F>` holds when `F` is a flow type ([`OfData`]): the bound of
/// [`Directive::go_to`].
#[diagnostic::on_unimplemented(
    message = "`{F}` is not a flow",
    label = "not a `#[flow]` type: a flow is named by the type `#[flow]` generates next to its module (`mod feedback` → `FeedbackFlow`); a flow id known only at run time enters through `TypedDirective::try_from_untyped`"
)]
pub trait FlowArg<F> {
    /// The flow's data type.
    type Data;
    /// The flow id.
    const ID: &'static str;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<F: OfData> FlowArg<F> for Directive {
    type Data = F::Data;
    const ID: &'static str = F::ID;
}

/// `Directive: StepArg<S>` holds when `S` is a step id ([`StepId`]): the bound of
/// [`Directive::go_to_step`].
#[diagnostic::on_unimplemented(
    message = "`{S}` is not a step id",
    label = "expected a step such as `booking::Step::confirm` (the `Step` enum `#[flow]` generates in each flow module)"
)]
pub trait StepArg<S> {
    /// The data type of the step's flow.
    type Data;
    /// The jump to the step.
    fn go_to_step(step: S) -> rt::Directive;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<S: StepId> StepArg<S> for Directive {
    type Data = S::Data;
    fn go_to_step(step: S) -> rt::Directive {
        rt::Directive::go_to_step_in(S::FLOW_ID, step.id())
    }
}

impl<P, R, D> From<TypedDirective<P, R, D>> for rt::Directive {
    fn from(d: TypedDirective<P, R, D>) -> Self {
        d.inner
    }
}

/// A post-LLM directive for a flow over `D`: what branch targets, `on_complete`,
/// `finalize` and `on_complete_hook` take in a `#[flow]` over `D`. A [`TypedDirective`]
/// over `D` (or over no data type) qualifies; a pre-directive, a directive over another
/// data type and the untyped runtime directive do not (the latter enters through
/// [`TypedDirective::try_from_untyped`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a typed directive for a flow with `data = {D}`",
    label = "expected a `Directive` over `{D}` here",
    note = "build it with `Directive::..` (`agent_core::typed::prelude`); a hook returns `TypedDirective<_, _, {D}>` or `impl IntoDirective<{D}>`; patches and targets must be over `{D}`; `append_prompt`, `inject_tool` and `halt` exist only before the model call; a runtime `Directive` enters through `TypedDirective::try_from_untyped(d)?`"
)]
pub trait IntoDirective<D = AnyData> {
    /// The runtime directive.
    fn into_directive(self) -> rt::Directive;
}

// Not listed in errors: the `on_unimplemented` note names what is allowed.
#[diagnostic::do_not_recommend]
impl<P, R, E: FitsData<D>, D> IntoDirective<D> for TypedDirective<P, R, E> {
    fn into_directive(self) -> rt::Directive {
        self.inner
    }
}

/// Never applies (no directive is over [`Unmatched`]). With a single impl for
/// `TypedDirective`, rustc appends "but trait `IntoDirective<Survey>` is implemented for
/// it" and that impl's header to every directive over the wrong data type (five more
/// lines); with two, it leaves them out and the message names the fix alone.
#[doc(hidden)]
#[diagnostic::do_not_recommend]
impl<P, R, E> IntoDirective<Unmatched> for TypedDirective<P, R, (E, Unmatched)> {
    fn into_directive(self) -> rt::Directive {
        self.inner
    }
}

/// A data type no directive is over (see the second impl of [`IntoDirective`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Unmatched {}

/// A directive a typed [`ToolOutput`](super::tool::ToolOutput) carries: a typed
/// directive (over any data type: a tool is not bound to one flow) or a runtime one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a post-LLM directive",
    label = "only a `Directive` is allowed here",
    note = "`append_prompt`, `inject_tool` and `halt` exist only before the model call (`prepare`, `on_enter`); tool results take a `Directive` such as `Directive::complete()`"
)]
pub trait IntoToolDirective {
    /// The runtime directive.
    fn into_tool_directive(self) -> rt::Directive;
}

#[diagnostic::do_not_recommend]
impl<P, R, D> IntoToolDirective for TypedDirective<P, R, D> {
    fn into_tool_directive(self) -> rt::Directive {
        self.inner
    }
}

#[diagnostic::do_not_recommend]
impl IntoToolDirective for rt::Directive {
    fn into_tool_directive(self) -> rt::Directive {
        self
    }
}

/// The argument of [`ToolOutput::directive`](super::tool::ToolOutput::directive): `S:
/// ToolDirectiveArg<T>` (for any `S`) holds when `T` is an [`IntoToolDirective`]. A bound
/// on the receiver rather than on `T`, so that rustc reports a wrong argument at the
/// argument in one short error.
#[diagnostic::on_unimplemented(
    message = "`{T}` is not a post-LLM directive",
    label = "only a `Directive` is allowed here: `append_prompt`, `inject_tool` and `halt` exist only before the model call (`prepare`, `on_enter`)"
)]
pub trait ToolDirectiveArg<T> {
    /// The runtime directive.
    fn tool_directive(d: T) -> rt::Directive;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<S: ?Sized, T: IntoToolDirective> ToolDirectiveArg<T> for S {
    fn tool_directive(d: T) -> rt::Directive {
        d.into_tool_directive()
    }
}

/// The position of a pre-directive holding `Self` after a directive holding `P` is
/// merged into it: at most one of them has a position field.
#[diagnostic::on_unimplemented(
    message = "this pre-directive already has a position field (`{Self}`) and the merged directive brings another (`{P}`)",
    label = "second position field",
    note = "a directive holds at most one of `go_to`, `go_to_step`, `complete`, `abort`, `reset`; to move on after completing the flow, use `Directive::complete_then(next)`"
)]
pub trait JoinPosition<P> {
    /// The merged position state.
    type Out;
}
#[diagnostic::do_not_recommend]
impl<P> JoinPosition<P> for NoPosition {
    type Out = P;
}
macro_rules! join_no_position {
    ($($p:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl JoinPosition<NoPosition> for $p {
            type Out = $p;
        }
    )*};
}
// A position and an erased directive (which may hold one): checked at run time.
macro_rules! join_checked {
    ($($p:ty),*) => {$(
        #[diagnostic::do_not_recommend]
        impl JoinPosition<Checked> for $p {
            type Out = Checked;
        }
    )*};
}
join_checked!(
    JumpToFlow,
    JumpToStep,
    CompleteFlow,
    AbortConversation,
    ResetFlow,
    CompleteThenAbort
);
join_no_position!(
    JumpToFlow,
    JumpToStep,
    CompleteFlow,
    AbortConversation,
    ResetFlow,
    CompleteThenAbort,
    Checked
);

/// The reply state of a pre-directive holding `Self` after a directive holding `R` is
/// merged into it.
pub trait JoinReply<R> {
    /// The merged reply state.
    type Out;
}
impl<R> JoinReply<R> for NoReply {
    type Out = R;
}
impl JoinReply<NoReply> for WithReply {
    type Out = WithReply;
}
impl JoinReply<WithReply> for WithReply {
    type Out = WithReply;
}
impl JoinReply<Checked> for WithReply {
    type Out = WithReply;
}
impl JoinReply<NoReply> for Checked {
    type Out = Checked;
}
impl JoinReply<WithReply> for Checked {
    type Out = Checked;
}
impl JoinReply<Checked> for Checked {
    type Out = Checked;
}
// Two erased directives: their positions are checked at run time (see `conflict`).
#[diagnostic::do_not_recommend]
impl JoinPosition<Checked> for Checked {
    type Out = Checked;
}

/// A merged pre-directive with the position `Self` may hold the reply state `R`.
#[diagnostic::on_unimplemented(
    message = "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply",
    label = "a reply and an `abort` (or a position not known at compile time) in one pre-directive",
    note = "put the farewell in the abort reason, or use `complete` instead of `abort`"
)]
pub trait ReplyFits<R> {}
impl<P> ReplyFits<NoReply> for P {}
impl<P> ReplyFits<Checked> for P {}
macro_rules! reply_fits {
    ($($p:ty),*) => {$(
        // Not listed in errors: the message says what is wrong.
        #[diagnostic::do_not_recommend]
        impl ReplyFits<WithReply> for $p {}
    )*};
}
reply_fits!(NoPosition, JumpToFlow, JumpToStep, CompleteFlow, ResetFlow);

/// A typed directive's parts as types: what [`PreDirective::directive`] merges.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a typed directive",
    label = "expected a typed `Directive::..` here",
    note = "a runtime `agent_core::directive::Directive` enters through `TypedDirective::try_from_untyped(d)?`"
)]
pub trait TypedParts {
    /// Its position state.
    type Position;
    /// Its reply state.
    type Reply;
    /// The data type of its patches and targets.
    type Data;
    /// The runtime directive.
    fn into_runtime_directive(self) -> rt::Directive;
}

#[diagnostic::do_not_recommend]
impl<P, R, D> TypedParts for TypedDirective<P, R, D> {
    type Position = P;
    type Reply = R;
    type Data = D;
    fn into_runtime_directive(self) -> rt::Directive {
        self.inner
    }
}

// What `PreDirective::directive` checks, one rule per trait, each on the pre-directive
// (so that rustc reports a broken rule at the argument in one short error) and each
// after the previous one (through its associated types, so that a directive that breaks
// one rule is not reported again for the next).

/// `PreDirective<..>: MergeTyped<T>` holds when `T` is a typed directive
/// ([`TypedParts`]); its parts feed the next checks of [`PreDirective::directive`].
#[diagnostic::on_unimplemented(
    message = "`{T}` is not a typed directive",
    label = "expected a typed `Directive::..` here: a runtime `agent_core::directive::Directive` enters through `TypedDirective::try_from_untyped(d)?`"
)]
pub trait MergeTyped<T> {
    /// Its position state.
    type Position;
    /// Its reply state.
    type Reply;
    /// The data type of its patches and targets.
    type Data;
    /// The runtime directive.
    fn merged(d: T) -> rt::Directive;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<D, C, P, R, T: TypedParts> MergeTyped<T> for PreDirective<D, C, P, R> {
    type Position = T::Position;
    type Reply = T::Reply;
    type Data = T::Data;
    fn merged(d: T) -> rt::Directive {
        d.into_runtime_directive()
    }
}

/// `PreDirective<D, ..>: MergeData<E, D>` holds when a directive over `E` fits a
/// pre-directive over `D` ([`FitsData`]).
#[diagnostic::on_unimplemented(
    message = "a directive over `{E}` used in a flow with `data = {D}`",
    label = "its patch or target is over `{E}`, not `{D}`: an agent has one data type; write `{D}::patch()..` and name flows and steps with `data = {D}`"
)]
pub trait MergeData<E, D> {}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<D, C, P, R, E: FitsData<D>> MergeData<E, D> for PreDirective<D, C, P, R> {}

/// `PreDirective<_, _, P, _>: MergePosition<Q, P>` holds when a directive with the
/// position `Q` may be merged into a pre-directive with the position `P`
/// ([`JoinPosition`]).
#[diagnostic::on_unimplemented(
    message = "this pre-directive already has a position field (`{P}`) and the merged directive brings another (`{Q}`)",
    label = "second position field: a directive holds at most one of `go_to`, `go_to_step`, `complete`, `abort`, `reset`; to move on after completing the flow, use `Directive::complete_then(next)`"
)]
pub trait MergePosition<Q, P> {
    /// The merged position state.
    type Out;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<D, C, P: JoinPosition<Q>, R, Q> MergePosition<Q, P> for PreDirective<D, C, P, R> {
    type Out = P::Out;
}

/// `PreDirective<..>: MergeReply<M, Q>` holds when the merged position `M` may hold the
/// merged reply state (the pre-directive's and `Q`; [`ReplyFits`]).
#[diagnostic::on_unimplemented(
    message = "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply",
    label = "a reply and an `abort` (or a position not known at compile time) in one pre-directive: put the farewell in the abort reason, or use `complete` instead of `abort`"
)]
pub trait MergeReply<M, Q> {
    /// The merged reply state.
    type Out;
}

// Not listed under an error: its message names the fix.
#[diagnostic::do_not_recommend]
impl<D, C, P, R: JoinReply<Q>, M: ReplyFits<R::Out>, Q> MergeReply<M, Q>
    for PreDirective<D, C, P, R>
{
    type Out = R::Out;
}

type PartPosition<S, T> = <S as MergeTyped<T>>::Position;
type PartReply<S, T> = <S as MergeTyped<T>>::Reply;
type PartData<S, T> = <S as MergeTyped<T>>::Data;
type MergedPosition<S, T, P> = <S as MergePosition<PartPosition<S, T>, P>>::Out;
type MergedReply<S, T, P> = <S as MergeReply<MergedPosition<S, T, P>, PartReply<S, T>>>::Out;
/// The pre-directive `S` (over `D` and `C`, at the position `P`) with `T` merged in.
type Merged<D, C, S, T, P> = PreDirective<D, C, MergedPosition<S, T, P>, MergedReply<S, T, P>>;

/// A pre-LLM directive under construction: what `prepare` and `on_enter` hooks return. Adds
/// `append_prompt`, `inject_tool` and `halt` (this turn only) to a [`Directive`].
///
/// Like [`TypedDirective`], its type records its position field and reply (`P`, `R`; see
/// [`state`]), so merging a second position or an `abort` after a `reply` does not
/// compile, wherever the merged directive comes from:
///
/// ```compile_fail,E0277
/// use agent_core::typed::prelude::*;
/// let abort = Directive::new().abort("spam");
/// let p: PreDirective<(), ()> = PreDirective::new().reply("bye").directive(abort);
/// ```
///
/// A hook that sets a reply or a position declares it (`-> impl IntoPreDirective<Booking,
/// Concierge>`, or `PreDirective<Booking, Concierge, NoPosition, WithReply>`); the
/// default `PreDirective<D, C>` has neither.
#[must_use = "a pre-directive does nothing until it is returned"]
pub struct PreDirective<D, C, P = NoPosition, R = NoReply> {
    inner: rt::PreDirective<D, C>,
    /// A second position field given by merging erased directives (whose positions the
    /// type does not track), reported where a `#[flow]` hook's result is converted.
    conflict: Option<DirectiveError>,
    _state: PhantomData<fn() -> (P, R)>,
}

impl<D, C> Default for PreDirective<D, C> {
    fn default() -> Self {
        Self {
            inner: rt::PreDirective::default(),
            conflict: None,
            _state: PhantomData,
        }
    }
}

impl<D, C, P, R> std::fmt::Debug for PreDirective<D, C, P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<D, C> PreDirective<D, C> {
    /// An empty pre-directive.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<D, C, P, R> PreDirective<D, C, P, R> {
    fn retype<P2, R2>(self) -> PreDirective<D, C, P2, R2> {
        PreDirective {
            inner: self.inner,
            conflict: self.conflict,
            _state: PhantomData,
        }
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
    /// Merge a typed directive (position, reply, data, context) over `D` into this one.
    /// A directive holds one position and no `reply` with `abort`: merging a second
    /// position, or an `abort` into a pre-directive with a `reply`, does not compile.
    /// Two [erased](TypedDirective::erase) positions are checked when a `#[flow]` hook
    /// returns them (see [`Self::try_into_runtime`]).
    // The bounds stay on the line of the `fn` (`rustfmt::skip`): rustc quotes that line
    // under an error.
    #[rustfmt::skip]
    pub fn directive<T>(mut self, d: T) -> Merged<D, C, Self, T, P> where Self: MergeTyped<T> + MergeData<PartData<Self, T>, D> + MergePosition<PartPosition<Self, T>, P> + MergeReply<MergedPosition<Self, T, P>, PartReply<Self, T>> {
        let d = <Self as MergeTyped<T>>::merged(d);
        if let (Some(a), Some(b)) = (&self.inner.base.position, &d.position)
            && self.conflict.is_none()
        {
            self.conflict = Some(DirectiveError::MultiplePositions {
                fields: vec![a.field_name().to_owned(), b.field_name().to_owned()],
            });
        }
        self.inner = self.inner.directive(d);
        self.retype()
    }
    /// Set a verbatim reply.
    #[rustfmt::skip]
    pub fn reply(mut self, text: impl Into<String>) -> PreDirective<D, C, P, WithReply> where P: AllowsReply {
        self.inner = self.inner.reply(text);
        self.retype()
    }
    /// Write session data (a patch of `D`, `Booking::patch().city("Lisbon")`).
    #[rustfmt::skip]
    pub fn data<T, E>(mut self, patch: T) -> Self where Directive: PatchArg<T, Data = E>, Self: PatchOf<E, D> {
        self.inner = self.inner.data(<Directive as PatchArg<T>>::patch(patch));
        self
    }
    /// Write session context.
    #[rustfmt::skip]
    pub fn context<T>(mut self, patch: T) -> Self where Self: ContextArg<T> {
        self.inner = self.inner.context(<Self as ContextArg<T>>::context_arg(patch));
        self
    }
    /// The same pre-directive with its position and reply no longer tracked by the type
    /// (for a hook whose branches build pre-directives of different shapes).
    pub fn erase(self) -> PreDirective<D, C, Checked, Checked> {
        self.retype()
    }
    /// The runtime pre-directive, or why it breaks the rules: two position fields
    /// given by merging erased directives, or `reply` with `abort`. The hooks
    /// `#[flow]` generates convert with it; a hook given to the runtime builders can too.
    pub fn try_into_runtime(self) -> Result<rt::PreDirective<D, C>, DirectiveError> {
        if let Some(e) = self.conflict {
            return Err(e);
        }
        self.inner.base.validate()?;
        Ok(self.inner)
    }
    /// The runtime pre-directive (unchecked: see [`Self::try_into_runtime`]).
    pub fn into_runtime(self) -> rt::PreDirective<D, C> {
        self.inner
    }
}

impl<D, C, P, R> From<PreDirective<D, C, P, R>> for rt::PreDirective<D, C> {
    fn from(p: PreDirective<D, C, P, R>) -> Self {
        p.inner
    }
}

/// What a pre-LLM hook (`prepare`, `on_enter`) may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by a pre-LLM hook",
    label = "expected a `PreDirective<{D}, {C}>` or a `Directive` over `{D}`",
    note = "`prepare` and `on_enter` hooks return `PreDirective::new()...` or a typed `Directive`; a runtime `Directive` enters through `TypedDirective::try_from_untyped(d)?`; async hooks must be declared inside the flow module"
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

impl<D, C, P, R> IntoPreDirective<D, C> for PreDirective<D, C, P, R> {
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
impl<D, C, P, R, E: FitsData<D>> IntoPreDirective<D, C> for TypedDirective<P, R, E> {
    fn into_pre_directive(self) -> rt::PreDirective<D, C> {
        self.inner.into()
    }
}
