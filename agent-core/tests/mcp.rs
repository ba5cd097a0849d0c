//! MCP tools (issue 17, item 1) against the reference server
//! `@modelcontextprotocol/server-everything`, on both transports: its tools become agent
//! tools with their schemas, a turn calls one and the model sees the result, and a lost
//! server, a slow tool or an unknown tool is a failed tool result (or a typed error
//! before `build()`), never a failed turn.
//!
//! Needs the server: `eval "$(bash scripts/mcp.sh)"` sets `AGENT_MCP_EVERYTHING` (its
//! entry script, run with `node`). Without it each test prints "skipped" and passes,
//! except under `CI=true`, where it fails.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_core::mcp::{McpConnection, McpError, McpServer};
use agent_core::prelude::*;
use agent_core::provider::Role;
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::json;

/// The server's entry script, or `None` (test skipped) when it is not installed.
fn everything() -> Option<String> {
    match std::env::var("AGENT_MCP_EVERYTHING") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "AGENT_MCP_EVERYTHING is unset under CI: run `eval \"$(bash scripts/mcp.sh)\"` before the tests"
        ),
        _ => {
            eprintln!("skipped: run scripts/mcp.sh (eval \"$(bash scripts/mcp.sh)\")");
            None
        }
    }
}

fn stdio(entry: &str) -> McpServer {
    McpServer::stdio("everything", "node").arg(entry).quiet()
}

/// The server on streamable HTTP, on a free port; killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(entry: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The tool results the model was shown in its last call.
fn shown_results(p: &ScriptedProvider) -> Vec<String> {
    p.last_request()
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.to_string())
        .collect()
}

fn agent(p: &ScriptedProvider, mcp: &McpConnection) -> Agent<(), ()> {
    Agent::builder()
        .provider(p.clone())
        .tool(mcp.tool("echo").unwrap())
        .build()
        .unwrap()
}

/// Tools listed with their schemas; a turn that calls `echo` shows the model its result.
async fn tools_and_a_turn(mcp: &McpConnection) {
    let names = mcp.tool_names();
    for t in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }

    // The schema of `get-sum` is passed through as the tool's parameters.
    let sum = mcp.tool("get-sum").unwrap();
    assert_eq!(Tool::<(), ()>::name(&sum), "everything__get-sum");
    assert_eq!(sum.remote_name(), "get-sum");
    assert_eq!(
        Tool::<(), ()>::description(&sum),
        "Returns the sum of two numbers"
    );
    let params = Tool::<(), ()>::parameters(&sum);
    assert_eq!(params["type"], "object");
    assert_eq!(params["properties"]["a"]["type"], "number");
    assert_eq!(params["properties"]["b"]["type"], "number");
    assert_eq!(params["required"], json!(["a", "b"]));
    assert!(params.get("$schema").is_none());
    assert_eq!(Tool::<(), ()>::effect(&sum), Effect::Idempotent);
    assert!(Tool::<(), ()>::concurrency_safe(&sum), "marked read-only");
    let out = sum.call_detached(json!({ "a": 2, "b": 3 })).await.unwrap();
    assert!(out.content.contains('5'), "{}", out.content);

    // A turn: the model calls the echo tool and sees its result.
    let p = ScriptedProvider::new();
    p.respond(Answer::tool("everything__echo", json!({ "message": "hi" })));
    p.tool_round(Answer::message("done"));
    let r = agent(&p, mcp).respond("s", "echo hi").await.unwrap();
    assert_eq!(r.message, "done");
    assert_eq!(r.tool_calls.len(), 1);
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls[0]);
    assert_eq!(r.tool_calls[0].name, "everything__echo");
    assert_eq!(shown_results(&p), ["Echo: hi"]);
    let offered = &p.requests()[0].tools;
    let echo = offered
        .iter()
        .find(|t| t.name == "everything__echo")
        .unwrap();
    assert_eq!(echo.parameters["properties"]["message"]["type"], "string");
}

#[tokio::test]
async fn stdio_server_tools_are_agent_tools() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).connect().await.unwrap();
    assert!(mcp.process_id().await.is_some());
    tools_and_a_turn(&mcp).await;
}

#[tokio::test]
async fn streamable_http_server_tools_are_agent_tools() {
    let Some(entry) = everything() else { return };
    let server = HttpServer::start(&entry);
    let mcp = McpServer::http("everything", &server.url)
        .connect()
        .await
        .unwrap();
    assert_eq!(mcp.process_id().await, None);
    tools_and_a_turn(&mcp).await;
}

#[tokio::test]
async fn a_lost_http_server_is_a_failed_tool_result_not_a_failed_turn() {
    let Some(entry) = everything() else { return };
    let mut server = HttpServer::start(&entry);
    let mcp = McpServer::http("everything", &server.url)
        .timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    server.kill();

    let p = ScriptedProvider::new();
    p.respond(Answer::tool("everything__echo", json!({ "message": "hi" })));
    p.tool_round(Answer::message("The echo service is down."));
    let r = agent(&p, &mcp).respond("s", "echo hi").await.unwrap();
    assert_eq!(r.message, "The echo service is down.");
    assert_eq!(r.tool_calls.len(), 1);
    let call = &r.tool_calls[0];
    eprintln!("the model read: {}", call.output);
    assert!(!call.ok, "{call:?}");
    assert!(
        call.output.contains("MCP server `everything`"),
        "the result names the server: {}",
        call.output
    );
    assert_eq!(shown_results(&p), std::slice::from_ref(&call.output));
}

#[tokio::test]
async fn a_killed_stdio_server_is_started_again_on_the_next_call() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).connect().await.unwrap();
    let first = mcp.process_id().await.unwrap();
    let echo = mcp.tool("echo").unwrap();
    assert_eq!(
        echo.call_detached(json!({ "message": "a" }))
            .await
            .unwrap()
            .content,
        "Echo: a"
    );
    kill(first);
    wait_until_disconnected(&mcp).await;
    let out = echo.call_detached(json!({ "message": "b" })).await.unwrap();
    assert_eq!(out.content, "Echo: b");
    let second = mcp.process_id().await.unwrap();
    assert_ne!(first, second, "a new server process");
}

#[tokio::test]
async fn without_reconnect_a_killed_stdio_server_fails_each_call_clearly() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).reconnect(false).connect().await.unwrap();
    kill(mcp.process_id().await.unwrap());
    wait_until_disconnected(&mcp).await;

    let p = ScriptedProvider::new();
    p.respond(Answer::tool("everything__echo", json!({ "message": "hi" })));
    p.tool_round(Answer::message("Sorry."));
    let r = agent(&p, &mcp).respond("s", "echo hi").await.unwrap();
    let call = &r.tool_calls[0];
    eprintln!("the model read: {}", call.output);
    assert!(!call.ok);
    assert!(
        call.output
            .contains("connection to MCP server `everything` is closed"),
        "{}",
        call.output
    );
}

#[tokio::test]
async fn a_slow_tool_times_out_as_a_failed_tool_result() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry)
        .timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let p = ScriptedProvider::new();
    p.respond(Answer::tool(
        "everything__trigger-long-running-operation",
        json!({ "duration": 5, "steps": 1 }),
    ));
    p.tool_round(Answer::message("It took too long."));
    let a: Agent<(), ()> = Agent::builder()
        .provider(p.clone())
        .tools_of(&mcp)
        .build()
        .unwrap();
    let started = Instant::now();
    let r = a.respond("s", "run it").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "not waited out");
    let call = &r.tool_calls[0];
    assert!(!call.ok);
    assert!(
        call.output.contains("timed out after 500 ms"),
        "{}",
        call.output
    );
    // The session is still usable afterwards.
    let out = mcp
        .tool("echo")
        .unwrap()
        .call_detached(json!({ "message": "still here" }))
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: still here");
}

#[tokio::test]
async fn tools_are_picked_by_server_name_and_checked_at_build() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).prefix("ev").connect().await.unwrap();
    match mcp.tool("ech") {
        Err(McpError::UnknownTool {
            server, available, ..
        }) => {
            assert_eq!(server, "everything");
            assert!(available.iter().any(|t| t == "echo"));
        }
        other => panic!("expected UnknownTool, got {other:?}"),
    }

    // Scoped to one step; `requires_tool` is checked against what that step offers.
    let p = ScriptedProvider::new();
    let built: Result<Agent<(), ()>, _> = Agent::builder()
        .provider(p.clone())
        .flow(
            Flow::builder("f")
                .step(
                    Step::model("s")
                        .prompt("Echo.")
                        .tool(mcp.tool("echo").unwrap())
                        .requires_tool("ev__get-sum"),
                )
                .build()
                .unwrap(),
        )
        .build();
    let errs = built.err().expect("build fails").to_string();
    assert!(errs.contains("requires_tool(ev__get-sum)"), "{errs}");

    let ok: Result<Agent<(), ()>, _> = Agent::builder()
        .provider(p)
        .flow(
            Flow::builder("f")
                .step(
                    Step::model("s")
                        .prompt("Echo.")
                        .tool(mcp.tool("echo").unwrap())
                        .requires_tool("ev__echo"),
                )
                .build()
                .unwrap(),
        )
        .build();
    assert!(ok.is_ok());
}

/// SIGKILL a process (test helper; the pid is the server this test started).
fn kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn wait_until_disconnected(mcp: &McpConnection) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while mcp.is_connected().await {
        assert!(Instant::now() < deadline, "the session never noticed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
