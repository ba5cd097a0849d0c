//! A turn as the web chat reads it: each turn event as a typed server-sent event
//! (`step`, `delta`, `approval`, `done`, `error`...), and the calls waiting for a
//! person's decision as JSON.

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::{Value, json};

use super::Log;
use crate::approval::PendingCall;
use crate::response::Event as TurnEvent;

/// A call waiting for a person's decision, as the clients read it.
fn pending_json(c: &PendingCall) -> Value {
    json!({ "id": c.id, "tool": c.tool, "arguments": c.arguments })
}

pub(super) fn pending_list(calls: &[PendingCall]) -> Vec<Value> {
    calls.iter().map(pending_json).collect()
}

fn sse(name: &str, data: Value) -> SseEvent {
    SseEvent::default().event(name).data(data.to_string())
}

/// One turn event as a typed server-sent event.
fn to_sse<D: Serialize>(event: TurnEvent<D>) -> SseEvent {
    match event {
        TurnEvent::TextDelta(text) => sse("delta", json!({ "text": text })),
        TurnEvent::StepEntered(r) => sse("step", json!({ "flow": r.flow, "step": r.step })),
        TurnEvent::Transition(t) => sse("transition", json!({ "from": t.from, "to": t.to })),
        TurnEvent::ToolCall { name, arguments } => {
            sse("tool_call", json!({ "name": name, "arguments": arguments }))
        }
        TurnEvent::ToolResult(r) => sse(
            "tool_result",
            json!({ "name": r.name, "arguments": r.arguments, "output": r.output, "ok": r.ok }),
        ),
        TurnEvent::ApprovalRequested(c) => sse("approval", pending_json(&c)),
        TurnEvent::Done(r) => sse(
            "done",
            json!({
                "message": r.message,
                "flow": r.flow,
                "step": r.step,
                "data": r.data,
                "stopped": r.stopped,
                "executed_steps": r.executed_steps,
                "transitions": r.transitions,
                "tool_calls": r.tool_calls,
                "model_calls": r.model_calls,
                "dropped_fields": r.dropped_fields,
                "awaiting_approval": pending_list(&r.awaiting_approval),
                "version": r.version,
            }),
        ),
        TurnEvent::DataDropped(d) => sse(
            "dropped",
            json!({ "field": d.field, "value": d.value, "reason": d.reason }),
        ),
        TurnEvent::Error(e) => sse("error", json!({ "message": e.to_string() })),
    }
}

/// A turn's events as the server-sent event response; a failed turn reaches the page
/// as an `error` event, and the log (`[server] {failed}: {error}`).
pub(super) fn turn_stream<D: Serialize + Send + 'static>(
    events: BoxStream<'static, TurnEvent<D>>,
    log: Log,
    failed: String,
) -> Response {
    let events = events.map(move |e| {
        if let TurnEvent::Error(err) = &e {
            log(&format!(
                "[server] {failed}: {err} (the session is unchanged)"
            ));
        }
        Ok::<_, Infallible>(to_sse(e))
    });
    Sse::new(events).into_response()
}
