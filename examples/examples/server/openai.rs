//! The agent behind an OpenAI-compatible chat endpoint: `POST /v1/chat/completions`
//! (and `GET /v1/models`), so any OpenAI client (the official `openai` Python package,
//! `curl`, a chat UI that speaks the API) can talk to the concierge.
//!
//! - The session: the `x-session-id` request header, else the body's `user` field,
//!   else a new session. The response always carries the session in an `x-session-id`
//!   header; send it back to continue the conversation.
//! - The turn's input is the last `user` message of `messages`: the agent keeps its own
//!   history, so a client may send the whole conversation or only the new message.
//! - `stream: false` (the default): a `chat.completion` object; `stream: true`:
//!   `chat.completion.chunk` server-sent events (the role, the text deltas, a last chunk
//!   with `finish_reason`), then `data: [DONE]`; with `stream_options.include_usage`, a
//!   usage chunk (no choices) before `[DONE]`.
//! - Besides the OpenAI fields, the completion (and the last chunk) has an `agent`
//!   field: the session, flow, step, collected data, why the turn stopped, the tool
//!   calls and the calls awaiting approval. `model` echoes the request's; `usage` is
//!   the turn's token usage (all its model calls).
//! - Errors are OpenAI-style `{"error": {"message", "type", "param", "code"}}`: `400`
//!   for a body that is not a chat request (no `model`, no user message, a session id
//!   that is not 1 to 64 letters, digits, `-` or `_`), `500` for a failed turn (the
//!   session is unchanged). A turn that fails while streaming ends the stream with an
//!   `{"error"}` chunk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_core::prelude::*;
use agent_core::provider::Usage;
use agent_core::response::Event as TurnEvent;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use super::booking::Booking;
use super::events::pending_list;
use super::routes::{Served, valid_id};

/// The request and response header that names the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// The model id `GET /v1/models` lists (any `model` is accepted and echoed).
pub const MODEL_ID: &str = "concierge";

/// The routes of the OpenAI-compatible endpoint.
pub fn routes() -> Router<Served> {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
}

/// An OpenAI-style error response.
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        Json(json!({
            "error": { "message": message, "type": kind, "param": null, "code": null }
        })),
    )
        .into_response()
}

fn invalid(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

/// The text of a message's `content`: a string, or an array of parts whose `text`
/// parts are joined.
pub(super) fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The last user message of `messages`, trimmed.
fn last_user_message(messages: &[Value]) -> Result<String, String> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .ok_or("`messages` has no message with role `user`")?;
    let text = content_text(&last["content"])
        .ok_or("the last user message has no text content (a string or text parts)")?;
    let text = text.trim();
    if text.is_empty() {
        return Err("the last user message is empty".into());
    }
    Ok(text.to_owned())
}

/// A new session id: time and a counter, unique within this server.
fn new_session_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "oai-{:x}-{}",
        nanos & 0xffff_ffff_ffff,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": { "cached_tokens": u.cached_input_tokens },
    })
}

/// The `agent` field: where the conversation is after the turn, and what it did.
fn agent_json(r: &AgentResponse<Booking>) -> Value {
    json!({
        "session_id": r.session_id,
        "flow": r.flow,
        "step": r.step,
        "data": r.data,
        "stopped": r.stopped,
        "executed_steps": r.executed_steps,
        "tool_calls": r.tool_calls,
        "awaiting_approval": pending_list(&r.awaiting_approval),
        "model_calls": r.model_calls,
    })
}

/// What a request asks for, once checked.
struct Request {
    session: String,
    input: String,
    model: String,
    stream: bool,
    include_usage: bool,
}

fn parse(headers: &HeaderMap, body: &Value) -> Result<Request, String> {
    if !body.is_object() {
        return Err("the body must be a JSON object (a chat completion request)".into());
    }
    let model = body["model"]
        .as_str()
        .filter(|m| !m.is_empty())
        .ok_or("you must provide a `model` (any name; it is echoed)")?
        .to_owned();
    let messages = body["messages"]
        .as_array()
        .ok_or("`messages` must be an array of messages")?;
    let input = last_user_message(messages)?;
    let stream = match &body["stream"] {
        Value::Null => false,
        Value::Bool(b) => *b,
        other => return Err(format!("`stream` must be true or false, got {other}")),
    };
    let include_usage = body["stream_options"]["include_usage"] == true;
    let from_header = match headers.get(SESSION_HEADER) {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| format!("the {SESSION_HEADER} header is not text"))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let session = match from_header.or_else(|| body["user"].as_str().map(str::to_owned)) {
        Some(id) if valid_id(&id) => id,
        Some(id) => {
            return Err(format!(
                "session id {id:?} ({SESSION_HEADER} header or `user`) must be 1 to 64 letters, digits, '-' or '_'"
            ));
        }
        None => new_session_id(),
    };
    Ok(Request {
        session,
        input,
        model,
        stream,
        include_usage,
    })
}

fn with_session(mut response: Response, session: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(session) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

/// `POST /v1/chat/completions`.
async fn chat_completions(
    State(Served { agent, log }): State<Served>,
    headers: HeaderMap,
    body: Result<Json<Value>, JsonRejection>,
) -> Response {
    let body = match body {
        Ok(Json(b)) => b,
        Err(e) => {
            return invalid(&format!(
                "the body is not a JSON chat request: {}",
                e.body_text()
            ));
        }
    };
    let req = match parse(&headers, &body) {
        Ok(r) => r,
        Err(e) => return invalid(&e),
    };
    let id = format!("chatcmpl-{}", new_session_id());
    let created = unix_now();
    let session = req.session.clone();
    if !req.stream {
        let response = match agent.respond(&req.session, &req.input).await {
            Ok(r) => Json(json!({
                "id": id,
                "object": "chat.completion",
                "created": created,
                "model": req.model,
                "choices": [{
                    "index": 0,
                    "message": { "role": "assistant", "content": r.message, "refusal": null },
                    "logprobs": null,
                    "finish_reason": "stop",
                }],
                "usage": usage_json(&r.usage),
                "system_fingerprint": null,
                "agent": agent_json(&r),
            }))
            .into_response(),
            Err(e) => {
                log(&format!(
                    "[server] session {}: turn failed: {e} (the session is unchanged)",
                    req.session
                ));
                error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    &e.to_string(),
                )
            }
        };
        return with_session(response, &session);
    }

    let chunk = {
        let (id, model) = (id.clone(), req.model.clone());
        move |choices: Value, extra: Option<(&str, Value)>| {
            let mut c = json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": null,
                "choices": choices,
                "usage": null,
            });
            if let Some((k, v)) = extra {
                c[k] = v;
            }
            SseEvent::default().data(c.to_string())
        }
    };
    let first = chunk(
        json!([{ "index": 0, "delta": { "role": "assistant", "content": "" },
                  "logprobs": null, "finish_reason": null }]),
        None,
    );
    let mut streamed = String::new();
    let include_usage = req.include_usage;
    let events = agent
        .respond_stream(&req.session, &req.input)
        .map(move |e| -> Vec<SseEvent> {
            let text = |t: &str| {
                json!([{ "index": 0, "delta": { "content": t },
                          "logprobs": null, "finish_reason": null }])
            };
            match e {
                TurnEvent::TextDelta(t) if !t.is_empty() => {
                    streamed.push_str(&t);
                    vec![chunk(text(&t), None)]
                }
                TurnEvent::Done(r) => {
                    let mut out = Vec::new();
                    // The deltas concatenate to the message; send what is missing.
                    if let Some(rest) = r.message.strip_prefix(streamed.as_str())
                        && !rest.is_empty()
                    {
                        out.push(chunk(text(rest), None));
                    }
                    out.push(chunk(
                        json!([{ "index": 0, "delta": {}, "logprobs": null,
                                  "finish_reason": "stop" }]),
                        Some(("agent", agent_json(&r))),
                    ));
                    if include_usage {
                        out.push(chunk(json!([]), Some(("usage", usage_json(&r.usage)))));
                    }
                    out
                }
                TurnEvent::Error(err) => {
                    log(&format!(
                        "[server] session {session}: turn failed: {err} (the session is unchanged)"
                    ));
                    let body = json!({
                        "error": { "message": err.to_string(), "type": "server_error",
                                   "param": null, "code": null }
                    });
                    vec![SseEvent::default().data(body.to_string())]
                }
                _ => Vec::new(),
            }
        })
        .flat_map(futures::stream::iter);
    let stream = futures::stream::once(async move { first })
        .chain(events)
        .chain(futures::stream::once(async {
            SseEvent::default().data("[DONE]")
        }))
        .map(Ok::<_, std::convert::Infallible>);
    with_session(Sse::new(stream).into_response(), &req.session)
}

/// `GET /v1/models`: the one model this server is.
async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{ "id": MODEL_ID, "object": "model", "created": 0, "owned_by": "agent-core" }],
    }))
}
