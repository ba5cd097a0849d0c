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
//!
//! Only what is Anthropic's lives here: the client and its binding to the shared
//! skeleton (`crate::vendor`: URL, headers, the answer tool), the wire format in
//! `request`, `response` (a whole answer) and `events` (a streamed one).

mod events;
mod request;
mod response;
#[cfg(test)]
mod tests;

use std::borrow::Cow;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::http;
use crate::openai::schema_name;
use crate::secret::ApiKey;
use crate::vendor::{Client, Defaults, Vendor, client_api};
use crate::{ConfigError, env_lookup};

/// The base URL of Anthropic's Messages API, used unless `base_url` says otherwise.
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

/// The Messages wire format and its settings.
#[derive(Clone)]
pub(crate) struct Messages {
    structured: StructuredMode,
    prompt_cache: bool,
}

impl Messages {
    /// The name of the answer tool for a request (None when the request has no schema or
    /// the mode is native).
    pub(super) fn answer_tool<'r>(&self, req: &'r ModelRequest) -> Option<Cow<'r, str>> {
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
}

impl Vendor for Messages {
    type Decoder = events::MessagesStream;

    fn type_name(&self) -> &'static str {
        "Anthropic"
    }

    fn prefix(&self) -> &'static str {
        "anthropic"
    }

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/v1/messages")
    }

    fn headers(&self, key: Option<&ApiKey>) -> Vec<(HeaderName, HeaderValue)> {
        let mut h = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        )];
        if let Some(v) = key.and_then(|k| http::secret_header(k.expose())) {
            h.push((HeaderName::from_static("x-api-key"), v));
        }
        h
    }

    fn debug_fields(&self, d: &mut std::fmt::DebugStruct<'_, '_>) {
        d.field("structured", &self.structured);
    }

    fn body(
        &self,
        model: &str,
        defaults: Defaults,
        req: &ModelRequest,
        stream: bool,
    ) -> Result<Vec<u8>, ProviderError> {
        request::body(self, model, defaults, req, stream)
    }

    fn parse(&self, req: &ModelRequest, bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
        response::parse_response(bytes, self.answer_tool(req).as_deref())
    }

    fn decoder(&self, req: &ModelRequest) -> Self::Decoder {
        events::MessagesStream::new(self.answer_tool(req).map(Cow::into_owned))
    }

    fn error_status(error: &Value) -> u16 {
        response::error_status(error)
    }
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
    client: Client<Messages>,
}

client_api!(Anthropic);

impl Anthropic {
    /// A client with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        let messages = Messages {
            structured: StructuredMode::default(),
            prompt_cache: true,
        };
        Self {
            client: Client::new(
                messages,
                DEFAULT_BASE_URL.to_owned(),
                DEFAULT_MODEL,
                Some(key.into()),
            ),
        }
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

    /// Another base URL (without `/v1/messages`).
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.client.set_base_url(url)?;
        Ok(self)
    }

    /// How output schemas are sent (default: [`StructuredMode::AnswerTool`]).
    pub fn structured(mut self, mode: StructuredMode) -> Self {
        self.client.configure(|m| m.structured = mode);
        self
    }

    /// Mark `cache_control` breakpoints (on by default; see the module docs). Off sends
    /// the system prompt as a plain string and no breakpoints.
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.client.configure(|m| m.prompt_cache = on);
        self
    }

    /// The JSON body this client sends for `req`.
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.client.body(req, stream)
    }

    /// The name of the answer tool for a request (see [`Messages::answer_tool`]).
    #[cfg(test)]
    fn answer_tool<'r>(&self, req: &'r ModelRequest) -> Option<Cow<'r, str>> {
        self.client.vendor.answer_tool(req)
    }
}
