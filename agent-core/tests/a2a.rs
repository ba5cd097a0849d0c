//! `agent_core::serve`'s A2A endpoint (feature `a2a`), driven by the official A2A SDK
//! (`a2a-sdk` from PyPI, pinned and installed by `scripts/protocols.sh`, which exports
//! `AGENT_A2A_PYTHON`): `a2a_client.py` resolves the agent card, sends messages (a new
//! task, a continued context, a task pending approval as `input-required`), reads a
//! task, is refused for another user and without a token, and streams a message.
//!
//! Without `AGENT_A2A_PYTHON` the SDK test says it is skipped and passes, except under
//! `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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

/// The SDK's Python, or `None` (skipped) outside CI when scripts/protocols.sh has not
/// been run.
fn python(test: &str) -> Option<String> {
    match std::env::var("AGENT_A2A_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "AGENT_A2A_PYTHON is unset under CI: run `eval \"$(bash scripts/protocols.sh)\"` first"
            )
        }
        _ => {
            eprintln!(
                "{test}: skipped: run scripts/protocols.sh (eval \"$(bash scripts/protocols.sh)\")"
            );
            None
        }
    }
}

/// The shop: `pay` waits for a person's approval and counts its runs.
fn shop(p: &ScriptedProvider, runs: &Arc<AtomicUsize>) -> Server<Order, ()> {
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
    .derived_args(["cents"]);
    let agent: Agent<Order, ()> = Agent::builder()
        .name("shop")
        .provider(p.clone())
        .tool(pay)
        .build()
        .unwrap();
    Server::builder(agent)
        .auth(
            BearerTokens::new()
                .user("t-ana", "ana")
                .user("t-bob", "bob")
                .operator("t-desk", "desk"),
        )
        .log(|_| {})
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_a2a_sdk_talks_to_the_agent() {
    let Some(python) = python("the_official_a2a_sdk_talks_to_the_agent") else {
        return;
    };
    let p = ScriptedProvider::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = shop(&p, &runs);
    p.respond(Answer::message("Hello Ana, what shall I do?"));
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    p.respond(Answer::message("Hello again, Ana."));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let app = server.a2a_router();
    let serving = tokio::spawn(async move { agent_core::serve::axum::serve(listener, app).await });

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a_client.py");
    let base_url = base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .arg(script)
            .arg(&base_url)
            .arg("t-ana")
            .arg("t-bob")
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\nstderr:\n{stderr}");
    let r: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("no JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));

    // The card names the agent, its endpoint and streaming.
    assert_eq!(r["card"]["name"], "shop", "{r}");
    assert_eq!(r["card"]["interfaces"][0][0], format!("{base}/a2a"), "{r}");
    assert_eq!(r["card"]["interfaces"][0][1], "JSONRPC");
    assert_eq!(r["card"]["interfaces"][0][2], "1.0");
    assert_eq!(r["card"]["streaming"], true);

    // A message is a task; the context carries the conversation.
    let first = &r["first"];
    assert_eq!(first["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(first["status_text"], "Hello Ana, what shall I do?");
    assert_eq!(first["artifacts"], json!(["Hello Ana, what shall I do?"]));
    assert_eq!(first["history"], 2);
    let second = &r["second"];
    assert_eq!(second["context_id"], first["context_id"], "{r}");
    assert_ne!(second["id"], first["id"]);
    assert_eq!(second["metadata"]["session_id"], first["context_id"]);
    let request = format!("{:?}", p.requests()[1]);
    assert!(
        request.contains("hello"),
        "the context's earlier turn: {request}"
    );

    // The payment waits: input-required, naming the pending call, which has not run.
    assert_eq!(second["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let pending = &second["metadata"]["awaiting_approval"];
    assert_eq!(pending[0]["tool"], "pay", "{r}");
    let call = pending[0]["id"].as_str().unwrap();
    let said = second["status_text"].as_str().unwrap();
    assert!(
        said.contains(call) && said.contains("has not run"),
        "{said}"
    );
    // A "yes" on the task runs no turn and decides nothing.
    assert_eq!(r["yes"]["id"], second["id"]);
    assert_eq!(r["yes"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    assert!(r["yes"]["status_text"].as_str().unwrap().contains(call));
    assert_eq!(r["get"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    assert_eq!(r["get"]["history"], 4, "{r}");
    assert_eq!(r["get"]["artifacts"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Another user and a caller without a token are refused.
    assert!(r["bob_send"].is_string(), "{r}");
    assert!(
        r["bob_get"].as_str().unwrap().contains("TaskNotFound"),
        "{r}"
    );
    assert!(r["nobody"].is_string(), "{r}");

    // Streamed: the task, the reply's chunks, then the final status.
    let stream = &r["stream"];
    assert_eq!(stream["kinds"][0], "task", "{r}");
    assert_eq!(
        stream["kinds"].as_array().unwrap().last().unwrap(),
        "status_update"
    );
    assert_eq!(stream["text"], "Hello again, Ana.", "{r}");
    assert_eq!(stream["final"], "TASK_STATE_COMPLETED");
    assert_eq!(
        p.calls(),
        3,
        "no turn ran for the refused or waiting messages"
    );
    serving.abort();
}

/// The JSON-RPC endpoint without the SDK: a waiting call is decided by the operator on
/// another route, and the context continues after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_pending_approval_is_input_required_and_only_tasks_of_the_caller_are_read() {
    let p = ScriptedProvider::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let server = shop(&p, &runs);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = server.a2a_router();
    let serving = tokio::spawn(async move { agent_core::serve::axum::serve(listener, app).await });
    let rpc_as = |token: &'static str, version: &'static str, method: &str, params: Value| {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        async move {
            let (status, body) =
                tokio::task::spawn_blocking(move || http(port, token, version, &body))
                    .await
                    .unwrap();
            (
                status,
                serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
            )
        }
    };
    let rpc =
        |token: &'static str, method: &str, params: Value| rpc_as(token, "1.0", method, params);
    let send = |text: &str, context: Option<&str>| {
        let mut m = json!({ "messageId": "m", "role": "ROLE_USER", "parts": [{ "text": text }] });
        if let Some(c) = context {
            m["contextId"] = json!(c);
        }
        json!({ "message": m })
    };
    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let (status, r) = rpc("t-ana", "SendMessage", send("pay 5 euros", None)).await;
    assert_eq!(status, 200, "{r}");
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let context = task["contextId"].as_str().unwrap().to_owned();
    let call = task["metadata"]["awaiting_approval"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The operator decides through the agent (any route of the server does the same).
    p.respond(Answer::message("Paid: 5 euros."));
    server
        .agent()
        .resolve_approval(&context, &call, agent_core::approval::Decision::Approve)
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    p.respond(Answer::message("Anything else?"));
    let (_, r) = rpc("t-ana", "SendMessage", send("thanks", Some(&context))).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    // Bob neither reads Ana's task nor writes in her context.
    let task_id = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (_, r) = rpc("t-bob", "GetTask", json!({ "id": task_id })).await;
    assert_eq!(r["error"]["code"], -32001, "{r}");
    let (status, r) = rpc("t-bob", "SendMessage", send("hi", Some(&context))).await;
    assert_eq!(status, 403, "{r}");
    let (status, _) = rpc("t-none", "SendMessage", send("hi", None)).await;
    assert_eq!(status, 401);
    let (_, r) = rpc("t-ana", "tasks/resubscribe", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let (_, r) = rpc_as("t-ana", "0.3", "SendMessage", send("hi", None)).await;
    assert_eq!(r["error"]["code"], -32009, "{r}");
    serving.abort();
}

/// One HTTP/1.0 `POST /a2a` as `token`, naming A2A `version`: the status and the body.
fn http(port: u16, token: &str, version: &str, body: &Value) -> (u16, String) {
    use std::io::{Read, Write};
    let body = body.to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "POST /a2a HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nA2A-Version: {version}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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
