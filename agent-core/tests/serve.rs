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
