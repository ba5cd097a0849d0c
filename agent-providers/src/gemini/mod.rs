//! Google Gemini (`POST {base}/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse`): system instruction, history as `contents` with
//! `functionCall` / `functionResponse` parts, function declarations with
//! `parametersJsonSchema`, structured output with `responseMimeType: application/json`
//! and `responseJsonSchema`. The key goes in the `x-goog-api-key` header, never in the URL.
//!
//! Gemini's function calls may carry a `thoughtSignature` that must be sent back with the
//! call in later requests. The engine's [`ToolCall`] has no place for it, so it travels in
//! the call id (`ID#sig=SIGNATURE`), which the engine stores and echoes unchanged.
//!
//! Only what is Gemini's lives here: the client and its binding to the shared skeleton
//! (`crate::vendor`: URLs, the key header), the wire format in `request` and `response`
//! (whole and streamed answers), the signature-carrying call ids in `ids`.

mod ids;
mod request;
mod response;
#[cfg(test)]
mod tests;

use agent_core::error::ProviderError;
#[cfg(doc)]
use agent_core::provider::ToolCall;
use agent_core::provider::{ModelRequest, ModelResponse};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::http;
use crate::secret::ApiKey;
use crate::vendor::{Client, Defaults, Vendor, client_api};
use crate::{ConfigError, env_lookup};

/// The base URL of Google's Generative Language API, used unless `base_url` says
/// otherwise.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The model `from_env()` uses when `GEMINI_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// The `generateContent` wire format (no settings of its own).
#[derive(Clone)]
pub(crate) struct Generate;

impl Vendor for Generate {
    type Decoder = response::GenerateStream;

    fn type_name(&self) -> &'static str {
        "Gemini"
    }

    fn prefix(&self) -> &'static str {
        "gemini"
    }

    /// `gemini-2.5-flash` or `models/gemini-2.5-flash`: the model without `models/`.
    fn normalise_model(model: String) -> String {
        model
            .strip_prefix("models/")
            .map_or(model.clone(), str::to_owned)
    }

    fn url(&self, base: &str, model: &str, stream: bool) -> String {
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }

    fn headers(&self, key: Option<&ApiKey>) -> Vec<(HeaderName, HeaderValue)> {
        key.and_then(|k| http::secret_header(k.expose()))
            .map(|v| (HeaderName::from_static("x-goog-api-key"), v))
            .into_iter()
            .collect()
    }

    fn body(
        &self,
        _model: &str,
        defaults: Defaults,
        req: &ModelRequest,
        _stream: bool,
    ) -> Result<Vec<u8>, ProviderError> {
        request::body(defaults, req)
    }

    fn parse(&self, _req: &ModelRequest, bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
        response::parse_response(bytes)
    }

    fn decoder(&self, _req: &ModelRequest) -> Self::Decoder {
        response::GenerateStream::new()
    }

    fn error_status(error: &Value) -> u16 {
        response::error_status(error)
    }
}

/// A client of the Gemini API. The model may be named with or without `models/`
/// (`gemini-2.5-flash` or `models/gemini-2.5-flash`).
///
/// ```no_run
/// use agent_providers::Gemini;
/// # fn demo() -> Result<(), agent_providers::ConfigError> {
/// let p = Gemini::from_env()?.model("gemini-2.5-pro"); // GEMINI_API_KEY or GOOGLE_API_KEY
/// # let _ = p; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Gemini {
    client: Client<Generate>,
}

client_api!(Gemini);

impl Gemini {
    /// A client with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        Self {
            client: Client::new(
                Generate,
                DEFAULT_BASE_URL.to_owned(),
                DEFAULT_MODEL,
                Some(key.into()),
            ),
        }
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

    /// Another base URL (up to the API version, e.g. `…/v1beta`).
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.client.set_base_url(url)?;
        Ok(self)
    }

    /// The JSON body this client sends for `req` (the same for both endpoints).
    pub fn request_body(&self, req: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
        self.client.body(req, false)
    }
}
