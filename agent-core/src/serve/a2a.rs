//! A2A (feature `a2a`): the agent card at `/.well-known/agent-card.json` and the A2A 1.0
//! JSON-RPC binding at `POST /a2a` (`SendMessage`, `SendStreamingMessage`, `GetTask`).
//! The module docs of [`crate::serve`] say what it serves.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use super::events::pending_list;
use super::openai::new_id;
use super::web::unauthorized;
use super::{BodyError, Principal, Server, not_yours, read_json, valid_id};
use crate::approval::PendingCall;
use crate::data::{AgentContext, AgentData};
use crate::response::{Event as TurnEvent, StoppedReason};

/// Where the agent card is served.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where the JSON-RPC endpoint is served.
pub const A2A_PATH: &str = "/a2a";
/// The A2A protocol version served.
pub const A2A_VERSION: &str = "1.0";

/// The most tasks remembered (the oldest is forgotten first).
const MAX_TASKS: usize = 10_000;

pub(super) fn routes<D: AgentData, C: AgentContext>() -> Router<Server<D, C>> {
    Router::new()
        .route(AGENT_CARD_PATH, get(card::<D, C>))
        .route(A2A_PATH, post(rpc::<D, C>))
}

/// A task: whose it is, its conversation, and the task as A2A clients read it.
struct Record {
    owner: String,
    task: Value,
}

/// The tasks of this server, by id.
#[derive(Default)]
pub(super) struct Tasks {
    inner: Mutex<(HashMap<String, Record>, VecDeque<String>)>,
}

impl Tasks {
    fn get(&self, id: &str) -> Option<(String, Value)> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(id).map(|r| (r.owner.clone(), r.task.clone()))
    }

    fn put(&self, owner: &str, task: Value) {
        let Some(id) = task["id"].as_str().map(str::to_owned) else {
            return;
        };
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *guard;
        if !map.contains_key(&id) {
            order.push_back(id.clone());
            while order.len() > MAX_TASKS {
                if let Some(old) = order.pop_front() {
                    map.remove(&old);
                }
            }
        }
        map.insert(
            id,
            Record {
                owner: owner.to_owned(),
                task,
            },
        );
    }
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `GET /.well-known/agent-card.json`: public, like every agent card; it names the
/// bearer scheme the endpoint requires.
async fn card<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
) -> Response {
    let agent = server.agent();
    let name = match agent.name().trim() {
        "" => "agent",
        n => n,
    };
    let url = match &server.shared.a2a_url {
        Some(u) => u.clone(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}{A2A_PATH}")
        }
    };
    let mut skills: Vec<Value> = agent
        .flows()
        .map(|f| {
            let title = if f.title().trim().is_empty() {
                f.id()
            } else {
                f.title()
            };
            json!({
                "id": f.id(),
                "name": title,
                "description": format!("{title} (a conversation of {name})"),
                "tags": ["flow"],
            })
        })
        .collect();
    if skills.is_empty() {
        skills.push(json!({
            "id": "chat",
            "name": "Chat",
            "description": format!("A conversation with {name}"),
            "tags": ["chat"],
        }));
    }
    Json(json!({
        "name": name,
        "description": format!("{name}: a conversational agent. Each message continues the conversation of its contextId."),
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [{
            "url": url,
            "protocolBinding": "JSONRPC",
            "protocolVersion": A2A_VERSION,
        }],
        "capabilities": { "streaming": true, "pushNotifications": false },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
        "securitySchemes": {
            "bearer": { "httpAuthSecurityScheme": { "scheme": "Bearer" } },
        },
        "securityRequirements": [{ "schemes": { "bearer": { "list": [] } } }],
    }))
    .into_response()
}

/// A JSON-RPC error (`status` `200` unless the request itself is refused).
fn rpc_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response {
    (
        status,
        Json(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        })),
    )
        .into_response()
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

const INVALID_PARAMS: i64 = -32602;
const TASK_NOT_FOUND: i64 = -32001;
const TASK_NOT_CANCELABLE: i64 = -32002;
const UNSUPPORTED: i64 = -32004;
const VERSION_NOT_SUPPORTED: i64 = -32009;

/// `POST /a2a`.
async fn rpc<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let who = match server.caller(&headers).await {
        Ok(p) => p,
        Err(e) => return unauthorized(json!({ "error": e.to_string() })),
    };
    let body = match read_json(body, server.shared.body_limit).await {
        Ok(b) => b,
        Err(BodyError::TooLarge(limit)) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                -32600,
                &format!("the body is larger than this server takes ({limit} bytes)"),
            );
        }
        Err(BodyError::Invalid(e)) => {
            return rpc_error(StatusCode::OK, &Value::Null, -32700, &e);
        }
    };
    let id = body["id"].clone();
    let params = &body["params"];
    // A client that names another version of the protocol is told so (none: 1.0).
    if let Some(v) = headers.get("a2a-version").and_then(|v| v.to_str().ok())
        && !v.trim().is_empty()
        && !(v.trim() == A2A_VERSION || v.trim().starts_with("1.0."))
    {
        return rpc_error(
            StatusCode::OK,
            &id,
            VERSION_NOT_SUPPORTED,
            &format!("A2A version {v} is not served: this server speaks {A2A_VERSION}"),
        );
    }
    match body["method"].as_str() {
        Some("SendMessage") => send(&server, &who, &id, params, false).await,
        Some("SendStreamingMessage") => send(&server, &who, &id, params, true).await,
        Some("GetTask") => get_task(&server, &who, &id, params),
        Some("CancelTask") => rpc_error(
            StatusCode::OK,
            &id,
            TASK_NOT_CANCELABLE,
            "a task ends with its turn: there is nothing to cancel",
        ),
        Some(other) => rpc_error(
            StatusCode::OK,
            &id,
            -32601,
            &format!("method `{other}` is not served (SendMessage, SendStreamingMessage, GetTask)"),
        ),
        None => rpc_error(StatusCode::OK, &id, -32600, "`method` is required"),
    }
}

fn get_task<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    who: &Principal,
    id: &Value,
    params: &Value,
) -> Response {
    let Some(task_id) = params["id"].as_str() else {
        return rpc_error(
            StatusCode::OK,
            id,
            INVALID_PARAMS,
            "`id` (the task's) is required",
        );
    };
    match server.shared.a2a.get(task_id) {
        Some((owner, mut task)) if owner == who.id() || who.is_operator() => {
            if let Some(n) = params["historyLength"].as_u64()
                && let Some(history) = task["history"].as_array_mut()
            {
                let keep = usize::try_from(n).unwrap_or(usize::MAX);
                let drop = history.len().saturating_sub(keep);
                history.drain(..drop);
            }
            Json(rpc_result(id, task)).into_response()
        }
        _ => rpc_error(
            StatusCode::OK,
            id,
            TASK_NOT_FOUND,
            &format!("no task {task_id}"),
        ),
    }
}

/// The text of a message's parts.
fn text_of(message: &Value) -> Option<String> {
    let text: Vec<&str> = message["parts"]
        .as_array()?
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    let text = text.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn agent_message(task: &str, context: &str, text: &str) -> Value {
    json!({
        "messageId": new_id("msg"),
        "contextId": context,
        "taskId": task,
        "role": "ROLE_AGENT",
        "parts": [{ "text": text }],
    })
}

/// What a message waiting calls get: they have not run.
fn waiting_text(calls: &[PendingCall]) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|c| format!("`{}` (call `{}`)", c.tool, c.id))
        .collect();
    format!(
        "{} {} for a person's approval: it has not run yet, and it runs once an operator approves it.",
        names.join(", "),
        if calls.len() == 1 { "waits" } else { "wait" }
    )
}

/// The task's state after a turn that stopped so.
fn state_of(stopped: &StoppedReason, waiting: &[PendingCall]) -> &'static str {
    if !waiting.is_empty() {
        return "TASK_STATE_INPUT_REQUIRED";
    }
    match stopped {
        StoppedReason::NeedsInput | StoppedReason::AwaitingApproval { .. } => {
            "TASK_STATE_INPUT_REQUIRED"
        }
        StoppedReason::FlowFailed { .. } => "TASK_STATE_FAILED",
        _ => "TASK_STATE_COMPLETED",
    }
}

fn terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

/// A task after its turn: the reply as its status message and, when a turn ran, an
/// artifact.
#[allow(clippy::too_many_arguments)]
fn finish(
    mut task: Value,
    state: &str,
    turn_ran: bool,
    reply: &str,
    session: &str,
    flow: Option<&str>,
    step: Option<&str>,
    waiting: &[PendingCall],
) -> Value {
    let id = task["id"].as_str().unwrap_or_default().to_owned();
    let context = task["contextId"].as_str().unwrap_or_default().to_owned();
    let message = agent_message(&id, &context, reply);
    if let Some(h) = task["history"].as_array_mut() {
        h.push(message.clone());
    }
    let artifacts = task["artifacts"].as_array().map_or(0, Vec::len);
    if let Some(a) = task["artifacts"].as_array_mut().filter(|_| turn_ran) {
        a.push(json!({
            "artifactId": format!("{id}-reply-{}", artifacts + 1),
            "name": "reply",
            "parts": [{ "text": reply }],
        }));
    }
    task["status"] = json!({ "state": state, "message": message, "timestamp": now() });
    task["metadata"] = json!({
        "session_id": session,
        "flow": flow,
        "step": step,
        "awaiting_approval": pending_list(waiting),
    });
    task
}

async fn send<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    who: &Principal,
    id: &Value,
    params: &Value,
    stream: bool,
) -> Response {
    let message = &params["message"];
    let Some(text) = text_of(message) else {
        return rpc_error(
            StatusCode::OK,
            id,
            INVALID_PARAMS,
            "`message.parts` has no text: the agent reads text parts",
        );
    };
    let given_context = message["contextId"].as_str().filter(|c| !c.is_empty());
    // The task: the one named (waiting for input), or a new one.
    let (task, session) = match message["taskId"].as_str().filter(|t| !t.is_empty()) {
        Some(task_id) => {
            // Another principal's task is not found, like an unknown one.
            let Some((_, task)) = server
                .shared
                .a2a
                .get(task_id)
                .filter(|(o, _)| o == who.id())
            else {
                return rpc_error(
                    StatusCode::OK,
                    id,
                    TASK_NOT_FOUND,
                    &format!("no task {task_id}"),
                );
            };
            let context = task["contextId"].as_str().unwrap_or_default().to_owned();
            if given_context.is_some_and(|c| c != context) {
                return rpc_error(
                    StatusCode::OK,
                    id,
                    INVALID_PARAMS,
                    &format!("task {task_id} belongs to context {context}"),
                );
            }
            if terminal(task["status"]["state"].as_str().unwrap_or_default()) {
                return rpc_error(
                    StatusCode::OK,
                    id,
                    UNSUPPORTED,
                    &format!(
                        "task {task_id} is finished: send the message in its context ({context}) without a taskId"
                    ),
                );
            }
            (task, context)
        }
        None => {
            let context = match given_context {
                Some(c) if valid_id(c) => c.to_owned(),
                Some(_) => {
                    return rpc_error(
                        StatusCode::OK,
                        id,
                        INVALID_PARAMS,
                        "`contextId` must be 1 to 64 letters, digits, '-' or '_'",
                    );
                }
                None => new_id("ctx"),
            };
            let task = json!({
                "id": new_id("task"),
                "contextId": context,
                "status": { "state": "TASK_STATE_SUBMITTED", "timestamp": now() },
                "artifacts": [],
                "history": [],
            });
            (task, context)
        }
    };
    if !server.may_write(who, &session).await {
        return rpc_error(StatusCode::FORBIDDEN, id, -32600, &not_yours(&session));
    }
    let mut task = task;
    let task_id = task["id"].as_str().unwrap_or_default().to_owned();
    let mut user = message.clone();
    user["taskId"] = json!(task_id);
    user["contextId"] = json!(session);
    if user["messageId"].as_str().is_none_or(str::is_empty) {
        user["messageId"] = json!(new_id("msg"));
    }
    if let Some(h) = task["history"].as_array_mut() {
        h.push(user);
    }
    let agent = server.agent();
    // While calls wait, a message runs no turn: only an operator decides them.
    let waiting = match agent.session(&session).await {
        Ok(s) => s
            .and_then(|s| s.approval.map(|p| (p.waiting(), s.flow, s.step)))
            .filter(|(w, _, _)| !w.is_empty()),
        Err(e) => return failed(server, id, &session, &e.to_string()),
    };
    if let Some((calls, flow, step)) = waiting {
        let task = finish(
            task,
            "TASK_STATE_INPUT_REQUIRED",
            false,
            &waiting_text(&calls),
            &session,
            flow.as_deref(),
            step.as_deref(),
            &calls,
        );
        server.shared.a2a.put(who.id(), task.clone());
        return if stream {
            let events = vec![rpc_result(id, json!({ "task": task }))];
            sse(events)
        } else {
            Json(rpc_result(id, json!({ "task": task }))).into_response()
        };
    }
    if !stream {
        return match agent.respond(&session, &text).await {
            Ok(r) => {
                let mut reply = r.message.clone();
                if !r.awaiting_approval.is_empty() {
                    if !reply.trim().is_empty() {
                        reply.push_str("\n\n");
                    }
                    reply.push_str(&waiting_text(&r.awaiting_approval));
                }
                let task = finish(
                    task,
                    state_of(&r.stopped, &r.awaiting_approval),
                    true,
                    &reply,
                    &session,
                    r.flow.as_deref(),
                    r.step.as_deref(),
                    &r.awaiting_approval,
                );
                server.shared.a2a.put(who.id(), task.clone());
                Json(rpc_result(id, json!({ "task": task }))).into_response()
            }
            Err(e) => failed(server, id, &session, &e.to_string()),
        };
    }
    // Streamed: the task, `working`, the reply as artifact chunks, then the final status.
    task["status"] = json!({ "state": "TASK_STATE_WORKING", "timestamp": now() });
    server.shared.a2a.put(who.id(), task.clone());
    let head = vec![rpc_result(id, json!({ "task": task.clone() }))];
    let owner = who.id().to_owned();
    let tasks = server.clone();
    let rpc_id = id.clone();
    let artifact = format!(
        "{task_id}-reply-{}",
        task["artifacts"].as_array().map_or(0, Vec::len) + 1
    );
    let mut chunks = 0usize;
    let mut streamed = String::new();
    let turn = agent.respond_stream(&session, &text);
    let events = turn.flat_map(move |e| {
        let mut out = Vec::new();
        let update = |text: &str, append: bool, last: bool| {
            rpc_result(
                &rpc_id,
                json!({ "artifactUpdate": {
                    "taskId": task_id,
                    "contextId": session,
                    "artifact": { "artifactId": artifact, "name": "reply", "parts": [{ "text": text }] },
                    "append": append,
                    "lastChunk": last,
                }}),
            )
        };
        match e {
            TurnEvent::TextDelta(t) if !t.is_empty() => {
                out.push(update(&t, chunks > 0, false));
                chunks += 1;
                streamed.push_str(&t);
            }
            TurnEvent::Done(r) => {
                let mut reply = r.message.clone();
                if !r.awaiting_approval.is_empty() {
                    if !reply.trim().is_empty() {
                        reply.push_str("\n\n");
                    }
                    reply.push_str(&waiting_text(&r.awaiting_approval));
                }
                let rest = reply
                    .strip_prefix(streamed.as_str())
                    .map_or_else(|| reply.clone(), str::to_owned);
                out.push(update(&rest, chunks > 0 && reply.starts_with(&streamed), true));
                let done = finish(
                    task.clone(),
                    state_of(&r.stopped, &r.awaiting_approval),
                    true,
                    &reply,
                    &session,
                    r.flow.as_deref(),
                    r.step.as_deref(),
                    &r.awaiting_approval,
                );
                out.push(rpc_result(
                    &rpc_id,
                    json!({ "statusUpdate": {
                        "taskId": task_id,
                        "contextId": session,
                        "status": done["status"],
                        "metadata": done["metadata"],
                    }}),
                ));
                tasks.shared.a2a.put(&owner, done);
            }
            TurnEvent::Error(err) => {
                (tasks.shared.log)(&format!(
                    "[server] session {session}: A2A turn failed: {err} (the session is unchanged)"
                ));
                let mut failed = task.clone();
                failed["status"] = json!({
                    "state": "TASK_STATE_FAILED",
                    "message": agent_message(&task_id, &session, &format!("the turn failed: {err}")),
                    "timestamp": now(),
                });
                out.push(rpc_result(
                    &rpc_id,
                    json!({ "statusUpdate": {
                        "taskId": task_id,
                        "contextId": session,
                        "status": failed["status"],
                    }}),
                ));
                tasks.shared.a2a.put(&owner, failed);
            }
            _ => {}
        }
        futures::stream::iter(out)
    });
    let all = futures::stream::iter(head)
        .chain(events)
        .map(|v| Ok::<_, std::convert::Infallible>(SseEvent::default().data(v.to_string())));
    Sse::new(all).into_response()
}

fn sse(events: Vec<Value>) -> Response {
    let all = futures::stream::iter(events)
        .map(|v| Ok::<_, std::convert::Infallible>(SseEvent::default().data(v.to_string())));
    Sse::new(all).into_response()
}

fn failed<D, C>(server: &Server<D, C>, id: &Value, session: &str, e: &str) -> Response {
    (server.shared.log)(&format!(
        "[server] session {session}: A2A turn failed: {e} (the session is unchanged)"
    ));
    rpc_error(
        StatusCode::OK,
        id,
        -32603,
        &format!("the turn failed: {e} (the conversation is unchanged)"),
    )
}
