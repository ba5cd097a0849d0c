//! The HTTP plumbing shared by every vendor: one pooled client, JSON POSTs, error
//! mapping (status, `Retry-After`, vendor error bodies), SSE decoding, and the
//! [`Transport`] every call goes through: it applies the [timeouts](crate::timeouts) and
//! scrubs every error of the client's [`Secrets`].

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use agent_core::error::ProviderError;
use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::secret::{ApiKey, Secrets, is_credential_name};
use crate::stream::{Events, SseParser, StreamDelta, drive};
// Error bodies and stream events are cut the same way; the rule lives with the stream.
#[cfg(test)]
use crate::stream::MAX_ERROR_BODY;
pub(crate) use crate::stream::snippet;
use crate::timeouts::{Timeouts, deadline, within};

/// The process-wide client: clones share one connection pool.
pub(crate) fn shared_client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default()
        })
        .clone()
}

/// A header value that is a secret: marked sensitive so `Debug` of the header map hides it.
pub(crate) fn secret_header(value: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

/// Headers every JSON call sends, plus the vendor's.
pub(crate) fn json_headers(extra: Vec<(HeaderName, HeaderValue)>) -> HeaderMap {
    let mut h = HeaderMap::with_capacity(extra.len() + 2);
    h.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (k, v) in extra {
        h.insert(k, v);
    }
    h
}

/// An extra header from a client's builder (`None` if the name or value is not valid
/// HTTP). A header whose name says it carries a credential (`authorization`, `cookie`,
/// names containing `key`, `token`, `secret`, `auth`…) is sensitive: hidden in `Debug`
/// and scrubbed from errors like the API key.
pub(crate) fn custom_header(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    let n = HeaderName::from_bytes(name.as_bytes()).ok()?;
    let mut v = HeaderValue::from_str(value).ok()?;
    if is_credential_name(n.as_str()) {
        v.set_sensitive(true);
    }
    Some((n, v))
}

/// How a client talks to its API: the HTTP client, the headers of every call, the
/// secrets they carry, and the limits on waiting. Every call and every stream of every
/// vendor goes through [`Transport::call`] or [`Transport::stream`]: the one place where
/// the timeouts apply and where errors lose the secrets.
#[derive(Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    headers: HeaderMap,
    secrets: Secrets,
    pub(crate) timeouts: Timeouts,
}

impl Transport {
    pub(crate) fn new() -> Self {
        Self {
            client: shared_client(),
            headers: HeaderMap::new(),
            secrets: Secrets::default(),
            timeouts: Timeouts::default(),
        }
    }

    /// The headers of every call; the secrets are collected again from them, the key and
    /// the base URL.
    pub(crate) fn set_headers(&mut self, headers: HeaderMap, key: Option<&ApiKey>, url: &str) {
        self.secrets = Secrets::collect(key, &headers, url);
        self.headers = headers;
    }

    /// POST a JSON body; a non-2xx answer becomes [`ProviderError::Http`]. Use inside
    /// [`call`](Self::call) or a [`stream`](Self::stream)'s connection.
    ///
    /// A request that dies on a pooled connection the server has just closed (its
    /// keep-alive ran out while the request was on the wire: llama.cpp's server and
    /// uvicorn close idle connections after 5 s) is sent once more on a fresh one.
    /// Nothing was answered, so the model call is repeated at most once; any other
    /// failure is returned as it is, for the resilience layer to decide.
    pub(crate) async fn post(
        &self,
        url: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, ProviderError> {
        let body = Bytes::from(body);
        let send = || {
            self.client
                .post(url)
                .headers(self.headers.clone())
                .body(body.clone())
                .send()
        };
        let resp = match send().await {
            Err(e) if closed_by_peer(&e) => {
                tracing::debug!("the server closed a pooled connection; sending again");
                send().await
            }
            other => other,
        }
        .map_err(network_error)?;
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(status_error(resp).await)
        }
    }

    /// A whole call, limited by the request timeout; its error, if any, without secrets.
    pub(crate) async fn call<T>(
        &self,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let limit = self.timeouts.request;
        let by = deadline(tokio::time::Instant::now(), limit);
        let result = within(by, call)
            .await
            .unwrap_or(Err(ProviderError::Timeout(limit)));
        result.map_err(|e| self.secrets.scrub(e))
    }

    /// A streamed call: `connect` opens it, `parser` reads its events; limited by the
    /// first-byte and idle timeouts; every error without secrets.
    pub(crate) fn stream<'a, P: SseParser + 'a>(
        &self,
        connect: BoxFuture<'a, Result<Events, ProviderError>>,
        parser: P,
    ) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
        let secrets = self.secrets.clone();
        drive(connect, parser, self.timeouts)
            .map(move |r| r.map_err(|e| secrets.scrub(e)))
            .boxed()
    }
}

/// The whole body of a successful answer.
pub(crate) async fn body(resp: reqwest::Response) -> Result<Bytes, ProviderError> {
    resp.bytes().await.map_err(network_error)
}

/// Parse a JSON answer into its wire type.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
) -> Result<T, ProviderError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::InvalidResponse(format!(
            "{what} is not the documented JSON ({e}): {}",
            snippet(&String::from_utf8_lossy(bytes))
        ))
    })
}

/// A transport failure, with its causes, without the URL.
pub(crate) fn network_error(e: reqwest::Error) -> ProviderError {
    let timed_out = e.is_timeout();
    let e = e.without_url();
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    if timed_out && !msg.contains("timed out") {
        msg.push_str(" (timed out)");
    }
    ProviderError::Network(msg)
}

/// Whether a send failed because the peer closed the connection before answering
/// anything: hyper's "connection closed before message completed", a request canceled
/// by a closing connection, or a reset or broken pipe while writing.
fn closed_by_peer(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_connect() {
        return false;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        source = s.source();
    }
    false
}

/// A non-2xx answer: status, the vendor's error message, and how long to wait.
pub(crate) async fn status_error(resp: reqwest::Response) -> ProviderError {
    let status = resp.status().as_u16();
    let header_wait = retry_after(resp.headers());
    let text = resp.text().await.unwrap_or_default();
    let (message, body_wait) = error_details(&text);
    ProviderError::Http {
        status,
        message,
        retry_after: header_wait.or(body_wait),
    }
}

/// `Retry-After` (seconds or an HTTP date) or OpenAI's `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let v = text("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The message of a vendor error body (OpenAI, Anthropic, Gemini shapes, or a bare
/// string), and Gemini's `RetryInfo.retryDelay` when present.
pub(crate) fn error_details(body: &str) -> (String, Option<Duration>) {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return (snippet(body), None);
    };
    error_value_details(&v).unwrap_or_else(|| (snippet(body), None))
}

/// Like [`error_details`], for an already parsed value (also used for in-stream errors).
pub(crate) fn error_value_details(v: &Value) -> Option<(String, Option<Duration>)> {
    let e = v.get("error").unwrap_or(v);
    if let Some(s) = e.as_str() {
        return Some((s.to_owned(), None));
    }
    let message = e.get("message").and_then(Value::as_str)?;
    let kind = e
        .get("type")
        .or_else(|| e.get("status"))
        .or_else(|| e.get("code"))
        .and_then(Value::as_str);
    let wait = e
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .find_map(parse_google_duration);
    let message = match kind {
        Some(k) => format!("{k}: {message}"),
        None => message.to_owned(),
    };
    Some((message, wait))
}

/// `"30s"`, `"1.5s"` (protobuf Duration in JSON).
fn parse_google_duration(s: &str) -> Option<Duration> {
    let secs = s.trim().strip_suffix('s')?.parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// The server-sent events of a streamed answer.
pub(crate) fn sse_events(resp: reqwest::Response) -> Events {
    resp.bytes_stream()
        .eventsource()
        .map(|r| {
            r.map_err(|e| match e {
                EventStreamError::Transport(t) => match network_error(t) {
                    ProviderError::Network(m) => {
                        ProviderError::Network(format!("the stream broke: {m}"))
                    }
                    other => other,
                },
                EventStreamError::Utf8(u) => {
                    ProviderError::InvalidResponse(format!("the stream is not UTF-8: {u}"))
                }
                EventStreamError::Parser(p) => {
                    ProviderError::InvalidResponse(format!("the stream is not valid SSE: {p}"))
                }
            })
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_fractions_ms_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(500)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        h.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(100) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn error_bodies_of_each_vendor_give_their_message() {
        let (m, _) = error_details(
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(m, "requests: Rate limit reached");
        let (m, _) = error_details(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(m, "overloaded_error: Overloaded");
        let (m, wait) = error_details(
            r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]}}"#,
        );
        assert_eq!(m, "RESOURCE_EXHAUSTED: Quota exceeded");
        assert_eq!(wait, Some(Duration::from_secs(31)));
        assert_eq!(
            error_details(r#"{"error":"model not found"}"#).0,
            "model not found"
        );
        assert_eq!(
            error_details("<html>bad gateway</html>").0,
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn snippets_cut_long_bodies_at_char_boundaries() {
        let long = "é".repeat(1000);
        let s = snippet(&long);
        assert!(s.len() <= MAX_ERROR_BODY + 3);
        assert!(s.ends_with('…'));
    }
}
