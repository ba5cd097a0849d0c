//! Shared by the integration tests: the fixture server, fixtures, requests, the booking
//! agent and a fake model speaking each vendor's wire format.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod booking;
pub mod fake_model;
pub mod server;
pub mod vendors;

use std::sync::Arc;

use agent_core::provider::{CallKind, Message, ModelRequest, OutputSchema, ToolCall, ToolSpec};
use serde_json::{Value, json};

/// A fixture file's text (`fixtures/VENDOR/NAME`).
pub fn fixture(path: &str) -> String {
    let p = format!("{}/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("fixture {p}: {e}"))
}

/// The `book_room` tool as the model sees it.
pub fn book_room_spec() -> ToolSpec {
    ToolSpec {
        name: "book_room".into(),
        description: "Book the room.".into(),
        parameters: json!({
            "type": "object",
            "properties": { "hotel": { "type": "string", "description": "Hotel name" } },
            "required": ["hotel"]
        }),
    }
}

/// The respond schema the engine sends for a booking turn (shape only).
pub fn turn_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "data": {
                "type": "object",
                "properties": {
                    "city": { "type": ["string", "null"] },
                    "check_in": { "type": ["string", "null"] },
                    "guests": { "type": ["integer", "null"], "minimum": 0, "maximum": 255 }
                },
                "additionalProperties": false
            },
            "message": { "type": "string", "maxLength": 1200 }
        },
        "required": ["data", "message"],
        "additionalProperties": false
    })
}

/// A plain request: system prompt and one user message.
pub fn plain_request() -> ModelRequest {
    ModelRequest {
        kind: CallKind::Respond,
        system: "You are a hotel concierge.".into(),
        messages: vec![Message::user("Hi")],
        tools: Vec::new(),
        output: None,
        max_tokens: Some(64),
        temperature: Some(0.0),
        seed: None,
    }
}

/// Everything at once: history with a tool round, tools, an output schema.
pub fn full_request() -> ModelRequest {
    let mut assistant = Message::assistant("");
    assistant.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "book_room".into(),
        arguments: json!({ "hotel": "Grand" }),
    }];
    ModelRequest {
        kind: CallKind::ToolRound,
        system: "You are a hotel concierge.".into(),
        messages: vec![
            Message::user("Book the Grand in Lisbon"),
            Message::assistant("Which date?"),
            Message::user("July 1st"),
            assistant,
            Message::tool("call_1", "booked BK-5"),
        ],
        tools: vec![book_room_spec()],
        output: Some(OutputSchema {
            name: "turn".into(),
            schema: Arc::new(turn_schema()),
        }),
        max_tokens: Some(256),
        temperature: Some(0.2),
        seed: None,
    }
}

/// A structured request without tools.
pub fn structured_request() -> ModelRequest {
    ModelRequest {
        tools: Vec::new(),
        kind: CallKind::Respond,
        messages: vec![Message::user("Lisbon, July 1st, two of us")],
        ..full_request()
    }
}

/// A request offering the tool.
pub fn tool_request() -> ModelRequest {
    ModelRequest {
        output: None,
        kind: CallKind::Respond,
        messages: vec![Message::user("Book the Grand")],
        ..full_request()
    }
}

/// Collect a stream of results into items, stopping at the first error.
pub async fn collect<T, E>(
    mut s: futures::stream::BoxStream<'_, Result<T, E>>,
) -> (Vec<T>, Option<E>) {
    use futures::StreamExt;
    let mut items = Vec::new();
    while let Some(x) = s.next().await {
        match x {
            Ok(v) => items.push(v),
            Err(e) => return (items, Some(e)),
        }
    }
    (items, None)
}
