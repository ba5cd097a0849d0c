//! What hooks and predicates see ([`Cx`]) and the hook traits.
//!
//! Hooks are async traits so that generated code (and users) can await inside them;
//! plain closures implement them through blanket impls, so builders accept
//! `|cx: &Cx<'_, D, C>| ...` directly.
//!
//! A hook, predicate or signal handler that panics fails the turn with
//! [`AgentError::HookPanicked`] naming it; the session is left unchanged.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::data::{DataSchema, FieldSet};
use crate::directive::{Directive, PreDirective};
use crate::error::{AgentError, DirectiveError};
use crate::provider::Message;

/// Directives dispatched from inside a hook or tool (`cx.dispatch(..)`); they join the
/// bus of the phase the emitter runs in.
#[derive(Debug, Clone, Default)]
pub struct Dispatcher {
    queue: Arc<Mutex<Vec<Directive>>>,
    /// The first callback that panicked where the engine cannot return an error at
    /// once (a predicate inside a filter): the turn fails with it before anything is
    /// saved or another model call is made.
    fault: Arc<Mutex<Option<AgentError>>>,
    /// Why the directive a hook just returned could not be converted (a typed
    /// `PreDirective` with two position fields): the engine fails the turn with it,
    /// naming the hook, when it applies that hook's (empty) result.
    rejected: Arc<Mutex<Option<DirectiveError>>>,
}

impl Dispatcher {
    /// Queue a directive to take effect in this turn, merged with the others of its phase by
    /// the one merge function (its source shows in the response's `directive_chain`). Use it
    /// from callbacks that cannot return a directive themselves.
    pub fn dispatch(&self, directive: Directive) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push(directive);
    }
    /// Take everything queued so far.
    pub(crate) fn drain(&self) -> Vec<Directive> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *q)
    }
    /// Remember a callback's failure (the first one wins).
    pub(crate) fn fault(&self, error: AgentError) {
        let mut f = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(error);
        }
    }
    /// The remembered failure, if any.
    pub(crate) fn take_fault(&self) -> Option<AgentError> {
        let mut f = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        f.take()
    }
    /// Remember that the directive a hook returned breaks the rules (the first one
    /// wins); the hook's result is replaced by an empty one.
    pub(crate) fn reject(&self, error: DirectiveError) {
        let mut r = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_none() {
            *r = Some(error);
        }
    }
    /// The remembered rejection, if any.
    pub(crate) fn take_rejected(&self) -> Option<DirectiveError> {
        let mut r = self.rejected.lock().unwrap_or_else(|e| e.into_inner());
        r.take()
    }
}

/// A read-only view of the turn: the session's data and context, where the conversation
/// is, and the latest user message. Passed to hooks, predicates and signal handlers.
pub struct Cx<'a, D, C> {
    pub(crate) session_id: &'a str,
    pub(crate) data: &'a D,
    pub(crate) context: &'a C,
    pub(crate) flow: Option<&'a str>,
    pub(crate) step: Option<&'a str>,
    pub(crate) history: &'a [Message],
    pub(crate) message: &'a str,
    pub(crate) present: &'a FieldSet,
    pub(crate) schema: &'a DataSchema,
    pub(crate) dispatcher: &'a Dispatcher,
}

impl<'a, D, C> Cx<'a, D, C> {
    /// The id of the session this turn runs on (what the application passed to `respond`).
    pub fn session_id(&self) -> &'a str {
        self.session_id
    }
    /// The data collected so far, as stored before this point of the turn (with a
    /// `#[data]` type, the fields not given yet are `None`).
    pub fn data(&self) -> &'a D {
        self.data
    }
    /// The application-owned context of the session (the user's tier, an API client, …),
    /// which the model never writes.
    pub fn context(&self) -> &'a C {
        self.context
    }
    /// The id of the flow the conversation is in, `None` outside any flow.
    pub fn flow_id(&self) -> Option<&'a str> {
        self.flow
    }
    /// The id of the step the conversation is at, `None` outside any flow.
    pub fn step_id(&self) -> Option<&'a str> {
        self.step
    }
    /// Conversation history (oldest first, including the latest user message).
    pub fn history(&self) -> &'a [Message] {
        self.history
    }
    /// The latest user message (empty for out-of-turn work).
    pub fn message(&self) -> &'a str {
        self.message
    }
    /// Whether a data field is present (non-null).
    pub fn has(&self, field: &str) -> bool {
        self.schema
            .index_of(field)
            .is_some_and(|i| self.present.contains(i))
    }
    /// Queue a directive into the current phase's bus.
    pub fn dispatch(&self, directive: Directive) {
        self.dispatcher.dispatch(directive);
    }
}

/// A code predicate (`if`, `skip`): pure, synchronous, free. One that panics fails the
/// turn with [`AgentError::HookPanicked`] naming it; the session is left unchanged.
pub type Predicate<D, C> = Arc<dyn Fn(&Cx<'_, D, C>) -> bool + Send + Sync>;

/// A pre-LLM hook (`on_enter`, `prepare`): feeds the prompt and tools of this turn.
#[async_trait]
pub trait PreHook<D, C>: Send + Sync {
    /// Run the hook on the turn's view; the returned pre-directive shapes this turn's model
    /// call (prompt, tools, halt) and may move the conversation.
    async fn call(&self, cx: &Cx<'_, D, C>) -> PreDirective<D, C>;
}

#[async_trait]
impl<D, C, F> PreHook<D, C> for F
where
    F: Fn(&Cx<'_, D, C>) -> PreDirective<D, C> + Send + Sync,
    D: Sync,
    C: Sync,
{
    async fn call(&self, cx: &Cx<'_, D, C>) -> PreDirective<D, C> {
        self(cx)
    }
}

/// A post-LLM hook (`finalize`, `on_complete`): returns a plain [`Directive`].
#[async_trait]
pub trait PostHook<D, C>: Send + Sync {
    /// Run the hook on the turn's view; the returned directive is merged with the turn's
    /// other post-model directives.
    async fn call(&self, cx: &Cx<'_, D, C>) -> Directive;
}

#[async_trait]
impl<D, C, F> PostHook<D, C> for F
where
    F: Fn(&Cx<'_, D, C>) -> Directive + Send + Sync,
    D: Sync,
    C: Sync,
{
    async fn call(&self, cx: &Cx<'_, D, C>) -> Directive {
        self(cx)
    }
}

/// A notification hook (`on_exit`, `on_data_update`, `on_context_update`).
#[async_trait]
pub trait NotifyHook<D, C>: Send + Sync {
    /// Run the hook on the turn's view (it is told, and cannot steer: use `dispatch` on the
    /// view to queue a directive).
    async fn call(&self, cx: &Cx<'_, D, C>);
}

#[async_trait]
impl<D, C, F> NotifyHook<D, C> for F
where
    F: Fn(&Cx<'_, D, C>) + Send + Sync,
    D: Sync,
    C: Sync,
{
    async fn call(&self, cx: &Cx<'_, D, C>) {
        self(cx)
    }
}
