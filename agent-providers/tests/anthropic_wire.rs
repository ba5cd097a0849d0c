//! Anthropic Messages against answers and event streams in Anthropic's format, served
//! over HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, Provider, StreamChunk, Usage};
use agent_providers::{Anthropic, StreamDelta, StructuredMode};
use serde_json::{Value, json};
use support::server::{FixtureServer, Reply};
use support::*;

const KEY: &str = "sk-ant-test-0123456789";
const PATH: &str = "/v1/messages";

async fn setup() -> (FixtureServer, Anthropic) {
    let s = FixtureServer::start().await;
    let p = Anthropic::new(KEY).base_url(&s.url()).unwrap();
    (s, p)
}

#[tokio::test]
async fn a_plain_reply_sends_the_system_prompt_top_level() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("anthropic/message_plain.json")),
    );
    let r = p.generate(&plain_request()).await.unwrap();
    assert_eq!(r.content, "Hello! Which city would you like to stay in?");
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(r.id.as_deref(), Some("msg_013Zva2CMHLNnXjNJJKqJ2EF"));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 25,
            output_tokens: 12,
            cached_input_tokens: 4,
        },
        "cached input tokens count as input"
    );
    let req = s.last();
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("authorization"), None);
    let b = &req.body;
    assert_eq!(b["model"], "claude-haiku-4-5");
    // Prompt caching (on by default): a breakpoint after the system prompt and one after
    // the user's latest words.
    assert_eq!(
        b["system"],
        json!([{ "type": "text", "text": "You are a hotel concierge.", "cache_control": { "type": "ephemeral" } }])
    );
    assert_eq!(b["max_tokens"], 64);
    assert_eq!(
        b["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "Hi", "cache_control": { "type": "ephemeral" } }] }])
    );
    assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
}

#[tokio::test]
async fn the_cache_breakpoint_closes_the_users_words_before_the_engines_notes() {
    use agent_core::provider::{Message, STATE_MARKER};
    let (s, p) = setup().await;
    for _ in 0..2 {
        s.enqueue(
            PATH,
            Reply::json(200, &fixture("anthropic/message_plain.json")),
        );
    }
    let mut req = plain_request();
    req.messages = vec![
        Message::user("Lisbon please"),
        Message::assistant("Which date?"),
        Message::user(format!(
            "July 1st\n\n{STATE_MARKER}\nNow, ask how many guests."
        )),
    ];
    p.generate(&req).await.unwrap();
    let b = s.last().body;
    let msgs = b["messages"].as_array().unwrap();
    assert_eq!(
        msgs[0]["content"],
        json!([{ "type": "text", "text": "Lisbon please" }]),
        "one breakpoint per request in the messages: the latest user words"
    );
    assert_eq!(
        msgs[2]["content"],
        json!([
            { "type": "text", "text": "July 1st", "cache_control": { "type": "ephemeral" } },
            { "type": "text", "text": format!("{STATE_MARKER}\nNow, ask how many guests.") },
        ])
    );

    // Off: the system prompt is a plain string and nothing is marked.
    let p = p.prompt_cache(false);
    p.generate(&req).await.unwrap();
    let b = s.last().body;
    assert_eq!(b["system"], "You are a hotel concierge.");
    assert!(!b.to_string().contains("cache_control"), "{b}");
    assert_eq!(
        b["messages"][2]["content"][0],
        json!({ "type": "text", "text": "July 1st" })
    );
}

#[tokio::test]
async fn history_tools_and_the_schema_go_out_as_blocks_and_an_answer_tool() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("anthropic/message_answer_tool.json")),
    );
    let r = p.generate(&full_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::Stop, "answering is not a tool call");
    assert!(r.tool_calls.is_empty());
    let out: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(out["data"]["city"], "Lisbon");
    assert_eq!(
        out["message"],
        "Lisbon from July 1st for two. Shall I book?"
    );

    let b = s.last().body;
    assert_eq!(b["max_tokens"], 256);
    let msgs = b["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(
        msgs[3]["content"],
        json!([{ "type": "tool_use", "id": "call_1", "name": "book_room", "input": { "hotel": "Grand" } }])
    );
    assert_eq!(
        msgs[4]["content"],
        json!([{ "type": "tool_result", "tool_use_id": "call_1", "content": "booked BK-5" }])
    );
    let tools = b["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "book_room");
    assert_eq!(tools[0]["input_schema"], book_room_spec().parameters);
    assert_eq!(tools[1]["name"], "turn");
    assert_eq!(tools[1]["input_schema"], turn_schema());
    assert_eq!(
        b["tool_choice"],
        json!({ "type": "any" }),
        "a tool or the answer"
    );
}

#[tokio::test]
async fn without_tools_the_answer_tool_is_forced() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("anthropic/message_answer_tool.json")),
    );
    p.generate(&structured_request()).await.unwrap();
    let b = s.last().body;
    assert_eq!(b["tool_choice"], json!({ "type": "tool", "name": "turn" }));
    assert_eq!(b["tools"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn native_structured_output_sends_output_config_and_reports_length() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("anthropic/message_native_length.json")),
    );
    let p = p.structured(StructuredMode::Native);
    let r = p.generate(&structured_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::Length);
    let b = s.last().body;
    assert_eq!(
        b["output_config"],
        json!({ "format": { "type": "json_schema", "schema": turn_schema() } })
    );
    assert!(b.get("tools").is_none());
}

#[tokio::test]
async fn tool_use_blocks_become_tool_calls() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("anthropic/message_tool_use.json")),
    );
    let r = p.generate(&tool_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(r.content, "I'll book that for you.");
    assert_eq!(r.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(r.tool_calls[0].arguments, json!({ "hotel": "Grand" }));
}

#[tokio::test]
async fn streamed_text_events_become_text_chunks() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse(&fixture("anthropic/stream_text.sse")));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        chunks[..2],
        [
            StreamChunk::Text("Hello".into()),
            StreamChunk::Text("! Which city?".into())
        ]
    );
    let StreamChunk::Done(done) = &chunks[2] else {
        panic!("{chunks:?}")
    };
    assert_eq!(done.content, "Hello! Which city?");
    assert_eq!(
        done.id.as_deref(),
        Some("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"),
        "the id of message_start"
    );
    assert_eq!(done.usage.input_tokens, 25);
    assert_eq!(done.usage.output_tokens, 15);
    assert_eq!(s.last().body["stream"], true);
}

#[tokio::test]
async fn streamed_input_json_deltas_assemble_tool_calls() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse(&fixture("anthropic/stream_tool_use.sse")));
    let req = tool_request();
    let (deltas, err) = collect(p.stream_deltas(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(deltas[0], StreamDelta::Text("Booking it.".into()));
    assert_eq!(
        deltas[1],
        StreamDelta::ToolCallStart {
            index: 0,
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "book_room".into()
        }
    );
    let args: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallArguments { fragment, .. } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(args, r#"{"hotel": "Grand"}"#);
    let Some(StreamDelta::Done(done)) = deltas.last() else {
        panic!()
    };
    assert_eq!(done.finish, FinishReason::ToolCalls);
    assert_eq!(done.tool_calls[0].arguments, json!({ "hotel": "Grand" }));
    assert_eq!(done.usage.output_tokens, 89);
}

#[tokio::test]
async fn a_streamed_answer_tool_streams_its_json_as_text() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::sse(&fixture("anthropic/stream_answer_tool.sse")),
    );
    let req = structured_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(err.is_none(), "{err:?}");
    let text: String = chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::Text(t) => Some(t.as_str()),
            StreamChunk::Done(_) => None,
        })
        .collect();
    assert_eq!(text, r#"{"message": "Which city?", "data": {}}"#);
    let Some(StreamChunk::Done(done)) = chunks.last() else {
        panic!()
    };
    assert_eq!(done.content, text);
    assert_eq!(done.finish, FinishReason::Stop);
    assert!(done.tool_calls.is_empty());
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_an_overloaded_http_error() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::sse(&fixture("anthropic/stream_overloaded.sse")),
    );
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(chunks.is_empty());
    match err {
        Some(ProviderError::Http {
            status: 529,
            message,
            ..
        }) => assert_eq!(message, "overloaded_error: Overloaded"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_an_error() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::sse_cut(&fixture("anthropic/stream_text.sse"), 5),
    );
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert_eq!(
        chunks,
        [
            StreamChunk::Text("Hello".into()),
            StreamChunk::Text("! Which city?".into())
        ]
    );
    assert!(matches!(err, Some(ProviderError::Network(_))), "{err:?}");
}

#[tokio::test]
async fn http_errors_keep_status_type_and_retry_after() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(529, &fixture("anthropic/error_529.json")));
    s.enqueue(
        PATH,
        Reply::json(429, &fixture("anthropic/error_429.json")).header("retry-after", "3"),
    );
    s.enqueue(PATH, Reply::json(400, &fixture("anthropic/error_400.json")));
    let req = plain_request();
    assert!(matches!(
        p.generate(&req).await,
        Err(ProviderError::Http { status: 529, ref message, .. }) if message == "overloaded_error: Overloaded"
    ));
    assert!(matches!(
        p.generate(&req).await,
        Err(ProviderError::Http { status: 429, retry_after: Some(d), .. }) if d == Duration::from_secs(3)
    ));
    assert!(matches!(
        p.generate(&req).await,
        Err(ProviderError::Http { status: 400, ref message, .. }) if message.starts_with("invalid_request_error")
    ));
    assert!(!format!("{p:?}").contains(KEY));
}
