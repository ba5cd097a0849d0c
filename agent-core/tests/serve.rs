//! `agent_core::serve` over an agent of its own (not the server example's): each
//! protocol refuses another principal's session, only the operator decides a waiting
//! call, and the decided call runs once. Plain HTTP over a real socket; the protocol
//! clients themselves are checked in `examples/tests/protocols.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::prelude::*;
use agent_core::serve::{BearerTokens, Server};
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The payment's receipt
    receipt: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    /// Amount in cents
    cents: u64,
}

/// One HTTP/1.0 exchange as `token`: the status and the body.
fn http(port: u16, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_agent_is_served_behind_authentication_and_only_the_operator_decides() {
    let p = ScriptedProvider::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let pay = FnTool::new(
        "pay",
        "Charge the card.",
        move |_: ToolCx<Order, ()>, a: Amount| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(format!("charged {} cents", a.cents)))
            }
        },
    )
    .needs_approval()
    // The model converts the euros the user names into cents.
    .derived_args(["cents"]);
    let agent: Agent<Order, ()> = Agent::builder()
        .name("shop")
        .provider(p.clone())
        .tool(pay)
        .build()
        .unwrap();
    let server = Server::builder(agent)
        .auth(
            BearerTokens::new()
                .user("t-ana", "ana")
                .user("t-bob", "bob")
                .operator("t-desk", "desk"),
        )
        .log(|_| {})
        .build()
        .unwrap();
    assert_eq!(server.models(), ["shop"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = server.router();
    let serving = tokio::spawn(async move { agent_core::serve::axum::serve(listener, app).await });
    let call =
        move |token: &'static str, method: &'static str, path: String, body: Option<Value>| {
            tokio::task::spawn_blocking(move || http(port, token, method, &path, body))
        };

    // Ana's payment waits for approval: a tool call, as OpenAI clients expect one.
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let (status, body) = call(
        "t-ana",
        "POST",
        "/v1/chat/completions".into(),
        Some(
            json!({ "model": "shop", "messages": [{ "role": "user", "content": "pay 5 euros" }] }),
        ),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["choices"][0]["finish_reason"], "tool_calls", "{c}");
    let session = c["agent"]["session_id"].as_str().unwrap().to_owned();
    let call_id = c["choices"][0]["message"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Bob reaches Ana's session on no protocol, and does not see it.
    let chat = json!({ "model": "shop", "messages": [{ "role": "user", "content": "hi" }] });
    let (status, body) = tokio::task::spawn_blocking({
        let session = session.clone();
        move || {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let body = chat.to_string();
            write!(
                s,
                "POST /v1/chat/completions HTTP/1.0\r\nAuthorization: Bearer t-bob\r\nx-session-id: {session}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).unwrap();
            let status = answer.split(' ').nth(1).unwrap().parse::<u16>().unwrap();
            (status, answer)
        }
    })
    .await
    .unwrap();
    assert_eq!(status, 403, "OpenAI: {body}");
    let (status, body) = call("t-bob", "GET", format!("/api/sessions/{session}"), None)
        .await
        .unwrap();
    assert_eq!(status, 403, "web: {body}");
    let (status, body) = call(
        "t-bob",
        "POST",
        format!("/api/sessions/{session}/messages"),
        Some(json!({ "text": "hi" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 403, "web: {body}");
    let (status, body) = call(
        "t-bob",
        "POST",
        "/agui".into(),
        Some(json!({ "threadId": session, "runId": "r1",
                     "messages": [{ "id": "m1", "role": "user", "content": "hi" }] })),
    )
    .await
    .unwrap();
    assert_eq!(status, 403, "AG-UI: {body}");
    let (_, body) = call("t-bob", "GET", "/api/sessions".into(), None)
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["sessions"],
        json!([])
    );
    let (_, body) = call("t-ana", "GET", "/api/sessions".into(), None)
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["sessions"],
        json!([session])
    );

    // Ana cannot decide her own call on any protocol; nobody without a token can.
    let approve = json!({ "decision": "approve" });
    for token in ["t-ana", "t-bob"] {
        let (status, body) = call(
            token,
            "POST",
            format!("/api/sessions/{session}/approvals/{call_id}"),
            Some(approve.clone()),
        )
        .await
        .unwrap();
        assert_eq!(status, 403, "{token}: {body}");
    }
    let (status, body) = call(
        "t-ana",
        "POST",
        "/agui".into(),
        Some(json!({ "threadId": session, "runId": "r2", "messages": [],
                     "resume": [{ "interruptId": call_id, "status": "resolved" }] })),
    )
    .await
    .unwrap();
    assert_eq!(status, 403, "AG-UI resume: {body}");
    let (status, body) = call(
        "t-ana",
        "POST",
        "/v1/chat/completions".into(),
        Some(json!({ "model": "shop", "messages": [
            { "role": "user", "content": "pay 5 euros" },
            { "role": "tool", "tool_call_id": call_id, "content": "approve" },
        ] })),
    )
    .await
    .unwrap();
    assert_eq!(status, 403, "OpenAI tool message: {body}");
    let (status, _) = call(
        "no-token",
        "POST",
        format!("/api/sessions/{session}/approvals/{call_id}"),
        Some(approve.clone()),
    )
    .await
    .unwrap();
    assert_eq!(status, 401);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing was charged");

    // The operator approves: the call runs once and the turn resumes.
    p.respond(Answer::message("Paid: 5 euros."));
    let (status, body) = call(
        "t-desk",
        "POST",
        format!("/api/sessions/{session}/approvals/{call_id}"),
        Some(approve),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("event: done"), "{body}");
    assert!(body.contains("Paid: 5 euros."), "{body}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    serving.abort();
}

/// One HTTP/1.0 exchange with extra headers: the status, the head and the body.
fn exchange(port: u16, token: &str, extra: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let extra: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(
        s,
        "POST /v1/responses HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    // A body over the server's limit may be answered before it is all written.
    let _ = s.write_all(body.as_bytes());
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// The `x-session-id` of a response head.
fn session_header(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("x-session-id: "))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The server-sent events of a body: (event name, data).
fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_owned();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            (name, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_api_answers_continues_streams_and_refuses() {
    use agent_core::provider::CallKind;
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Noted, thank you."));
    p.stream_in_chunks(4);
    let pay = FnTool::new(
        "pay",
        "Charge the card.",
        move |_: ToolCx<Order, ()>, a: Amount| async move {
            Ok(ToolOutput::text(format!("charged {} cents", a.cents)))
        },
    )
    .needs_approval()
    .derived_args(["cents"]);
    let agent: Agent<Order, ()> = Agent::builder()
        .name("shop")
        .provider(p.clone())
        .tool(pay)
        .build()
        .unwrap();
    let server = Server::builder(agent)
        .auth(
            BearerTokens::new()
                .user("t-ana", "ana")
                .user("t-bob", "bob"),
        )
        .body_limit(64 * 1024)
        .log(|_| {})
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = server.openai_router();
    let serving = tokio::spawn(async move { agent_core::serve::axum::serve(listener, app).await });
    let post = move |token: &'static str, headers: Vec<(&'static str, String)>, body: String| {
        tokio::task::spawn_blocking(move || {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            exchange(port, token, &h, &body)
        })
    };
    let ask = move |token: &'static str, body: Value| post(token, Vec::new(), body.to_string());

    // A string input, with what the Agents SDK always sends besides.
    let (status, head, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": "Hello there", "instructions": "Be brief.",
                "tools": [], "include": [], "store": false, "truncation": "disabled",
                "temperature": 0.2, "top_p": 1.0, "max_output_tokens": 100,
                "parallel_tool_calls": false, "tool_choice": "auto",
                "text": { "format": { "type": "text" } } }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    let first_id = r["id"].as_str().unwrap().to_owned();
    assert!(first_id.starts_with("resp_"), "{r}");
    assert_eq!(r["object"], "response");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["model"], "shop");
    assert_eq!(r["instructions"], "Be brief.");
    assert!(r["created_at"].as_u64().unwrap() > 0);
    let item = &r["output"][0];
    assert_eq!(item["type"], "message", "{r}");
    assert_eq!(item["role"], "assistant");
    assert!(item["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        item["content"][0],
        json!({ "type": "output_text", "text": "Noted, thank you.", "annotations": [], "logprobs": [] })
    );
    let u = &r["usage"];
    assert!(u["output_tokens"].as_u64().unwrap() > 0, "{u}");
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap()
    );
    let session = session_header(&head);
    assert!(!session.is_empty(), "{head}");
    assert_eq!(r["metadata"]["session_id"], session.as_str());
    assert_eq!(r["agent"]["session_id"], session.as_str());

    // previous_response_id continues that session: the engine has the earlier turn.
    let (status, head, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": [{ "role": "user", "content": "And again" }],
                "previous_response_id": first_id }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_header(&head), session);
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["previous_response_id"], first_id.as_str());
    let seen: Vec<String> = p
        .requests()
        .last()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.content.as_str().to_owned())
        .collect();
    assert!(
        seen.iter().any(|m| m == "Hello there") && seen.iter().any(|m| m == "And again"),
        "{seen:?}"
    );

    // An item list: system and developer items are skipped, `input_text` parts read; the
    // whole history re-sent continues the derived session.
    let opening =
        json!({ "role": "user", "content": [{ "type": "input_text", "text": "Start a list" }] });
    let (status, head, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": [
            { "role": "system", "content": "You are a shop." },
            { "role": "developer", "content": "Answer briefly." },
            opening,
        ] }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let listed = session_header(&head);
    assert_ne!(listed, session, "a new conversation");
    let r: Value = serde_json::from_str(&body).unwrap();
    let (status, head, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": [
            opening,
            r["output"][0],
            { "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "Add milk" }] },
        ] }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        session_header(&head),
        listed,
        "the re-sent history continues"
    );
    // The x-session-id header names the session, as on the chat endpoint.
    let (status, head, body) = post(
        "t-ana",
        vec![("x-session-id", session.clone())],
        json!({ "model": "shop", "input": "By header" }).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_header(&head), session);

    // Streamed: the Responses events in order, numbered from 0.
    let (status, head, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": "Stream it", "stream": true,
                "previous_response_id": first_id }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert_eq!(session_header(&head), session);
    let events = sse_events(&body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    let deltas = names
        .iter()
        .filter(|n| **n == "response.output_text.delta")
        .count();
    assert!(deltas >= 2, "not streamed: {names:?}");
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    expected.extend(std::iter::repeat_n("response.output_text.delta", deltas));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names, expected);
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], name.as_str(), "{data}");
        assert_eq!(data["sequence_number"], i, "{data}");
    }
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Noted, thank you.");
    assert_eq!(events[events.len() - 4].1["text"], "Noted, thank you.");
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Noted, thank you.");
    assert_eq!(done["metadata"]["session_id"], session.as_str());
    assert!(done["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // Refusals, each naming what is wrong.
    let long = "a".repeat(40_000);
    for (name, request, status, code, param) in [
        (
            "unknown model",
            json!({ "model": "gpt-4o", "input": "hi" }),
            404,
            "model_not_found",
            "model",
        ),
        (
            "tools",
            json!({ "model": "shop", "input": "hi", "tools": [
                { "type": "function", "name": "f", "parameters": { "type": "object" } }] }),
            400,
            "unsupported_parameter",
            "tools",
        ),
        (
            "long message",
            json!({ "model": "shop", "input": long }),
            400,
            "string_above_max_length",
            "input",
        ),
        (
            "unknown previous response",
            json!({ "model": "shop", "input": "hi", "previous_response_id": "resp_nope" }),
            404,
            "previous_response_not_found",
            "previous_response_id",
        ),
        (
            "no user message",
            json!({ "model": "shop", "input": [{ "role": "system", "content": "x" }] }),
            400,
            "missing_required_parameter",
            "input",
        ),
        (
            "structured output",
            json!({ "model": "shop", "input": "hi",
                    "text": { "format": { "type": "json_object" } } }),
            400,
            "unsupported_value",
            "text.format",
        ),
    ] {
        let (got, _, body) = ask("t-ana", request).await.unwrap();
        assert_eq!(got, status, "{name}: {body}");
        let e: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(e["error"]["code"], code, "{name}: {e}");
        assert_eq!(e["error"]["param"], param, "{name}: {e}");
        assert!(e["error"]["message"].as_str().unwrap().len() > 10, "{e}");
        assert!(e["error"]["type"].is_string(), "{e}");
    }
    let huge = json!({ "model": "shop", "input": [
        { "role": "assistant", "content": "b".repeat(100_000) },
        { "role": "user", "content": "hi" }] });
    let (got, _, body) = ask("t-ana", huge).await.unwrap();
    assert_eq!(got, 413, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        "request_too_large"
    );
    // Another principal's response id; a wrong token.
    let (got, _, body) = ask(
        "t-bob",
        json!({ "model": "shop", "input": "hi", "previous_response_id": first_id }),
    )
    .await
    .unwrap();
    assert_eq!(got, 403, "{body}");
    let (got, head, _) = ask("t-wrong", json!({ "model": "shop", "input": "hi" }))
        .await
        .unwrap();
    assert_eq!(got, 401);
    assert!(head.contains("www-authenticate: bearer"), "{head}");

    // A payment held for approval is not reported as done: `incomplete`, and a message
    // while it waits runs no turn.
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let (status, _, body) = ask("t-ana", json!({ "model": "shop", "input": "Pay 5 euros" }))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["status"], "incomplete", "{r}");
    assert_eq!(r["incomplete_details"]["reason"], "awaiting_approval");
    assert_eq!(r["completed_at"], Value::Null);
    assert_eq!(r["agent"]["awaiting_approval"][0]["tool"], "pay", "{r}");
    let calls = p.calls();
    let (status, _, body) = ask(
        "t-ana",
        json!({ "model": "shop", "input": "Is it paid?", "stream": true,
                "previous_response_id": r["id"] }),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(p.calls(), calls, "no turn ran");
    let events = sse_events(&body);
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "response.incomplete");
    assert_eq!(
        data["response"]["incomplete_details"]["reason"],
        "awaiting_approval"
    );
    assert!(
        data["response"]["output"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("will run once approved"),
        "{data}"
    );
    serving.abort();
}
