//! OpenAI Chat Completions (`POST {base}/chat/completions`): history, tools, native
//! JSON-schema structured output (`response_format: {type: "json_schema"}`), SSE
//! streaming with tool-call argument deltas, usage. The same code serves any
//! OpenAI-compatible server through [`crate::OpenAiCompatible`], in a tolerant dialect.
//!
//! Only what is OpenAI's lives here: the client, the settings both clients share
//! (`chat_api!`) and their binding to the shared skeleton (`crate::vendor`: URL,
//! headers), the wire format in `request` (the body), `response` (a whole answer) and
//! `events` (a streamed one).

mod events;
mod request;
mod response;
#[cfg(test)]
mod tests;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde_json::{Map, Value};

pub use response::parse_response;

pub(crate) use request::schema_name;

use crate::http;
use crate::secret::ApiKey;
use crate::stream::{Assembler, Events};
use crate::vendor::{Client, Defaults, Vendor, client_api};
use crate::{ConfigError, env_lookup};

/// The base URL of OpenAI's API, used unless `base_url` says otherwise.
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

/// The Chat Completions wire format and its settings, shared by [`OpenAi`] and
/// [`crate::OpenAiCompatible`].
#[derive(Clone)]
pub(crate) struct Chat {
    pub(crate) dialect: Dialect,
    pub(crate) organization: Option<String>,
    pub(crate) project: Option<String>,
    pub(crate) extra: Map<String, Value>,
    pub(crate) strict: bool,
    pub(crate) stream_usage: bool,
}

impl Chat {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            organization: None,
            project: None,
            extra: Map::new(),
            strict: false,
            stream_usage: true,
        }
    }
}

impl Vendor for Chat {
    type Decoder = events::ChatStream;
    const KEY_OPTIONAL: bool = true;

    fn type_name(&self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "OpenAi",
            Dialect::Compatible => "OpenAiCompatible",
        }
    }

    fn prefix(&self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "openai",
            Dialect::Compatible => "compatible",
        }
    }

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/chat/completions")
    }

    fn headers(&self, key: Option<&ApiKey>) -> Vec<(HeaderName, HeaderValue)> {
        let mut h = Vec::new();
        if let Some(v) = key.and_then(|k| http::secret_header(&format!("Bearer {}", k.expose()))) {
            h.push((AUTHORIZATION, v));
        }
        if let Some(v) = self
            .organization
            .as_deref()
            .and_then(|o| HeaderValue::from_str(o).ok())
        {
            h.push((HeaderName::from_static("openai-organization"), v));
        }
        if let Some(v) = self
            .project
            .as_deref()
            .and_then(|o| HeaderValue::from_str(o).ok())
        {
            h.push((HeaderName::from_static("openai-project"), v));
        }
        h
    }

    fn debug_fields(&self, d: &mut std::fmt::DebugStruct<'_, '_>) {
        d.field("strict", &self.strict);
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

    fn parse(&self, _req: &ModelRequest, bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
        parse_response(bytes)
    }

    fn decoder(&self, _req: &ModelRequest) -> Self::Decoder {
        events::ChatStream {
            asm: Assembler::new("call_"),
        }
    }

    fn events(
        resp: reqwest::Response,
    ) -> futures::future::BoxFuture<'static, Result<Events, ProviderError>> {
        events::events(resp)
    }

    fn error_status(error: &Value) -> u16 {
        response::error_status(error)
    }
}

/// Implements the Chat Completions settings shared by [`OpenAi`] and
/// [`crate::OpenAiCompatible`] on `$client` (a struct with a `client: Client<Chat>`).
macro_rules! chat_api {
    ($client:ty) => {
        impl $client {
            /// An extra top-level field in every request body (e.g. `seed`, `top_p`,
            /// `reasoning_effort`, vLLM's `top_k`). The request's own fields win over
            /// extras of the same name.
            pub fn extra(mut self, field: impl Into<String>, value: ::serde_json::Value) -> Self {
                let field = field.into();
                self.client.configure(|c| {
                    c.extra.insert(field, value);
                });
                self
            }

            /// Ask for strict schema adherence (`json_schema.strict: true`). Off by
            /// default: OpenAI's strict mode requires every property to be `required`
            /// and every object to forbid additional properties, which the engine's
            /// extraction schemas (all fields optional) do not satisfy.
            pub fn strict(mut self, strict: bool) -> Self {
                self.client.configure(|c| c.strict = strict);
                self
            }

            /// Whether streamed calls ask for a final usage chunk
            /// (`stream_options.include_usage`, default on); turn it off for servers
            /// that reject the field.
            pub fn stream_usage(mut self, on: bool) -> Self {
                self.client.configure(|c| c.stream_usage = on);
                self
            }

            /// The base URL requests go to (the part before `/chat/completions`).
            pub fn base(&self) -> &str {
                self.client.base()
            }

            /// The JSON body this client sends for `req` (what goes on the wire, for
            /// inspection and tests).
            pub fn request_body(
                &self,
                req: &::agent_core::provider::ModelRequest,
                stream: bool,
            ) -> Result<Vec<u8>, ::agent_core::error::ProviderError> {
                self.client.body(req, stream)
            }
        }
    };
}

pub(crate) use chat_api;

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
    client: Client<Chat>,
}

client_api!(OpenAi);
chat_api!(OpenAi);

impl OpenAi {
    /// A client of OpenAI with this key, for [`DEFAULT_MODEL`].
    pub fn new(key: impl Into<ApiKey>) -> Self {
        Self {
            client: Client::new(
                Chat::new(Dialect::OpenAi),
                DEFAULT_BASE_URL.to_owned(),
                DEFAULT_MODEL,
                Some(key.into()),
            ),
        }
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

    /// Another base URL (e.g. an Azure or proxy deployment): `…/v1`, without
    /// `/chat/completions`.
    pub fn base_url(mut self, url: &str) -> Result<Self, ConfigError> {
        self.client.set_base_url(url)?;
        Ok(self)
    }

    /// Send the `OpenAI-Organization` header, to bill an organization other than the key's
    /// default.
    pub fn organization(mut self, org: impl Into<String>) -> Self {
        let org = org.into();
        self.client.configure(|c| c.organization = Some(org));
        self
    }

    /// Send the `OpenAI-Project` header, to attribute usage to a project.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        let project = project.into();
        self.client.configure(|c| c.project = Some(project));
        self
    }
}
