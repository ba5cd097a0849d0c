//! The one provider skeleton every vendor client is built on.
//!
//! A vendor supplies only its wire format, as a [`Vendor`]: the URL and headers of a
//! call, the request body, how a whole answer and the events of a streamed one decode,
//! and which HTTP status an error body stands for. [`Client`] holds what every client
//! has (model, base URL, key, custom headers, defaults, [`Transport`]) and drives every
//! call the same way: send through the transport (timeouts, one resend on a closed
//! pooled connection, status errors), decode, and scrub the error of the client's
//! secrets. The public builder methods and the `Provider` implementation shared by
//! every client come from [`client_api!`](crate::vendor::client_api).

mod api;

use std::fmt;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse};
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;

pub(crate) use api::client_api;

use crate::http::{self, Transport};
use crate::secret::ApiKey;
use crate::stream::{Events, SseParser, StreamDelta};
use crate::{ConfigError, normalise_base_url};

/// What a client sends when the request itself does not say.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Defaults {
    /// Temperature sent when the request sets none.
    pub(crate) temperature: Option<f32>,
    /// Token limit sent when the request sets none.
    pub(crate) max_tokens: Option<u32>,
    /// The model's profile (`agent_core::policy`).
    pub(crate) profile: agent_core::policy::ModelProfile,
}

/// The vendor-specific part of a client: its wire format. Holds the vendor's own
/// settings (e.g. OpenAI's `strict`, Anthropic's structured-output mode).
pub(crate) trait Vendor: Clone + Send + Sync + 'static {
    /// Decodes the events of one streamed call into deltas.
    type Decoder: SseParser + 'static;

    /// Whether the client may have no key (its `Debug` then shows the key as an `Option`).
    const KEY_OPTIONAL: bool = false;

    /// The type name `Debug` shows.
    fn type_name(&self) -> &'static str;
    /// The prefix of the provider's name (`openai` in `openai/gpt-4o`).
    fn prefix(&self) -> &'static str;
    /// The model name as the vendor wants it in its URLs and bodies.
    fn normalise_model(model: String) -> String {
        model
    }
    /// The endpoint of a call (streamed or not) to `model` at `base`.
    fn url(&self, base: &str, model: &str, stream: bool) -> String;
    /// The headers that carry the key, and the vendor's fixed headers.
    fn headers(&self, key: Option<&ApiKey>) -> Vec<(HeaderName, HeaderValue)>;
    /// More fields for `Debug`, after the key.
    fn debug_fields(&self, _d: &mut fmt::DebugStruct<'_, '_>) {}

    /// The JSON body of a call.
    fn body(
        &self,
        model: &str,
        defaults: Defaults,
        req: &ModelRequest,
        stream: bool,
    ) -> Result<Vec<u8>, ProviderError>;
    /// A whole (non-streamed) answer.
    fn parse(&self, req: &ModelRequest, bytes: &[u8]) -> Result<ModelResponse, ProviderError>;
    /// The decoder of a streamed call's events.
    fn decoder(&self, req: &ModelRequest) -> Self::Decoder;
    /// The events of a streamed answer: its server-sent events.
    fn events(resp: reqwest::Response) -> BoxFuture<'static, Result<Events, ProviderError>> {
        futures::future::ready(Ok(http::sse_events(resp))).boxed()
    }
    /// The HTTP status an error inside a body stands for (`error` is the body's
    /// `error` object, or the body itself).
    fn error_status(error: &Value) -> u16;
}

/// A vendor client: what every client has, and the vendor's wire format.
#[derive(Clone)]
pub(crate) struct Client<W> {
    pub(crate) vendor: W,
    model: String,
    name: String,
    base_url: String,
    /// Host and port of `base_url` (`server.address`, `server.port` in traces).
    server: Option<(String, u16)>,
    url: String,
    stream_url: String,
    key: Option<ApiKey>,
    custom_headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) transport: Transport,
    pub(crate) defaults: Defaults,
}

impl<W: Vendor> Client<W> {
    /// A client of `base_url` (already normalised) for `model`.
    pub(crate) fn new(vendor: W, base_url: String, model: &str, key: Option<ApiKey>) -> Self {
        let mut s = Self {
            vendor,
            model: W::normalise_model(model.to_owned()),
            name: String::new(),
            base_url,
            server: None,
            url: String::new(),
            stream_url: String::new(),
            key,
            custom_headers: Vec::new(),
            transport: Transport::new(),
            defaults: Defaults::default(),
        };
        s.refresh();
        s
    }

    /// The name, the URLs, the headers and the secrets, again from the settings.
    fn refresh(&mut self) {
        self.name = format!("{}/{}", self.vendor.prefix(), self.model);
        self.server = reqwest::Url::parse(&self.base_url).ok().and_then(|u| {
            let port = u.port_or_known_default()?;
            Some((u.host_str()?.to_owned(), port))
        });
        self.url = self.vendor.url(&self.base_url, &self.model, false);
        self.stream_url = self.vendor.url(&self.base_url, &self.model, true);
        let mut extra = self.vendor.headers(self.key.as_ref());
        extra.extend(self.custom_headers.iter().cloned());
        self.transport
            .set_headers(http::json_headers(extra), self.key.as_ref(), &self.base_url);
    }

    pub(crate) fn set_model(&mut self, model: String) {
        self.model = W::normalise_model(model);
        self.refresh();
    }

    pub(crate) fn set_base_url(&mut self, url: &str) -> Result<(), ConfigError> {
        self.base_url = normalise_base_url(url)?;
        self.refresh();
        Ok(())
    }

    pub(crate) fn set_key(&mut self, key: Option<ApiKey>) {
        self.key = key;
        self.refresh();
    }

    /// An extra header (ignored if the name or value is not valid HTTP; sensitive if
    /// its name says it carries a credential).
    pub(crate) fn add_header(&mut self, name: &str, value: &str) {
        if let Some(h) = http::custom_header(name, value) {
            self.custom_headers.push(h);
            self.refresh();
        }
    }

    /// Change the vendor's settings (the headers and secrets follow).
    pub(crate) fn configure(&mut self, change: impl FnOnce(&mut W)) {
        change(&mut self.vendor);
        self.refresh();
    }

    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn base(&self) -> &str {
        &self.base_url
    }

    /// The host and port of the base URL.
    pub(crate) fn server(&self) -> Option<(&str, u16)> {
        self.server.as_ref().map(|(h, p)| (h.as_str(), *p))
    }

    /// The JSON body sent for `req`.
    pub(crate) fn body(&self, req: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        self.vendor.body(&self.model, self.defaults, req, stream)
    }

    /// One whole call: send, decode; limited by the request timeout, its error without
    /// secrets.
    pub(crate) async fn complete(
        &self,
        req: &ModelRequest,
    ) -> Result<ModelResponse, ProviderError> {
        self.transport
            .call(async {
                let body = self.body(req, false)?;
                let resp = self.transport.post(&self.url, body).await?;
                self.vendor
                    .parse(req, &http::body(resp).await?)
                    .and_then(answered)
            })
            .await
    }

    /// One streamed call, as deltas: limited by the first-byte and idle timeouts, every
    /// error without secrets.
    pub(crate) fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        let decoder = self.vendor.decoder(req);
        let connect = async move {
            let body = self.body(req, true)?;
            let resp = self.transport.post(&self.stream_url, body).await?;
            W::events(resp).await
        }
        .boxed();
        self.transport.stream(connect, decoder)
    }
}

impl<W: Vendor> fmt::Debug for Client<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct(self.vendor.type_name());
        d.field("model", &self.model)
            .field("base_url", &self.base_url);
        match &self.key {
            Some(k) if !W::KEY_OPTIONAL => d.field("key", k),
            k => d.field("key", k),
        };
        self.vendor.debug_fields(&mut d);
        d.field("timeouts", &self.transport.timeouts)
            .finish_non_exhaustive()
    }
}

/// Encode a request body.
pub(crate) fn encode(body: &impl Serialize) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body)
        .map_err(|e| ProviderError::Other(format!("could not encode the request: {e}")))
}

/// An error the server put inside a body (a 2xx answer, or an event of a stream): its
/// message, its `Retry-After`, and the status the vendor says it stands for.
pub(crate) fn body_error<W: Vendor>(v: &Value) -> ProviderError {
    let (message, retry_after) =
        http::error_value_details(v).unwrap_or_else(|| (http::snippet(&v.to_string()), None));
    ProviderError::Http {
        status: W::error_status(v.get("error").unwrap_or(v)),
        message,
        retry_after,
    }
}

/// An answer without its answer: the error it carries, or `what` is missing from it
/// (an empty answer, retried like a 5xx).
pub(crate) fn no_answer<W: Vendor>(
    error: Option<&Value>,
    what: &str,
    bytes: &[u8],
) -> ProviderError {
    match error {
        Some(e) => body_error::<W>(e),
        None => ProviderError::EmptyAnswer(format!(
            "{what}: {}",
            http::snippet(&String::from_utf8_lossy(bytes))
        )),
    }
}

/// A decoded answer, unless it is empty: no text (or only whitespace) and no tool
/// call, which is [`ProviderError::EmptyAnswer`]. An answer stopped by the vendor's
/// content filter stays an answer (its finish reason says why it is empty; asking
/// again would not change it).
pub(crate) fn answered(r: ModelResponse) -> Result<ModelResponse, ProviderError> {
    if r.content.trim().is_empty()
        && r.tool_calls.is_empty()
        && r.finish != agent_core::provider::FinishReason::ContentFilter
    {
        return Err(ProviderError::EmptyAnswer(format!(
            "no text and no tool call (finish reason {:?}, {} output tokens)",
            r.finish, r.usage.output_tokens
        )));
    }
    Ok(r)
}

/// The end of a stream that closed before the vendor's end marker (`missing` names it):
/// `Ok` if the answer is complete anyway.
pub(crate) fn ended(complete: bool, missing: &str) -> Result<(), ProviderError> {
    if complete {
        Ok(())
    } else {
        Err(ProviderError::Network(format!(
            "the stream ended before the answer was complete ({missing})"
        )))
    }
}
