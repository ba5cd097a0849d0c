//! `agent_core::serve`'s MCP server (feature `mcp-server`), called over streamable HTTP
//! by rmcp's own client (the official Rust SDK's client side): one conversation per MCP
//! session or per `session_id`, each principal kept to its own conversations, and a
//! call that waits for approval decided by an operator only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::prelude::*;
use agent_core::serve::{BearerTokens, Server};
use agent_core::testing::{Answer, ScriptedProvider};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
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

type Client = RunningService<RoleClient, ClientConfig>;

/// An MCP session with the server at `url`, as the bearer of `token` (none: no
/// `Authorization` header).
async fn connect(url: &str, token: Option<&str>) -> Result<Client, String> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(t) = token {
        config = config.auth_header(t.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ClientConfig::new(
        Default::default(),
        Implementation::new("test-client", "1.0"),
    )
    .serve(transport)
    .await
    .map_err(|e| e.to_string())
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .peer()
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap()
}

/// The text of a result.
fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn failed(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_served_over_mcp_one_conversation_per_session_behind_authentication() {
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let app = server.router();
    let serving = tokio::spawn(async move { agent_core::serve::axum::serve(listener, app).await });

    // Without a credential, or with an unknown one, there is no MCP session at all.
    for token in [None, Some("t-nobody")] {
        let e = connect(&url, token).await.err().unwrap();
        assert!(e.contains("401") || e.contains("Auth"), "{e}");
    }

    let ana = connect(&url, Some("t-ana")).await.unwrap();
    let info = ana.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "shop");
    assert!(
        info.instructions.as_deref().unwrap().contains("`message`"),
        "{info:?}"
    );
    let tools = ana.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["message", "decide"]);

    // Two calls of one MCP session: the second continues the conversation.
    p.respond(Answer::message("Hello Ana, what shall I do?"));
    let first = call(&ana, "message", json!({ "text": "hello" })).await;
    assert!(!failed(&first), "{first:?}");
    assert_eq!(text(&first), "Hello Ana, what shall I do?");
    let session = first.structured_content.as_ref().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(session.starts_with("mcp-"), "{session}");

    p.respond(Answer::tool("pay", json!({ "cents": 500 })));
    let second = call(&ana, "message", json!({ "text": "pay 5 euros" })).await;
    assert!(!failed(&second), "{second:?}");
    let s = second.structured_content.clone().unwrap();
    assert_eq!(s["session_id"], session.as_str(), "{s}");
    let request = format!("{:?}", p.requests().last().unwrap());
    assert!(
        request.contains("hello"),
        "the earlier turn is in the history: {request}"
    );
    assert!(request.contains("Hello Ana, what shall I do?"), "{request}");

    // The payment waits: the result names the pending call, which has not run.
    let pending = s["awaiting_approval"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{s}");
    assert_eq!(pending[0]["tool"], "pay");
    let call_id = pending[0]["id"].as_str().unwrap().to_owned();
    let said = text(&second);
    assert!(said.contains("`pay`") && said.contains(&call_id), "{said}");
    assert!(
        said.contains("approval") && said.contains("has not run"),
        "{said}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // A "yes" in the chat runs no turn and decides nothing.
    let calls = p.calls();
    let yes = call(&ana, "message", json!({ "text": "yes, approve it" })).await;
    assert!(!failed(&yes), "{yes:?}");
    assert!(text(&yes).contains(&call_id), "{yes:?}");
    assert_eq!(p.calls(), calls, "no model call");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // Bob reaches Ana's conversation neither by its id nor by deciding her call.
    let bob = connect(&url, Some("t-bob")).await.unwrap();
    let r = call(
        &bob,
        "message",
        json!({ "text": "hi", "session_id": session }),
    )
    .await;
    assert!(
        failed(&r) && text(&r).contains("another principal"),
        "{r:?}"
    );
    for client in [&ana, &bob] {
        let r = call(
            client,
            "decide",
            json!({ "session_id": session, "call_id": call_id, "decision": "approve" }),
        )
        .await;
        assert!(failed(&r) && text(&r).contains("operator"), "{r:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing was charged");

    // The operator approves: the call runs once and the turn resumes.
    let desk = connect(&url, Some("t-desk")).await.unwrap();
    p.respond(Answer::message("Paid: 5 euros."));
    let r = call(
        &desk,
        "decide",
        json!({ "session_id": session, "call_id": call_id, "decision": "approve" }),
    )
    .await;
    assert!(!failed(&r), "{r:?}");
    assert_eq!(text(&r), "Paid: 5 euros.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let r = call(
        &desk,
        "decide",
        json!({ "session_id": session, "call_id": call_id, "decision": "approve" }),
    )
    .await;
    assert!(failed(&r) && text(&r).contains("no call"), "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "decided once, run once");

    // Another MCP session of Ana's continues the conversation it names.
    let again = connect(&url, Some("t-ana")).await.unwrap();
    p.respond(Answer::message("Anything else?"));
    let r = call(
        &again,
        "message",
        json!({ "text": "thanks", "session_id": session }),
    )
    .await;
    assert!(!failed(&r), "{r:?}");
    assert_eq!(text(&r), "Anything else?");
    let request = format!("{:?}", p.requests().last().unwrap());
    assert!(request.contains("pay 5 euros"), "{request}");
    // ... while a new MCP session without `session_id` is a new conversation.
    p.respond(Answer::message("Hello again."));
    let r = call(&again, "message", json!({ "text": "hello" })).await;
    let other = r.structured_content.as_ref().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(other, session);
    assert!(!format!("{:?}", p.requests().last().unwrap()).contains("pay 5 euros"));

    for c in [ana, bob, desk, again] {
        let _ = c.cancel().await;
    }
    serving.abort();
}
