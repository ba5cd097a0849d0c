//! The HTTP API of the web chat: the router, what the handlers share ([`Served`]),
//! the message, session and graph routes, and the replies for bad requests and store
//! failures. The approval, OpenAI-compatible, AG-UI and vendor routes have their own
//! modules.

use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::Role;
use agent_core::step::StepKind;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::booking::{Booking, BookingAgent};
use super::events::{pending_list, turn_stream};
use super::{agui, approvals, openai, page, vendor};

/// The body of `POST /api/sessions/{id}/messages`.
#[derive(Debug, Deserialize)]
pub struct MessageIn {
    /// The user's message.
    pub text: String,
}

/// Query of `GET /api/graph`.
#[derive(Debug, Deserialize)]
pub struct GraphQuery {
    /// Highlight this session's current step.
    pub session: Option<String>,
    /// `mermaid`: answer with the Mermaid text alone (`text/plain`) instead of JSON.
    pub format: Option<String>,
}

/// Where the server logs what went wrong (stderr; tests keep the lines).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// What the handlers share.
#[derive(Clone)]
pub struct Served {
    pub(super) agent: Arc<BookingAgent>,
    pub(super) log: Log,
}

/// The router: the page, its assets and the JSON/SSE API over `agent`, logging
/// failures on stderr.
pub fn app(agent: Arc<BookingAgent>) -> Router {
    app_with_log(agent, Arc::new(|line: &str| eprintln!("{line}")))
}

/// [`app`] logging to `log`.
pub fn app_with_log(agent: Arc<BookingAgent>, log: Log) -> Router {
    Router::new()
        .route("/", get(page::page))
        .route("/app.js", get(page::script))
        .route("/style.css", get(page::style))
        .route("/api/sessions/{id}", get(session))
        .route("/api/sessions/{id}/messages", post(message))
        .route(
            "/api/sessions/{id}/approvals/{call_id}",
            post(approvals::decide),
        )
        .route("/api/graph", get(graph))
        .merge(openai::routes())
        .merge(agui::routes())
        .merge(vendor::routes(vendor::mermaid_from_env()))
        .with_state(Served { agent, log })
}

/// Session ids are short and plain: they appear in URLs and logs.
pub(super) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(super) fn bad_request(what: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": what }))).into_response()
}

/// A store failure: logged, and answered with a 500.
pub(super) fn server_error(log: &Log, what: &str, e: &AgentError) -> Response {
    log(&format!("[server] {what}: {e}"));
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({ "error": e.to_string() })),
    )
        .into_response()
}

async fn message(
    State(Served { agent, log }): State<Served>,
    Path(id): Path<String>,
    Json(body): Json<MessageIn>,
) -> Response {
    if !valid_id(&id) {
        return bad_request("session ids are 1 to 64 letters, digits, '-' or '_'");
    }
    if body.text.trim().is_empty() {
        return bad_request("the message is empty");
    }
    let events = agent.respond_stream(&id, body.text.trim());
    turn_stream(events, log, format!("session {id}: turn failed"))
}

async fn session(State(Served { agent, log }): State<Served>, Path(id): Path<String>) -> Response {
    if !valid_id(&id) {
        return bad_request("session ids are 1 to 64 letters, digits, '-' or '_'");
    }
    match agent.session(&id).await {
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
            "data": Booking::default(),
            "completed_flows": [],
            "turns": 0,
            "transcript": [],
            "awaiting_approval": [],
        }))
        .into_response(),
        Err(e) => server_error(&log, &format!("session {id}"), &e),
    }
}

async fn graph(
    State(Served { agent, log }): State<Served>,
    Query(q): Query<GraphQuery>,
) -> Response {
    let mut at: Option<(String, String)> = None;
    if let Some(id) = q.session.as_deref().filter(|id| valid_id(id)) {
        match agent.session(id).await {
            Ok(Some(s)) => {
                if let (Some(f), Some(st)) = (s.flow, s.step) {
                    at = Some((f, st));
                }
            }
            Ok(None) => {}
            Err(e) => return server_error(&log, &format!("graph of session {id}"), &e),
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
