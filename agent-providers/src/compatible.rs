//! Any OpenAI-compatible endpoint by base URL: Ollama (`http://localhost:11434/v1`),
//! llama.cpp's `llama-server` (`http://127.0.0.1:8080/v1`), vLLM, OpenRouter, LM Studio…
//!
//! The OpenAI client in a tolerant dialect: the key is optional, the token limit goes
//! out as `max_tokens`, and answers may omit or add fields (no `usage`, no call ids, no
//! `index` on streamed tool calls, tool arguments as an object instead of a string,
//! content as an array of parts, `finish_reason: "stop"` next to tool calls, a stream
//! that closes without `[DONE]` after its finish reason).

use std::fmt;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, StreamChunk};
use async_trait::async_trait;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::openai::{Dialect, OpenAi};
use crate::secret::ApiKey;
use crate::stream::StreamDelta;
use crate::{ConfigError, WithModel, env_lookup, normalise_base_url};

/// A client of an OpenAI-compatible server.
///
/// ```no_run
/// use agent_providers::OpenAiCompatible;
/// # fn demo() -> Result<(), agent_providers::ConfigError> {
/// // OPENAI_BASE_URL, OPENAI_MODEL (required), OPENAI_API_KEY (optional)
/// let local = OpenAiCompatible::from_env()?;
/// let ollama = OpenAiCompatible::new("http://localhost:11434/v1")?.model("llama3.2");
/// # let _ = (local, ollama); Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiCompatible(OpenAi);

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl OpenAiCompatible {
    /// A client of the server at `base_url` (the part before `/chat/completions`,
    /// usually ending in `/v1`), without a key, for the model `default`.
    pub fn new(base_url: &str) -> Result<Self, ConfigError> {
        let base = normalise_base_url(base_url)?;
        Ok(Self(
            OpenAi::build(Dialect::Compatible, base, None).model("default"),
        ))
    }

    /// From the environment: `OPENAI_BASE_URL` and `OPENAI_MODEL` (required),
    /// `OPENAI_API_KEY` (optional). `scripts/local-llm.sh start` prints these for a local
    /// llama.cpp server.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(env_lookup)
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let base = lookup("OPENAI_BASE_URL").ok_or(ConfigError::MissingEnv {
            var: "OPENAI_BASE_URL",
            hint: "the server's OpenAI-compatible base URL, e.g. http://127.0.0.1:18080/v1 (scripts/local-llm.sh start prints it)",
        })?;
        let model = lookup("OPENAI_MODEL").ok_or(ConfigError::MissingEnv {
            var: "OPENAI_MODEL",
            hint: "the model name the server serves (scripts/local-llm.sh start prints it)",
        })?;
        let mut p = Self::new(&base)?.model(model);
        if let Some(k) = lookup("OPENAI_API_KEY") {
            p = p.api_key(k);
        }
        Ok(p)
    }

    /// Send `Authorization: Bearer KEY` (OpenRouter, vLLM with `--api-key`, …).
    pub fn api_key(self, key: impl Into<ApiKey>) -> Self {
        let mut inner = self.0;
        inner = inner.with_key(Some(key.into()));
        Self(inner)
    }

    /// The model to call.
    pub fn model(self, model: impl Into<String>) -> Self {
        Self(self.0.model(model))
    }

    /// An extra header on every request (e.g. OpenRouter's `HTTP-Referer`).
    pub fn header(self, name: &str, value: &str) -> Self {
        Self(self.0.header(name, value))
    }

    /// Use this HTTP client (the [timeouts](crate::timeouts) of this client still apply).
    pub fn http_client(self, client: reqwest::Client) -> Self {
        Self(self.0.http_client(client))
    }

    /// Limit on a whole non-streamed call (default
    /// [`DEFAULT_REQUEST_TIMEOUT`](crate::timeouts::DEFAULT_REQUEST_TIMEOUT), 60 s; a
    /// large local model on a CPU may need more).
    pub fn request_timeout(self, limit: Duration) -> Self {
        Self(self.0.request_timeout(limit))
    }

    /// Limit from a streamed call to its first event (default
    /// [`DEFAULT_FIRST_BYTE_TIMEOUT`](crate::timeouts::DEFAULT_FIRST_BYTE_TIMEOUT), 30 s;
    /// a local server reads the whole prompt before its first event).
    pub fn first_byte_timeout(self, limit: Duration) -> Self {
        Self(self.0.first_byte_timeout(limit))
    }

    /// Limit between two events of a stream (default
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](crate::timeouts::DEFAULT_STREAM_IDLE_TIMEOUT), 60 s).
    pub fn stream_idle_timeout(self, limit: Duration) -> Self {
        Self(self.0.stream_idle_timeout(limit))
    }

    /// An extra top-level body field (e.g. llama.cpp's `seed`, vLLM's `top_k`).
    pub fn extra(self, field: impl Into<String>, value: Value) -> Self {
        Self(self.0.extra(field, value))
    }

    /// Ask for strict schema adherence (`json_schema.strict: true`).
    pub fn strict(self, strict: bool) -> Self {
        Self(self.0.strict(strict))
    }

    /// Whether streamed calls send `stream_options.include_usage` (default on).
    pub fn stream_usage(self, on: bool) -> Self {
        Self(self.0.stream_usage(on))
    }

    /// Temperature sent when the request sets none.
    pub fn temperature_default(self, t: f32) -> Self {
        Self(self.0.temperature_default(t))
    }

    /// Token limit sent when the request sets none.
    pub fn max_tokens_default(self, n: u32) -> Self {
        Self(self.0.max_tokens_default(n))
    }

    /// The model called.
    pub fn model_name(&self) -> &str {
        self.0.model_name()
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        self.0.base()
    }

    /// The JSON body sent for `req`.
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.0.request_body(req, stream)
    }

    /// One call, streamed as deltas (text, tool-call starts and argument fragments, the
    /// assembled answer).
    pub fn stream_deltas<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        self.0.stream_deltas(req)
    }
}

impl WithModel for OpenAiCompatible {
    fn with_model(&self, model: &str) -> Self {
        self.clone().model(model)
    }
    fn model_id(&self) -> &str {
        self.0.model_name()
    }
}

#[async_trait]
impl Provider for OpenAiCompatible {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.0.generate(req).await
    }

    fn generate_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        self.0.generate_stream(req)
    }

    fn wire_body(&self, req: &ModelRequest) -> Option<Vec<u8>> {
        self.0.wire_body(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_lookup_needs_base_url_and_model_but_no_key() {
        let p = OpenAiCompatible::from_lookup(|k| match k {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:18080/v1".into()),
            "OPENAI_MODEL" => Some("gemma-3-270m".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(p.name(), "compatible/gemma-3-270m");
        let e = OpenAiCompatible::from_lookup(|k| {
            (k == "OPENAI_BASE_URL").then(|| "http://x/v1".to_owned())
        })
        .unwrap_err();
        assert!(e.to_string().contains("OPENAI_MODEL"));
    }
}
