//! `mcp` against the MCP reference server (`scripts/mcp.sh` sets `AGENT_MCP_EVERYTHING`):
//! the scripted model's call of `echo` reaches the server and its answer is the tool's
//! result in the turn and in what the model read. Without the server the test says
//! "skipped" and passes, except under `CI=true`. A server that cannot be started is an
//! error naming what is missing, never a panic or a type name (no server needed).

#[allow(dead_code)]
#[path = "../../examples/mcp.rs"]
mod mcp;

use std::collections::HashMap;

use agent_core::provider::Role;
use examples::model::Env;

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

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

#[tokio::test]
async fn the_echo_call_reaches_the_reference_server_and_its_answer_is_in_the_turn() {
    let Some(entry) = everything() else { return };
    let env = env_of(&[("AGENT_MCP_EVERYTHING", &entry)]);
    let source = mcp::Source::from_env(&env as Env<'_>);
    assert_eq!(source, mcp::Source::Installed(entry.clone()));
    let server = source.connect().await.unwrap();

    let (model, t, printed) = run_example!(mcp, &server);
    server.close().await;
    assert_eq!(t.failures(), 0, "{printed}");
    let r = t.response(0).unwrap();
    assert_eq!(r.tool_calls.len(), 1, "{printed}");
    let call = &r.tool_calls[0];
    assert!(call.ok, "{call:?}");
    assert_eq!(call.name, "mcp__echo");
    // The server's own answer, not the script's.
    assert_eq!(call.output, "Echo: hello from agent-core");
    assert!(
        r.message.contains("Echo: hello from agent-core"),
        "{}",
        r.message
    );
    assert_eq!(r.model_calls, 2, "the call, then the reply");

    // The model was offered the server's tools and read the server's result.
    let requests = model.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    for name in ["mcp__echo", "mcp__get-sum"] {
        assert!(offered.contains(&name), "{name} not offered: {offered:?}");
    }
    let shown: Vec<String> = requests[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.to_string())
        .collect();
    assert_eq!(shown, ["Echo: hello from agent-core"]);

    // What the example printed: the tools, the call with its result, the reply.
    assert!(printed.contains("tools: echo"), "{printed}");
    assert!(
        printed.contains(
            "tool mcp__echo({\"message\":\"hello from agent-core\"}) -> Echo: hello from agent-core"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("agent: The echo tool answered"),
        "{printed}"
    );
}

#[test]
fn the_server_comes_from_the_url_then_the_command_then_the_install_then_npx() {
    let all = env_of(&[
        ("AGENT_MCP_URL", "http://127.0.0.1:3001/mcp"),
        ("AGENT_MCP_COMMAND", "node server.js --stdio"),
        ("AGENT_MCP_EVERYTHING", "/x/index.js"),
    ]);
    assert_eq!(
        mcp::Source::from_env(&all),
        mcp::Source::Url("http://127.0.0.1:3001/mcp".into())
    );
    let command = env_of(&[
        ("AGENT_MCP_COMMAND", "node server.js --stdio"),
        ("AGENT_MCP_EVERYTHING", "/x/index.js"),
    ]);
    assert_eq!(
        mcp::Source::from_env(&command),
        mcp::Source::Command(vec!["node".into(), "server.js".into(), "--stdio".into()])
    );
    let installed = env_of(&[("AGENT_MCP_EVERYTHING", "/x/index.js")]);
    assert_eq!(
        mcp::Source::from_env(&installed),
        mcp::Source::Installed("/x/index.js".into())
    );
    assert_eq!(mcp::Source::from_env(&env_of(&[])), mcp::Source::Npx);
    assert!(
        mcp::Source::Npx
            .describe()
            .contains("npx -y @modelcontextprotocol/server-everything")
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_is_one_line_naming_what_is_missing() {
    let missing = mcp::Source::Command(vec!["/nonexistent/mcp-server".into()]);
    let e = missing.connect().await.unwrap_err().to_string();
    assert!(e.contains("could not start MCP server `mcp`"), "{e}");
    assert!(e.contains("/nonexistent/mcp-server"), "{e}");
    assert!(e.contains("AGENT_MCP_COMMAND"), "{e}");
    assert!(!e.contains('\n') && !e.contains("Spawn {"), "{e}");

    let empty = mcp::Source::from_env(&env_of(&[("AGENT_MCP_COMMAND", "   ")]));
    let e = empty.connect().await.unwrap_err().to_string();
    assert!(e.contains("AGENT_MCP_COMMAND is empty"), "{e}");

    // The npx default's advice names node/npx and the variables.
    let advice = mcp::Source::Npx.hint();
    for needed in [
        "Node.js",
        "`npx`",
        "AGENT_MCP_COMMAND",
        "AGENT_MCP_URL",
        "scripts/mcp.sh",
    ] {
        assert!(advice.contains(needed), "{needed}: {advice}");
    }
    let nowhere = mcp::Source::Url("http://127.0.0.1:9/mcp".into());
    let e = nowhere.connect().await.unwrap_err().to_string();
    assert!(e.contains("AGENT_MCP_URL"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}
