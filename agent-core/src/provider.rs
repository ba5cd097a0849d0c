//! The model boundary: what the engine asks of a model and what it gets back.
//!
//! Kept small on purpose: one request type covering structured output, tools and
//! history; one response type; an optional streaming method. Vendor clients live in
//! `agent-providers`; `testing::ScriptedProvider` implements it for tests.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use thiserror::Error;

/// Why a model call failed: an HTTP error status, a network failure, a timeout, an answer
/// that could not be read or was empty, … Providers return it; the resilience layer of
/// `agent-providers` decides from it whether to retry, and a turn that ends with it fails
/// with `AgentError::Provider`, leaving the session as it was.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ProviderError {
    /// The API answered with an error status.
    #[error("HTTP {status} from the model API: {message}")]
    Http {
        /// Status code.
        status: u16,
        /// Body or message (never contains the API key).
        message: String,
        /// `Retry-After`, when the API sent one.
        retry_after: Option<Duration>,
    },
    /// The request did not reach the API or the connection broke.
    #[error("network error talking to the model API: {0}")]
    Network(String),
    /// The call took too long.
    #[error("model call timed out after {0:?}")]
    Timeout(Duration),
    /// The API answered something that is not its documented format.
    #[error("unexpected answer from the model API: {0}")]
    InvalidResponse(String),
    /// Anything else (e.g. a scripted provider with no answer left).
    #[error("{0}")]
    Other(String),
    /// The API answered successfully (HTTP 200) but without an answer: no choice or
    /// candidate, or one with neither text nor a tool call. Retried like a 5xx by
    /// `agent-providers`' resilience layer; this error is what is left when every
    /// attempt came back empty.
    #[error(
        "the model API answered without an answer ({0}); it is retried like a server error; if it persists, check the server's logs and the model's limits (an empty answer often means the server ran out of context or tokens)"
    )]
    EmptyAnswer(String),
}

/// Why the engine is calling the model. Providers may ignore it; the scripted provider
/// answers by it, and traces show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// Structured extraction of data only (no user-facing message needed this turn).
    Extract,
    /// The user-facing reply, optionally extracting data in the same call.
    Respond,
    /// Judging `when` conditions (branches, signals, step selection) and, when due,
    /// routing between flows, all in one call.
    Classify,
    /// Choosing a flow when routing is the only judgement due.
    Route,
    /// A follow-up call after tool results were added to the conversation.
    ToolRound,
    /// Summarising old history past the token budget.
    Summarize,
    /// Whether the user's answer to a confirmation agrees, asked in a short call of
    /// its own before a tool with effects runs on it (see
    /// [`AgentConfig::check_agreement`](crate::config::AgentConfig::check_agreement)).
    Agreement,
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person talking to the agent.
    User,
    /// The model, speaking as the agent (its replies and tool-call requests).
    Assistant,
    /// A tool result (answers an assistant tool call).
    Tool,
}

/// Immutable shared text: history messages are sent on every call, so cloning the
/// history must not copy the text.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Text(Arc<str>);

impl Text {
    /// Borrow the text as a `&str` (the shared allocation is not copied).
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The very same allocation (not merely equal text).
    pub(crate) fn same(&self, other: &Text) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text(Arc::from(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(Arc::from(s))
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote the message: the user, the assistant (the model) or a tool's result. A
    /// provider maps it to its vendor's role names.
    pub role: Role,
    /// Text content (for tool messages: the tool's output).
    pub content: Text,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: the id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message the user wrote, for building histories by hand (tests, imports of an earlier
    /// conversation).
    pub fn user(content: impl Into<Text>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// A message the model wrote, without tool calls, for building histories by hand.
    pub fn assistant(content: impl Into<Text>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// A tool result message.
    pub fn tool(call_id: impl Into<String>, content: impl Into<Text>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id (echoed in the tool result).
    pub id: String,
    /// The name of the tool to call, as registered on the agent (matched against
    /// [`ToolSpec::name`]).
    pub name: String,
    /// Arguments as JSON (providers parse the wire string; unparsable text arrives as a
    /// JSON string so the tool's validation can report it).
    pub arguments: Value,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by: unique per agent, what [`ToolCall::name`]
    /// refers to.
    pub name: String,
    /// What it does (from the tool's doc comment or builder).
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// A JSON schema the answer must follow (native structured output where supported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// Schema name (some vendors require one).
    pub name: String,
    /// The JSON schema (shared: the engine caches schemas per flow and step).
    pub schema: Arc<Value>,
}

/// Everything a provider needs for one call to the model: why the engine calls, the system
/// prompt, the history, the tools the model may call and the output schema, with the
/// sampling limits. Providers translate it to their vendor's wire format; tests read it
/// through the scripted provider's recorded requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// Why the engine calls.
    pub kind: CallKind,
    /// The system prompt: the agent's static sections first (persona, instructions, flow and
    /// step prompts), so vendor prompt caches can reuse them across calls.
    pub system: String,
    /// Conversation so far, oldest first, ending with the latest user or tool message.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// When set, the answer's text must be JSON matching this schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputSchema>,
    /// Upper bound on generated tokens, when the agent sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature, when the agent sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Sampling seed, when the agent (or the eval kit, to vary runs) sets one; vendors
    /// without a seed parameter ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl ModelRequest {
    /// Everything the engine told the model in this call: the system text, then the
    /// per-turn state the engine appends to the latest user message (after the marker
    /// [`STATE_MARKER`]), so tests and logs can read the whole prompt in one place.
    pub fn instructions(&self) -> String {
        let mut out = self.system.clone();
        if let Some((_, state)) = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.split_once(STATE_MARKER))
        {
            out.push('\n');
            out.push_str(state);
        }
        out
    }
}

impl Message {
    /// The text without the per-turn state the engine appends to the latest user
    /// message of a request: what the author wrote.
    pub fn authored(&self) -> &str {
        match self.content.split_once(STATE_MARKER) {
            Some((said, _)) => said.strip_suffix("\n\n").unwrap_or(said),
            None => &self.content,
        }
    }
}

/// Where the per-turn state starts in the latest user message of a request.
pub const STATE_MARKER: &str = "[Agent notes for this reply, not from the user]";

/// Token usage of one or more calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Tokens the model generated (what output pricing counts).
    pub output_tokens: u64,
    /// The part of `input_tokens` the provider read from its prompt cache (OpenAI and
    /// llama.cpp `prompt_tokens_details.cached_tokens`, Anthropic
    /// `cache_read_input_tokens`, Gemini `cachedContentTokenCount`); 0 when it does not
    /// say. The measure of how well the prompt layout keeps a stable prefix.
    #[serde(default)]
    pub cached_input_tokens: u64,
}

impl Usage {
    /// Add another usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

/// Why the model stopped generating; the engine treats [`FinishReason::Length`] on a
/// structured call as a recoverable error rather than data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer on its own.
    #[default]
    Stop,
    /// The model asked for tools.
    ToolCalls,
    /// Cut by the token limit (structured output may be incomplete).
    Length,
    /// Refused or filtered by the vendor.
    ContentFilter,
}

/// What the model answered in one call: its text (JSON when the request carried an output
/// schema), the tools it asked to call, the token usage and why it stopped. Providers build
/// it from their vendor's reply; the engine reads it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text content (JSON when the request carried an output schema).
    pub content: String,
    /// Tool calls, if the model asked for any.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens this call read and generated, summed into the turn's usage.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped: a natural end, tool calls, the token limit or the vendor's
    /// filter.
    #[serde(default)]
    pub finish: FinishReason,
    /// The provider's id of this answer (OpenAI `chatcmpl-…`, Anthropic `msg_…`,
    /// Gemini `responseId`), when it gives one; `gen_ai.response.id` in traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One piece of a streamed answer: text as it arrives, then the complete answer. What
/// `Provider::generate_stream` yields, so replies can be shown before the call ends.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChunk {
    /// The next piece of the answer's text, to show as it arrives.
    Text(String),
    /// The complete answer; always the last chunk of a successful stream.
    Done(ModelResponse),
}

/// A model behind some API. Implementations must be cheap to share (`Arc`).
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for traces and errors (vendor and model).
    fn name(&self) -> &str;

    /// One call, answered whole.
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError>;

    /// One call, streamed. The default answers whole and yields it as one text chunk
    /// followed by `Done`; providers with real streaming override it. The stream ends
    /// with exactly one `Done` or one error.
    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        Box::pin(futures::stream::once(self.generate(request)).flat_map(|r| {
            let items: Vec<Result<StreamChunk, ProviderError>> = match r {
                Ok(resp) if resp.content.is_empty() => vec![Ok(StreamChunk::Done(resp))],
                Ok(resp) => vec![
                    Ok(StreamChunk::Text(resp.content.clone())),
                    Ok(StreamChunk::Done(resp)),
                ],
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(items)
        }))
    }

    /// The exact HTTP body this provider would send for `request` (not streamed), for
    /// measurements such as the eval kit's cacheable prefix. `None` where there is no
    /// wire format (scripted providers).
    fn wire_body(&self, request: &ModelRequest) -> Option<Vec<u8>> {
        let _ = request;
        None
    }

    /// The model's profile ([`crate::policy`]): whether the behaviours that exist for
    /// small models are on for its calls. [`ModelProfile::Capable`](crate::policy::ModelProfile::Capable)
    /// unless the provider is told otherwise.
    fn profile(&self) -> crate::policy::ModelProfile {
        crate::policy::ModelProfile::Capable
    }

    /// The host and port of the API this provider calls (`api.openai.com`, 443), for
    /// `server.address` and `server.port` in traces and metrics. `None` (the default)
    /// where there is no one server (scripted providers, fallback chains).
    fn server(&self) -> Option<(&str, u16)> {
        None
    }
}

use futures::StreamExt;

#[async_trait]
impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        (**self).generate(request).await
    }
    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        (**self).generate_stream(request)
    }
    fn wire_body(&self, request: &ModelRequest) -> Option<Vec<u8>> {
        (**self).wire_body(request)
    }
    fn server(&self) -> Option<(&str, u16)> {
        (**self).server()
    }
    fn profile(&self) -> crate::policy::ModelProfile {
        (**self).profile()
    }
}
