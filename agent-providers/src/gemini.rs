//! Google Gemini (`POST {base}/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse`): system instruction, history as `contents` with
//! `functionCall` / `functionResponse` parts, function declarations with
//! `parametersJsonSchema`, structured output with `responseMimeType: application/json`
//! and `responseJsonSchema`. The key goes in the `x-goog-api-key` header, never in the URL.
//!
//! Gemini's function calls may carry a `thoughtSignature` that must be sent back with the
//! call in later requests. The engine's [`ToolCall`] has no place for it, so it travels in
//! the call id (`ID#sig=SIGNATURE`), which the engine stores and echoes unchanged.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{
    FinishReason, Message, ModelRequest, ModelResponse, Provider, Role, StreamChunk, ToolCall,
    Usage,
};
use async_trait::async_trait;
use eventsource_stream::Event;
use futures::FutureExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::{self, Transport};
use crate::secret::ApiKey;
use crate::stream::{Assembler, SseParser, StreamDelta, event_json, into_chunks};
use crate::{ConfigError, WithModel, env_lookup, normalise_base_url};

/// Gemini's API.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The model `from_env()` uses when `GEMINI_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// Ids this client made up for calls Gemini sent without one (never sent back).
const SYNTHETIC_ID: &str = "gemini_call_";
/// Separates a call id from its thought signature.
const SIGNATURE_SEP: &str = "#sig=";

/// A client of the Gemini API.
///
/// ```no_run
/// use agent_providers::Gemini;
/// # fn demo() -> Result<(), agent_providers::ConfigError> {
/// let p = Gemini::from_env()?.model("gemini-2.5-pro"); // GEMINI_API_KEY or GOOGLE_API_KEY
/// # let _ = p; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Gemini {
    model: String,
    name: String,
    base_url: String,
    url: String,
    stream_url: String,
    key: ApiKey,
    custom_headers: Vec<(HeaderName, HeaderValue)>,
    transport: Transport,
    default_temperature: Option<f32>,
    default_max_tokens: Option<u32>,
}

impl fmt::Debug for Gemini {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gemini")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("timeouts", &self.transport.timeouts)
            .finish_non_exhaustive()
    }
}

impl Gemini {
    /// A client with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        let mut s = Self {
            model: DEFAULT_MODEL.to_owned(),
            name: String::new(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            url: String::new(),
            stream_url: String::new(),
            key: key.into(),
            custom_headers: Vec::new(),
            transport: Transport::new(),
            default_temperature: None,
            default_max_tokens: None,
        };
        s.refresh();
        s
    }

    /// From the environment: `GEMINI_API_KEY` or `GOOGLE_API_KEY` (required),
    /// `GEMINI_BASE_URL` and `GEMINI_MODEL` (optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(env_lookup)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let key = lookup("GEMINI_API_KEY")
            .or_else(|| lookup("GOOGLE_API_KEY"))
            .ok_or(ConfigError::MissingEnv {
                var: "GEMINI_API_KEY",
                hint: "your Gemini API key (GOOGLE_API_KEY is read too)",
            })?;
        let mut p = Self::new(key);
        if let Some(url) = lookup("GEMINI_BASE_URL") {
            p = p.base_url(&url)?;
        }
        if let Some(m) = lookup("GEMINI_MODEL") {
            p = p.model(m);
        }
        Ok(p)
    }

    fn refresh(&mut self) {
        self.name = format!("gemini/{}", self.model);
        self.url = format!("{}/models/{}:generateContent", self.base_url, self.model);
        self.stream_url = format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base_url, self.model
        );
        let mut extra = Vec::new();
        if let Some(v) = http::secret_header(self.key.expose()) {
            extra.push((HeaderName::from_static("x-goog-api-key"), v));
        }
        extra.extend(self.custom_headers.iter().cloned());
        self.transport
            .set_headers(http::json_headers(extra), Some(&self.key), &self.base_url);
    }

    /// The model to call (`gemini-2.5-flash` or `models/gemini-2.5-flash`).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        let m: String = model.into();
        self.model = m.strip_prefix("models/").map_or(m.clone(), str::to_owned);
        self.refresh();
        self
    }

    /// Another base URL (up to the API version, e.g. `…/v1beta`).
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.base_url = normalise_base_url(url)?;
        self.refresh();
        Ok(self)
    }

    /// An extra header on every request.
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

    /// The JSON body this client sends for `req` (the same for both endpoints).
    pub fn request_body(&self, req: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
        let tools = if req.tools.is_empty() {
            Vec::new()
        } else {
            vec![ToolDecl {
                function_declarations: req
                    .tools
                    .iter()
                    .map(|t| FunctionDecl {
                        name: &t.name,
                        description: &t.description,
                        parameters_json_schema: &t.parameters,
                    })
                    .collect(),
            }]
        };
        let max_output_tokens = req.max_tokens.or(self.default_max_tokens);
        let temperature = req.temperature.or(self.default_temperature);
        let schema = req.output.as_ref().map(|o| &*o.schema);
        let generation_config = (max_output_tokens.is_some()
            || temperature.is_some()
            || req.seed.is_some()
            || schema.is_some())
        .then_some(GenerationConfig {
            max_output_tokens,
            temperature,
            seed: req.seed,
            response_mime_type: schema.map(|_| "application/json"),
            response_json_schema: schema,
        });
        let body = GenerateRequest {
            contents: wire_contents(&req.messages),
            system_instruction: (!req.system.is_empty()).then(|| Content {
                role: None,
                parts: vec![Part::text(&req.system)],
            }),
            tools,
            generation_config,
        };
        serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))
    }

    /// One call, streamed as deltas.
    pub fn stream_deltas<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        let connect = async move {
            let body = self.request_body(req)?;
            let resp = self.transport.post(&self.stream_url, body).await?;
            Ok(http::sse_events(resp))
        }
        .boxed();
        self.transport.stream(
            connect,
            GenerateStream {
                asm: Assembler::new(SYNTHETIC_ID),
                calls: 0,
                blocked: false,
            },
        )
    }
}

impl WithModel for Gemini {
    fn with_model(&self, model: &str) -> Self {
        self.clone().model(model)
    }
    fn model_id(&self) -> &str {
        &self.model
    }
}

#[async_trait]
impl Provider for Gemini {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.transport
            .call(async {
                let body = self.request_body(req)?;
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
        self.request_body(req).ok()
    }
}

/// A call id as the engine holds it: (id to send back, thought signature).
fn split_id(id: &str) -> (Option<&str>, Option<&str>) {
    let (base, sig) = match id.split_once(SIGNATURE_SEP) {
        Some((b, s)) => (b, Some(s)),
        None => (id, None),
    };
    let wire = (!base.is_empty() && !base.starts_with(SYNTHETIC_ID)).then_some(base);
    (wire, sig)
}

/// A call id from Gemini's parts: its id (or a made-up one) and its signature.
fn join_id(id: Option<&str>, index: usize, signature: Option<&str>) -> String {
    let mut s = match id.filter(|i| !i.is_empty()) {
        Some(i) => i.to_owned(),
        None => format!("{SYNTHETIC_ID}{index}"),
    };
    if let Some(sig) = signature.filter(|s| !s.is_empty()) {
        s.push_str(SIGNATURE_SEP);
        s.push_str(sig);
    }
    s
}

/// History as `contents`: the model's turns are `model`, tool results are
/// `functionResponse` parts (named after the call they answer) in a user turn, and
/// consecutive turns of one role merge (parallel results share a turn).
fn wire_contents(msgs: &[Message]) -> Vec<Content<'_>> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<Content<'_>> = Vec::with_capacity(msgs.len());
    for m in msgs {
        let mut parts = Vec::with_capacity(1 + m.tool_calls.len());
        let role = match m.role {
            Role::User => {
                if !m.content.is_empty() {
                    parts.push(Part::text(&m.content));
                }
                "user"
            }
            Role::Assistant => {
                if !m.content.is_empty() {
                    parts.push(Part::text(&m.content));
                }
                for c in &m.tool_calls {
                    names.insert(&c.id, &c.name);
                    let (id, sig) = split_id(&c.id);
                    parts.push(Part {
                        function_call: Some(FunctionCall {
                            id,
                            name: &c.name,
                            args: match &c.arguments {
                                v @ Value::Object(_) => Cow::Borrowed(v),
                                _ => Cow::Owned(Value::Object(Map::new())),
                            },
                        }),
                        thought_signature: sig,
                        ..Part::default()
                    });
                }
                "model"
            }
            Role::Tool => {
                let call_id = m.tool_call_id.as_deref().unwrap_or_default();
                let name = names.get(call_id).copied().unwrap_or("tool");
                let response = match serde_json::from_str::<Value>(&m.content) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => serde_json::json!({ "result": m.content.as_str() }),
                };
                parts.push(Part {
                    function_response: Some(FunctionResponse {
                        id: split_id(call_id).0,
                        name,
                        response,
                    }),
                    ..Part::default()
                });
                "user"
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.extend(parts),
            _ => out.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateRequest<'a> {
    // Wire order: what stays the same across calls first (the prefix implicit caching
    // reuses), the conversation after it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDecl<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content<'a>>,
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig<'a>>,
}

#[derive(Serialize)]
struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<Part<'a>>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

impl<'a> Part<'a> {
    fn text(t: &'a str) -> Self {
        Self {
            text: Some(t),
            ..Self::default()
        }
    }
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: Cow<'a, Value>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolDecl<'a> {
    function_declarations: Vec<FunctionDecl<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDecl<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: &'a Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
}

// ---- answers ----

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateResponse {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<RespContent>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct RespContent {
    #[serde(default)]
    parts: Option<Vec<RespPart>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RespPart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<RespFunctionCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct RespFunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}

impl From<UsageMetadata> for Usage {
    fn from(u: UsageMetadata) -> Self {
        Usage {
            input_tokens: u.prompt_token_count.unwrap_or(0),
            output_tokens: u.candidates_token_count.unwrap_or(0)
                + u.thoughts_token_count.unwrap_or(0),
            cached_input_tokens: u.cached_content_token_count.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

fn map_finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "LANGUAGE"
            | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

fn api_error(v: &Value) -> ProviderError {
    let (message, retry_after) =
        http::error_value_details(v).unwrap_or_else(|| (http::snippet(&v.to_string()), None));
    let status = v
        .get("error")
        .unwrap_or(v)
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500);
    ProviderError::Http {
        status,
        message,
        retry_after,
    }
}

fn parse_response(bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
    let r: GenerateResponse = http::parse_json(bytes, "the generateContent answer")?;
    if let Some(e) = &r.error {
        return Err(api_error(e));
    }
    let usage = r.usage_metadata.map(Usage::from).unwrap_or_default();
    let Some(candidate) = r.candidates.and_then(|c| c.into_iter().next()) else {
        if r.prompt_feedback.and_then(|f| f.block_reason).is_some() {
            return Ok(ModelResponse {
                content: String::new(),
                tool_calls: Vec::new(),
                usage,
                finish: FinishReason::ContentFilter,
            });
        }
        return Err(ProviderError::InvalidResponse(format!(
            "the generateContent answer has no candidates: {}",
            http::snippet(&String::from_utf8_lossy(bytes))
        )));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for p in candidate.content.and_then(|c| c.parts).unwrap_or_default() {
        if p.thought == Some(true) {
            continue;
        }
        if let Some(f) = p.function_call {
            let i = tool_calls.len();
            tool_calls.push(ToolCall {
                id: join_id(f.id.as_deref(), i, p.thought_signature.as_deref()),
                name: f.name.unwrap_or_default(),
                arguments: f.args.unwrap_or_else(|| Value::Object(Map::new())),
            });
        } else if let Some(t) = p.text {
            content.push_str(&t);
        }
    }
    Ok(ModelResponse {
        content,
        finish: crate::stream::settle_finish(
            map_finish(candidate.finish_reason.as_deref()),
            !tool_calls.is_empty(),
        ),
        tool_calls,
        usage,
    })
}

struct GenerateStream {
    asm: Assembler,
    calls: usize,
    blocked: bool,
}

impl SseParser for GenerateStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        if ev.data.trim().is_empty() {
            return Ok(false);
        }
        let r: GenerateResponse = event_json(ev, "streamGenerateContent")?;
        if let Some(e) = &r.error {
            return Err(api_error(e));
        }
        if let Some(u) = r.usage_metadata {
            self.asm.usage = u.into();
        }
        if r.prompt_feedback.and_then(|f| f.block_reason).is_some() {
            self.blocked = true;
            self.asm.finish = Some(FinishReason::ContentFilter);
        }
        if let Some(c) = r.candidates.and_then(|c| c.into_iter().next()) {
            for p in c.content.and_then(|c| c.parts).unwrap_or_default() {
                if p.thought == Some(true) {
                    continue;
                }
                if let Some(f) = p.function_call {
                    let i = self.calls;
                    self.calls += 1;
                    let id = join_id(f.id.as_deref(), i, p.thought_signature.as_deref());
                    let args = f
                        .args
                        .unwrap_or_else(|| Value::Object(Map::new()))
                        .to_string();
                    self.asm
                        .tool_delta(i, Some(&id), f.name.as_deref(), Some(&args), out);
                } else if let Some(t) = p.text {
                    self.asm.text(&t, out);
                }
            }
            if let Some(f) = c.finish_reason.as_deref() {
                self.asm.finish = Some(map_finish(Some(f)));
            }
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        if self.asm.finish.is_some() || self.blocked {
            Ok(())
        } else {
            Err(ProviderError::Network(
                "the stream ended before the answer was complete (no finishReason)".into(),
            ))
        }
    }

    fn finish(&mut self) -> ModelResponse {
        self.asm.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_signatures_and_synthetic_ids_stay_home() {
        let id = join_id(None, 2, Some("c2ln"));
        assert_eq!(id, "gemini_call_2#sig=c2ln");
        assert_eq!(split_id(&id), (None, Some("c2ln")));
        assert_eq!(split_id("abc"), (Some("abc"), None));
        assert_eq!(
            split_id(&join_id(Some("abc"), 0, None)),
            (Some("abc"), None)
        );
    }

    #[test]
    fn tool_results_are_named_after_their_call() {
        let mut a = Message::assistant("");
        a.tool_calls = vec![ToolCall {
            id: "gemini_call_0#sig=XYZ".into(),
            name: "book_room".into(),
            arguments: serde_json::json!({"hotel": "Grand"}),
        }];
        let msgs = vec![
            Message::user("book"),
            a,
            Message::tool("gemini_call_0#sig=XYZ", "booked BK-5"),
        ];
        let w = serde_json::to_value(wire_contents(&msgs)).unwrap();
        assert_eq!(w[1]["role"], "model");
        assert_eq!(w[1]["parts"][0]["functionCall"]["name"], "book_room");
        assert_eq!(w[1]["parts"][0]["thoughtSignature"], "XYZ");
        assert!(w[1]["parts"][0]["functionCall"].get("id").is_none());
        assert_eq!(w[2]["parts"][0]["functionResponse"]["name"], "book_room");
        assert_eq!(
            w[2]["parts"][0]["functionResponse"]["response"]["result"],
            "booked BK-5"
        );
    }
}
