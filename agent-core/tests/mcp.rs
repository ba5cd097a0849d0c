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
        Self::start_on(entry, port)
    }

    /// The server on `port` (a restarted server on the port of the one before).
    fn start_on(entry: &str, port: u16) -> Self {
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

    fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
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
        .trusted()
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

/// A free local port nothing listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A streamable-HTTP server restarted under the client (a new process on the same
/// port, knowing none of the old sessions): the next call opens a new session and
/// succeeds at once instead of waiting out its time limit; while the server is down, a
/// call fails at once saying the connection was refused and that the tool did not run.
#[tokio::test]
async fn a_restarted_http_server_gets_a_new_session_on_the_next_call() {
    let Some(entry) = everything() else { return };
    let mut server = HttpServer::start(&entry);
    let port = server.port();
    let mcp = McpServer::http("everything", &server.url)
        .timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    let echo = mcp.tool("echo").unwrap();
    assert_eq!(
        echo.call_detached(json!({ "message": "a" }))
            .await
            .unwrap()
            .content,
        "Echo: a"
    );

    // Restarted: the old session id is unknown to the new process.
    server.kill();
    let mut server = HttpServer::start_on(&entry, port);
    let started = Instant::now();
    let out = echo.call_detached(json!({ "message": "b" })).await.unwrap();
    assert_eq!(out.content, "Echo: b");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "recovered in {:?}",
        started.elapsed()
    );
    let out = echo.call_detached(json!({ "message": "c" })).await.unwrap();
    assert_eq!(out.content, "Echo: c");

    // Down: a clear, quick failure that says the tool did not run.
    server.kill();
    let started = Instant::now();
    let e = echo
        .call_detached(json!({ "message": "d" }))
        .await
        .unwrap_err()
        .to_string();
    eprintln!("while down: {e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(e.contains("MCP server `everything`"), "{e}");
    assert!(e.contains("connection refused"), "{e}");
    assert!(e.contains("did not run"), "{e}");
    assert!(!e.contains("rmcp::"), "no Rust type names: {e}");

    // Back: the next call opens a session again.
    let _server = HttpServer::start_on(&entry, port);
    let started = Instant::now();
    let out = echo.call_detached(json!({ "message": "e" })).await.unwrap();
    assert_eq!(out.content, "Echo: e");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A call with side effects whose connection breaks while it runs is not sent again,
/// even when the server is back at once: it may have run.
#[tokio::test]
async fn a_call_with_effects_cut_off_mid_way_is_not_sent_again() {
    let Some(entry) = everything() else { return };
    let mut server = HttpServer::start(&entry);
    let port = server.port();
    let mcp = McpServer::http("everything", &server.url)
        .timeout(Duration::from_secs(20))
        .trusted()
        .connect()
        .await
        .unwrap();
    // The server annotates it read-only; the application says it must not run twice.
    let long = mcp.tool("trigger-long-running-operation").unwrap();
    assert!(long.read_only());
    let once = long.clone().effect(Effect::Once);
    let call = tokio::spawn(async move {
        once.call_detached(json!({ "duration": 3, "steps": 1 }))
            .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.kill();
    let mut server = HttpServer::start_on(&entry, port);
    let started = Instant::now();
    let e = call.await.unwrap().unwrap_err().to_string();
    eprintln!("cut off: {e} (after {:?})", started.elapsed());
    assert!(e.contains("may or may not have run"), "{e}");
    assert!(!e.contains("rmcp::"), "{e}");
    let echo = mcp.tool("echo").unwrap();
    let out = echo
        .call_detached(json!({ "message": "after" }))
        .await
        .unwrap();
    assert_eq!(out.content, "Echo: after");

    // A read-only call cut off the same way is sent again on a new session.
    let call = tokio::spawn(async move {
        long.call_detached(json!({ "duration": 2, "steps": 1 }))
            .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.kill();
    let _server = HttpServer::start_on(&entry, port);
    let out = call.await.unwrap();
    eprintln!("read-only, cut off: {out:?}");
    assert!(out.unwrap().content.contains("completed"));
}

/// An URL nothing answers at, or one that is not an MCP endpoint: a typed error that
/// names the URL and the cause in words.
#[tokio::test]
async fn an_unreachable_url_names_the_url_and_the_cause() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let e = McpServer::http("nowhere", &url)
        .connect()
        .await
        .unwrap_err();
    let text = e.to_string();
    eprintln!("{text}");
    match &e {
        McpError::Unreachable {
            server,
            url: u,
            cause,
        } => {
            assert_eq!(server, "nowhere");
            assert_eq!(u, &url);
            assert_eq!(cause, "connection refused");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(text.contains(&url), "{text}");
    assert!(
        !text.contains("rmcp::") && !text.contains("reqwest::"),
        "{text}"
    );

    let Some(entry) = everything() else { return };
    let server = HttpServer::start(&entry);
    let wrong = server.url.replace("/mcp", "/not-mcp");
    let e = McpServer::http("everything", &wrong)
        .connect()
        .await
        .unwrap_err()
        .to_string();
    eprintln!("{e}");
    assert!(e.contains(&wrong), "{e}");
    assert!(e.contains("404"), "{e}");
    assert!(!e.contains("rmcp::") && !e.contains("reqwest::"), "{e}");
}

/// `structuredContent` is JSON on the tool output (the model reads the text); an image
/// is on the output's images, and the model reads a line saying there is one.
#[tokio::test]
async fn structured_content_and_images_are_on_the_tool_output() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).connect().await.unwrap();
    let weather = mcp.tool("get-structured-content").unwrap();
    let out = weather
        .call_detached(json!({ "location": "Chicago" }))
        .await
        .unwrap();
    let s = out.structured.expect("structured content");
    assert_eq!(s["temperature"], 36);
    assert_eq!(s["conditions"], "Light rain / drizzle");
    assert!(out.content.contains("drizzle"), "{}", out.content);

    let image = mcp.tool("get-tiny-image").unwrap();
    let out = image.call_detached(json!({})).await.unwrap();
    assert_eq!(out.images.len(), 1);
    assert_eq!(out.images[0].mime_type, "image/png");
    assert!(!out.images[0].is_empty());
    assert!(out.content.contains("[image: image/png"), "{}", out.content);
}

/// The server's instructions are kept and reach the prompt through `tools_of`.
#[tokio::test]
async fn the_servers_instructions_reach_the_prompt() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).trusted().connect().await.unwrap();
    let text = mcp
        .instructions()
        .expect("server-everything gives instructions");
    assert!(text.contains("Everything Server"), "{text}");
    let p = ScriptedProvider::new();
    p.respond(Answer::message("Hello."));
    let a: Agent<(), ()> = Agent::builder()
        .provider(p.clone())
        .tools_of(&mcp)
        .build()
        .unwrap();
    a.respond("s", "hi").await.unwrap();
    let system = p.last_request().unwrap().instructions();
    assert!(
        system.contains(
            "Instructions of the MCP server `everything` (its tools are named `everything__…`)"
        ),
        "{system}"
    );
    assert!(system.contains("Everything Server"), "{system}");
}

/// Roots are declared only when configured, and then served; sampling and elicitation
/// are never declared, so the server offers none of its tools that need them.
#[tokio::test]
async fn roots_are_declared_when_configured_and_nothing_else_is_claimed() {
    let Some(entry) = everything() else { return };
    let plain = stdio(&entry).connect().await.unwrap();
    let names = plain.tool_names();
    assert!(!names.contains(&"get-roots-list"), "{names:?}");
    for t in ["trigger-sampling-request", "trigger-elicitation-request"] {
        assert!(!names.contains(&t), "{t} offered: {names:?}");
    }

    let with_roots = stdio(&entry)
        .root("file:///tmp/agent-mcp-root", "workspace")
        .connect()
        .await
        .unwrap();
    let names = with_roots.tool_names();
    assert!(names.contains(&"get-roots-list"), "{names:?}");
    assert!(!names.contains(&"trigger-sampling-request"), "{names:?}");
    let out = with_roots
        .tool("get-roots-list")
        .unwrap()
        .call_detached(json!({}))
        .await
        .unwrap();
    assert!(
        out.content.contains("file:///tmp/agent-mcp-root"),
        "{}",
        out.content
    );
    assert!(out.content.contains("workspace"), "{}", out.content);
}

/// A tool that may change something (not annotated read-only) waits for a person's
/// approval by default; a read-only one does not; a trusted server's tools do not.
#[tokio::test]
async fn tools_that_may_change_something_need_approval_by_default() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).connect().await.unwrap();
    let toggle = mcp.tool("toggle-simulated-logging").unwrap();
    assert!(toggle.requires_approval());
    assert!(!mcp.tool("echo").unwrap().requires_approval());
    assert!(!toggle.clone().approval(false).requires_approval());
    let trusted = stdio(&entry).trusted().connect().await.unwrap();
    assert!(
        !trusted
            .tool("toggle-simulated-logging")
            .unwrap()
            .requires_approval()
    );

    let p = ScriptedProvider::new();
    p.respond(Answer::tool(
        "everything__toggle-simulated-logging",
        json!({}),
    ));
    let a: Agent<(), ()> = Agent::builder()
        .provider(p.clone())
        .tool(toggle)
        .approvals_resolved()
        .build()
        .unwrap();
    let r = a.respond("s", "toggle logging").await.unwrap();
    assert!(r.tool_calls.is_empty(), "nothing ran: {:?}", r.tool_calls);
    assert_eq!(r.awaiting_approval.len(), 1);
    p.respond(Answer::message("Logging is toggled."));
    let done = a
        .resolve_approval("s", &r.awaiting_approval[0].id, Decision::Approve)
        .await
        .unwrap();
    assert_eq!(done.tool_calls.len(), 1);
    assert!(done.tool_calls[0].ok, "{:?}", done.tool_calls[0]);
    assert!(
        done.tool_calls[0].output.contains("logging"),
        "{:?}",
        done.tool_calls[0]
    );
}

/// A writer into a shared buffer, for reading what a `tracing` subscriber printed.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Each `tools/call` has a client span with the MCP semantic conventions' attributes:
/// the method, the tool, the session id and protocol version, the transport and the
/// server's address; a refused call carries the JSON-RPC code.
#[tokio::test]
async fn calls_have_mcp_spans() {
    let Some(entry) = everything() else { return };
    let server = HttpServer::start(&entry);
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mcp = McpServer::http("everything", &server.url)
        .connect()
        .await
        .unwrap();
    let sum = mcp.tool("get-sum").unwrap();
    sum.call_detached(json!({ "a": 1, "b": 2 })).await.unwrap();
    let e = sum.call_detached(json!({ "a": "x" })).await.unwrap_err();
    eprintln!("refused: {e}");
    let text = out.text();
    eprintln!("{text}");
    let closes: Vec<&str> = text.lines().filter(|l| l.contains("mcp_call")).collect();
    assert_eq!(closes.len(), 2, "{text}");
    let ok = closes[0];
    for attr in [
        "otel.name=tools/call get-sum",
        "otel.kind=\"client\"",
        "mcp.method.name=\"tools/call\"",
        "gen_ai.operation.name=\"execute_tool\"",
        "gen_ai.tool.name=\"get-sum\"",
        "mcp.session.id=\"",
        "mcp.protocol.version=\"",
        "network.transport=\"tcp\"",
        "network.protocol.name=\"http\"",
        "server.address=\"127.0.0.1\"",
        &format!("server.port={}", server.port()),
    ] {
        assert!(ok.contains(attr), "{attr} missing: {ok}");
    }
    assert!(!ok.contains("error.type"), "{ok}");
    let failed = closes[1];
    assert!(failed.contains("error.type="), "{failed}");
    assert!(failed.contains("otel.status_code=\"error\""), "{failed}");
}

/// A model that writes its tool call as text instead of calling the tool: the user
/// never reads the raw JSON (the rest of the reply stays; with nothing else, the
/// agent's `flow_error_reply`).
#[tokio::test]
async fn a_tool_call_written_as_text_never_reaches_the_user() {
    let Some(entry) = everything() else { return };
    let mcp = stdio(&entry).connect().await.unwrap();
    let p = ScriptedProvider::new();
    let a = agent(&p, &mcp);
    let call = r#"{"name": "everything__echo", "arguments": {"message": "hi"}}"#;
    p.respond(Answer::message(call));
    let r = a.respond("s", "echo hi").await.unwrap();
    eprintln!("reply: {}", r.message);
    assert!(!r.message.contains('{'), "{}", r.message);
    assert_eq!(r.message, AgentConfig::default().flow_error_reply);
    p.respond(Answer::message(format!(
        "Let me echo that.\n```json\n{call}\n```"
    )));
    let r = a.respond("s", "echo hi again").await.unwrap();
    assert_eq!(r.message, "Let me echo that.");
}
