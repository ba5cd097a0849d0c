//! The HTTP client under rmcp's streamable HTTP transport: reqwest, plus one repair.
//!
//! The MCP specification has a server answer a request for a session it no longer
//! knows (it restarted, or expired the session) with `404 Not Found`; rmcp then opens
//! a new session and sends the request again, once. Servers built on the TypeScript
//! SDK's example routing (the reference `server-everything` among them) answer
//! `400 Bad Request` instead, with a JSON-RPC error that has no `id`
//! (`-32000 "Bad Request: No valid session ID provided"`). rmcp cannot route an
//! id-less error to the request it answers, so the call used to wait for its whole
//! time limit, and every later call too.
//!
//! This client hands rmcp the answer it expects: an id-less error to a request that
//! carried a session id and that names the session is the session having expired
//! (the server refused the request before running it, so sending it again is safe for
//! any tool); any other id-less error to a request is given that request's id, so the
//! call fails at once with the server's message instead of hanging.
//!
//! A call whose answer was streaming when the server restarted has rmcp resume the
//! stream with a GET for the old session, retried with back-off for as long as the
//! call's time limit; a 404 or 400 to that GET ends the stream instead, so the call
//! fails at once with a closed transport (its outcome unknown).

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// reqwest with the repair described in the [module docs](self).
#[derive(Clone)]
pub(super) struct SessionAwareClient {
    inner: reqwest::Client,
    seen: SessionIdCell,
}

/// The HTTP session id (`Mcp-Session-Id`) a transport last sent, for the spans'
/// `mcp.session.id`.
#[derive(Clone, Default)]
pub(super) struct SessionIdCell(Arc<std::sync::Mutex<Option<Arc<str>>>>);

impl SessionIdCell {
    /// The id last sent, if any.
    pub(super) fn get(&self) -> Option<String> {
        let guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.as_deref().map(str::to_owned)
    }

    fn set(&self, id: &Arc<str>) {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.as_ref() != Some(id) {
            *guard = Some(id.clone());
        }
    }
}

/// How many same-origin redirects a request follows (as rmcp's own client does).
const MAX_REDIRECTS: usize = 10;

impl SessionAwareClient {
    /// A client configured as rmcp's default one: no idle pooling (a restarted server
    /// is reached on a fresh connection), same-origin 307/308 redirects only (they
    /// keep the method and body; others would turn the POST into a GET or replay the
    /// session id to another host).
    pub(super) fn new(seen: SessionIdCell) -> Result<Self, String> {
        let redirect = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(redirect)
            .build()
            .map_err(|e| format!("could not build the HTTP client: {e}"))?;
        Ok(Self { inner, seen })
    }
}

/// Whether an id-less JSON-RPC error is a server saying it does not know the session.
fn names_the_session(message: &str) -> bool {
    message.to_ascii_lowercase().contains("session")
}

/// Whether a GET for a session's stream was refused as the session being unknown: 404
/// (the specification's answer) or 400 (what servers on the TypeScript SDK's example
/// routing answer).
fn session_refused(e: &reqwest::Error) -> bool {
    matches!(
        e.status(),
        Some(reqwest::StatusCode::NOT_FOUND | reqwest::StatusCode::BAD_REQUEST)
    )
}

/// The repair itself, on the answer to one POST.
fn repair(
    message: &ClientJsonRpcMessage,
    had_session: bool,
    response: StreamableHttpPostResponse,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    let JsonRpcMessage::Request(request) = message else {
        return Ok(response);
    };
    match response {
        StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(mut e), sid)
            if e.id.is_none() =>
        {
            if had_session && names_the_session(&e.error.message) {
                tracing::debug!(
                    error = %e.error.message,
                    "MCP server no longer knows the session; treated as expired"
                );
                return Err(StreamableHttpError::SessionExpired);
            }
            e.id = Some(request.id.clone());
            Ok(StreamableHttpPostResponse::Json(
                ServerJsonRpcMessage::Error(e),
                sid,
            ))
        }
        other => Ok(other),
    }
}

impl StreamableHttpClient for SessionAwareClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if let Some(id) = &session_id {
            self.seen.set(id);
        }
        let had_session = session_id.is_some();
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message.clone(),
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        repair(&message, had_session, response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let had_session = session_id.is_some();
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        match stream {
            // The session's streams cannot be resumed (the server restarted or ended
            // the session): stop, instead of retrying for as long as the call's time
            // limit. rmcp ends a stream it cannot open this way, which fails a call
            // waiting on it with a closed transport (its outcome unknown).
            Err(StreamableHttpError::Client(e)) if had_session && session_refused(&e) => {
                tracing::debug!(error = %e, "MCP server refused to resume the session's stream");
                Err(StreamableHttpError::ServerDoesNotSupportSse)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientRequest, ErrorData, PingRequest, RequestId};

    use super::*;

    fn ping() -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestId::Number(7),
        )
    }

    fn idless(message: &'static str) -> StreamableHttpPostResponse {
        StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(
                ErrorData::new(rmcp::model::ErrorCode(-32000), message, None),
                None,
            ),
            None,
        )
    }

    #[test]
    fn an_idless_session_error_is_an_expired_session() {
        let r = repair(
            &ping(),
            true,
            idless("Bad Request: No valid session ID provided"),
        );
        assert!(matches!(r, Err(StreamableHttpError::SessionExpired)));
    }

    #[test]
    fn other_idless_errors_answer_the_request() {
        for (had_session, text) in [(false, "No valid session ID"), (true, "Parse error")] {
            match repair(&ping(), had_session, idless(text)) {
                Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) => {
                    assert_eq!(e.id, Some(RequestId::Number(7)));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
