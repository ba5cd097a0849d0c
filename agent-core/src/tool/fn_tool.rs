//! Tools built from async closures, for code that does not use `#[tool]`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Effect, Tool, ToolCx, ToolError, ToolOutput, default_request_words};
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
    confirm: Option<bool>,
    summary: Option<String>,
    derived: Vec<String>,
    outcome: Vec<String>,
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
            confirm: self.confirm,
            summary: self.summary.clone(),
            derived: self.derived.clone(),
            outcome: self.outcome.clone(),
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
            confirm: None,
            summary: None,
            derived: Vec::new(),
            outcome: Vec::new(),
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
            confirm: None,
            summary: None,
            derived: Vec::new(),
            outcome: Vec::new(),
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

    /// Arguments the model computes rather than takes from the user (see
    /// [`Tool::derived_args`]): not checked against what the user said.
    pub fn derived_args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.derived = args.into_iter().map(Into::into).collect();
        self
    }

    /// Whether a call waits for the user's yes to its summary ([`Tool::needs_agreement`];
    /// default: only an [`Effect::Once`] tool does).
    pub fn confirm(mut self, confirm: bool) -> Self {
        self.confirm = Some(confirm);
        self
    }

    /// The summary shown for that yes, a template over the arguments
    /// ([`Tool::summary_template`]): `.summary("Refund the duplicate charge on {invoice}")`.
    pub fn summary(mut self, template: impl Into<String>) -> Self {
        self.summary = Some(template.into());
        self
    }

    /// The words by which a reply states this tool's outcome ([`Tool::outcome_words`]):
    /// `.outcome(["booked", "reserved"])`. A model-written reply may use them only in
    /// a turn in which this tool succeeded.
    pub fn outcome<S: Into<String>>(mut self, words: impl IntoIterator<Item = S>) -> Self {
        self.outcome = words.into_iter().map(Into::into).collect();
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
    fn needs_agreement(&self) -> bool {
        self.confirm.unwrap_or(self.effect == Effect::Once)
    }
    fn summary_template(&self) -> Option<&str> {
        self.summary.as_deref()
    }
    fn derived_args(&self) -> Vec<String> {
        self.derived.clone()
    }
    fn outcome_words(&self) -> Vec<String> {
        self.outcome.clone()
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
