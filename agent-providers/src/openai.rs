//! OpenAI Chat Completions (`POST {base}/chat/completions`): history, tools, native
//! JSON-schema structured output (`response_format: {type: "json_schema"}`), SSE
//! streaming with tool-call argument deltas, usage. The same code serves any
//! OpenAI-compatible server through [`crate::OpenAiCompatible`], in a tolerant dialect.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{
    FinishReason, Message, ModelRequest, ModelResponse, Provider, Role, StreamChunk, ToolCall,
    Usage,
};
use async_trait::async_trait;
use eventsource_stream::Event;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::{self, Transport};
use crate::secret::ApiKey;
use crate::stream::{
    Assembler, SseParser, StreamDelta, event_json, into_chunks, parse_arguments, settle_finish,
};
use crate::{ConfigError, WithModel, env_lookup, normalise_base_url};

/// OpenAI's API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model `from_env()` uses when `OPENAI_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// Which server family: the vendor itself, or a compatible server (tolerant parsing,
/// `max_tokens` instead of `max_completion_tokens`, optional key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    OpenAi,
    Compatible,
}

/// A client of OpenAI's Chat Completions API.
///
/// ```no_run
/// use agent_providers::OpenAi;
/// # fn demo() -> Result<(), agent_providers::ConfigError> {
/// let p = OpenAi::from_env()?.model("gpt-4o"); // OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL
/// let q = OpenAi::new("sk-...").model("gpt-4o-mini").temperature_default(0.0);
/// # let _ = (p, q); Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAi {
    pub(crate) dialect: Dialect,
    model: String,
    name: String,
    base_url: String,
    url: String,
    key: Option<ApiKey>,
    organization: Option<String>,
    project: Option<String>,
    custom_headers: Vec<(HeaderName, HeaderValue)>,
    transport: Transport,
    extra: Map<String, Value>,
    strict: bool,
    stream_usage: bool,
    default_temperature: Option<f32>,
    default_max_tokens: Option<u32>,
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(match self.dialect {
            Dialect::OpenAi => "OpenAi",
            Dialect::Compatible => "OpenAiCompatible",
        })
        .field("model", &self.model)
        .field("base_url", &self.base_url)
        .field("key", &self.key)
        .field("strict", &self.strict)
        .field("timeouts", &self.transport.timeouts)
        .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// A client of OpenAI with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        Self::build(
            Dialect::OpenAi,
            DEFAULT_BASE_URL.to_owned(),
            Some(key.into()),
        )
    }

    pub(crate) fn build(dialect: Dialect, base_url: String, key: Option<ApiKey>) -> Self {
        let mut s = Self {
            dialect,
            model: DEFAULT_MODEL.to_owned(),
            name: String::new(),
            url: format!("{base_url}/chat/completions"),
            base_url,
            key,
            organization: None,
            project: None,
            custom_headers: Vec::new(),
            transport: Transport::new(),
            extra: Map::new(),
            strict: false,
            stream_usage: true,
            default_temperature: None,
            default_max_tokens: None,
        };
        s.refresh();
        s
    }

    /// From the environment: `OPENAI_API_KEY` (required), `OPENAI_BASE_URL` (optional,
    /// default [`DEFAULT_BASE_URL`]), `OPENAI_MODEL` (optional, default [`DEFAULT_MODEL`]),
    /// `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID` (optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(env_lookup)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let key = lookup("OPENAI_API_KEY").ok_or(ConfigError::MissingEnv {
            var: "OPENAI_API_KEY",
            hint: "your OpenAI API key (for a local OpenAI-compatible server use OpenAiCompatible::from_env)",
        })?;
        let mut p = Self::new(key);
        if let Some(url) = lookup("OPENAI_BASE_URL") {
            p = p.base_url(&url)?;
        }
        if let Some(m) = lookup("OPENAI_MODEL") {
            p = p.model(m);
        }
        if let Some(o) = lookup("OPENAI_ORG_ID") {
            p = p.organization(o);
        }
        if let Some(pr) = lookup("OPENAI_PROJECT_ID") {
            p = p.project(pr);
        }
        Ok(p)
    }

    fn refresh(&mut self) {
        let prefix = match self.dialect {
            Dialect::OpenAi => "openai",
            Dialect::Compatible => "compatible",
        };
        self.name = format!("{prefix}/{}", self.model);
        let mut extra = Vec::new();
        if let Some(v) = self
            .key
            .as_ref()
            .and_then(|k| http::secret_header(&format!("Bearer {}", k.expose())))
        {
            extra.push((AUTHORIZATION, v));
        }
        if let Some(v) = self
            .organization
            .as_deref()
            .and_then(|o| HeaderValue::from_str(o).ok())
        {
            extra.push((HeaderName::from_static("openai-organization"), v));
        }
        if let Some(v) = self
            .project
            .as_deref()
            .and_then(|o| HeaderValue::from_str(o).ok())
        {
            extra.push((HeaderName::from_static("openai-project"), v));
        }
        extra.extend(self.custom_headers.iter().cloned());
        self.transport
            .set_headers(http::json_headers(extra), self.key.as_ref(), &self.base_url);
    }

    pub(crate) fn with_key(mut self, key: Option<ApiKey>) -> Self {
        self.key = key;
        self.refresh();
        self
    }

    /// The model to call.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self.refresh();
        self
    }

    /// Another base URL (e.g. an Azure or proxy deployment): `…/v1`, without
    /// `/chat/completions`.
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.base_url = normalise_base_url(url)?;
        self.url = format!("{}/chat/completions", self.base_url);
        self.refresh();
        Ok(self)
    }

    /// Send `OpenAI-Organization`.
    pub fn organization(mut self, org: impl Into<String>) -> Self {
        self.organization = Some(org.into());
        self.refresh();
        self
    }

    /// Send `OpenAI-Project`.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self.refresh();
        self
    }

    /// An extra header on every request (ignored if the name or value is not valid HTTP).
    /// A header named like a credential (`authorization`, `…-key`, `…token…`) is kept out
    /// of `Debug` and errors like the key.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Some(h) = http::custom_header(name, value) {
            self.custom_headers.push(h);
            self.refresh();
        }
        self
    }

    /// Use this HTTP client (proxies, custom TLS). The [timeouts](crate::timeouts) of
    /// this client still apply.
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

    /// An extra top-level field in every request body (e.g. `seed`, `top_p`,
    /// `reasoning_effort`). The request's own fields win over extras of the same name.
    pub fn extra(mut self, field: impl Into<String>, value: Value) -> Self {
        self.extra.insert(field.into(), value);
        self
    }

    /// Ask for strict schema adherence (`json_schema.strict: true`). Off by default:
    /// OpenAI's strict mode requires every property to be `required` and every object to
    /// forbid additional properties, which the engine's extraction schemas (all fields
    /// optional) do not satisfy.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether streamed calls ask for a final usage chunk (`stream_options.include_usage`,
    /// default on); turn it off for servers that reject the field.
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// Temperature sent when the request sets none.
    pub fn temperature_default(mut self, t: f32) -> Self {
        self.default_temperature = Some(t);
        self
    }

    /// Token limit sent when the request sets none.
    pub fn max_tokens_default(mut self, n: u32) -> Self {
        self.default_max_tokens = Some(n);
        self
    }

    /// The model called.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base_url
    }

    /// The JSON body this client sends for `req` (what goes on the wire, for inspection
    /// and tests).
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(WireMessage {
                role: "system",
                content: Some(&req.system),
                tool_calls: Vec::new(),
                tool_call_id: None,
            });
        }
        messages.extend(req.messages.iter().map(wire_message));
        let tools = req
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect();
        let response_format = req.output.as_ref().map(|o| ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: schema_name(&o.name),
                schema: &o.schema,
                strict: self.strict,
            },
        });
        let max = req.max_tokens.or(self.default_max_tokens);
        let (max_completion_tokens, max_tokens) = match self.dialect {
            Dialect::OpenAi => (max, None),
            Dialect::Compatible => (None, max),
        };
        let filtered: Map<String, Value>;
        let extra = if self.extra.is_empty() {
            &self.extra
        } else {
            filtered = self
                .extra
                .iter()
                // A seed in the request (the eval's runs) beats a configured one.
                .filter(|(k, _)| {
                    let seed_overridden = k.as_str() == "seed" && req.seed.is_some();
                    !(RESERVED_FIELDS.contains(&k.as_str()) || seed_overridden)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            &filtered
        };
        let body = ChatRequest {
            model: &self.model,
            messages,
            tools,
            response_format,
            max_completion_tokens,
            max_tokens,
            temperature: req.temperature.or(self.default_temperature),
            seed: req.seed,
            stream,
            stream_options: (stream && self.stream_usage).then_some(StreamOptions {
                include_usage: true,
            }),
            extra,
        };
        serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))
    }

    /// One call, streamed as deltas: text, tool-call starts and argument fragments, then
    /// the assembled answer.
    pub fn stream_deltas<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        let connect = async move {
            let body = self.request_body(req, true)?;
            let resp = self.transport.post(&self.url, body).await?;
            if is_json(&resp) {
                // A server that ignored `stream: true` and answered whole.
                let bytes = http::body(resp).await?;
                return whole_as_events(&bytes);
            }
            Ok(http::sse_events(resp))
        }
        .boxed();
        self.transport.stream(
            connect,
            ChatStream {
                asm: Assembler::new("call_"),
            },
        )
    }
}

impl WithModel for OpenAi {
    fn with_model(&self, model: &str) -> Self {
        self.clone().model(model)
    }
    fn model_id(&self) -> &str {
        &self.model
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.transport
            .call(async {
                let body = self.request_body(req, false)?;
                let resp = self.transport.post(&self.url, body).await?;
                parse_response(&http::body(resp).await?)
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

fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A whole completion replayed as one stream chunk (`message` becomes `delta`) and
/// `[DONE]`.
fn whole_as_events(
    bytes: &[u8],
) -> Result<BoxStream<'static, Result<Event, ProviderError>>, ProviderError> {
    let mut v: Value = http::parse_json(bytes, "the chat completion")?;
    if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
        for c in choices.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(mut m) = c.remove("message") {
                if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    for (i, tc) in calls.iter_mut().enumerate() {
                        if let Some(o) = tc.as_object_mut() {
                            o.entry("index").or_insert(Value::from(i));
                        }
                    }
                }
                c.insert("delta".into(), m);
            }
        }
    }
    let events = [v.to_string(), "[DONE]".to_owned()].map(|data| {
        Ok(Event {
            data,
            ..Event::default()
        })
    });
    Ok(futures::stream::iter(events).boxed())
}

/// Body fields the client writes itself (extras cannot override them).
const RESERVED_FIELDS: [&str; 9] = [
    "model",
    "messages",
    "tools",
    "response_format",
    "max_completion_tokens",
    "max_tokens",
    "temperature",
    "stream",
    "stream_options",
];

/// OpenAI's schema names: `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn schema_name(name: &str) -> Cow<'_, str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 64 && name.chars().all(ok) {
        return Cow::Borrowed(name);
    }
    let mut s: String = name
        .chars()
        .map(|c| if ok(c) { c } else { '_' })
        .take(64)
        .collect();
    if s.is_empty() {
        s.push_str("answer");
    }
    Cow::Owned(s)
}

fn wire_message(m: &Message) -> WireMessage<'_> {
    match m.role {
        Role::User => WireMessage {
            role: "user",
            content: Some(&m.content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        },
        Role::Assistant => WireMessage {
            role: "assistant",
            content: if m.content.is_empty() && !m.tool_calls.is_empty() {
                None
            } else {
                Some(&m.content)
            },
            tool_calls: m.tool_calls.iter().map(wire_tool_call).collect(),
            tool_call_id: None,
        },
        Role::Tool => WireMessage {
            role: "tool",
            content: Some(&m.content),
            tool_calls: Vec::new(),
            tool_call_id: Some(m.tool_call_id.as_deref().unwrap_or_default()),
        },
    }
}

fn wire_tool_call(c: &ToolCall) -> WireToolCall<'_> {
    WireToolCall {
        id: &c.id,
        kind: "function",
        function: WireFunctionCall {
            name: &c.name,
            arguments: arguments_text(&c.arguments),
        },
    }
}

/// Arguments back on the wire: JSON text; a JSON string is the model's own unparsable
/// text and goes back verbatim.
pub(crate) fn arguments_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// Field order is wire order: the parts that stay the same across a conversation's
/// calls (tools, the answer schema) come before the messages, as the server renders
/// them into the prompt, so equal requests share the longest byte prefix.
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: Cow<'a, str>,
    schema: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

// ---- answers (every field optional: compatible servers omit and add fields) ----

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<RespMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct RespMessage {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<RespToolCall>>,
    #[serde(default)]
    refusal: Option<String>,
}

/// Content as a string, or as an array of parts (some servers).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
struct ContentPart {
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    fn into_text(self) -> String {
        match self {
            Content::Text(s) => s,
            Content::Parts(p) => p.into_iter().filter_map(|p| p.text).collect(),
        }
    }
}

#[derive(Deserialize)]
struct RespToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<RespFunction>,
}

#[derive(Deserialize)]
struct RespFunction {
    #[serde(default)]
    name: Option<String>,
    /// A JSON string by the spec; some servers send the object itself.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize, Clone, Copy)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        }
    }
}

pub(crate) fn map_finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("length" | "max_tokens") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

fn server_error(v: &Value) -> ProviderError {
    let (message, retry_after) =
        http::error_value_details(v).unwrap_or_else(|| (http::snippet(&v.to_string()), None));
    let e = v.get("error").unwrap_or(v);
    let status = e
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500);
    ProviderError::Http {
        status,
        message,
        retry_after,
    }
}

/// Parse a whole (non-streamed) Chat Completions response body, tolerantly (what
/// [`OpenAi`] and [`crate::OpenAiCompatible`] do with every answer).
pub fn parse_response(bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
    let r: ChatResponse = http::parse_json(bytes, "the chat completion")?;
    let choice = match r.choices.and_then(|c| c.into_iter().next()) {
        Some(c) => c,
        None => {
            return Err(match &r.error {
                Some(e) => server_error(e),
                None => ProviderError::InvalidResponse(format!(
                    "the chat completion has no choices: {}",
                    http::snippet(&String::from_utf8_lossy(bytes))
                )),
            });
        }
    };
    let msg = choice.message.unwrap_or_default();
    let mut content = msg.content.map(Content::into_text).unwrap_or_default();
    let mut finish = map_finish(choice.finish_reason.as_deref());
    if content.is_empty()
        && let Some(refusal) = msg.refusal.filter(|r| !r.is_empty())
    {
        content = refusal;
        finish = FinishReason::ContentFilter;
    }
    let tool_calls: Vec<ToolCall> = msg
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter_map(|(i, tc)| {
            let f = tc.function?;
            Some(ToolCall {
                id: tc
                    .id
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name: f.name.unwrap_or_default(),
                arguments: match f.arguments {
                    Some(Value::String(s)) => parse_arguments(&s),
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(v) => v,
                },
            })
        })
        .collect();
    Ok(ModelResponse {
        content,
        finish: settle_finish(finish, !tool_calls.is_empty()),
        tool_calls,
        usage: r.usage.map(Usage::from).unwrap_or_default(),
    })
}

#[derive(Deserialize)]
struct ChatChunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<ChunkDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Keys for calls streamed without an `index` (tolerance): far from real indexes.
const UNINDEXED: usize = 1 << 20;

struct ChatStream {
    asm: Assembler,
}

impl SseParser for ChatStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: ChatChunk = event_json(ev, "chat completion")?;
        if let Some(e) = &chunk.error {
            return Err(server_error(e));
        }
        if let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) {
            if let Some(d) = choice.delta {
                if let Some(c) = d.content {
                    self.asm.text(&c.into_text(), out);
                }
                if let Some(r) = d.refusal.filter(|r| !r.is_empty()) {
                    self.asm.text(&r, out);
                    self.asm.finish = Some(FinishReason::ContentFilter);
                }
                for tc in d.tool_calls.unwrap_or_default() {
                    let key = match tc.index {
                        Some(i) => i,
                        None if tc.id.is_some() => UNINDEXED + self.asm_calls(),
                        None => self.asm.last_call_key().unwrap_or(UNINDEXED),
                    };
                    let (name, args) = match tc.function {
                        Some(f) => (
                            f.name,
                            f.arguments.map(|a| match a {
                                Value::String(s) => s,
                                other => other.to_string(),
                            }),
                        ),
                        None => (None, None),
                    };
                    self.asm.tool_delta(
                        key,
                        tc.id.as_deref(),
                        name.as_deref(),
                        args.as_deref(),
                        out,
                    );
                }
            }
            if let Some(f) = choice.finish_reason.as_deref()
                && self.asm.finish != Some(FinishReason::ContentFilter)
            {
                self.asm.finish = Some(map_finish(Some(f)));
            }
        }
        if let Some(u) = chunk.usage {
            self.asm.usage = u.into();
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        if self.asm.finish.is_some() {
            Ok(())
        } else {
            Err(ProviderError::Network(
                "the stream ended before the answer was complete (no finish_reason, no [DONE])"
                    .into(),
            ))
        }
    }

    fn finish(&mut self) -> ModelResponse {
        self.asm.finish()
    }
}

impl ChatStream {
    fn asm_calls(&self) -> usize {
        let mut n = 0;
        while self.asm.has_call(UNINDEXED + n) {
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_sanitised() {
        assert_eq!(schema_name("turn"), "turn");
        assert_eq!(schema_name("a b/c"), "a_b_c");
        assert_eq!(schema_name(""), "answer");
        assert_eq!(schema_name(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let p = OpenAi::new("sk-secret-secret-secret").model("gpt-4o");
        let d = format!("{p:?}");
        assert!(!d.contains("sk-secret"), "{d}");
        assert!(d.contains("gpt-4o"));
    }

    #[test]
    fn from_lookup_reads_the_documented_variables() {
        let env = |k: &str| match k {
            "OPENAI_API_KEY" => Some("sk-test-0123456789".to_owned()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_owned()),
            "OPENAI_MODEL" => Some("gpt-4.1".to_owned()),
            _ => None,
        };
        let p = OpenAi::from_lookup(env).unwrap();
        assert_eq!(p.base(), "http://127.0.0.1:9/v1");
        assert_eq!(p.name(), "openai/gpt-4.1");
        let err = OpenAi::from_lookup(|_| None).unwrap_err();
        assert!(err.to_string().contains("OPENAI_API_KEY"));
        let bad = OpenAi::from_lookup(|k| match k {
            "OPENAI_API_KEY" => Some("k".into()),
            "OPENAI_BASE_URL" => Some("127.0.0.1:9".into()),
            _ => None,
        });
        assert!(matches!(bad, Err(ConfigError::InvalidBaseUrl(_))));
    }
}
