//! OpenAI Chat Completions against recorded answers in OpenAI's format, served over HTTP
//! on 127.0.0.1: what we send (history, tools, schema) and what we parse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, Provider, StreamChunk, Usage};
use agent_providers::{OpenAi, StreamDelta};
use serde_json::{Value, json};
use support::server::{FixtureServer, Reply};
use support::*;

const KEY: &str = "sk-test-0123456789abcdef";
const PATH: &str = "/v1/chat/completions";

async fn setup() -> (FixtureServer, OpenAi) {
    let s = FixtureServer::start().await;
    let p = OpenAi::new(KEY)
        .base_url(&format!("{}/v1", s.url()))
        .unwrap()
        .model("gpt-4o-mini");
    (s, p)
}

#[tokio::test]
async fn a_plain_reply_parses_content_usage_and_finish() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(200, &fixture("openai/chat_plain.json")));
    let r = p.generate(&plain_request()).await.unwrap();
    assert_eq!(r.content, "Hello! Which city would you like to stay in?");
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(
        r.id.as_deref(),
        Some("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT")
    );
    // `server.address` and `server.port` of its spans.
    assert_eq!(p.server(), Some(("127.0.0.1", s.addr.port())));
    assert_eq!(
        OpenAi::new(KEY).server(),
        Some(("api.openai.com", 443)),
        "the default base URL"
    );
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 19,
            output_tokens: 11,
            cached_input_tokens: 0,
        }
    );
    assert!(r.tool_calls.is_empty());

    let req = s.last();
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(req.header("content-type"), Some("application/json"));
    let b = &req.body;
    assert_eq!(b["model"], "gpt-4o-mini");
    assert_eq!(
        b["messages"],
        json!([
            { "role": "system", "content": "You are a hotel concierge." },
            { "role": "user", "content": "Hi" }
        ])
    );
    assert_eq!(b["max_completion_tokens"], 64);
    assert_eq!(b["temperature"], 0.0);
    for absent in ["tools", "response_format", "stream", "max_tokens"] {
        assert!(b.get(absent).is_none(), "{absent} sent: {b}");
    }
}

#[tokio::test]
async fn every_request_carries_history_tools_and_the_schema() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("openai/chat_structured.json")),
    );
    let r = p.generate(&full_request()).await.unwrap();
    let out: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(out["data"]["city"], "Lisbon");
    assert_eq!(out["data"]["guests"], 2);

    let b = s.last().body;
    let msgs = b["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user", "assistant", "tool"]
    );
    assert_eq!(msgs[1]["content"], "Book the Grand in Lisbon");
    assert_eq!(msgs[2]["content"], "Which date?");
    assert_eq!(
        msgs[4]["content"],
        Value::Null,
        "tool-call turns carry no text"
    );
    assert_eq!(
        msgs[4]["tool_calls"],
        json!([{ "id": "call_1", "type": "function",
                 "function": { "name": "book_room", "arguments": "{\"hotel\":\"Grand\"}" } }])
    );
    assert_eq!(
        msgs[5],
        json!({ "role": "tool", "content": "booked BK-5", "tool_call_id": "call_1" })
    );
    assert_eq!(
        b["tools"],
        json!([{ "type": "function", "function": {
            "name": "book_room", "description": "Book the room.",
            "parameters": book_room_spec().parameters } }])
    );
    assert_eq!(b["response_format"]["type"], "json_schema");
    assert_eq!(b["response_format"]["json_schema"]["name"], "turn");
    assert_eq!(b["response_format"]["json_schema"]["schema"], turn_schema());
    assert!(b["response_format"]["json_schema"].get("strict").is_none());
}

#[tokio::test]
async fn strict_mode_is_sent_when_asked_for() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("openai/chat_structured.json")),
    );
    p.strict(true)
        .generate(&structured_request())
        .await
        .unwrap();
    assert_eq!(
        s.last().body["response_format"]["json_schema"]["strict"],
        true
    );
}

#[tokio::test]
async fn a_structured_answer_cut_by_the_token_limit_reports_length() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("openai/chat_structured_length.json")),
    );
    let r = p.generate(&structured_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::Length);
    assert!(serde_json::from_str::<Value>(&r.content).is_err());
}

#[tokio::test]
async fn tool_calls_parse_and_unparsable_arguments_arrive_as_a_string() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("openai/chat_tool_call.json")),
    );
    let r = p.generate(&tool_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(r.content, "");
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].id, "call_abc123");
    assert_eq!(r.tool_calls[0].name, "book_room");
    assert_eq!(r.tool_calls[0].arguments, json!({ "hotel": "Grand" }));
    assert_eq!(
        r.tool_calls[1].arguments,
        Value::String("{\"hotel\": \"Ritz\"".into())
    );
}

#[tokio::test]
async fn refusals_come_back_as_content_filter() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(200, &fixture("openai/chat_refusal.json")));
    let r = p.generate(&plain_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::ContentFilter);
    assert_eq!(r.content, "I'm sorry, I can't help with that.");
}

#[tokio::test]
async fn streamed_text_deltas_concatenate_to_the_final_answer() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse(&fixture("openai/stream_text.sse")));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        chunks[..3],
        [
            StreamChunk::Text("Hello".into()),
            StreamChunk::Text("! Which".into()),
            StreamChunk::Text(" city?".into())
        ]
    );
    let StreamChunk::Done(done) = &chunks[3] else {
        panic!("no Done: {chunks:?}")
    };
    assert_eq!(chunks.len(), 4, "exactly one Done, last");
    assert_eq!(done.content, "Hello! Which city?");
    assert_eq!(done.finish, FinishReason::Stop);
    assert_eq!(done.usage.output_tokens, 5);

    let b = s.last().body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({ "include_usage": true }));
}

#[tokio::test]
async fn streamed_tool_call_argument_deltas_assemble_into_calls() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse(&fixture("openai/stream_tool_call.sse")));
    let req = tool_request();
    let (deltas, err) = collect(p.stream_deltas(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        deltas[0],
        StreamDelta::ToolCallStart {
            index: 0,
            id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
            name: "book_room".into()
        }
    );
    let args = |i: usize| -> String {
        deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::ToolCallArguments { index, fragment } if *index == i => {
                    Some(fragment.as_str())
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(args(0), r#"{"hotel":"Grand"}"#);
    assert_eq!(args(1), r#"{"hotel":"Ritz"}"#);
    assert!(
        deltas
            .iter()
            .filter(|d| matches!(d, StreamDelta::ToolCallArguments { index: 0, .. }))
            .count()
            >= 3,
        "arguments arrive in fragments"
    );
    let Some(StreamDelta::Done(done)) = deltas.last() else {
        panic!("no Done")
    };
    assert_eq!(done.finish, FinishReason::ToolCalls);
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].arguments, json!({ "hotel": "Grand" }));
    assert_eq!(done.tool_calls[1].id, "call_Q2");
    assert_eq!(done.usage.input_tokens, 90);
}

#[tokio::test]
async fn a_malformed_chunk_fails_the_stream_after_the_text_before_it() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse(&fixture("openai/stream_malformed.sse")));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert_eq!(chunks, [StreamChunk::Text("Hel".into())]);
    match err {
        Some(ProviderError::InvalidResponse(m)) => assert!(m.contains("malformed"), "{m}"),
        other => panic!("expected InvalidResponse, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_an_error_not_a_short_answer() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::sse_cut(&fixture("openai/stream_text.sse"), 3));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert_eq!(
        chunks,
        [
            StreamChunk::Text("Hello".into()),
            StreamChunk::Text("! Which".into())
        ]
    );
    assert!(
        matches!(err, Some(ProviderError::Network(_))),
        "expected a network error, got {err:?}"
    );
}

#[tokio::test]
async fn rate_limits_carry_the_retry_after_header() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(429, &fixture("openai/error_429.json")).header("retry-after", "20"),
    );
    match p.generate(&plain_request()).await {
        Err(ProviderError::Http {
            status: 429,
            message,
            retry_after,
        }) => {
            assert!(
                message.starts_with("requests: Rate limit reached"),
                "{message}"
            );
            assert_eq!(retry_after, Some(Duration::from_secs(20)));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn server_errors_keep_their_status_and_message() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(500, &fixture("openai/error_500.json")));
    match p.generate(&plain_request()).await {
        Err(ProviderError::Http {
            status: 500,
            message,
            retry_after: None,
        }) => assert!(message.contains("server_error"), "{message}"),
        other => panic!("{other:?}"),
    }
    // A stream that fails before its first event is the same HTTP error.
    s.enqueue(PATH, Reply::json(500, &fixture("openai/error_500.json")));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(chunks.is_empty());
    assert!(matches!(err, Some(ProviderError::Http { status: 500, .. })));
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors_or_debug_output() {
    let (s, p) = setup().await;
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error"}}}}"#
    );
    s.enqueue(PATH, Reply::json(401, &echo));
    let err = p.generate(&plain_request()).await.unwrap_err();
    let shown = format!("{err} {err:?} {p:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(matches!(err, ProviderError::Http { status: 401, .. }));

    // A connection failure names no URL and no key either.
    let dead = OpenAi::new(KEY).base_url("http://127.0.0.1:9/v1").unwrap();
    let err = dead.generate(&plain_request()).await.unwrap_err();
    assert!(matches!(err, ProviderError::Network(_)), "{err:?}");
    assert!(!err.to_string().contains(KEY));
}

#[tokio::test]
async fn organization_project_headers_and_body_extras_are_sent() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(200, &fixture("openai/chat_plain.json")));
    let p = p
        .organization("org-1")
        .project("proj-1")
        .header("x-trace", "abc")
        .extra("seed", json!(7))
        .extra("model", json!("not-this-one"));
    p.generate(&plain_request()).await.unwrap();
    let r = s.last();
    assert_eq!(r.header("openai-organization"), Some("org-1"));
    assert_eq!(r.header("openai-project"), Some("proj-1"));
    assert_eq!(r.header("x-trace"), Some("abc"));
    assert_eq!(r.body["seed"], 7);
    assert_eq!(
        r.body["model"], "gpt-4o-mini",
        "extras never override the request"
    );
}
