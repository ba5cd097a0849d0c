//! Any OpenAI-compatible endpoint by base URL: Ollama (`http://localhost:11434/v1`),
//! llama.cpp's `llama-server` (`http://127.0.0.1:8080/v1`), vLLM, OpenRouter, LM Studio…
//!
//! The OpenAI client in a tolerant dialect: the key is optional, the token limit goes
//! out as `max_tokens`, and answers may omit or add fields (no `usage`, no call ids, no
//! `index` on streamed tool calls, tool arguments as an object instead of a string,
//! content as an array of parts, `finish_reason: "stop"` next to tool calls, a stream
//! that closes without `[DONE]` after its finish reason).

use crate::openai::{Chat, Dialect, chat_api};
use crate::secret::ApiKey;
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
    /// usually ending in `/v1`), without a key, for the model `default`.
    pub fn new(base_url: &str) -> Result<Self, ConfigError> {
        let base = normalise_base_url(base_url)?;
        Ok(Self {
            client: Client::new(Chat::new(Dialect::Compatible), base, "default", None),
        })
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
