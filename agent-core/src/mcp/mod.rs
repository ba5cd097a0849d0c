//! MCP tools (feature `mcp`): the tools of a [Model Context Protocol] server become
//! agent tools, through the official Rust SDK ([`rmcp`]).
//!
//! A server is described by an [`McpServer`] (a program spoken to over stdio, or a
//! streamable HTTP endpoint), connected once with [`McpServer::connect`] before the
//! agent is built, and its tools, discovered at run time, are taken from the
//! [`McpConnection`] as [`McpTool`] values. Each is an ordinary [`Tool`]: offer it agent-
//! wide with [`AgentBuilder::tool`](crate::agent::AgentBuilder::tool), in every step of
//! a flow with [`FlowBuilder::tool`](crate::flow::FlowBuilder::tool), or at one step with
//! [`Step::tool`](crate::step::Step::tool).
//!
//! ```no_run
//! use std::time::Duration;
//! use agent_core::mcp::McpServer;
//! use agent_core::prelude::*;
//! use agent_core::testing::ScriptedProvider;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let everything = McpServer::stdio("everything", "npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .timeout(Duration::from_secs(20))
//!     .connect()
//!     .await?;
//! let echo = everything.tool("echo")?; // offered to the model as `everything__echo`
//! let agent: Agent<(), ()> = Agent::builder()
//!     .provider(ScriptedProvider::new())
//!     .tools_of(&everything) // every tool of the server, agent-wide
//!     .flow(
//!         Flow::builder("support")
//!             .step(Step::model("look_up").tool(echo).requires_tool("everything__echo"))
//!             .build()?,
//!     )
//!     .build()?;
//! # let _ = agent; Ok(()) }
//! ```
//!
//! # Names, and what `build()` checks
//!
//! The model sees a tool as `{prefix}__{tool}`, the prefix being the server's name
//! unless [`McpServer::prefix`] or [`McpServer::bare_names`] says otherwise; characters
//! outside `[A-Za-z0-9_-]` become `_` and the name is cut to 64 characters, so every
//! vendor API accepts it. Code refers to a tool by its server-side name: a tool the
//! server does not have fails at [`McpConnection::tool`] with
//! [`McpError::UnknownTool`], which lists the ones it has, before anything is built;
//! `build()` then checks the picked tools like any other: their names, descriptions,
//! duplicates, and every `requires_tool("{prefix}__{tool}")` of a step against the
//! tools offered there.
//!
//! # Failures are tool results
//!
//! A call runs through the MCP session with the server's time limit
//! ([`McpServer::timeout`], 30 s unless set). Whatever goes wrong with it becomes a
//! [`ToolError`], a failed tool result the model reads, never a failed turn: a result
//! the server flags as an error (`isError`), a JSON-RPC error (bad arguments become
//! [`ToolError::InvalidArguments`]), a connection that broke, a server that does not
//! answer in time ([`ToolError::TimedOut`]). Messages name the server and the cause in
//! words ("connection refused", "the server no longer knows the session"); an URL
//! nothing answers at fails [`McpServer::connect`] with [`McpError::Unreachable`].
//!
//! # Lost sessions, and what is sent twice
//!
//! A lost session is opened again ([`McpServer::reconnect`], on by default): a stdio
//! server is started anew, an HTTP endpoint gets a new session. A streamable-HTTP
//! server that restarted no longer knows the session: it answers `404` (what the
//! specification asks) or, on the TypeScript SDK's example routing (the reference
//! servers), `400` with an id-less JSON-RPC error naming the session; both are read as
//! the session having ended, and the next call opens a new one at once.
//!
//! A call is sent a second time, once, on a new session, only when that cannot run a
//! side effect twice:
//!
//! - the server provably did not run it (it refused the request for an unknown
//!   session, or no connection could be made): sent again, whatever the tool;
//! - the connection broke after the request was sent (the server may have run it):
//!   sent again only for a read-only tool (annotated `readOnlyHint: true` and not set
//!   to [`Effect::Once`], or set to [`Effect::Pure`]); any other call fails saying it
//!   may or may not have run, and the model reads that.
//!
//! # Results
//!
//! The model reads a result's text content, other parts described in a line
//! (`[image: image/png, 2048 bytes; …]`), or the structured content as JSON when
//! there is no text. Code that calls a tool itself ([`McpTool::call_detached`]) also
//! gets `structuredContent` as JSON in [`ToolOutput::structured`] and the images in
//! [`ToolOutput::images`]. Images do not reach the model: the engine's provider
//! messages ([`Message`](crate::provider::Message)) carry text only, so a tool result
//! is text in every vendor's request.
//!
//! # Instructions, capabilities
//!
//! A server's `instructions` are kept ([`McpConnection::instructions`]);
//! [`AgentBuilder::tools_of`](crate::agent::AgentBuilder::tools_of) adds them to the
//! prompt's knowledge, naming the server and its tools' prefix
//! ([`McpConnection::prompt_entry`]). The client declares `roots` only when the
//! application gives some ([`McpServer::root`]), and answers `roots/list` with them.
//! It declares neither sampling nor elicitation (no model or person is at hand to
//! answer a server's request), so a server does not send them.
//!
//! # Effects and approvals
//!
//! A tool that may change something (annotated `destructiveHint: true`, or not
//! annotated `readOnlyHint: true`) waits for a person's approval before each call
//! ([`crate::approval`]) unless the server is [`McpServer::trusted`];
//! [`McpTool::approval`] decides per tool. An agent with such tools and no
//! [`AgentBuilder::approvals_resolved`](crate::agent::AgentBuilder::approvals_resolved)
//! logs a warning at `build()`. MCP tools default to [`Effect::Idempotent`] and run in
//! parallel with other concurrency-safe calls only when the server marks them
//! read-only; [`McpTool::effect`] and [`McpTool::concurrency_safe`] change that.
//!
//! # Spans
//!
//! Each call has an `INFO` span `mcp_call` (OpenTelemetry name `tools/call {tool}`,
//! kind client) with the MCP semantic conventions' attributes: `mcp.method.name`,
//! `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `mcp.session.id` (the
//! HTTP session id), `mcp.protocol.version`, `network.transport` (`pipe` for stdio,
//! `tcp` for HTTP), `network.protocol.name`, `server.address`, `server.port`, and on
//! failure `error.type` (the JSON-RPC code, `tool_error`, `timeout`, `transport`,
//! `connection`) and `rpc.response.status_code`. In a turn it is a child of the
//! `execute_tool` span. `jsonrpc.request.id` is left out (rmcp does not expose it), and
//! no trace context is sent in `params._meta`.
//!
//! A runnable example: `cargo run -p examples --example mcp --features mcp`
//! (`examples/examples/mcp.rs`: an agent on the reference server's tools).
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io
use std::time::Duration;

use thiserror::Error;

#[cfg(doc)]
use crate::tool::{Effect, Tool, ToolError, ToolOutput};

mod connection;
mod http;
mod server;
mod session;
mod tool;

pub use self::connection::McpConnection;
pub use self::server::McpServer;
pub use self::tool::McpTool;

/// How long a call may take unless [`McpServer::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting (starting the server, the MCP handshake, listing its tools) may
/// take unless [`McpServer::connect_timeout`] says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an MCP server could not be used: connecting to it, or picking one of its tools.
/// Failures of single calls are [`ToolError`]s instead (see the [module docs](self)).
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum McpError {
    /// The server's name cannot be part of a tool name.
    #[error(
        "invalid MCP server name `{0}`: use 1 to 64 ASCII letters, digits, `_` or `-` (it prefixes the tool names the model sees)"
    )]
    InvalidName(String),
    /// The server program could not be started.
    #[error(
        "could not start MCP server `{server}` (`{command}`): {message}; check that the program is installed and on PATH"
    )]
    Spawn {
        /// The server's name.
        server: String,
        /// The command line.
        command: String,
        /// What the operating system said.
        message: String,
    },
    /// The server was reached (or started) but the MCP handshake failed.
    #[error(
        "MCP server `{server}` ({target}) did not complete the MCP handshake: {message}; check that {target} is an MCP server (stdio: it must speak JSON-RPC on stdout; HTTP: the URL is its streamable HTTP endpoint, often ending in /mcp)"
    )]
    Handshake {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What failed.
        message: String,
    },
    /// Nothing answered at the server's URL (connection refused, an unknown host, a
    /// TLS or HTTP failure before the MCP handshake).
    #[error(
        "could not reach MCP server `{server}` at {url}: {cause}; check the URL and that the server is running"
    )]
    Unreachable {
        /// The server's name.
        server: String,
        /// The URL.
        url: String,
        /// What failed: `connection refused`, `HTTP 404 Not Found`, …
        cause: String,
    },
    /// The server connected but listing its tools failed.
    #[error("MCP server `{server}` did not list its tools: {message}")]
    ListTools {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// Connecting took longer than [`McpServer::connect_timeout`].
    #[error(
        "MCP server `{server}` ({target}) did not finish connecting within {} ms; check that it starts (or answers) and raise `McpServer::connect_timeout` if it is just slow",
        .after.as_millis()
    )]
    ConnectTimedOut {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// The limit.
        after: Duration,
    },
    /// [`McpConnection::tool`] named a tool the server does not have.
    #[error("MCP server `{server}` has no tool `{tool}`; its tools: {}", available.join(", "))]
    UnknownTool {
        /// The server's name.
        server: String,
        /// The name asked for.
        tool: String,
        /// The server's tools (server-side names).
        available: Vec<String>,
    },
}
