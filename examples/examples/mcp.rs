//! MCP tools: an agent whose tools come from a [Model Context Protocol] server, found
//! at run time (`agent_core::mcp`, feature `mcp`).
//!
//! `cargo run -p examples --example mcp --features mcp`
//!
//! The server, the first that applies:
//!
//! | set | server |
//! |---|---|
//! | `AGENT_MCP_URL` | a streamable HTTP endpoint (`http://127.0.0.1:3001/mcp`) |
//! | `AGENT_MCP_COMMAND` | a program spoken to over stdio, as a command line split at spaces (`node server.js --flag`) |
//! | `AGENT_MCP_EVERYTHING` | the reference server installed by `scripts/mcp.sh` (`eval "$(bash scripts/mcp.sh)"`), run with `node` |
//! | nothing | the reference server `@modelcontextprotocol/server-everything`, started with `npx -y` (Node.js >= 18; the first run downloads it) |
//!
//! Shows: connecting once before the agent is built, the server's tools offered
//! agent-wide (the model sees `mcp__echo`, `mcp__get-sum`, …), and one turn in which
//! the model calls the server's `echo` tool and answers from its result. On its scripted
//! model (no key set) the tool call and the reply are scripted, the tool's result is the
//! server's. A server that cannot be started or reached is one line on stderr saying
//! what is missing, and exit status 1.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use agent_core::mcp::{McpConnection, McpServer};
use agent_core::prelude::*;
use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::model::Env;
use examples::show::{self, Transcript};
use serde_json::json;

/// The server's name: the prefix of its tools' names (`mcp__echo`).
pub const SERVER: &str = "mcp";
/// The reference server's npm package, at the version `scripts/mcp.sh` pins.
pub const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";
/// The server-side name of the tool the turn calls.
pub const TOOL: &str = "echo";
/// What the user says.
pub const MESSAGE: &str = "Please send 'hello from agent-core' through the echo tool.";

/// Where the MCP server comes from, chosen from the environment (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A streamable HTTP endpoint (`AGENT_MCP_URL`).
    Url(String),
    /// A command line (`AGENT_MCP_COMMAND`).
    Command(Vec<String>),
    /// The reference server's entry script (`AGENT_MCP_EVERYTHING`), run with `node`.
    Installed(String),
    /// The reference server through `npx`.
    Npx,
}

impl Source {
    /// Decide from `env`.
    pub fn from_env(env: Env<'_>) -> Self {
        if let Some(url) = env("AGENT_MCP_URL") {
            return Self::Url(url.trim().to_owned());
        }
        if let Some(line) = env("AGENT_MCP_COMMAND") {
            return Self::Command(line.split_whitespace().map(str::to_owned).collect());
        }
        if let Some(entry) = env("AGENT_MCP_EVERYTHING") {
            return Self::Installed(entry);
        }
        Self::Npx
    }

    /// The server to connect to.
    pub fn server(&self) -> McpServer {
        match self {
            Self::Url(url) => McpServer::http(SERVER, url),
            Self::Command(words) => {
                let program = words.first().map_or("", String::as_str);
                McpServer::stdio(SERVER, program).args(words.iter().skip(1))
            }
            Self::Installed(entry) => McpServer::stdio(SERVER, "node").arg(entry).quiet(),
            // The first run downloads the package: give it time.
            Self::Npx => McpServer::stdio(SERVER, "npx")
                .args(["-y", PACKAGE])
                .quiet()
                .connect_timeout(Duration::from_secs(180)),
        }
    }

    /// One line: which server, and from which setting.
    pub fn describe(&self) -> String {
        match self {
            Self::Url(url) => format!("MCP server at {url} (AGENT_MCP_URL)"),
            Self::Command(words) => format!("MCP server `{}` (AGENT_MCP_COMMAND)", words.join(" ")),
            Self::Installed(entry) => {
                format!("MCP reference server `node {entry}` (AGENT_MCP_EVERYTHING)")
            }
            Self::Npx => format!("MCP reference server `npx -y {PACKAGE}`"),
        }
    }

    /// What to check when the server could not be used.
    pub fn hint(&self) -> String {
        match self {
            Self::Url(_) => "Check that an MCP server listens at AGENT_MCP_URL (its streamable HTTP endpoint, often ending in /mcp), or unset AGENT_MCP_URL to start the reference server".to_owned(),
            Self::Command(_) => "Check the command line in AGENT_MCP_COMMAND (a program that speaks MCP on stdio), or unset it to start the reference server".to_owned(),
            Self::Installed(_) => "AGENT_MCP_EVERYTHING should name server-everything's dist/index.js and `node` (>= 18) be on PATH: run `eval \"$(bash scripts/mcp.sh)\"` again".to_owned(),
            Self::Npx => "The reference server needs Node.js >= 18 with `npx` on PATH (apt-get install nodejs npm) and npm's registry the first time; or run `eval \"$(bash scripts/mcp.sh)\"` (sets AGENT_MCP_EVERYTHING), or set AGENT_MCP_COMMAND (a server's command line) or AGENT_MCP_URL (a streamable HTTP endpoint)".to_owned(),
        }
    }

    /// Connect to the server; the error says what is missing, in one line.
    pub async fn connect(&self) -> Result<McpConnection, Box<dyn Error>> {
        if let Self::Command(words) = self
            && words.is_empty()
        {
            return Err("AGENT_MCP_COMMAND is empty: give a server's command line".into());
        }
        self.server()
            .connect()
            .await
            .map_err(|e| format!("{e}. {}", self.hint()).into())
    }
}

/// The scripted model: one call of the server's `echo` tool, then a reply.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.respond(Answer::tool(
        format!("{SERVER}__{TOOL}"),
        json!({ "message": "hello from agent-core" }),
    ));
    model.tool_round(Answer::message(
        "The echo tool answered: \"Echo: hello from agent-core\".",
    ));
    model
}

/// Build an agent offering every tool of `server` and have one turn.
pub async fn run(
    provider: Arc<dyn Provider>,
    server: &McpConnection,
    out: &mut dyn Write,
) -> Result<Transcript<()>, Box<dyn Error>> {
    let names = server.tool_names();
    writeln!(out, "{} tools: {}\n", names.len(), names.join(", "))?;
    // Fails here, listing the server's tools, if it has no `echo`.
    server.tool(TOOL)?;
    let agent: Agent<(), ()> = Agent::builder()
        .name("MCP desk")
        .provider_arc(provider)
        .tools_of(server)
        .build()?;
    Ok(show::converse(&agent, "mcp", &[MESSAGE], out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The turn on the model and the server the environment chooses.
async fn demo() -> Result<Transcript<()>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    let source = Source::from_env(&examples::model::process_env);
    println!("connecting to the {}", source.describe());
    let server = source.connect().await?;
    let transcript = run(model.provider(), &server, &mut std::io::stdout()).await;
    server.close().await;
    transcript
}
