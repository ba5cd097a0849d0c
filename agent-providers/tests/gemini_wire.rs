//! Google Gemini against answers and SSE streams in Gemini's format, served over HTTP on
//! 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, Message, Provider, StreamChunk, Usage};
use agent_providers::{Gemini, StreamDelta};
use serde_json::{Value, json};
use support::server::{FixtureServer, Reply};
use support::*;

const KEY: &str = "AIza-test-0123456789";
const PATH: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
const STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

async fn setup() -> (FixtureServer, Gemini) {
    let s = FixtureServer::start().await;
    let p = Gemini::new(KEY)
        .base_url(&format!("{}/v1beta", s.url()))
        .unwrap();
    (s, p)
}

#[tokio::test]
async fn a_plain_reply_parses_and_the_key_travels_in_a_header() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("gemini/generate_plain.json")),
    );
    let r = p.generate(&plain_request()).await.unwrap();
    assert_eq!(r.content, "Hello! Which city would you like to stay in?");
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(r.id.as_deref(), Some("pY3QaPnKL4Wqz7IPsJ-O6Q0"));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 18,
            output_tokens: 27,
            cached_input_tokens: 0,
        },
        "thinking tokens are output"
    );
    let req = s.last();
    assert_eq!(req.header("x-goog-api-key"), Some(KEY));
    assert_eq!(req.query, None, "never ?key=");
    let b = &req.body;
    assert_eq!(
        b["systemInstruction"],
        json!({ "parts": [{ "text": "You are a hotel concierge." }] })
    );
    assert_eq!(
        b["contents"],
        json!([{ "role": "user", "parts": [{ "text": "Hi" }] }])
    );
    assert_eq!(
        b["generationConfig"],
        json!({ "maxOutputTokens": 64, "temperature": 0.0 })
    );
}

#[tokio::test]
async fn history_tools_and_the_schema_are_sent_as_contents_declarations_and_json_schema() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("gemini/generate_structured.json")),
    );
    let r = p.generate(&full_request()).await.unwrap();
    let out: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(out["data"]["city"], "Lisbon");

    let b = s.last().body;
    let contents = b["contents"].as_array().unwrap();
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "model", "user", "model", "user"]);
    assert_eq!(
        contents[3]["parts"],
        json!([{ "functionCall": { "id": "call_1", "name": "book_room", "args": { "hotel": "Grand" } } }])
    );
    assert_eq!(
        contents[4]["parts"],
        json!([{ "functionResponse": { "id": "call_1", "name": "book_room",
                                       "response": { "result": "booked BK-5" } } }])
    );
    assert_eq!(
        b["tools"],
        json!([{ "functionDeclarations": [{ "name": "book_room", "description": "Book the room.",
                                            "parametersJsonSchema": book_room_spec().parameters }] }])
    );
    assert_eq!(
        b["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(b["generationConfig"]["responseJsonSchema"], turn_schema());
    assert_eq!(b["generationConfig"]["maxOutputTokens"], 256);
}

#[tokio::test]
async fn function_calls_keep_their_thought_signatures_for_the_next_request() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("gemini/generate_function_call.json")),
    );
    let r = p.generate(&tool_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::ToolCalls);
    assert_eq!(r.tool_calls.len(), 2);
    assert_eq!(r.tool_calls[0].name, "book_room");
    assert_eq!(r.tool_calls[0].arguments, json!({ "hotel": "Grand" }));
    assert_eq!(r.tool_calls[1].id, "fc-2");

    // The engine sends the calls back with their results: the signature returns with
    // the call, the made-up id does not go out, results are named after their calls.
    let mut req = tool_request();
    let mut assistant = Message::assistant("");
    assistant.tool_calls = r.tool_calls.clone();
    req.messages.push(assistant);
    for c in &r.tool_calls {
        req.messages
            .push(Message::tool(c.id.clone(), "{\"id\": \"BK-5\"}"));
    }
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("gemini/generate_plain.json")),
    );
    p.generate(&req).await.unwrap();
    let b = s.last().body;
    let model_turn = &b["contents"][1]["parts"];
    assert_eq!(
        model_turn[0]["thoughtSignature"],
        "CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwc75DfQOwZQ=="
    );
    assert!(model_turn[0]["functionCall"].get("id").is_none());
    assert_eq!(model_turn[1]["functionCall"]["id"], "fc-2");
    let results = &b["contents"][2]["parts"];
    assert_eq!(
        results.as_array().unwrap().len(),
        2,
        "parallel results share a turn"
    );
    assert_eq!(results[0]["functionResponse"]["name"], "book_room");
    assert_eq!(
        results[0]["functionResponse"]["response"],
        json!({ "id": "BK-5" })
    );
}

#[tokio::test]
async fn a_blocked_prompt_is_a_content_filter_answer() {
    let (s, p) = setup().await;
    s.enqueue(
        PATH,
        Reply::json(200, &fixture("gemini/generate_blocked.json")),
    );
    let r = p.generate(&plain_request()).await.unwrap();
    assert_eq!(r.finish, FinishReason::ContentFilter);
    assert_eq!(r.content, "");
}

#[tokio::test]
async fn streamed_chunks_become_text_deltas() {
    let (s, p) = setup().await;
    s.enqueue(STREAM, Reply::sse(&fixture("gemini/stream_text.sse")));
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
    assert_eq!(done.usage.output_tokens, 5);
    assert_eq!(s.last().query.as_deref(), Some("alt=sse"));
}

#[tokio::test]
async fn streamed_function_calls_arrive_whole_as_deltas() {
    let (s, p) = setup().await;
    s.enqueue(
        STREAM,
        Reply::sse(&fixture("gemini/stream_function_call.sse")),
    );
    let req = tool_request();
    let (deltas, err) = collect(p.stream_deltas(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(&deltas[0], StreamDelta::ToolCallStart { name, .. } if name == "book_room"));
    assert_eq!(
        deltas[1],
        StreamDelta::ToolCallArguments {
            index: 0,
            fragment: r#"{"hotel":"Grand"}"#.into()
        }
    );
    let Some(StreamDelta::Done(done)) = deltas.last() else {
        panic!()
    };
    assert_eq!(done.finish, FinishReason::ToolCalls);
    assert!(done.tool_calls[0].id.ends_with("#sig=CiQB0e2Kb3dR"));
}

#[tokio::test]
async fn a_stream_that_ends_without_a_finish_reason_is_an_error() {
    let (s, p) = setup().await;
    s.enqueue(STREAM, Reply::sse(&fixture("gemini/stream_cut.sse")));
    let req = plain_request();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert_eq!(chunks.len(), 2);
    assert!(matches!(err, Some(ProviderError::Network(_))), "{err:?}");

    s.enqueue(
        STREAM,
        Reply::sse_cut(&fixture("gemini/stream_text.sse"), 1),
    );
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert_eq!(chunks, [StreamChunk::Text("Hello".into())]);
    assert!(matches!(err, Some(ProviderError::Network(_))), "{err:?}");
}

#[tokio::test]
async fn errors_keep_status_and_the_retry_info_delay() {
    let (s, p) = setup().await;
    s.enqueue(PATH, Reply::json(429, &fixture("gemini/error_429.json")));
    s.enqueue(PATH, Reply::json(503, &fixture("gemini/error_503.json")));
    s.enqueue(PATH, Reply::json(400, &fixture("gemini/error_400.json")));
    let req = plain_request();
    match p.generate(&req).await {
        Err(ProviderError::Http {
            status: 429,
            message,
            retry_after,
        }) => {
            assert!(message.starts_with("RESOURCE_EXHAUSTED"), "{message}");
            assert_eq!(retry_after, Some(Duration::from_secs(2)));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        p.generate(&req).await,
        Err(ProviderError::Http { status: 503, .. })
    ));
    assert!(matches!(
        p.generate(&req).await,
        Err(ProviderError::Http { status: 400, .. })
    ));
}
