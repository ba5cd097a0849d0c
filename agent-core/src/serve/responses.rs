//! The OpenAI Responses API: `POST /v1/responses`, streamed or not (the module docs of
//! [`crate::serve`] say what it takes and answers). It follows the chat endpoint's rules
//! and uses its helpers (`openai.rs`): the same authentication, model names, limits,
//! errors and sessions, plus `previous_response_id`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::openai::{
    Answer, Refusal, Request, Work, error, invalid, invalid_param, named_session, no_client_tools,
    request_body, served_model, session_forbidden, session_of, stream_flag, too_long, turn_failed,
    unauthorized, unique_id, unix_now, user_field, waiting_answer, with_session,
};
use super::{Principal, Server};
use crate::data::{AgentContext, AgentData};
use crate::provider::Usage;
use crate::response::Event as TurnEvent;

/// How many response ids the server remembers for `previous_response_id` (the oldest
/// are forgotten first).
const REMEMBERED: usize = 10_000;

/// The reason of `incomplete_details` when the turn ends with calls waiting for a
/// person's approval.
const AWAITING_APPROVAL: &str = "awaiting_approval";

/// How to carry a conversation on this endpoint, for the errors that need it.
const CARRY: &str = "send `previous_response_id` (the `id` of the last response), or the session id every response carries (the `x-session-id` response header, or `metadata.session_id`) back as the `x-session-id` request header or as `metadata.session_id`, or authenticate (an API key) or set `user` so the session can be derived from the input";

/// Request fields echoed in the response object when the request sets them.
const ECHOED: [&str; 9] = [
    "instructions",
    "previous_response_id",
    "temperature",
    "top_p",
    "max_output_tokens",
    "parallel_tool_calls",
    "truncation",
    "store",
    "user",
];

pub(super) fn routes<D: AgentData, C: AgentContext>() -> Router<Server<D, C>> {
    Router::new().route("/v1/responses", post(responses::<D, C>))
}

/// The response ids this server gave, each with its session and the principal that
/// asked: what `previous_response_id` continues. Bounded ([`REMEMBERED`]).
#[derive(Default)]
pub(super) struct ResponseIds {
    inner: Mutex<Remembered>,
}

#[derive(Default)]
struct Remembered {
    by_id: HashMap<String, Origin>,
    order: VecDeque<String>,
}

/// Where a response was given: its session and the principal that asked.
#[derive(Debug, Clone)]
struct Origin {
    session: String,
    owner: String,
}

impl ResponseIds {
    fn remember(&self, id: &str, session: &str, owner: &str) {
        let mut r = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        while r.order.len() >= REMEMBERED {
            match r.order.pop_front() {
                Some(old) => {
                    r.by_id.remove(&old);
                }
                None => break,
            }
        }
        r.order.push_back(id.to_owned());
        r.by_id.insert(
            id.to_owned(),
            Origin {
                session: session.to_owned(),
                owner: owner.to_owned(),
            },
        );
    }

    fn find(&self, id: &str) -> Option<Origin> {
        let r = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        r.by_id.get(id).cloned()
    }
}

/// A Responses request, once checked.
struct Parsed {
    request: Request,
    /// The turn's input: the last user message.
    text: String,
    previous: Option<String>,
    /// The request's `metadata` (string values), echoed with `session_id` added.
    metadata: Map<String, Value>,
    /// The request fields echoed in the response.
    echoed: Map<String, Value>,
}

/// The text of an input message's `content`: a string, or its text parts
/// (`input_text`, and `output_text` of re-sent assistant messages) joined.
fn input_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    matches!(
                        p["type"].as_str(),
                        Some("input_text" | "output_text" | "text")
                    )
                })
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

fn unsupported(param: &str, message: &str) -> Refusal {
    Refusal::from(invalid_param(param, "unsupported_parameter", message))
}

/// The parameters that would change what the answer means: refused with a `400` naming
/// them. The others (`include`, `store`, `temperature`, `top_p`, `max_output_tokens`,
/// `truncation`, `parallel_tool_calls`, `reasoning`, ...) do not apply to an agent and
/// are accepted.
fn refuse_semantics(body: &Value) -> Result<(), Refusal> {
    no_client_tools(body, &["tools"])?;
    if !body["conversation"].is_null() {
        return Err(unsupported(
            "conversation",
            "`conversation` is not supported: continue a conversation with `previous_response_id` or its session id (the `x-session-id` header or `metadata.session_id`)",
        ));
    }
    if !body["prompt"].is_null() {
        return Err(unsupported(
            "prompt",
            "`prompt` (a stored prompt template) is not supported: the agent has its own instructions",
        ));
    }
    if body["background"] == true {
        return Err(Refusal::from(invalid_param(
            "background",
            "unsupported_value",
            "`background` must be false: a response is answered on the request that asks it",
        )));
    }
    match &body["tool_choice"] {
        Value::Null => {}
        Value::String(s) if s == "auto" || s == "none" => {}
        other => {
            return Err(Refusal::from(invalid_param(
                "tool_choice",
                "unsupported_value",
                &format!(
                    "`tool_choice` {other} is not supported: the agent calls its own tools (`auto` or `none` only)"
                ),
            )));
        }
    }
    match body["text"]["format"]["type"].as_str() {
        None | Some("text") => {}
        Some(other) => {
            return Err(Refusal::from(invalid_param(
                "text.format",
                "unsupported_value",
                &format!(
                    "`text.format` `{other}` is not supported: the agent answers in plain text"
                ),
            )));
        }
    }
    Ok(())
}

fn parse(models: &[String], headers: &HeaderMap, body: &Value) -> Result<Parsed, Refusal> {
    if !body.is_object() {
        return Err(Refusal::from(invalid(
            "the body must be a JSON object (a Responses API request)",
        )));
    }
    let model = served_model(models, body)?;
    refuse_semantics(body)?;
    let stream = stream_flag(body)?;
    let mut users = Vec::new();
    let mut history = false;
    match &body["input"] {
        Value::String(s) => users.push(s.trim().to_owned()),
        Value::Array(items) => {
            for item in items {
                let kind = item["type"].as_str();
                if item.get("role").is_some() && matches!(kind, None | Some("message")) {
                    match item["role"].as_str() {
                        Some("user") => {
                            let text = input_text(&item["content"]).ok_or_else(|| {
                                invalid_param(
                                    "input",
                                    "invalid_type",
                                    "a user message has no text content (a string or `input_text` parts)",
                                )
                            })?;
                            users.push(text.trim().to_owned());
                        }
                        Some("assistant") => history = true,
                        Some("system" | "developer") => {}
                        other => {
                            return Err(Refusal::from(invalid_param(
                                "input",
                                "invalid_value",
                                &format!(
                                    "an input message's role must be `user`, `assistant`, `system` or `developer`, got {}",
                                    other.map_or_else(|| item["role"].to_string(), str::to_owned)
                                ),
                            )));
                        }
                    }
                } else if kind == Some("function_call_output") {
                    return Err(unsupported(
                        "input",
                        "a `function_call_output` item is not supported: the agent calls its own tools; a call waiting for a person's approval is decided by an operator (a `tool` message on /v1/chat/completions, or the web chat's approval route)",
                    ));
                } else if item.is_object() {
                    // Earlier output (`function_call`, `reasoning`, `item_reference`, ...):
                    // never read into the engine, but it says this is a conversation.
                    history = true;
                } else {
                    return Err(Refusal::from(invalid_param(
                        "input",
                        "invalid_type",
                        "`input` items must be objects (messages or items)",
                    )));
                }
            }
        }
        Value::Null => {
            return Err(Refusal::from(invalid_param(
                "input",
                "missing_required_parameter",
                "you must provide an `input` (a string or a list of input items)",
            )));
        }
        _ => {
            return Err(Refusal::from(invalid_param(
                "input",
                "invalid_type",
                "`input` must be a string or a list of input items",
            )));
        }
    }
    history |= users.len() > 1;
    let text = users.last().cloned().ok_or_else(|| {
        invalid_param(
            "input",
            "missing_required_parameter",
            "`input` has no message with role `user`",
        )
    })?;
    if text.is_empty() {
        return Err(Refusal::from(invalid_param(
            "input",
            "invalid_value",
            "the last user message is empty",
        )));
    }
    let previous = match &body["previous_response_id"] {
        Value::Null => None,
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        other => {
            return Err(Refusal::from(invalid_param(
                "previous_response_id",
                "invalid_type",
                &format!("`previous_response_id` must be a response id, got {other}"),
            )));
        }
    };
    let metadata = body["metadata"].as_object().cloned().unwrap_or_default();
    let echoed = ECHOED
        .iter()
        .filter(|k| !body[**k].is_null())
        .map(|k| ((*k).to_owned(), body[*k].clone()))
        .collect();
    Ok(Parsed {
        request: Request {
            model,
            stream,
            include_usage: true,
            named: named_session(headers, body)?,
            user: user_field(body),
            users,
            history,
            work: Work::Message(text.clone()),
            param: "input",
            carry: CARRY,
        },
        text,
        previous,
        metadata,
        echoed,
    })
}

/// The session `previous_response_id` continues: `404` for an id this server does not
/// remember, `403` for another principal's.
fn continued<D, C>(
    server: &Server<D, C>,
    who: &Principal,
    id: &str,
    named: Option<&str>,
) -> Result<String, Refusal> {
    let Some(origin) = server.shared.responses.find(id) else {
        return Err(Refusal::from(error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("previous_response_not_found"),
            Some("previous_response_id"),
            &format!(
                "Previous response with id '{id}' not found: this server never gave it, or no longer remembers it (it keeps the last {REMEMBERED}); continue with the session id instead (the `x-session-id` header or `metadata.session_id`)"
            ),
        )));
    };
    if origin.owner != who.id() {
        return Err(Refusal::from(error(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some("session_forbidden"),
            Some("previous_response_id"),
            &format!("response {id} belongs to another principal"),
        )));
    }
    if let Some(named) = named
        && named != origin.session
    {
        return Err(Refusal::from(invalid_param(
            "previous_response_id",
            "invalid_value",
            &format!(
                "`previous_response_id` continues session {}, but the request names session {named}",
                origin.session
            ),
        )));
    }
    Ok(origin.session)
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": { "cached_tokens": u.cached_input_tokens, "cache_write_tokens": 0 },
        "output_tokens": u.output_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

fn text_part(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

/// What every object of one response shares.
struct Skeleton {
    id: String,
    item_id: String,
    created: u64,
    model: String,
    metadata: Map<String, Value>,
    echoed: Map<String, Value>,
}

impl Skeleton {
    fn item(&self, text: Option<&str>, status: &str) -> Value {
        json!({
            "id": self.item_id,
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": text.map(|t| vec![text_part(t)]).unwrap_or_default(),
        })
    }

    /// The response object: in progress without an answer, else completed, or
    /// incomplete when calls wait for approval.
    fn response(&self, answer: Option<&Answer>) -> Value {
        let mut r = json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": "in_progress",
            "completed_at": null,
            "error": null,
            "incomplete_details": null,
            "model": self.model,
            "output": [],
            "parallel_tool_calls": false,
            "tool_choice": "auto",
            "tools": [],
            "text": { "format": { "type": "text" } },
            "usage": null,
            "metadata": self.metadata,
        });
        for (k, v) in &self.echoed {
            r[k] = v.clone();
        }
        if let Some(a) = answer {
            r["output"] = json!([self.item(Some(&a.message), "completed")]);
            r["usage"] = usage_json(&a.usage);
            r["agent"] = a.agent.clone();
            if a.waiting.is_empty() {
                r["status"] = json!("completed");
                r["completed_at"] = json!(unix_now());
            } else {
                r["status"] = json!("incomplete");
                r["incomplete_details"] = json!({ "reason": AWAITING_APPROVAL });
            }
        }
        r
    }
}

/// Builds the events of one streamed response, numbering them.
struct Events {
    skeleton: Skeleton,
    next: u64,
    streamed: String,
}

impl Events {
    fn event(&mut self, kind: &str, mut v: Value) -> SseEvent {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(self.next);
        self.next += 1;
        SseEvent::default().event(kind).data(v.to_string())
    }

    fn start(&mut self) -> Vec<SseEvent> {
        let response = self.skeleton.response(None);
        let item = self.skeleton.item(None, "in_progress");
        let item_id = self.skeleton.item_id.clone();
        vec![
            self.event("response.created", json!({ "response": response })),
            self.event("response.in_progress", json!({ "response": response })),
            self.event(
                "response.output_item.added",
                json!({ "output_index": 0, "item": item }),
            ),
            self.event(
                "response.content_part.added",
                json!({ "item_id": item_id, "output_index": 0, "content_index": 0,
                        "part": text_part("") }),
            ),
        ]
    }

    fn delta(&mut self, text: &str) -> SseEvent {
        self.streamed.push_str(text);
        let item_id = self.skeleton.item_id.clone();
        self.event(
            "response.output_text.delta",
            json!({ "item_id": item_id, "output_index": 0, "content_index": 0,
                    "delta": text, "logprobs": [] }),
        )
    }

    fn end(&mut self, a: &Answer) -> Vec<SseEvent> {
        let mut out = Vec::new();
        // The deltas concatenate to the text; send what is missing.
        if let Some(rest) = a.message.strip_prefix(self.streamed.as_str())
            && !rest.is_empty()
        {
            let rest = rest.to_owned();
            out.push(self.delta(&rest));
        }
        let item_id = self.skeleton.item_id.clone();
        let item = self.skeleton.item(Some(&a.message), "completed");
        let response = self.skeleton.response(Some(a));
        out.push(self.event(
            "response.output_text.done",
            json!({ "item_id": item_id, "output_index": 0, "content_index": 0,
                    "text": a.message, "logprobs": [] }),
        ));
        out.push(self.event(
            "response.content_part.done",
            json!({ "item_id": item_id, "output_index": 0, "content_index": 0,
                    "part": text_part(&a.message) }),
        ));
        out.push(self.event(
            "response.output_item.done",
            json!({ "output_index": 0, "item": item }),
        ));
        let terminal = if a.waiting.is_empty() {
            "response.completed"
        } else {
            "response.incomplete"
        };
        out.push(self.event(terminal, json!({ "response": response })));
        out
    }

    fn failed(&mut self, message: &str) -> SseEvent {
        let mut response = self.skeleton.response(None);
        response["status"] = json!("failed");
        response["error"] = json!({ "code": "server_error", "message": message });
        self.event("response.failed", json!({ "response": response }))
    }
}

fn sse(events: impl futures::Stream<Item = SseEvent> + Send + 'static, session: &str) -> Response {
    let stream = events.map(Ok::<_, std::convert::Infallible>);
    with_session(Sse::new(stream).into_response(), session)
}

/// `POST /v1/responses`.
async fn responses<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let who = match server.caller(&headers).await {
        Ok(p) => p,
        Err(e) => return unauthorized(&e),
    };
    let body = match request_body(&server, body, "Responses API request").await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let parsed = match parse(&server.shared.models, &headers, &body) {
        Ok(p) => p,
        Err(Refusal(r)) => return *r,
    };
    if let Some(r) = too_long(&server, &parsed.text, "input") {
        return r;
    }
    let req = &parsed.request;
    let session = match &parsed.previous {
        Some(id) => continued(&server, &who, id, req.named.as_deref()).map_err(|Refusal(r)| *r),
        None => session_of(&server, &who, &headers, req).await,
    };
    let session = match session {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !server.may_write(&who, &session).await {
        return session_forbidden(&session);
    }
    let mut metadata = parsed.metadata;
    metadata.insert("session_id".into(), json!(session));
    let skeleton = Skeleton {
        id: unique_id("resp", '_'),
        item_id: unique_id("msg", '_'),
        created: unix_now(),
        model: req.model.clone(),
        metadata,
        echoed: parsed.echoed,
    };
    server
        .shared
        .responses
        .remember(&skeleton.id, &session, who.id());
    let stream = req.stream;
    let mut events = Events {
        skeleton,
        next: 0,
        streamed: String::new(),
    };

    // While calls wait for approval, a message runs no turn: the answer says they wait.
    match waiting_answer(&server, &session).await {
        Err(r) => return with_session(r, &session),
        Ok(Some(a)) => {
            if !stream {
                return with_session(
                    Json(events.skeleton.response(Some(&a))).into_response(),
                    &session,
                );
            }
            let mut all = events.start();
            all.push(events.delta(&a.message));
            all.extend(events.end(&a));
            return sse(futures::stream::iter(all), &session);
        }
        Ok(None) => {}
    }

    let agent = server.agent().clone();
    if !stream {
        return with_session(
            match agent.respond(&session, &parsed.text).await {
                Ok(r) => Json(events.skeleton.response(Some(&Answer::of(&r)))).into_response(),
                Err(e) => turn_failed(&server, &session, &e),
            },
            &session,
        );
    }
    let start = events.start();
    let log = server.shared.log.clone();
    let failed_session = session.clone();
    let turn = agent
        .respond_stream(&session, &parsed.text)
        .map(move |e| -> Vec<SseEvent> {
            match e {
                TurnEvent::TextDelta(t) if !t.is_empty() => vec![events.delta(&t)],
                TurnEvent::Done(r) => events.end(&Answer::of(&r)),
                TurnEvent::Error(err) => {
                    log(&format!(
                        "[server] session {failed_session}: turn failed: {err} (the session is unchanged)"
                    ));
                    vec![events.failed(&err.to_string())]
                }
                _ => Vec::new(),
            }
        })
        .flat_map(futures::stream::iter);
    sse(futures::stream::iter(start).chain(turn), &session)
}
