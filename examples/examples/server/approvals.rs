//! The server's approval route: `POST /api/sessions/{id}/approvals/{call_id}` decides
//! a tool call that waits for a person's decision and answers with the resumed turn,
//! as the same server-sent events as a message.
//!
//! The body is an `agent_core::approval::Decision` as JSON: `{"decision": "approve"}`,
//! `{"decision": "deny", "reason": "..."}` or `{"decision": "edit", "arguments":
//! {...}}`. A call that does not wait (never asked for, or decided already) is a `409`
//! with `{"error", "waiting"}` and changes nothing; a body that is not a decision, or a
//! denial without a reason, is a `400`. A decision that loses a race with another one
//! on the same call gets the agent's `NoPendingApproval` as an `error` event.

use agent_core::prelude::*;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::events::turn_stream;
use super::routes::{Served, bad_request, server_error, valid_id};

/// Call ids come from the model (or the engine): anything short and printable.
fn valid_call_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic())
}

/// `POST /api/sessions/{id}/approvals/{call_id}`.
pub async fn decide(
    State(Served { agent, log }): State<Served>,
    Path((id, call_id)): Path<(String, String)>,
    body: Result<Json<Decision>, JsonRejection>,
) -> Response {
    if !valid_id(&id) {
        return bad_request("session ids are 1 to 64 letters, digits, '-' or '_'");
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
            return bad_request(&format!(
                "the body must be {{\"decision\": \"approve\"}}, {{\"decision\": \"deny\", \"reason\": \"...\"}} or {{\"decision\": \"edit\", \"arguments\": {{...}}}} ({})",
                e.body_text()
            ));
        }
    };
    let waiting = match agent.pending_approvals(&id).await {
        Ok(w) => w,
        Err(e) => return server_error(&log, &format!("approvals of session {id}"), &e),
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
    let events = agent.resolve_approval_stream(&id, &call_id, decision);
    turn_stream(
        events,
        log,
        format!("session {id}: the {what} of call {call_id} failed"),
    )
}
