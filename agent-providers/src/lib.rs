//! Model providers for `agent-core`, and the resilience layer around them.
//!
//! Every client implements [`agent_core::provider::Provider`]:
//!
//! | module | API | structured output | streaming |
//! |---|---|---|---|
//! | [`openai`] | OpenAI Chat Completions | native `response_format: json_schema` | SSE, text and tool-call argument deltas |
//! | [`compatible`] | any OpenAI-compatible endpoint (Ollama, llama.cpp server, vLLM, OpenRouter) by base URL | the same, tolerant of missing and extra fields | the same |
//! | [`anthropic`] | Anthropic Messages | an answer tool (default) or native `output_config` | SSE events, text and `input_json_delta` |
//! | [`gemini`] | Google Gemini `generateContent` / `streamGenerateContent` | `responseJsonSchema` | SSE |
//!
//! Every request carries the whole history, the tools and the output schema. API keys
//! are held in [`ApiKey`], which never prints: not in `Debug`, not in logs, not in errors.
//! Every error a client returns is scrubbed of its secrets (the key, credential headers
//! such as `Authorization`, `x-api-key`, `x-goog-api-key`, credential query parameters),
//! whole or in part (any run of 10 of their characters), whatever the server echoed
//! back: an error body, a body that is not JSON, an `error` event inside a stream.
//!
//! No call waits forever. Each client has [timeouts] by default: 60 s for a whole call
//! (300 s for [`OpenAiCompatible`], whose servers are often local models on a CPU),
//! 30 s from a streamed call to its first event, 60 s between two events of a stream
//! (`request_timeout`, `first_byte_timeout`, `stream_idle_timeout` on every builder).
//! Past one, the call fails with `ProviderError::Timeout`, which the resilience layer
//! retries like any transient error.
//!
//! [`resilience::Resilient`] wraps any providers with retries, backoff, timeouts and ordered
//! model fallback, exactly as the A3 resilience spec documents, on an injectable
//! [`resilience::Clock`] so tests never sleep.
//!
//! ```no_run
//! use std::time::Duration;
//! use agent_providers::{OpenAi, resilience::Resilient};
//! # fn demo() -> Result<(), agent_providers::ConfigError> {
//! let openai = OpenAi::from_env()?.request_timeout(Duration::from_secs(120));
//! // gpt-4o first, gpt-4o-mini if it keeps failing; 2 retries each, exponential backoff.
//! let provider = Resilient::models(&openai, ["gpt-4o", "gpt-4o-mini"]);
//! # let _ = provider; Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod anthropic;
pub mod compatible;
pub mod gemini;
mod http;
pub mod openai;
pub mod resilience;
mod secret;
pub mod stream;
pub mod timeouts;
mod vendor;

pub use agent_core::provider::Provider;
pub use anthropic::{Anthropic, StructuredMode};
pub use compatible::OpenAiCompatible;
pub use gemini::Gemini;
pub use openai::OpenAi;
pub use resilience::{ResilienceError, Resilient, TimeoutError};
pub use secret::ApiKey;
pub use stream::StreamDelta;
pub use timeouts::{
    COMPATIBLE_REQUEST_TIMEOUT, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT,
};

/// Why a provider could not be built: a missing API key variable, an invalid base URL, a
/// bad setting. Returned by the constructors (`from_env`, `base_url`), before any call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A required environment variable is not set.
    #[error("environment variable {var} is not set: {hint}")]
    MissingEnv {
        /// The variable.
        var: &'static str,
        /// What to set it to.
        hint: &'static str,
    },
    /// The base URL is not an http(s) URL. The message says how to fix it.
    #[error("base URL `{0}` is not an http:// or https:// URL; {fix}", fix = url_fix(.0))]
    InvalidBaseUrl(String),
}

/// How to fix a base URL without an http(s) scheme: the usual slip is a bare
/// `host:port`, which only needs `http://` in front.
fn url_fix(url: &str) -> String {
    match url.split_once("://") {
        None if !url.is_empty() => format!("add http:// in front: http://{url}"),
        None => "pass e.g. http://127.0.0.1:8080/v1".to_owned(),
        Some((scheme, rest)) => {
            format!("use http:// or https:// instead of {scheme}://: http://{rest}")
        }
    }
}

/// Choose the model of a client: implemented by every vendor client, so
/// [`Resilient::models`] can build an ordered fallback list from one configured client.
pub trait WithModel: Provider + Sized + 'static {
    /// The same client (key, base URL, options) for another model.
    fn with_model(&self, model: &str) -> Self;
    /// The model this client calls.
    fn model_id(&self) -> &str;
}

/// Environment lookup: `std::env` in `from_env()`, a map in tests.
pub(crate) fn env_lookup(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// Checks and normalises a base URL (no trailing slash).
pub(crate) fn normalise_base_url(url: &str) -> Result<String, ConfigError> {
    let u = url.trim();
    if !(u.starts_with("http://") || u.starts_with("https://")) {
        return Err(ConfigError::InvalidBaseUrl(u.to_owned()));
    }
    Ok(u.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_without_a_scheme_says_to_add_http() {
        let e = OpenAiCompatible::new("127.0.0.1:9").err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some(
                "base URL `127.0.0.1:9` is not an http:// or https:// URL; add http:// in front: http://127.0.0.1:9"
            )
        );
        let e = ConfigError::InvalidBaseUrl("ftp://host/v1".into()).to_string();
        assert!(
            e.ends_with("use http:// or https:// instead of ftp://: http://host/v1"),
            "{e}"
        );
    }
}

/// The guide's chapters that use this crate (`docs/src`) are compiled and run as
/// doctests.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../docs/src/first-agent.md")]
    pub struct FirstAgent;
    #[doc = include_str!("../../docs/src/providers.md")]
    pub struct Providers;
}
