//! The OpenAI-compatible chat endpoint: `POST /v1/chat/completions` and
//! `GET /v1/models` (the module docs of [`crate::serve`] say what it takes and answers),
//! and the helpers it shares with the Responses API (`responses.rs`): errors, the
//! request checks, and the session a request continues.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::events::pending_list;
use super::{
    AuthError, BodyError, OPERATOR_ONLY, Principal, Server, bearer_token, not_yours, read_json,
    valid_id,
};
use crate::approval::{Decision, PendingCall};
use crate::data::{AgentContext, AgentData};
use crate::provider::{Role, Usage};
use crate::response::{AgentResponse, Event as TurnEvent};

/// The request and response header that names the session.
pub const SESSION_HEADER: &str = "x-session-id";

/// How many conversations of one caller may open with the same first message.
const GENERATIONS: usize = 64;

pub(super) fn routes<D: AgentData, C: AgentContext>() -> Router<Server<D, C>> {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions::<D, C>))
        .route("/v1/models", get(models::<D, C>))
        .merge(super::responses::routes::<D, C>())
}

/// An OpenAI-style error response.
pub(super) fn error(
    status: StatusCode,
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) -> Response {
    (
        status,
        Json(json!({
            "error": { "message": message, "type": kind, "param": param, "code": code }
        })),
    )
        .into_response()
}

pub(super) fn invalid(message: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        None,
        None,
        message,
    )
}

pub(super) fn invalid_param(param: &str, code: &str, message: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        Some(code),
        Some(param),
        message,
    )
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

/// A new session id: time and a counter, unique within this server.
pub(super) fn new_id(prefix: &str) -> String {
    unique_id(prefix, '-')
}

/// `{prefix}{sep}{time}{sep}{counter}`: unique within this server.
pub(super) fn unique_id(prefix: &str, sep: char) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}{sep}{:x}{sep}{}",
        nanos & 0xffff_ffff_ffff,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn hex12(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The session id derived from a caller's identity and the conversation's first user
/// message (generation 0; later generations add `-{n}`).
pub(super) fn derived_id(identity: &str, first_message: &str) -> String {
    format!("oai-{}-{}", hex12(identity), hex12(first_message.trim()))
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
pub(super) fn agent_json<D: serde::Serialize>(r: &AgentResponse<D>) -> Value {
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

/// The waiting calls as OpenAI `tool_calls`.
fn tool_calls(calls: &[PendingCall], streamed: bool) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut v = json!({
                "id": c.id,
                "type": "function",
                "function": { "name": c.tool, "arguments": c.arguments.to_string() },
            });
            if streamed {
                v["index"] = json!(i);
            }
            v
        })
        .collect()
}

/// What a reply says when calls wait and a user message runs no turn.
fn still_waiting(calls: &[PendingCall]) -> String {
    let names: Vec<String> = calls.iter().map(|c| format!("`{}`", c.tool)).collect();
    format!(
        "{} {} for a person's approval: it has not run yet, and it will run once approved.",
        names.join(", "),
        if calls.len() == 1 { "waits" } else { "wait" }
    )
}

/// What the turn is asked to do.
pub(super) enum Work {
    /// Answer the last user message.
    Message(String),
    /// Decide waiting calls (the trailing `tool` messages), in order.
    Decide(Vec<(String, Decision)>),
}

/// What a request asks for, once checked.
pub(super) struct Request {
    pub(super) model: String,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
    /// The session the request names (header or `metadata.session_id`).
    pub(super) named: Option<String>,
    pub(super) user: Option<String>,
    /// The user messages, trimmed, in order.
    pub(super) users: Vec<String>,
    /// Whether the history has other messages than system and one user message.
    pub(super) history: bool,
    pub(super) work: Work,
    /// The body field that holds the conversation (`messages`, `input`), for errors.
    pub(super) param: &'static str,
    /// How to carry a conversation on this endpoint, for the errors that need it.
    pub(super) carry: &'static str,
}

/// The model a request names, if it is served (`400` without one, `404` for another).
pub(super) fn served_model(models: &[String], body: &Value) -> Result<String, Refusal> {
    let model = body["model"]
        .as_str()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            invalid_param(
                "model",
                "missing_required_parameter",
                &format!("you must provide a `model` ({})", models.join(", ")),
            )
        })?
        .to_owned();
    if !models.contains(&model) {
        return Err(Refusal::from(error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("model_not_found"),
            Some("model"),
            &format!(
                "the model `{model}` does not exist here; this server serves {}",
                models.join(", ")
            ),
        )));
    }
    Ok(model)
}

/// A `400` for client-side tools (`params`, each absent or an empty list): the agent
/// calls its own tools.
pub(super) fn no_client_tools(body: &Value, params: &[&str]) -> Result<(), Refusal> {
    for param in params {
        match &body[*param] {
            Value::Null => {}
            Value::Array(a) if a.is_empty() => {}
            _ => {
                return Err(Refusal::from(invalid_param(
                    param,
                    "unsupported_parameter",
                    &format!(
                        "`{param}` is not supported: the agent calls its own tools; send messages only"
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// `stream`: absent, true or false.
pub(super) fn stream_flag(body: &Value) -> Result<bool, Refusal> {
    match &body["stream"] {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        other => Err(Refusal::from(invalid_param(
            "stream",
            "invalid_type",
            &format!("`stream` must be true or false, got {other}"),
        ))),
    }
}

/// The session a request names: the `x-session-id` header, else `metadata.session_id`.
pub(super) fn named_session(headers: &HeaderMap, body: &Value) -> Result<Option<String>, Refusal> {
    let from_header = match headers.get(SESSION_HEADER) {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| invalid(&format!("the {SESSION_HEADER} header is not text")))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let named = from_header.or_else(|| body["metadata"]["session_id"].as_str().map(str::to_owned));
    if let Some(id) = &named
        && !valid_id(id)
    {
        return Err(Refusal::from(invalid(&format!(
            "session id {id:?} ({SESSION_HEADER} header or `metadata.session_id`) must be 1 to 64 letters, digits, '-' or '_'"
        ))));
    }
    Ok(named)
}

/// The `user` field, trimmed, when set.
pub(super) fn user_field(body: &Value) -> Option<String> {
    body["user"]
        .as_str()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
}

/// A `400` the client does not retry for a user message over the agent's
/// `max_message_bytes` (`param` names the field that holds it).
pub(super) fn too_long<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    text: &str,
    param: &str,
) -> Option<Response> {
    let limit = server.agent().inner.config.max_message_bytes;
    (text.len() > limit).then(|| {
        invalid_param(
            param,
            "string_above_max_length",
            &format!(
                "the user message is {} bytes; this agent takes at most {limit} bytes per message: shorten it",
                text.len()
            ),
        )
    })
}

/// The `401` of a request whose caller is not authenticated.
pub(super) fn unauthorized(e: &AuthError) -> Response {
    let mut r = error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        Some("invalid_api_key"),
        None,
        &e.to_string(),
    );
    r.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer"),
    );
    r
}

/// A request body as JSON: `413` over the server's limit, `400` when not JSON (`what`
/// names the request expected).
pub(super) async fn request_body<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    body: axum::body::Body,
    what: &str,
) -> Result<Value, Response> {
    match read_json(body, server.shared.body_limit).await {
        Ok(b) => Ok(b),
        Err(BodyError::TooLarge(limit)) => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            Some("request_too_large"),
            None,
            &format!("the request body is larger than this server takes ({limit} bytes)"),
        )),
        Err(BodyError::Invalid(e)) => Err(invalid(&format!("the body is not a JSON {what}: {e}"))),
    }
}

/// The `403` of a message in another principal's session.
pub(super) fn session_forbidden(session: &str) -> Response {
    with_session(
        error(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some("session_forbidden"),
            None,
            &not_yours(session),
        ),
        session,
    )
}

/// A `tool` message's content as a decision.
fn decision_of(text: &str) -> Result<Decision, String> {
    let t = text.trim();
    if t.starts_with('{') {
        return serde_json::from_str::<Decision>(t)
            .map_err(|e| format!("the tool message is not a decision: {e}"));
    }
    let lower = t.to_ascii_lowercase();
    if matches!(lower.as_str(), "approve" | "approved") {
        return Ok(Decision::Approve);
    }
    for word in ["denied", "deny"] {
        if let Some(rest) = lower.strip_prefix(word) {
            let reason = t[t.len() - rest.len()..]
                .trim_start_matches([':', ' ', '-'])
                .trim();
            return Ok(Decision::Deny {
                reason: if reason.is_empty() {
                    "denied by the operator".into()
                } else {
                    reason.to_owned()
                },
            });
        }
    }
    Err(
        "a tool message decides a waiting call: `approve`, `deny: <reason>`, or a decision object ({\"decision\": \"approve\" | \"deny\" | \"edit\", ...})"
            .into(),
    )
}

fn parse(models: &[String], headers: &HeaderMap, body: &Value) -> Result<Request, Refusal> {
    if !body.is_object() {
        return Err(Refusal::from(invalid(
            "the body must be a JSON object (a chat completion request)",
        )));
    }
    let model = served_model(models, body)?;
    no_client_tools(body, &["tools", "functions"])?;
    match &body["n"] {
        Value::Null => {}
        v if v.as_u64() == Some(1) => {}
        v => {
            return Err(Refusal::from(invalid_param(
                "n",
                "unsupported_value",
                &format!("`n` must be 1 (one conversation, one answer), got {v}"),
            )));
        }
    }
    let messages = body["messages"].as_array().ok_or_else(|| {
        invalid_param(
            "messages",
            "invalid_type",
            "`messages` must be an array of messages",
        )
    })?;
    let stream = stream_flag(body)?;
    let include_usage = body["stream_options"]["include_usage"] == true;
    let mut users = Vec::new();
    for m in messages.iter().filter(|m| m["role"] == "user") {
        let text = content_text(&m["content"]).ok_or_else(|| {
            invalid_param(
                "messages",
                "invalid_type",
                "a user message has no text content (a string or text parts)",
            )
        })?;
        users.push(text.trim().to_owned());
    }
    let history = users.len() > 1
        || messages
            .iter()
            .any(|m| m["role"] == "assistant" || m["role"] == "tool");
    let trailing_tools: Vec<&Value> = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] == "tool")
        .collect();
    let work = if trailing_tools.is_empty() {
        let last = users.last().ok_or_else(|| {
            invalid_param(
                "messages",
                "missing_required_parameter",
                "`messages` has no message with role `user`",
            )
        })?;
        if last.is_empty() {
            return Err(Refusal::from(invalid_param(
                "messages",
                "invalid_value",
                "the last user message is empty",
            )));
        }
        Work::Message(last.clone())
    } else {
        let mut decisions = Vec::new();
        for m in trailing_tools.into_iter().rev() {
            let id = m["tool_call_id"]
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    invalid_param(
                        "messages",
                        "missing_required_parameter",
                        "a tool message needs the `tool_call_id` of the waiting call",
                    )
                })?;
            let text = content_text(&m["content"]).unwrap_or_default();
            let d =
                decision_of(&text).map_err(|e| invalid_param("messages", "invalid_value", &e))?;
            decisions.push((id.to_owned(), d));
        }
        Work::Decide(decisions)
    };
    let named = named_session(headers, body)?;
    let user = user_field(body);
    Ok(Request {
        model,
        stream,
        include_usage,
        named,
        user,
        users,
        history,
        work,
        param: "messages",
        carry: CARRY,
    })
}

/// A refused request, boxed (a response is large).
pub(super) struct Refusal(pub(super) Box<Response>);

impl From<Response> for Refusal {
    fn from(r: Response) -> Self {
        Self(Box::new(r))
    }
}

/// How to carry a conversation, for the errors that need it.
const CARRY: &str = "send the session id every answer carries (the `x-session-id` response header, or `agent.session_id`) back as the `x-session-id` request header or as `metadata.session_id`, or authenticate (an API key) or set `user` so the session can be derived from the history";

/// The caller's identity for derived session ids, if it has one.
fn identity(who: &Principal, headers: &HeaderMap, user: Option<&str>) -> Option<String> {
    let mut parts = Vec::new();
    if !who.is_anonymous() {
        parts.push(format!("principal:{}", who.id()));
    } else if let Some(key) = bearer_token(headers) {
        parts.push(format!("key:{key}"));
    }
    if let Some(u) = user {
        parts.push(format!("user:{u}"));
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// The session a request continues or starts.
pub(super) async fn session_of<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    who: &Principal,
    headers: &HeaderMap,
    req: &Request,
) -> Result<String, Response> {
    if let Some(id) = &req.named {
        return Ok(id.clone());
    }
    let Some(identity) = identity(who, headers, req.user.as_deref()) else {
        if req.history || matches!(req.work, Work::Decide(_)) {
            return Err(invalid_param(
                req.param,
                "session_required",
                &format!(
                    "this request re-sends a conversation but names no session, and the caller has no identity to find it by: {}",
                    req.carry
                ),
            ));
        }
        return Ok(new_id("oai"));
    };
    let Some(first) = req.users.first() else {
        return Err(invalid_param(
            req.param,
            "session_required",
            &format!(
                "a request without user messages must name its session: {}",
                req.carry
            ),
        ));
    };
    // The user messages a session of this conversation may have answered last: the
    // earlier ones (all of them when tool messages decide), none for a new conversation.
    let earlier: &[String] = match &req.work {
        Work::Decide(_) => &req.users,
        Work::Message(_) => &req.users[..req.users.len().saturating_sub(1)],
    };
    let base = derived_id(&identity, first);
    // The session whose last recorded user message is the latest of `earlier` (messages
    // answered without a turn, while a call waited, are not recorded).
    let mut best: Option<(usize, String)> = None;
    for g in 0..GENERATIONS {
        let id = if g == 0 {
            base.clone()
        } else {
            format!("{base}-{g}")
        };
        let session = server
            .agent()
            .session(&id)
            .await
            .map_err(|e| turn_failed(server, &id, &e))?;
        let Some(s) = session else {
            if earlier.is_empty() {
                return Ok(id);
            }
            break;
        };
        if earlier.is_empty() {
            continue;
        }
        let last = s
            .history
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str().trim().to_owned());
        let paused = s.approval.as_ref().map(|p| p.message.trim().to_owned());
        let at = earlier
            .iter()
            .rposition(|u| last.as_deref() == Some(u.as_str()) || paused.as_deref() == Some(u));
        if let Some(at) = at
            && best.as_ref().is_none_or(|(b, _)| at > *b)
        {
            best = Some((at, id));
        }
    }
    if let Some((_, id)) = best {
        return Ok(id);
    }
    Err(if earlier.is_empty() {
        invalid_param(
            req.param,
            "session_required",
            &format!(
                "too many conversations of yours open with this message: name the session instead ({})",
                req.carry
            ),
        )
    } else {
        invalid_param(
            req.param,
            "session_not_found",
            &format!(
                "no conversation of yours continues with this history (it was not held here, or the session is gone); nothing was answered, so nothing is forgotten: {}",
                req.carry
            ),
        )
    })
}

pub(super) fn turn_failed<D, C>(
    server: &Server<D, C>,
    session: &str,
    e: &crate::error::AgentError,
) -> Response {
    (server.shared.log)(&format!(
        "[server] session {session}: turn failed: {e} (the session is unchanged)"
    ));
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        None,
        None,
        &e.to_string(),
    )
}

pub(super) fn with_session(mut response: Response, session: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(session) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

/// What one answer says, whether a turn ran or not.
pub(super) struct Answer {
    pub(super) message: String,
    pub(super) waiting: Vec<PendingCall>,
    pub(super) usage: Usage,
    pub(super) agent: Value,
}

impl Answer {
    pub(super) fn of<D: serde::Serialize>(r: &AgentResponse<D>) -> Self {
        Self {
            message: r.message.clone(),
            waiting: r.awaiting_approval.clone(),
            usage: r.usage,
            agent: agent_json(r),
        }
    }

    fn finish_reason(&self) -> &'static str {
        if self.waiting.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }
}

/// The answer to a user message while calls wait: no turn runs.
pub(super) async fn waiting_answer<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    session: &str,
) -> Result<Option<Answer>, Response> {
    let s = server
        .agent()
        .session(session)
        .await
        .map_err(|e| turn_failed(server, session, &e))?;
    let Some(s) = s else { return Ok(None) };
    let waiting = s.approval.as_ref().map(|p| p.waiting()).unwrap_or_default();
    if waiting.is_empty() {
        return Ok(None);
    }
    let ids: Vec<&str> = waiting.iter().map(|c| c.id.as_str()).collect();
    Ok(Some(Answer {
        message: still_waiting(&waiting),
        agent: json!({
            "session_id": session,
            "flow": s.flow,
            "step": s.step,
            "data": s.data,
            "stopped": { "kind": "awaiting_approval", "calls": ids },
            "executed_steps": [],
            "tool_calls": [],
            "awaiting_approval": pending_list(&waiting),
            "model_calls": 0,
        }),
        waiting,
        usage: Usage::default(),
    }))
}

/// The completion object of an answer.
fn completion(id: &str, created: u64, model: &str, a: &Answer) -> Value {
    let mut message = json!({ "role": "assistant", "content": a.message, "refusal": null });
    if !a.waiting.is_empty() {
        message["tool_calls"] = json!(tool_calls(&a.waiting, false));
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": a.finish_reason(),
        }],
        "usage": usage_json(&a.usage),
        "system_fingerprint": null,
        "agent": a.agent,
    })
}

/// Builds the chunks of one streamed completion.
#[derive(Clone)]
struct Chunks {
    id: String,
    created: u64,
    model: String,
}

impl Chunks {
    fn chunk(&self, choices: Value, extra: Option<(&str, Value)>) -> SseEvent {
        let mut c = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
            "usage": null,
        });
        if let Some((k, v)) = extra {
            c[k] = v;
        }
        SseEvent::default().data(c.to_string())
    }

    fn first(&self) -> SseEvent {
        self.chunk(
            json!([{ "index": 0, "delta": { "role": "assistant", "content": "" },
                      "logprobs": null, "finish_reason": null }]),
            None,
        )
    }

    fn text(&self, t: &str) -> SseEvent {
        self.chunk(
            json!([{ "index": 0, "delta": { "content": t },
                      "logprobs": null, "finish_reason": null }]),
            None,
        )
    }

    /// The end of an answer whose text `streamed` went out already.
    fn end(&self, a: &Answer, streamed: &str, include_usage: bool) -> Vec<SseEvent> {
        let mut out = Vec::new();
        // The deltas concatenate to the message; send what is missing.
        if let Some(rest) = a.message.strip_prefix(streamed)
            && !rest.is_empty()
        {
            out.push(self.text(rest));
        }
        if !a.waiting.is_empty() {
            out.push(self.chunk(
                json!([{ "index": 0, "delta": { "tool_calls": tool_calls(&a.waiting, true) },
                          "logprobs": null, "finish_reason": null }]),
                None,
            ));
        }
        out.push(self.chunk(
            json!([{ "index": 0, "delta": {}, "logprobs": null,
                      "finish_reason": a.finish_reason() }]),
            Some(("agent", a.agent.clone())),
        ));
        if include_usage {
            out.push(self.chunk(json!([]), Some(("usage", usage_json(&a.usage)))));
        }
        out
    }
}

fn sse_response(
    events: impl futures::Stream<Item = SseEvent> + Send + 'static,
    session: &str,
) -> Response {
    let stream = events
        .chain(futures::stream::once(async {
            SseEvent::default().data("[DONE]")
        }))
        .map(Ok::<_, std::convert::Infallible>);
    with_session(Sse::new(stream).into_response(), session)
}

/// `POST /v1/chat/completions`.
async fn chat_completions<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let who = match server.caller(&headers).await {
        Ok(p) => p,
        Err(e) => return unauthorized(&e),
    };
    let body = match request_body(&server, body, "chat request").await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let req = match parse(&server.shared.models, &headers, &body) {
        Ok(r) => r,
        Err(Refusal(r)) => return *r,
    };
    if matches!(req.work, Work::Decide(_)) && !who.is_operator() {
        return error(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some("operator_required"),
            Some("messages"),
            &format!("{OPERATOR_ONLY}: a `tool` message decides a waiting call"),
        );
    }
    if let Work::Message(text) = &req.work
        && let Some(r) = too_long(&server, text, "messages")
    {
        return r;
    }
    let session = match session_of(&server, &who, &headers, &req).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if matches!(req.work, Work::Message(_)) && !server.may_write(&who, &session).await {
        return session_forbidden(&session);
    }
    let chunks = Chunks {
        id: new_id("chatcmpl"),
        created: unix_now(),
        model: req.model.clone(),
    };
    let agent = server.agent().clone();
    let turn = match req.work {
        Work::Message(text) => {
            match waiting_answer(&server, &session).await {
                Err(r) => return with_session(r, &session),
                Ok(Some(a)) => {
                    if !req.stream {
                        return with_session(
                            Json(completion(&chunks.id, chunks.created, &req.model, &a))
                                .into_response(),
                            &session,
                        );
                    }
                    let mut events = vec![chunks.first(), chunks.text(&a.message)];
                    events.extend(chunks.end(&a, &a.message, req.include_usage));
                    return sse_response(futures::stream::iter(events), &session);
                }
                Ok(None) => {}
            }
            if req.stream {
                agent.respond_stream(&session, &text)
            } else {
                return with_session(
                    match agent.respond(&session, &text).await {
                        Ok(r) => Json(completion(
                            &chunks.id,
                            chunks.created,
                            &req.model,
                            &Answer::of(&r),
                        ))
                        .into_response(),
                        Err(e) => turn_failed(&server, &session, &e),
                    },
                    &session,
                );
            }
        }
        Work::Decide(mut decisions) => {
            let waiting = match agent.pending_approvals(&session).await {
                Ok(w) => w,
                Err(e) => return with_session(turn_failed(&server, &session, &e), &session),
            };
            if let Some((id, _)) = decisions
                .iter()
                .find(|(id, _)| !waiting.iter().any(|c| c.id == *id))
            {
                let ids: Vec<&str> = waiting.iter().map(|c| c.id.as_str()).collect();
                return with_session(
                    invalid_param(
                        "messages",
                        "approval_not_pending",
                        &format!(
                            "no call `{id}` waits for a decision in session {session} (waiting: {ids:?})"
                        ),
                    ),
                    &session,
                );
            }
            let Some((last_id, last)) = decisions.pop() else {
                return invalid("no decision");
            };
            for (id, d) in decisions {
                if let Err(e) = agent.resolve_approval(&session, &id, d).await {
                    return with_session(turn_failed(&server, &session, &e), &session);
                }
            }
            if req.stream {
                agent.resolve_approval_stream(&session, &last_id, last)
            } else {
                return with_session(
                    match agent.resolve_approval(&session, &last_id, last).await {
                        Ok(r) => Json(completion(
                            &chunks.id,
                            chunks.created,
                            &req.model,
                            &Answer::of(&r),
                        ))
                        .into_response(),
                        Err(e) => turn_failed(&server, &session, &e),
                    },
                    &session,
                );
            }
        }
    };

    let first = chunks.first();
    let mut streamed = String::new();
    let include_usage = req.include_usage;
    let log = server.shared.log.clone();
    let failed_session = session.clone();
    let events = turn
        .map(move |e| -> Vec<SseEvent> {
            match e {
                TurnEvent::TextDelta(t) if !t.is_empty() => {
                    streamed.push_str(&t);
                    vec![chunks.text(&t)]
                }
                TurnEvent::Done(r) => chunks.end(&Answer::of(&r), &streamed, include_usage),
                TurnEvent::Error(err) => {
                    log(&format!(
                        "[server] session {failed_session}: turn failed: {err} (the session is unchanged)"
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
    sse_response(
        futures::stream::once(async move { first }).chain(events),
        &session,
    )
}

/// `GET /v1/models`: the served model names.
async fn models<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = server.caller(&headers).await {
        return unauthorized(&e);
    }
    let data: Vec<Value> = server
        .shared
        .models
        .iter()
        .map(|m| json!({ "id": m, "object": "model", "created": 0, "owned_by": "agent-core" }))
        .collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_read_from_tool_messages() {
        assert_eq!(decision_of(" Approve "), Ok(Decision::Approve));
        assert_eq!(
            decision_of("deny: the hotel is full"),
            Ok(Decision::Deny {
                reason: "the hotel is full".into()
            })
        );
        assert!(matches!(decision_of("deny"), Ok(Decision::Deny { .. })));
        assert_eq!(
            decision_of(r#"{"decision": "approve"}"#),
            Ok(Decision::Approve)
        );
        assert!(decision_of("yes").is_err());
    }

    #[test]
    fn derived_ids_are_plain_and_keyed_by_identity_and_first_message() {
        let a = derived_id("principal:ana", "Hi");
        assert!(valid_id(&a) && valid_id(&format!("{a}-63")), "{a}");
        assert_eq!(a, derived_id("principal:ana", " Hi "));
        assert_ne!(a, derived_id("principal:bob", "Hi"));
        assert_ne!(a, derived_id("principal:ana", "Hello"));
    }
}
