//! Tools: functions the model may call. A tool that fails, rejects its input, panics or
//! runs past its time limit becomes a failed tool result the model sees; the turn goes
//! on.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use thiserror::Error;

use crate::data::Patch;
use crate::directive::Directive;
use crate::provider::ToolSpec;

mod cx;
mod fn_tool;
pub(crate) mod key;
mod run;

pub use cx::ToolCx;
pub(crate) use cx::ToolCxParts;
pub use fn_tool::FnTool;
#[cfg(feature = "mcp")]
pub(crate) use run::valid_tool_name;
pub(crate) use run::{check_tool, execute, panic_message};

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
    /// The tool's code panicked, with the panic's message: the panic is caught and reported
    /// like any other tool error, never unwinding through the turn.
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
    /// A failure with a message the model reads as the tool's result (for instance "no rooms
    /// left on that date"), so it can tell the user or try something else.
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
///
/// `structured` and `images` are for code that calls a tool itself (a wrapping tool, a
/// script using the `mcp` feature's `McpTool::call_detached`); the model is shown
/// `content` only: [`Message`](crate::provider::Message) carries text, so a tool's
/// images do not reach the model, and the engine neither journals nor records them in
/// [`ToolCallRecord`](crate::response::ToolCallRecord). A tool that has an image for
/// the model says what it is in `content`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Text the model sees as the tool result.
    pub content: String,
    /// Directive joining the post-LLM bus.
    pub directive: Directive,
    /// The result as JSON, when the tool gives one besides its text (an MCP tool's
    /// `structuredContent`).
    pub structured: Option<Value>,
    /// Images the tool returned (an MCP tool's image content), not shown to the model.
    pub images: Vec<ToolImage>,
}

/// An image in a tool's result: its MIME type and its bytes in base64, as MCP sends
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolImage {
    /// The image's MIME type (`image/png`, `image/jpeg`, …).
    pub mime_type: String,
    /// The image's bytes, base64-encoded.
    pub data: String,
}

impl ToolImage {
    /// An image from its MIME type and base64 data.
    pub fn base64(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// The decoded size in bytes (from the base64 length).
    pub fn len(&self) -> usize {
        let pad = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(pad)
    }

    /// Whether the image has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ToolOutput {
    /// A result whose text the model reads in its tool round; chain `.data(..)` or
    /// `.directive(..)` to write data or steer the flow as well.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
    /// A result whose text is `value` serialized as JSON (for a model that reads structured
    /// results better than prose).
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }
    /// Attach the result as JSON ([`Self::structured`]); the model still reads
    /// `content`.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }
    /// Attach an image ([`Self::images`]; not shown to the model).
    pub fn with_image(mut self, image: ToolImage) -> Self {
        self.images.push(image);
        self
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

/// Anything builders accept as a tool: a tool value (e.g. one made by `#[tool]`) or an
/// already shared `Arc<dyn Tool>`.
pub trait IntoTool<D, C> {
    /// Turn this into the shared tool the builders keep.
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
    fn needs_agreement(&self) -> bool {
        (**self).needs_agreement()
    }
    fn summary_template(&self) -> Option<&str> {
        (**self).summary_template()
    }
    fn derived_args(&self) -> Vec<String> {
        (**self).derived_args()
    }
    fn outcome_words(&self) -> Vec<String> {
        (**self).outcome_words()
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

/// A tool that waits for the user's yes to its summary wherever it is offered
/// ([`Tool::needs_agreement`]; what the deprecated `Step::act_on_answer` makes of a
/// step's tools).
pub(crate) struct Confirmed<D, C>(pub(crate) Arc<dyn Tool<D, C>>);

#[async_trait]
impl<D, C> Tool<D, C> for Confirmed<D, C>
where
    D: Send + Sync + 'static,
    C: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn parameters(&self) -> Value {
        self.0.parameters()
    }
    fn concurrency_safe(&self) -> bool {
        self.0.concurrency_safe()
    }
    fn timeout(&self) -> Option<Duration> {
        self.0.timeout()
    }
    fn effect(&self) -> Effect {
        self.0.effect()
    }
    fn needs_approval(&self, args: &Value) -> bool {
        self.0.needs_approval(args)
    }
    fn request_words(&self) -> Vec<String> {
        self.0.request_words()
    }
    fn needs_agreement(&self) -> bool {
        true
    }
    fn summary_template(&self) -> Option<&str> {
        self.0.summary_template()
    }
    fn derived_args(&self) -> Vec<String> {
        self.0.derived_args()
    }
    fn outcome_words(&self) -> Vec<String> {
        self.0.outcome_words()
    }
    fn validate_input(&self, args: &Value) -> Result<(), String> {
        self.0.validate_input(args)
    }
    async fn check_permissions(&self, cx: &ToolCx<D, C>) -> Result<(), String> {
        self.0.check_permissions(cx).await
    }
    async fn call(&self, cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError> {
        self.0.call(cx, args).await
    }
    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }
}

/// Whether normalised text has a word starting with `word` (normalised the same way):
/// "refund" is in "refunded", "fund" is not.
pub(crate) fn names_word(said: &str, word: &str) -> bool {
    let w = crate::data::ground::normalize(word);
    let w = w.trim();
    !w.is_empty() && said.contains(&format!(" {w}"))
}

/// The words that name a tool's action in a user's message: its request words, or
/// the first word of its name when it has none (`book` of `book_room`, a tool
/// without effects that count).
pub(crate) fn action_words<D, C>(t: &(impl Tool<D, C> + ?Sized)) -> Vec<String> {
    let words = t.request_words();
    if words.is_empty() {
        vec![first_word(t.name())]
    } else {
        words
    }
}

/// The request words of a tool that declares none ([`Tool::request_words`]).
pub(crate) fn default_request_words(effect: Effect, name: &str) -> Vec<String> {
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

/// Something the model may call during a turn: a name, a description and an argument
/// schema for the model, and the code that runs with the session's view. `#[tool]` on an
/// async fn implements it; implement it yourself for tools built at run time (the MCP
/// tools do). Register tools on the agent, a flow or a step; the model sees a tool only
/// where it is offered.
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
    /// Whether a call waits for the user's yes to a summary of it before it runs
    /// (default: an [`Effect::Once`] tool does, the others do not). The model's call
    /// does not run: the user reads a summary written by code from the call's
    /// arguments ([`Tool::summary_template`]) and a question, and a yes in the next
    /// message runs that exact call, with no model call to write its arguments again.
    /// Anything else runs nothing; a changed detail is summarised again. This is the
    /// one way a tool waits for the user's agreement; a person's approval
    /// ([`Tool::needs_approval`]) is separate and comes on top. `#[tool(confirm)]` or
    /// `#[tool(confirm = false)]` sets it; see the guide's "Tools" chapter.
    fn needs_agreement(&self) -> bool {
        self.effect() == Effect::Once
    }
    /// The summary shown for the user's yes ([`Tool::needs_agreement`]): a template
    /// over the call's arguments (`"Refund the duplicate charge on {invoice}"`), to
    /// which the engine adds its question. `None` (the default): the description
    /// followed by the argument values.
    fn summary_template(&self) -> Option<&str> {
        None
    }
    /// Whether this call must wait for a person's decision before it runs
    /// ([`crate::approval`]; default: no).
    fn needs_approval(&self, _args: &Value) -> bool {
        false
    }
    /// Words by which a user asks for this action, matched at the start of the user's
    /// words, case and accents aside ("refund" matches "refunded", "reembols"
    /// "reembolso"). Code may route on them ([`Tool::requested_in`]), and a yes to
    /// the tool's summary that names the action ("Refund it") counts as a plain yes
    /// ([`Tool::needs_agreement`]). They do not decide whether a call may run.
    /// Default: for an [`Effect::Once`] tool, the first word of its name (`book` for
    /// `book_room`); for the others none.
    fn request_words(&self) -> Vec<String> {
        default_request_words(self.effect(), self.name())
    }
    /// Arguments the model computes rather than takes from the user (a search query
    /// it words, a sum it converts to cents, a hotel it picks). Every other argument
    /// is the user's to give (with [`crate::AgentConfig::grounding`] on). One is given
    /// when it holds the stored value of the data field of the same name, when the
    /// user's words show it (checked as a field's value is, see [`crate::command`]'s
    /// "Values the user confirms"), or when the agent's last message showed it and
    /// the user agreed to that message. Text the data holds under another field's
    /// name is not given (a city copied into `hotel` names no hotel).
    ///
    /// A required argument not given keeps the call from running: the model reads
    /// "Not run: the user has not given `hotel` (Grand). Ask the user for it; do not
    /// say it was done." as the tool's result. An optional one (`Option<T>`) not
    /// given is left out and the call runs without it.
    ///
    /// Default: none (every argument is the user's). With `#[tool]`, mark a
    /// parameter `#[arg(derived)]`; with [`FnTool`], use
    /// [`FnTool::derived_args`].
    fn derived_args(&self) -> Vec<String> {
        Vec::new()
    }
    /// The words by which a reply states this tool's outcome ("booked", "reserved";
    /// "refunded"): what becomes true when a call succeeds. A model-written reply may
    /// use them in a statement only in a turn in which this tool (or another with the
    /// same words) succeeded; otherwise the reply is written again, told why, and a
    /// sentence that still says it is removed (see the crate's "What a reply may
    /// state" in [`crate::response::AgentResponse::withheld_claims`]). Questions
    /// ("Shall I book it?") and denials ("Nothing is booked yet") are not statements
    /// of it. Words match whole, case and accents aside: give the forms a reply would
    /// use, in each language the agent speaks.
    ///
    /// Default: none (the reply's words about this tool are not checked). With
    /// `#[tool]`, write `#[tool(outcome = ["booked", "reserved"])]`; with [`FnTool`], use
    /// [`FnTool::outcome`].
    fn outcome_words(&self) -> Vec<String> {
        Vec::new()
    }
    /// Whether `text` names this action in one of its [`request_words`](Self::request_words),
    /// read the way the engine reads them: for code that routes on the same words (a
    /// front desk sending refund requests to billing).
    fn requested_in(&self, text: &str) -> bool {
        let said = crate::data::ground::normalize(text);
        self.request_words().iter().any(|w| names_word(&said, w))
    }
    /// Gate on the arguments before the call; an error becomes the tool result.
    fn validate_input(&self, _args: &Value) -> Result<(), String> {
        Ok(())
    }
    /// Gate on the session before the call; an error becomes the tool result.
    async fn check_permissions(&self, _cx: &ToolCx<D, C>) -> Result<(), String> {
        Ok(())
    }
    /// Run the tool with validated arguments: its text for the model, and optionally data
    /// writes and a directive. An `Err` is shown to the model as the tool's failure.
    async fn call(&self, cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError>;

    /// The tool as the model sees it: name, description and the JSON schema of its
    /// arguments (built from the other methods; override it only to change all three).
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FnTool, Tool, ToolOutput, first_word, names_word};
    use crate::data::ground::normalize;

    #[test]
    fn the_default_request_word_is_the_first_word_of_the_name() {
        assert_eq!(first_word("book_room"), "book");
        assert_eq!(first_word("bookRoom"), "book");
        assert_eq!(first_word("refund"), "refund");
        assert_eq!(first_word("_cancel-order"), "cancel");
    }

    #[test]
    fn a_request_word_matches_the_start_of_a_word() {
        let said = normalize("Please REFUND it, I was refunded twice? Quiero un reembolso");
        assert!(names_word(&said, "refund"));
        assert!(names_word(&said, "reembols"));
        assert!(!names_word(&said, "fund"));
        assert!(!names_word(&said, ""));
    }

    #[test]
    fn code_reads_a_request_as_the_engine_does() {
        let refund: FnTool<(), ()> = FnTool::new(
            "refund",
            "Refund.",
            |_cx: super::ToolCx<(), ()>, _a: serde_json::Value| async move {
                Ok(ToolOutput::text("done"))
            },
        )
        .request_words(["refund", "reembols"]);
        assert!(refund.requested_in("I want a REFUND"));
        assert!(refund.requested_in("Quiero un reembolso"));
        assert!(!refund.requested_in("The fund is low"));
        assert!(!refund.requested_in("Hello"));
    }
}
