//! Any OpenAI-compatible endpoint by base URL: Ollama (`http://localhost:11434/v1`),
//! llama.cpp's `llama-server` (`http://127.0.0.1:8080/v1`), vLLM, OpenRouter, LM Studio…
//!
//! The OpenAI client in a tolerant dialect: the key is optional, the token limit goes
//! out as `max_tokens`, and answers may omit or add fields (no `usage`, no call ids, no
//! `index` on streamed tool calls, tool arguments as an object instead of a string,
//! content as an array of parts, `finish_reason: "stop"` next to tool calls, a stream
//! that closes without `[DONE]` after its finish reason).
//!
//! A whole call may take [`COMPATIBLE_REQUEST_TIMEOUT`] (300 s) unless `request_timeout`
//! says otherwise, not the hosted vendors' 60 s: these servers are often a model on the
//! same machine, and a small CPU needs minutes for a long prompt with many tools.

use crate::openai::{Chat, Dialect, chat_api};
use crate::secret::ApiKey;
use crate::timeouts::COMPATIBLE_REQUEST_TIMEOUT;
use crate::vendor::{Client, client_api};
use crate::{ConfigError, env_lookup, normalise_base_url};

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
pub struct OpenAiCompatible {
    client: Client<Chat>,
}

client_api!(OpenAiCompatible);
chat_api!(OpenAiCompatible);

impl OpenAiCompatible {
    /// A client of the server at `base_url` (the part before `/chat/completions`,
    /// usually ending in `/v1`), without a key, for the model `default`. A whole call may
    /// take [`COMPATIBLE_REQUEST_TIMEOUT`] (300 s) unless `request_timeout` says otherwise.
    pub fn new(base_url: &str) -> Result<Self, ConfigError> {
        let base = normalise_base_url(base_url)?;
        let mut client = Client::new(Chat::new(Dialect::Compatible), base, "default", None);
        client.transport.timeouts.request = COMPATIBLE_REQUEST_TIMEOUT;
        Ok(Self { client })
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
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.client.set_key(Some(key.into()));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::provider::Provider;
    use std::time::Duration;

    use crate::timeouts::{
        DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, DEFAULT_STREAM_IDLE_TIMEOUT,
    };

    #[test]
    fn a_whole_call_may_take_300_s_by_default_while_hosted_clients_keep_60_s() {
        assert_eq!(COMPATIBLE_REQUEST_TIMEOUT, Duration::from_secs(300));
        let local = OpenAiCompatible::new("http://127.0.0.1:18080/v1").unwrap();
        let t = local.client.transport.timeouts;
        assert_eq!(t.request, COMPATIBLE_REQUEST_TIMEOUT);
        assert_eq!(t.first_byte, DEFAULT_FIRST_BYTE_TIMEOUT);
        assert_eq!(t.idle, DEFAULT_STREAM_IDLE_TIMEOUT);
        let from_env = OpenAiCompatible::from_lookup(|k| match k {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:18080/v1".into()),
            "OPENAI_MODEL" => Some("m".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            from_env.client.transport.timeouts.request,
            COMPATIBLE_REQUEST_TIMEOUT
        );
        let set = local.request_timeout(Duration::from_secs(20));
        assert_eq!(
            set.client.transport.timeouts.request,
            Duration::from_secs(20)
        );
        // The hosted clients keep theirs (their fields are private: read their `Debug`).
        let hosted = format!("{:?}", crate::OpenAi::new("sk-test-key"));
        let expected = format!("request: {DEFAULT_REQUEST_TIMEOUT:?},");
        assert!(hosted.contains(&expected), "{hosted}");
    }

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
