//! Anthropic Messages (`POST {base}/v1/messages`): system prompt, history with
//! `tool_use` / `tool_result` blocks, tools, streaming events, structured output.
//!
//! Structured output has two modes ([`StructuredMode`]): by default the schema becomes an
//! *answer tool* the model must call (works on every Claude model and with any object
//! schema); [`StructuredMode::Native`] sends `output_config.format` (constrained decoding
//! on the models that support it; the schema must then follow its stricter rules).
//!
//! Prompt caching is on by default ([`Anthropic::prompt_cache`]): two `cache_control`
//! breakpoints, one after the system prompt (tools and system are the prefix every call
//! of a session shares) and one after the user's own words in the latest user message,
//! before the engine's per-turn notes (`agent_core::provider::STATE_MARKER`), which go
//! in a block of their own. The next call of the turn, and the next turn, start with
//! that prefix, so the provider reads it from its cache (billed at a tenth of the input
//! price; writing it costs a quarter more, once).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{
    FinishReason, Message, ModelRequest, ModelResponse, Provider, Role, STATE_MARKER, StreamChunk,
    ToolCall, Usage,
};
use async_trait::async_trait;
use eventsource_stream::Event;
use futures::FutureExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::{self, Transport};
use crate::openai::schema_name;
use crate::secret::ApiKey;
use crate::stream::{Assembler, SseParser, StreamDelta, event_json, into_chunks};
use crate::{ConfigError, WithModel, env_lookup, normalise_base_url};

/// Anthropic's API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model `from_env()` uses when `ANTHROPIC_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "claude-haiku-4-5";
/// The `anthropic-version` header sent.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API: sent when neither the request nor the client
/// sets one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// How a request's output schema is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StructuredMode {
    /// The schema becomes a tool the model must call (`tool_choice` `tool`, or `any` when
    /// the request has tools of its own); its input is the answer.
    #[default]
    AnswerTool,
    /// `output_config: {format: {type: "json_schema", schema}}`.
    Native,
}

/// A client of Anthropic's Messages API.
///
/// ```no_run
/// use agent_providers::Anthropic;
/// # fn demo() -> Result<(), agent_providers::ConfigError> {
/// let p = Anthropic::from_env()?.model("claude-sonnet-4-5"); // ANTHROPIC_API_KEY
/// # let _ = p; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Anthropic {
    model: String,
    name: String,
    base_url: String,
    url: String,
    key: ApiKey,
    custom_headers: Vec<(HeaderName, HeaderValue)>,
    transport: Transport,
    structured: StructuredMode,
    max_tokens: u32,
    default_temperature: Option<f32>,
    prompt_cache: bool,
}

impl fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Anthropic")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("structured", &self.structured)
            .field("timeouts", &self.transport.timeouts)
            .finish_non_exhaustive()
    }
}

impl Anthropic {
    /// A client with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        let mut s = Self {
            model: DEFAULT_MODEL.to_owned(),
            name: String::new(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            url: format!("{DEFAULT_BASE_URL}/v1/messages"),
            key: key.into(),
            custom_headers: Vec::new(),
            transport: Transport::new(),
            structured: StructuredMode::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            default_temperature: None,
            prompt_cache: true,
        };
        s.refresh();
        s
    }

    /// From the environment: `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL` and
    /// `ANTHROPIC_MODEL` (optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(env_lookup)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let key = lookup("ANTHROPIC_API_KEY").ok_or(ConfigError::MissingEnv {
            var: "ANTHROPIC_API_KEY",
            hint: "your Anthropic API key",
        })?;
        let mut p = Self::new(key);
        if let Some(url) = lookup("ANTHROPIC_BASE_URL") {
            p = p.base_url(&url)?;
        }
        if let Some(m) = lookup("ANTHROPIC_MODEL") {
            p = p.model(m);
        }
        Ok(p)
    }

    fn refresh(&mut self) {
        self.name = format!("anthropic/{}", self.model);
        let mut extra = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        )];
        if let Some(v) = http::secret_header(self.key.expose()) {
            extra.push((HeaderName::from_static("x-api-key"), v));
        }
        extra.extend(self.custom_headers.iter().cloned());
        self.transport
            .set_headers(http::json_headers(extra), Some(&self.key), &self.base_url);
    }

    /// The model to call.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self.refresh();
        self
    }

    /// Another base URL (without `/v1/messages`).
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.base_url = normalise_base_url(url)?;
        self.url = format!("{}/v1/messages", self.base_url);
        self.refresh();
        Ok(self)
    }

    /// An extra header on every request (e.g. `anthropic-beta`).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Some(h) = http::custom_header(name, value) {
            self.custom_headers.push(h);
            self.refresh();
        }
        self
    }

    /// Use this HTTP client (the [timeouts](crate::timeouts) of this client still apply).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.transport.client = client;
        self
    }

    /// Limit on a whole non-streamed call (default
    /// [`DEFAULT_REQUEST_TIMEOUT`](crate::timeouts::DEFAULT_REQUEST_TIMEOUT), 60 s);
    /// past it the call fails with [`ProviderError::Timeout`].
    pub fn request_timeout(mut self, limit: Duration) -> Self {
        self.transport.timeouts.request = limit;
        self
    }

    /// Limit from a streamed call to its first event (default
    /// [`DEFAULT_FIRST_BYTE_TIMEOUT`](crate::timeouts::DEFAULT_FIRST_BYTE_TIMEOUT), 30 s).
    pub fn first_byte_timeout(mut self, limit: Duration) -> Self {
        self.transport.timeouts.first_byte = limit;
        self
    }

    /// Limit between two events of a stream (default
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](crate::timeouts::DEFAULT_STREAM_IDLE_TIMEOUT), 60 s).
    pub fn stream_idle_timeout(mut self, limit: Duration) -> Self {
        self.transport.timeouts.idle = limit;
        self
    }

    /// How output schemas are sent (default: [`StructuredMode::AnswerTool`]).
    pub fn structured(mut self, mode: StructuredMode) -> Self {
        self.structured = mode;
        self
    }

    /// `max_tokens` when the request sets none (default [`DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens_default(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// Temperature sent when the request sets none.
    pub fn temperature_default(mut self, t: f32) -> Self {
        self.default_temperature = Some(t);
        self
    }

    /// Mark `cache_control` breakpoints (on by default; see the module docs). Off sends
    /// the system prompt as a plain string and no breakpoints.
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// The model called.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The name of the answer tool for a request (None when the request has no schema or
    /// the mode is native).
    fn answer_tool<'r>(&self, req: &'r ModelRequest) -> Option<Cow<'r, str>> {
        let out = req.output.as_ref()?;
        if self.structured != StructuredMode::AnswerTool {
            return None;
        }
        let base = schema_name(&out.name);
        if req.tools.iter().any(|t| t.name == base) {
            Some(Cow::Owned(format!("{base}_answer")))
        } else {
            Some(base)
        }
    }

    /// The JSON body this client sends for `req`.
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        let answer = self.answer_tool(req);
        let mut tools: Vec<WireTool<'_>> = req
            .tools
            .iter()
            .map(|t| WireTool {
                name: Cow::Borrowed(&t.name),
                description: Cow::Borrowed(&t.description),
                input_schema: &t.parameters,
            })
            .collect();
        let mut tool_choice = None;
        let mut output_config = None;
        if let (Some(name), Some(out)) = (&answer, &req.output) {
            tool_choice = Some(if tools.is_empty() {
                ToolChoice::Tool { name }
            } else {
                ToolChoice::Any
            });
            tools.push(WireTool {
                name: Cow::Borrowed(name),
                description: Cow::Borrowed(
                    "Give your answer by calling this tool: its input is your complete answer and must follow the schema.",
                ),
                input_schema: &out.schema,
            });
        } else if let Some(out) = &req.output {
            output_config = Some(OutputConfig {
                format: OutputFormat {
                    kind: "json_schema",
                    schema: &out.schema,
                },
            });
        }
        let body = MessagesRequest {
            model: &self.model,
            max_tokens: req.max_tokens.unwrap_or(self.max_tokens),
            system: if req.system.is_empty() {
                None
            } else if self.prompt_cache {
                Some(System::Blocks([SystemBlock {
                    kind: "text",
                    text: &req.system,
                    cache_control: Some(CacheControl::EPHEMERAL),
                }]))
            } else {
                Some(System::Plain(&req.system))
            },
            messages: wire_messages(&req.messages, self.prompt_cache),
            tools,
            tool_choice,
            temperature: req.temperature.or(self.default_temperature),
            stream,
            output_config,
        };
        serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))
    }

    /// One call, streamed as deltas.
    pub fn stream_deltas<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        let answer = self.answer_tool(req).map(Cow::into_owned);
        let connect = async move {
            let body = self.request_body(req, true)?;
            let resp = self.transport.post(&self.url, body).await?;
            Ok(http::sse_events(resp))
        }
        .boxed();
        self.transport.stream(
            connect,
            MessagesStream {
                asm: Assembler::new("toolu_"),
                answer,
                blocks: Vec::new(),
                preamble: String::new(),
                answered: false,
                real_calls: false,
                stop: None,
            },
        )
    }
}

impl WithModel for Anthropic {
    fn with_model(&self, model: &str) -> Self {
        self.clone().model(model)
    }
    fn model_id(&self) -> &str {
        &self.model
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.transport
            .call(async {
                let body = self.request_body(req, false)?;
                let resp = self.transport.post(&self.url, body).await?;
                let bytes = http::body(resp).await?;
                parse_response(&bytes, self.answer_tool(req).as_deref())
            })
            .await
    }

    fn generate_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        into_chunks(self.stream_deltas(req))
    }

    fn wire_body(&self, req: &ModelRequest) -> Option<Vec<u8>> {
        self.request_body(req, false).ok()
    }
}

/// History as Messages: tool results become `tool_result` blocks of a user message,
/// consecutive messages of one role merge (parallel tool results must share a message),
/// empty texts are left out (the API rejects empty text blocks).
/// The messages as blocks. The latest user message's own words and the engine's notes
/// appended to it ([`STATE_MARKER`]) become two text blocks; with `cache`, a breakpoint
/// closes the first.
fn wire_messages(msgs: &[Message], cache: bool) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(msgs.len());
    let latest_user = msgs.iter().rposition(|m| m.role == Role::User);
    for (i, m) in msgs.iter().enumerate() {
        let mut blocks = Vec::with_capacity(2 + m.tool_calls.len());
        let role = match m.role {
            Role::User => {
                let (own, notes) = match m.content.find(STATE_MARKER) {
                    Some(at) => (m.content[..at].trim_end(), Some(&m.content[at..])),
                    None => (&*m.content, None),
                };
                let mark = (cache && Some(i) == latest_user).then_some(CacheControl::EPHEMERAL);
                if !own.trim().is_empty() {
                    blocks.push(Block::Text {
                        text: own,
                        cache_control: mark,
                    });
                }
                if let Some(notes) = notes {
                    blocks.push(Block::Text {
                        text: notes,
                        cache_control: None,
                    });
                }
                "user"
            }
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    blocks.push(Block::Text {
                        text: &m.content,
                        cache_control: None,
                    });
                }
                for c in &m.tool_calls {
                    blocks.push(Block::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        input: match &c.arguments {
                            v @ Value::Object(_) => Cow::Borrowed(v),
                            _ => Cow::Owned(Value::Object(Map::new())),
                        },
                    });
                }
                "assistant"
            }
            Role::Tool => {
                blocks.push(Block::ToolResult {
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or_default(),
                    content: &m.content,
                });
                "user"
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// Field order is the order the API caches a prompt in (tools, system, messages), the
/// per-call settings after them, so equal requests share the longest byte prefix.
#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    messages: Vec<WireMessage<'a>>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// The system prompt: a string, or one text block carrying a cache breakpoint.
#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Plain(&'a str),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A prompt-cache breakpoint: the prefix up to here may be cached.
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl CacheControl {
    const EPHEMERAL: Self = Self { kind: "ephemeral" };
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: Cow<'a, str>,
    description: Cow<'a, str>,
    input_schema: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ToolChoice<'a> {
    Any,
    Tool { name: &'a str },
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Serialize)]
struct OutputFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a Value,
}

// ---- answers ----

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    content: Option<Vec<RespBlock>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum RespBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    fn input(&self) -> Option<u64> {
        self.input_tokens.map(|i| {
            i + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }
}

fn map_stop(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

/// The HTTP status an error type stands for (errors inside a stream carry no status).
fn status_of(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn api_error(v: &Value) -> ProviderError {
    let e = v.get("error").unwrap_or(v);
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("api_error");
    let (message, retry_after) =
        http::error_value_details(v).unwrap_or_else(|| (http::snippet(&v.to_string()), None));
    ProviderError::Http {
        status: status_of(kind),
        message,
        retry_after,
    }
}

/// A whole Messages answer; `answer` names the answer tool when one was sent.
fn parse_response(bytes: &[u8], answer: Option<&str>) -> Result<ModelResponse, ProviderError> {
    let r: MessagesResponse = http::parse_json(bytes, "the Messages answer")?;
    let Some(blocks) = r.content else {
        return Err(match &r.error {
            Some(e) => api_error(e),
            None => ProviderError::InvalidResponse(format!(
                "the Messages answer has no content: {}",
                http::snippet(&String::from_utf8_lossy(bytes))
            )),
        });
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut answered: Option<Value> = None;
    for b in blocks {
        match b {
            RespBlock::Text { text: t } => text.push_str(&t),
            RespBlock::ToolUse { id, name, input } => {
                if answer == Some(name.as_str()) {
                    answered = Some(input);
                } else {
                    let id = if id.is_empty() {
                        format!("toolu_{}", calls.len())
                    } else {
                        id
                    };
                    calls.push(ToolCall {
                        id,
                        name,
                        arguments: if input.is_null() {
                            Value::Object(Map::new())
                        } else {
                            input
                        },
                    });
                }
            }
            RespBlock::Other => {}
        }
    }
    let mut finish = map_stop(r.stop_reason.as_deref());
    let content = match answered {
        Some(v) if calls.is_empty() => {
            if finish == FinishReason::ToolCalls {
                finish = FinishReason::Stop;
            }
            v.to_string()
        }
        _ => text,
    };
    let usage = r.usage.unwrap_or_default();
    Ok(ModelResponse {
        content,
        finish: crate::stream::settle_finish(finish, !calls.is_empty()),
        tool_calls: calls,
        usage: Usage {
            input_tokens: usage.input().unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cached_input_tokens: usage.cache_read_input_tokens.unwrap_or(0),
        },
    })
}

#[derive(Clone, Copy, PartialEq)]
enum BlockKind {
    Text,
    Tool,
    Answer,
    Other,
}

struct MessagesStream {
    asm: Assembler,
    answer: Option<String>,
    blocks: Vec<(usize, BlockKind)>,
    /// Text blocks of a structured call (kept out of the JSON text deltas).
    preamble: String,
    answered: bool,
    real_calls: bool,
    stop: Option<String>,
}

#[derive(Deserialize)]
struct StreamEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<StreamMessage>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StreamMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

impl MessagesStream {
    fn kind_of(&self, index: usize) -> BlockKind {
        self.blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(BlockKind::Other, |(_, k)| *k)
    }
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl SseParser for MessagesStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        if ev.data.trim().is_empty() {
            return Ok(false);
        }
        let e: StreamEvent = event_json(ev, "Messages")?;
        let index = e.index.unwrap_or(0);
        match e.kind.as_str() {
            "message_start" => {
                if let Some(u) = e.message.and_then(|m| m.usage) {
                    self.asm.usage.input_tokens = u.input().unwrap_or(0);
                    self.asm.usage.output_tokens = u.output_tokens.unwrap_or(0);
                    self.asm.usage.cached_input_tokens = u.cache_read_input_tokens.unwrap_or(0);
                }
            }
            "content_block_start" => {
                let block = e.content_block.unwrap_or(Value::Null);
                let kind = match str_field(&block, "type") {
                    Some("text") => {
                        let t = str_field(&block, "text").unwrap_or_default();
                        if self.answer.is_some() {
                            self.preamble.push_str(t);
                        } else {
                            self.asm.text(t, out);
                        }
                        BlockKind::Text
                    }
                    Some("tool_use") => {
                        let name = str_field(&block, "name").unwrap_or_default();
                        if self.answer.as_deref() == Some(name) {
                            self.answered = true;
                            BlockKind::Answer
                        } else {
                            self.real_calls = true;
                            self.asm.tool_delta(
                                index,
                                str_field(&block, "id"),
                                Some(name),
                                None,
                                out,
                            );
                            BlockKind::Tool
                        }
                    }
                    _ => BlockKind::Other,
                };
                self.blocks.push((index, kind));
            }
            "content_block_delta" => {
                let d = e.delta.unwrap_or(Value::Null);
                match (self.kind_of(index), str_field(&d, "type")) {
                    (BlockKind::Text, Some("text_delta")) => {
                        let t = str_field(&d, "text").unwrap_or_default();
                        if self.answer.is_some() {
                            self.preamble.push_str(t);
                        } else {
                            self.asm.text(t, out);
                        }
                    }
                    (BlockKind::Answer, Some("input_json_delta")) => {
                        self.asm
                            .text(str_field(&d, "partial_json").unwrap_or_default(), out);
                    }
                    (BlockKind::Tool, Some("input_json_delta")) => {
                        self.asm
                            .tool_delta(index, None, None, str_field(&d, "partial_json"), out);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = e.delta.as_ref().and_then(|d| str_field(d, "stop_reason")) {
                    self.stop = Some(r.to_owned());
                }
                if let Some(n) = e.usage.and_then(|u| u.output_tokens) {
                    self.asm.usage.output_tokens = n;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let v = match e.error {
                    Some(err) => serde_json::json!({ "error": err }),
                    None => Value::Null,
                };
                return Err(api_error(&v));
            }
            _ => {} // ping, content_block_stop, future events
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        if self.stop.is_some() {
            Ok(())
        } else {
            Err(ProviderError::Network(
                "the stream ended before the answer was complete (no message_stop)".into(),
            ))
        }
    }

    fn finish(&mut self) -> ModelResponse {
        let mut finish = map_stop(self.stop.as_deref());
        if self.answered && !self.real_calls {
            if finish == FinishReason::ToolCalls {
                finish = FinishReason::Stop;
            }
            if self.asm.content.is_empty() {
                self.asm.content.push_str("{}");
            }
        } else if self.answer.is_some() && !self.answered {
            // A structured call answered in plain text: hand the text to the engine,
            // which reports or repairs it.
            self.asm.content = std::mem::take(&mut self.preamble);
        }
        self.asm.finish = Some(finish);
        self.asm.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::provider::CallKind;

    #[test]
    fn history_merges_tool_results_and_skips_empty_texts() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![
            ToolCall {
                id: "t1".into(),
                name: "x".into(),
                arguments: serde_json::json!({"a": 1}),
            },
            ToolCall {
                id: "t2".into(),
                name: "y".into(),
                arguments: Value::String("not json".into()),
            },
        ];
        let msgs = vec![
            Message::user("hi"),
            a,
            Message::tool("t1", "one"),
            Message::tool("t2", "two"),
            Message::user("and?"),
        ];
        let w = serde_json::to_value(wire_messages(&msgs, false)).unwrap();
        assert_eq!(w.as_array().unwrap().len(), 3);
        assert_eq!(
            w[1]["content"].as_array().unwrap().len(),
            2,
            "no empty text"
        );
        assert_eq!(w[1]["content"][1]["input"], serde_json::json!({}));
        assert_eq!(w[2]["role"], "user");
        assert_eq!(w[2]["content"][0]["type"], "tool_result");
        assert_eq!(w[2]["content"][1]["tool_use_id"], "t2");
        assert_eq!(w[2]["content"][2]["text"], "and?");
    }

    #[test]
    fn the_answer_tool_avoids_name_clashes() {
        let p = Anthropic::new("k");
        let mut req = ModelRequest {
            kind: CallKind::Respond,
            system: String::new(),
            messages: vec![],
            tools: vec![agent_core::provider::ToolSpec {
                name: "turn".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            output: Some(agent_core::provider::OutputSchema {
                name: "turn".into(),
                schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
            }),
            max_tokens: None,
            temperature: None,
            seed: None,
        };
        assert_eq!(p.answer_tool(&req).as_deref(), Some("turn_answer"));
        req.tools.clear();
        assert_eq!(p.answer_tool(&req).as_deref(), Some("turn"));
        let native = p.structured(StructuredMode::Native);
        assert_eq!(native.answer_tool(&req), None);
    }
}
