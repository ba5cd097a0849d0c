//! Tools: functions the model may call. A tool that fails, rejects its input, panics or
//! runs past its time limit becomes a failed tool result the model sees; the turn goes
//! on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

use crate::data::Patch;
use crate::directive::Directive;
use crate::hook::Dispatcher;
use crate::provider::ToolSpec;

/// Why a tool call failed. The message is shown to the model as the tool result.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ToolError {
    /// The tool ran and failed.
    #[error("tool failed: {0}")]
    Failed(String),
    /// The arguments did not match the tool's schema or its `validate_input`.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// `check_permissions` refused the call.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The model asked for a tool that is not offered this turn.
    #[error("unknown tool `{name}`; available tools: {}", available.join(", "))]
    Unknown {
        /// Requested name.
        name: String,
        /// Tools offered this turn.
        available: Vec<String>,
    },
    /// The tool panicked.
    #[error("tool panicked: {0}")]
    Panicked(String),
    /// The call ran past its time limit ([`Tool::timeout`], else the agent's
    /// `tool_timeout`) and was cancelled. Side effects it started may have happened.
    #[error(
        "timed out after {} ms and was cancelled; it may have done part of its work",
        .0.as_millis()
    )]
    TimedOut(Duration),
    /// The tool's result carries a directive that breaks the rules (`reply` with
    /// `abort`, two position fields): reported where the result is converted, instead
    /// of one of them being dropped.
    #[error("the tool's result holds an invalid directive: {0}")]
    InvalidDirective(crate::error::DirectiveError),
    /// A [`Effect::Once`] call whose earlier attempt journaled its intent but no
    /// result (the process stopped in between): it was not run again. The message
    /// comes from the agent's `on_unknown_outcome` hook, or says so when there is none.
    #[error("{0}")]
    OutcomeUnknown(String),
    /// A [`Effect::Once`] call that failed on its first run, replayed from the
    /// journal: the failure as it read then.
    #[error("{0}")]
    Recorded(String),
    /// A person denied the call ([`crate::approval`]); it did not run.
    #[error("denied by a person: {0}")]
    Denied(String),
    /// The call needs a person's approval while an earlier call of this session
    /// still waits for one; it did not run.
    #[error(
        "not run: an earlier call (`{0}`) still awaits a person's approval; wait for that decision"
    )]
    ApprovalPending(String),
}

impl ToolError {
    /// A failure with a message.
    pub fn msg(m: impl std::fmt::Display) -> Self {
        ToolError::Failed(m.to_string())
    }
}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError::Failed(s)
    }
}
impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        ToolError::Failed(s.to_owned())
    }
}
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// What a tool returns: content for the model and an optional directive for the
/// post-LLM bus.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Text the model sees as the tool result.
    pub content: String,
    /// Directive joining the post-LLM bus.
    pub directive: Directive,
}

impl ToolOutput {
    /// A text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            directive: Directive::default(),
        }
    }
    /// A JSON result.
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }
    /// Add a data write.
    pub fn data(mut self, patch: impl Into<Patch>) -> Self {
        self.directive = self.directive.data(patch);
        self
    }
    /// Add a directive (merged with any already set).
    pub fn directive(mut self, d: Directive) -> Self {
        self.directive = crate::directive::merge(std::mem::take(&mut self.directive), d);
        self
    }
}

/// What re-running a tool call does, and so what the runtime may do when a turn is
/// retried (after a save conflict, a crash, a redelivered event): the tool's *effect
/// class*. Declared with `#[tool(effect = once)]` or [`FnTool::effect`].
///
/// Every call, whatever its class, gets an idempotency key
/// ([`ToolCx::idempotency_key`]) that is the same on every re-run of the same call.
///
/// The default is [`Effect::Idempotent`]: most tools read (a search, a price) or call
/// an API that takes an idempotency key, and for those a re-run is harmless when the
/// key is passed on. Journaling every call instead would cost two durable writes per
/// call and turn every crash into a question for the application; assuming `Pure`
/// would promise less than the key gives. A tool whose effect cannot be deduplicated
/// downstream (a payment API without keys, an email) is made safe with one word:
/// `effect = once`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Effect {
    /// No side effects: re-running it is always fine (lookups, calculations).
    Pure,
    /// Side effects that the same idempotency key deduplicates: a retried turn runs
    /// it again with the same [`ToolCx::idempotency_key`]; the tool passes the key to
    /// whatever it changes. The default.
    #[default]
    Idempotent,
    /// Never runs twice for the same call. Its intent is journaled in the store
    /// before it runs and its result after, both durably, before the result is used:
    /// a retried or redelivered turn that makes the same call (same position, name
    /// and arguments) gets the recorded result without running it; a call whose
    /// intent is journaled without a result (the process stopped in between) goes to
    /// the agent's `on_unknown_outcome` hook and is not run again unless the hook says
    /// so. Needs a store that keeps a journal (every store of this crate does).
    Once,
}

impl Effect {
    /// The class's name as `#[tool(effect = ..)]` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Pure => "pure",
            Effect::Idempotent => "idempotent",
            Effect::Once => "once",
        }
    }
}

/// What a tool sees: an owned snapshot of the session (so tool futures are `'static`)
/// and a dispatcher into the post-LLM bus.
pub struct ToolCx<D, C> {
    pub(crate) session_id: Arc<str>,
    pub(crate) flow: Option<Arc<str>>,
    pub(crate) step: Option<Arc<str>>,
    pub(crate) data: Arc<D>,
    pub(crate) context: Arc<C>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) key: Arc<str>,
}

impl<D, C> Clone for ToolCx<D, C> {
    fn clone(&self) -> Self {
        Self {
            session_id: self.session_id.clone(),
            flow: self.flow.clone(),
            step: self.step.clone(),
            data: self.data.clone(),
            context: self.context.clone(),
            dispatcher: self.dispatcher.clone(),
            key: self.key.clone(),
        }
    }
}

impl<D, C> ToolCx<D, C> {
    /// A context for calling a tool outside a turn (tests, scripts). Its
    /// idempotency key is `detached-<session id>`.
    pub fn detached(session_id: &str, data: D, context: C) -> Self {
        Self {
            session_id: Arc::from(session_id),
            flow: None,
            step: None,
            data: Arc::new(data),
            context: Arc::new(context),
            dispatcher: Dispatcher::default(),
            key: Arc::from(format!("detached-{session_id}")),
        }
    }
    /// This call's idempotency key: the same on every run of the same call (a turn
    /// retried after a save conflict or a crash, an inbound event delivered again),
    /// different for any other call. Derived from the session, the turn (its inbound
    /// event id, else the session's turn number and the message), the call's position
    /// in the turn, its tool name and its arguments; at most 70 ASCII characters
    /// (`[0-9a-f-]`), so payment and email APIs accept it as is. Pass it to whatever
    /// the tool changes to make an [`Effect::Idempotent`] tool safe to re-run.
    pub fn idempotency_key(&self) -> &str {
        &self.key
    }
    /// Session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// Active flow id.
    pub fn flow_id(&self) -> Option<&str> {
        self.flow.as_deref()
    }
    /// Current step id.
    pub fn step_id(&self) -> Option<&str> {
        self.step.as_deref()
    }
    /// Collected data at the time of the call.
    pub fn data(&self) -> &D {
        &self.data
    }
    /// Session context at the time of the call.
    pub fn context(&self) -> &C {
        &self.context
    }
    /// Queue a directive into the post-LLM bus.
    pub fn dispatch(&self, directive: Directive) {
        self.dispatcher.dispatch(directive);
    }
}

/// Anything builders accept as a tool: a tool value (e.g. one made by `#[tool]`) or an
/// already shared `Arc<dyn Tool>`.
pub trait IntoTool<D, C> {
    /// Share it.
    fn into_tool(self) -> Arc<dyn Tool<D, C>>;
}

impl<D, C, T: Tool<D, C> + 'static> IntoTool<D, C> for T {
    fn into_tool(self) -> Arc<dyn Tool<D, C>> {
        Arc::new(self)
    }
}

/// A shared tool is a tool (so `Arc<dyn Tool>` goes wherever a tool does).
#[async_trait]
impl<D, C, T> Tool<D, C> for Arc<T>
where
    T: Tool<D, C> + ?Sized,
    D: Send + Sync + 'static,
    C: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        (**self).name()
    }
    fn description(&self) -> &str {
        (**self).description()
    }
    fn parameters(&self) -> Value {
        (**self).parameters()
    }
    fn concurrency_safe(&self) -> bool {
        (**self).concurrency_safe()
    }
    fn timeout(&self) -> Option<Duration> {
        (**self).timeout()
    }
    fn effect(&self) -> Effect {
        (**self).effect()
    }
    fn needs_approval(&self, args: &Value) -> bool {
        (**self).needs_approval(args)
    }
    fn request_words(&self) -> Vec<String> {
        (**self).request_words()
    }
    fn validate_input(&self, args: &Value) -> Result<(), String> {
        (**self).validate_input(args)
    }
    async fn check_permissions(&self, cx: &ToolCx<D, C>) -> Result<(), String> {
        (**self).check_permissions(cx).await
    }
    async fn call(&self, cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError> {
        (**self).call(cx, args).await
    }
    fn spec(&self) -> ToolSpec {
        (**self).spec()
    }
}

/// Shared parts of the contexts of one tool round (each call gets its own dispatcher
/// and key).
pub(crate) struct ToolCxParts<D, C> {
    /// The turn's identity ([`crate::journal::turn_tag`]).
    pub(crate) turn: Arc<str>,
    pub(crate) session_id: Arc<str>,
    pub(crate) flow: Option<Arc<str>>,
    pub(crate) step: Option<Arc<str>>,
    pub(crate) data: Arc<D>,
    pub(crate) context: Arc<C>,
}

impl<D, C> ToolCxParts<D, C> {
    /// The context of the call at position `index` of the turn.
    pub(crate) fn cx(&self, index: usize, name: &str, args: &Value) -> ToolCx<D, C> {
        self.keyed(self.key(index, name, args))
    }

    /// The idempotency key of the call at position `index` of the turn.
    pub(crate) fn key(&self, index: usize, name: &str, args: &Value) -> String {
        crate::journal::call_key(&self.session_id, &self.turn, index, name, args)
    }

    /// The context of a call whose key was fixed earlier (a call held for approval).
    pub(crate) fn keyed(&self, key: String) -> ToolCx<D, C> {
        ToolCx {
            key: Arc::from(key),
            session_id: self.session_id.clone(),
            flow: self.flow.clone(),
            step: self.step.clone(),
            data: self.data.clone(),
            context: self.context.clone(),
            dispatcher: Dispatcher::default(),
        }
    }
}

/// The request words of a tool that declares none ([`Tool::request_words`]).
fn default_request_words(effect: Effect, name: &str) -> Vec<String> {
    if effect == Effect::Once {
        vec![first_word(name)]
    } else {
        Vec::new()
    }
}

/// The first word of a tool's name (`refund`, `book` of `book_room` or `bookRoom`).
fn first_word(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if !c.is_alphanumeric() || (c.is_uppercase() && !out.is_empty()) {
            if out.is_empty() {
                continue;
            }
            break;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// A tool the model may call.
#[async_trait]
pub trait Tool<D, C>: Send + Sync {
    /// Name the model calls it by (`[A-Za-z0-9_-]{1,64}`, checked at `build()`).
    fn name(&self) -> &str;
    /// What it does (shown to the model; required).
    fn description(&self) -> &str;
    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Whether calls may run in parallel with other concurrency-safe calls.
    fn concurrency_safe(&self) -> bool {
        false
    }
    /// This tool's time limit per call; `None` uses the agent's
    /// [`tool_timeout`](crate::agent::AgentConfig::tool_timeout).
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// What re-running a call does ([`Effect`]; default [`Effect::Idempotent`]).
    fn effect(&self) -> Effect {
        Effect::Idempotent
    }
    /// Whether this call must wait for a person's decision before it runs
    /// ([`crate::approval`]; default: no).
    fn needs_approval(&self, _args: &Value) -> bool {
        false
    }
    /// Words by which a user asks for this action, matched at the start of the user's
    /// words, case and accents aside ("refund" matches "refunded", "reembols"
    /// "reembolso"). A tool with words is offered to the model only when the user's
    /// latest message or the one before has one of them, or the agent's last message
    /// did (an offer the user answers); otherwise the answer cannot call it. Default:
    /// for an [`Effect::Once`] tool (money moves), the first word of its name (`book`
    /// for `book_room`); for the others none (the model's judgement decides).
    fn request_words(&self) -> Vec<String> {
        default_request_words(self.effect(), self.name())
    }
    /// Gate on the arguments before the call; an error becomes the tool result.
    fn validate_input(&self, _args: &Value) -> Result<(), String> {
        Ok(())
    }
    /// Gate on the session before the call; an error becomes the tool result.
    async fn check_permissions(&self, _cx: &ToolCx<D, C>) -> Result<(), String> {
        Ok(())
    }
    /// Run the tool.
    async fn call(&self, cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError>;

    /// The model-facing description.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

type Handler<D, C> = Arc<
    dyn Fn(ToolCx<D, C>, Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
>;
type Validator = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;
type Permission<D, C> = Arc<dyn Fn(&ToolCx<D, C>) -> Result<(), String> + Send + Sync>;
type ApprovalRule = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A tool built from an async closure with typed arguments.
///
/// ```
/// use agent_core::tool::{FnTool, ToolOutput};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { hotel: String }
/// let t: FnTool<(), ()> = FnTool::new("book_room", "Book a room.", |_cx, a: Args| async move {
///     Ok(ToolOutput::text(format!("booked {}", a.hotel)))
/// });
/// ```
pub struct FnTool<D, C> {
    name: String,
    description: String,
    parameters: Value,
    concurrency_safe: bool,
    timeout: Option<Duration>,
    effect: Effect,
    request_words: Option<Vec<String>>,
    handler: Handler<D, C>,
    validator: Option<Validator>,
    permission: Option<Permission<D, C>>,
    approval: Option<ApprovalRule>,
}

impl<D, C> Clone for FnTool<D, C> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            concurrency_safe: self.concurrency_safe,
            timeout: self.timeout,
            effect: self.effect,
            request_words: self.request_words.clone(),
            handler: self.handler.clone(),
            validator: self.validator.clone(),
            permission: self.permission.clone(),
            approval: self.approval.clone(),
        }
    }
}

impl<D: Send + Sync + 'static, C: Send + Sync + 'static> FnTool<D, C> {
    /// A tool whose arguments deserialize into `A` (its schema is sent to the model).
    pub fn new<A, F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(ToolCx<D, C>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let mut parameters = schemars::schema_for!(A).to_value();
        if let Value::Object(o) = &mut parameters {
            o.remove("$schema");
            o.remove("title");
        }
        let f = Arc::new(f);
        let handler: Handler<D, C> = Arc::new(move |cx, args| {
            let f = f.clone();
            async move {
                let a: A = serde_json::from_value(args)
                    .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
                f(cx, a).await
            }
            .boxed()
        });
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            concurrency_safe: false,
            timeout: None,
            effect: Effect::default(),
            request_words: None,
            handler,
            validator: None,
            permission: None,
            approval: None,
        }
    }

    /// A tool taking raw JSON arguments described by `parameters`.
    pub fn raw<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        f: F,
    ) -> Self
    where
        F: Fn(ToolCx<D, C>, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            concurrency_safe: false,
            timeout: None,
            effect: Effect::default(),
            request_words: None,
            handler: Arc::new(move |cx, args| f(cx, args).boxed()),
            validator: None,
            permission: None,
            approval: None,
        }
    }

    /// Allow parallel execution with other concurrency-safe calls of the same round.
    pub fn concurrency_safe(mut self) -> Self {
        self.concurrency_safe = true;
        self
    }

    /// Cancel a call that runs longer than `limit` (overrides the agent's
    /// `tool_timeout`); the caller gets [`ToolError::TimedOut`].
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Declare what re-running a call does ([`Effect`]); `.effect(Effect::Once)`
    /// makes a payment-like tool run at most once per call.
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// The words by which a user asks for this action ([`Tool::request_words`]), for
    /// instance the same verb in the languages the agent speaks.
    pub fn request_words<S: Into<String>>(mut self, words: impl IntoIterator<Item = S>) -> Self {
        self.request_words = Some(words.into_iter().map(Into::into).collect());
        self
    }

    /// Every call waits for a person's decision before it runs (see
    /// [`crate::approval`]).
    pub fn needs_approval(mut self) -> Self {
        self.approval = Some(Arc::new(|_| true));
        self
    }

    /// Calls whose arguments `rule` picks wait for a person's decision before they
    /// run (a refund above a limit, a booking for a large group); the others run at
    /// once. A rule that panics counts as "needs approval".
    pub fn needs_approval_if(
        mut self,
        rule: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.approval = Some(Arc::new(rule));
        self
    }

    /// Check arguments before the call.
    pub fn validate_input(
        mut self,
        f: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validator = Some(Arc::new(f));
        self
    }

    /// Check the session before the call.
    pub fn check_permissions(
        mut self,
        f: impl Fn(&ToolCx<D, C>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.permission = Some(Arc::new(f));
        self
    }

    /// Share it (`Arc<dyn Tool>`), as builders take it.
    pub fn into_arc(self) -> Arc<dyn Tool<D, C>> {
        Arc::new(self)
    }
}

#[async_trait]
impl<D: Send + Sync + 'static, C: Send + Sync + 'static> Tool<D, C> for FnTool<D, C> {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    fn effect(&self) -> Effect {
        self.effect
    }
    fn request_words(&self) -> Vec<String> {
        self.request_words
            .clone()
            .unwrap_or_else(|| default_request_words(self.effect, &self.name))
    }
    fn needs_approval(&self, args: &Value) -> bool {
        self.approval.as_ref().is_some_and(|rule| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rule(args))).unwrap_or(true)
        })
    }
    fn validate_input(&self, args: &Value) -> Result<(), String> {
        match &self.validator {
            Some(v) => v(args),
            None => Ok(()),
        }
    }
    async fn check_permissions(&self, cx: &ToolCx<D, C>) -> Result<(), String> {
        match &self.permission {
            Some(p) => p(cx),
            None => Ok(()),
        }
    }
    async fn call(&self, cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError> {
        (self.handler)(cx, args).await
    }
}

/// Run one call through the gates, catching errors and panics (the gates' too) as
/// failed results and cancelling it at its time limit (the tool's own, else
/// `default_limit`).
pub(crate) async fn execute<D, C>(
    tool: &dyn Tool<D, C>,
    cx: ToolCx<D, C>,
    args: Value,
    default_limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let panicked =
        |p: Box<dyn std::any::Any + Send>| ToolError::Panicked(panic_message(p.as_ref()));
    let valid =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.validate_input(&args)));
    if let Err(e) = valid.map_err(panicked)? {
        return Err(ToolError::InvalidArguments(e));
    }
    let permitted = std::panic::AssertUnwindSafe(tool.check_permissions(&cx))
        .catch_unwind()
        .await;
    if let Err(e) = permitted.map_err(panicked)? {
        return Err(ToolError::PermissionDenied(e));
    }
    let call = std::panic::AssertUnwindSafe(tool.call(cx, args)).catch_unwind();
    let caught = match tool.timeout().or(default_limit) {
        Some(limit) => match tokio::time::timeout(limit, call).await {
            Ok(r) => r,
            Err(_) => return Err(ToolError::TimedOut(limit)),
        },
        None => call.await,
    };
    caught.unwrap_or_else(|payload| Err(ToolError::Panicked(panic_message(payload.as_ref()))))
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Whether a tool name is valid for every vendor API.
pub(crate) fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::first_word;

    #[test]
    fn the_default_request_word_is_the_first_word_of_the_name() {
        assert_eq!(first_word("book_room"), "book");
        assert_eq!(first_word("bookRoom"), "book");
        assert_eq!(first_word("refund"), "refund");
        assert_eq!(first_word("_cancel-order"), "cancel");
    }
}
