//! End to end: a turn on the local model (llama.cpp with Gemma 3 270M, see
//! `e2e_local_llm.rs`) that calls a tool of the MCP reference server
//! `@modelcontextprotocol/server-everything` over stdio (agent-core feature `mcp`):
//!
//! ```sh
//! eval "$(bash scripts/local-llm.sh start)"; export OPENAI_BASE_URL OPENAI_API_KEY OPENAI_MODEL
//! eval "$(bash scripts/mcp.sh)"
//! cargo test -p agent-providers --test e2e_mcp
//! ```
//!
//! Without the local model the test prints "skipped" and passes (it fails with
//! `AGENT_E2E_REQUIRED=1`, as the other end-to-end tests do); without
//! `AGENT_MCP_EVERYTHING` it prints "skipped" and passes, except under `CI=true`.
//! It asserts the protocol only: the model called the MCP tool, the server ran it, and
//! its result reached the model in the next call; never the wording.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::mcp::McpServer;
use agent_core::prelude::*;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, Role};
use agent_providers::OpenAiCompatible;
use async_trait::async_trait;

/// Generous: `llama-server -np 1` serialises requests and CI machines are busy.
const CALL_LIMIT: Duration = Duration::from_secs(300);

fn skip(test: &str, why: &str) {
    // Straight to stderr: the harness captures print!/eprint!, not this.
    let _ = std::io::stderr().write_all(format!("\n{test}: skipped: {why}\n").as_bytes());
}

/// The local model, or `None` after printing why the test is skipped.
fn local_model(test: &str) -> Option<OpenAiCompatible> {
    match OpenAiCompatible::from_env() {
        Ok(p) => Some(
            p.temperature_default(0.0)
                .request_timeout(CALL_LIMIT)
                .first_byte_timeout(CALL_LIMIT)
                .stream_idle_timeout(CALL_LIMIT),
        ),
        Err(e) => {
            if std::env::var("AGENT_E2E_REQUIRED").is_ok_and(|v| v == "1") {
                panic!(
                    "{test}: local model required (AGENT_E2E_REQUIRED=1) but not configured: {e}"
                );
            }
            skip(
                test,
                &format!("local model not configured (run scripts/local-llm.sh); {e}"),
            );
            None
        }
    }
}

/// The MCP server's entry script, or `None` after printing why the test is skipped.
fn everything(test: &str) -> Option<String> {
    match std::env::var("AGENT_MCP_EVERYTHING") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "{test}: AGENT_MCP_EVERYTHING is unset under CI: run `eval \"$(bash scripts/mcp.sh)\"` before the tests"
        ),
        _ => {
            skip(test, "run scripts/mcp.sh (eval \"$(bash scripts/mcp.sh)\")");
            None
        }
    }
}

/// The real provider, with every request it was sent kept.
struct Recording<P> {
    inner: P,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
}

#[async_trait]
impl<P: Provider> Provider for Recording<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.generate(request).await
    }
}

#[tokio::test]
async fn e2e_the_local_model_calls_an_mcp_tool() {
    const TEST: &str = "e2e_the_local_model_calls_an_mcp_tool";
    let Some(entry) = everything(TEST) else {
        return;
    };
    let Some(model) = local_model(TEST) else {
        return;
    };
    let mcp = McpServer::stdio("everything", "node")
        .arg(&entry)
        .quiet()
        .connect()
        .await
        .unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let config = AgentConfig {
        max_tokens: Some(96),
        temperature: Some(0.0),
        // The wiring is under test, not the wording: with the default reply style in its
        // prompt, Gemma 270M wrote a second, malformed call in the tool round (llama.cpp
        // answers that with a 500).
        reply_style: None,
        turn_timeout: Some(3 * CALL_LIMIT),
        ..AgentConfig::default()
    };
    let agent: Agent<(), ()> = Agent::builder()
        .name("Echo")
        .goal("Repeat what the user asks for with the everything__echo tool.")
        .provider(Recording {
            inner: model,
            requests: requests.clone(),
        })
        .config(config)
        .tool(mcp.tool("echo").unwrap())
        .build()
        .unwrap();
    let r = tokio::time::timeout(
        3 * CALL_LIMIT,
        agent.respond(
            "e2e",
            "Call the everything__echo tool with the message hello.",
        ),
    )
    .await
    .expect("the turn ended within the limit")
    .unwrap();

    let requests = requests.lock().unwrap().clone();
    assert!(
        requests[0]
            .tools
            .iter()
            .any(|t| t.name == "everything__echo"
                && t.parameters["properties"]["message"]["type"] == "string"),
        "the MCP tool was offered with its schema: {:?}",
        requests[0].tools
    );
    let call = r
        .tool_calls
        .iter()
        .find(|c| c.name == "everything__echo")
        .unwrap_or_else(|| panic!("the model called the MCP tool: {r:?}"));
    eprintln!("{} model calls; the call: {call:?}", r.model_calls);
    assert!(call.ok, "the server ran it: {call:?}");
    let message = call.arguments["message"].as_str().unwrap_or_default();
    assert_eq!(call.output, format!("Echo: {message}"));
    let later = requests.last().unwrap();
    assert!(
        requests.len() >= 2
            && later
                .messages
                .iter()
                .any(|m| m.role == Role::Tool && m.content == call.output),
        "the result reached the model: {later:?}"
    );
}
