//! The web chat's JSON API: the caller's sessions, a session's state, a message as a
//! stream of typed events, an approval decision (operators only) and the flows'
//! graph.

use axum::Json;
use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::events::{pending_list, turn_stream};
use super::{AuthError, OPERATOR_ONLY, Principal, Server, not_yours, valid_call_id, valid_id};
use crate::approval::Decision;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::provider::Role;
use crate::step::StepKind;

/// The body of `POST /api/sessions/{id}/messages`.
#[derive(Debug, Deserialize)]
struct MessageIn {
    text: String,
}

/// Query of `GET /api/graph`.
#[derive(Debug, Deserialize)]
struct GraphQuery {
    session: Option<String>,
    format: Option<String>,
}

pub(super) fn routes<D: AgentData, C: AgentContext>() -> Router<Server<D, C>> {
    Router::new()
        .route("/api/sessions", get(list::<D, C>))
        .route("/api/sessions/{id}", get(session::<D, C>))
        .route("/api/sessions/{id}/messages", post(message::<D, C>))
        .route(
            "/api/sessions/{id}/approvals/{call_id}",
            post(decide::<D, C>),
        )
        .route("/api/graph", get(graph::<D, C>))
}

fn error(status: StatusCode, what: &str) -> Response {
    (status, Json(json!({ "error": what }))).into_response()
}

fn bad_request(what: &str) -> Response {
    error(StatusCode::BAD_REQUEST, what)
}

/// A `401` with the challenge.
pub(super) fn unauthorized(body: Value) -> Response {
    let mut r = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// A store failure: logged, and answered with a 500.
fn server_error<D, C>(server: &Server<D, C>, what: &str, e: &AgentError) -> Response {
    (server.shared.log)(&format!("[server] {what}: {e}"));
    error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
}

const BAD_ID: &str = "session ids are 1 to 64 letters, digits, '-' or '_'";

async fn caller<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    headers: &HeaderMap,
) -> Result<Principal, Response> {
    server
        .caller(headers)
        .await
        .map_err(|e: AuthError| unauthorized(json!({ "error": e.to_string() })))
}

async fn list<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    headers: HeaderMap,
) -> Response {
    let who = match caller(&server, &headers).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let sessions = server.shared.owners.sessions_of(who.id()).await;
    Json(json!({ "sessions": sessions })).into_response()
}

async fn message<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Json<MessageIn>, JsonRejection>,
) -> Response {
    let who = match caller(&server, &headers).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    if !valid_id(&id) {
        return bad_request(BAD_ID);
    }
    let body = match body {
        Ok(Json(b)) => b,
        Err(e) => {
            return error(
                e.status(),
                &format!("the body must be {{\"text\": \"...\"}} ({})", e.body_text()),
            );
        }
    };
    if body.text.trim().is_empty() {
        return bad_request("the message is empty");
    }
    if !server.may_write(&who, &id).await {
        return error(StatusCode::FORBIDDEN, &not_yours(&id));
    }
    let events = server.agent().respond_stream(&id, body.text.trim());
    turn_stream(
        events,
        server.shared.log.clone(),
        format!("session {id}: turn failed"),
    )
}

async fn decide<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    Path((id, call_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Json<Decision>, JsonRejection>,
) -> Response {
    let who = match caller(&server, &headers).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    if !who.is_operator() {
        return error(StatusCode::FORBIDDEN, OPERATOR_ONLY);
    }
    if !valid_id(&id) {
        return bad_request(BAD_ID);
    }
    if !valid_call_id(&call_id) {
        return bad_request("call ids are 1 to 128 printable characters");
    }
    let decision = match body {
        Ok(Json(Decision::Deny { reason })) if reason.trim().is_empty() => {
            return bad_request("a denial needs a reason");
        }
        Ok(Json(Decision::Deny { reason })) => Decision::Deny {
            reason: reason.trim().to_owned(),
        },
        Ok(Json(d)) => d,
        Err(e) => {
            return error(
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    e.status()
                } else {
                    StatusCode::BAD_REQUEST
                },
                &format!(
                    "the body must be {{\"decision\": \"approve\"}}, {{\"decision\": \"deny\", \"reason\": \"...\"}} or {{\"decision\": \"edit\", \"arguments\": {{...}}}} ({})",
                    e.body_text()
                ),
            );
        }
    };
    let waiting = match server.agent().pending_approvals(&id).await {
        Ok(w) => w,
        Err(e) => return server_error(&server, &format!("approvals of session {id}"), &e),
    };
    if !waiting.iter().any(|c| c.id == call_id) {
        let ids: Vec<&str> = waiting.iter().map(|c| c.id.as_str()).collect();
        return (
            StatusCode::CONFLICT,
            Json(json!({
                "error": format!("no call `{call_id}` waits for a decision in session {id}"),
                "waiting": ids,
            })),
        )
            .into_response();
    }
    let what = match &decision {
        Decision::Approve => "approval",
        Decision::Deny { .. } => "denial",
        Decision::Edit { .. } => "edit",
    };
    let events = server
        .agent()
        .resolve_approval_stream(&id, &call_id, decision);
    turn_stream(
        events,
        server.shared.log.clone(),
        format!("session {id}: the {what} of call {call_id} failed"),
    )
}

async fn session<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let who = match caller(&server, &headers).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    if !valid_id(&id) {
        return bad_request(BAD_ID);
    }
    if !server.may_read(&who, &id).await {
        return error(StatusCode::FORBIDDEN, &not_yours(&id));
    }
    match server.agent().session(&id).await {
        Ok(Some(s)) => {
            let transcript: Vec<Value> = s
                .history
                .iter()
                .filter(|m| matches!(m.role, Role::User | Role::Assistant))
                .filter(|m| !m.content.is_empty())
                .map(|m| {
                    json!({
                        "role": if m.role == Role::User { "user" } else { "assistant" },
                        "text": m.content.as_str(),
                    })
                })
                .collect();
            Json(json!({
                "id": s.id,
                "flow": s.flow,
                "step": s.step,
                "data": s.data,
                "completed_flows": s.completed_flows,
                "turns": s.turns,
                "transcript": transcript,
                "awaiting_approval": pending_list(
                    &s.approval.as_ref().map(|p| p.waiting()).unwrap_or_default()
                ),
            }))
            .into_response()
        }
        Ok(None) => Json(json!({
            "id": id,
            "flow": null,
            "step": null,
            "data": D::default(),
            "completed_flows": [],
            "turns": 0,
            "transcript": [],
            "awaiting_approval": [],
        }))
        .into_response(),
        Err(e) => server_error(&server, &format!("session {id}"), &e),
    }
}

async fn graph<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    Query(q): Query<GraphQuery>,
    headers: HeaderMap,
) -> Response {
    let who = match caller(&server, &headers).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let agent = server.agent();
    let mut at: Option<(String, String)> = None;
    if let Some(id) = q.session.as_deref().filter(|id| valid_id(id)) {
        if !server.may_read(&who, id).await {
            return error(StatusCode::FORBIDDEN, &not_yours(id));
        }
        match agent.session(id).await {
            Ok(Some(s)) => {
                if let (Some(f), Some(st)) = (s.flow, s.step) {
                    at = Some((f, st));
                }
            }
            Ok(None) => {}
            Err(e) => return server_error(&server, &format!("graph of session {id}"), &e),
        }
    }
    let flows: Vec<Value> = agent
        .flows()
        .map(|f| {
            let current = at
                .as_ref()
                .filter(|(flow, _)| flow == f.id())
                .map(|(_, step)| step.as_str());
            let steps: Vec<Value> = f
                .steps()
                .iter()
                .map(|s| {
                    json!({
                        "id": s.id(),
                        "kind": match s.kind() {
                            StepKind::Model => "model",
                            StepKind::Auto => "auto",
                            StepKind::Reply(_) => "reply",
                        },
                        "end": s.is_end(),
                        "node": f.mermaid_node_id(s.id()),
                    })
                })
                .collect();
            json!({
                "id": f.id(),
                "title": f.title(),
                "mermaid": f.mermaid_with_current(current),
                "steps": steps,
            })
        })
        .collect();
    if q.format.as_deref() == Some("mermaid") {
        let text: Vec<&str> = flows.iter().filter_map(|f| f["mermaid"].as_str()).collect();
        return (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text.join("\n"),
        )
            .into_response();
    }
    let current = at.map(|(flow, step)| {
        let node = agent
            .flows()
            .find(|f| f.id() == flow)
            .and_then(|f| f.mermaid_node_id(&step));
        json!({ "flow": flow, "step": step, "node": node })
    });
    Json(json!({ "flows": flows, "current": current })).into_response()
}
