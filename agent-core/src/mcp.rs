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
//! answer in time ([`ToolError::TimedOut`]). A lost connection is opened again once, on
//! the next call ([`McpServer::reconnect`]): a stdio server is started anew, an HTTP
//! endpoint gets a new session. A call whose connection broke while it ran is not sent
//! again, since the server may have run it.
//!
//! # Effects and approvals
//!
//! MCP tools default to [`Effect::Idempotent`] and are run in parallel with other
//! concurrency-safe calls only when the server marks them read-only; [`McpTool::effect`],
//! [`McpTool::needs_approval`] and [`McpTool::concurrency_safe`] change that per tool.
//!
//! [Model Context Protocol]: https://modelcontextprotocol.io

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use thiserror::Error;

use crate::agent::AgentBuilder;
use crate::data::{AgentContext, AgentData};
use crate::tool::{Effect, Tool, ToolCx, ToolError, ToolOutput};

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

/// Where a server is and how to reach it.
#[derive(Debug, Clone)]
enum Target {
    Stdio {
        program: OsString,
        args: Vec<OsString>,
        env: BTreeMap<OsString, OsString>,
        dir: Option<PathBuf>,
        quiet: bool,
    },
    Http {
        url: String,
        bearer: Option<String>,
    },
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdio { program, args, .. } => {
                write!(f, "{}", program.to_string_lossy())?;
                for a in args {
                    write!(f, " {}", a.to_string_lossy())?;
                }
                Ok(())
            }
            Target::Http { url, .. } => f.write_str(url),
        }
    }
}

/// An MCP server to connect to: a program that speaks MCP on its standard input and
/// output ([`Self::stdio`]), or a streamable HTTP endpoint ([`Self::http`]).
#[derive(Debug, Clone)]
pub struct McpServer {
    name: String,
    target: Target,
    prefix: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    reconnect: bool,
}

impl McpServer {
    fn new(name: impl Into<String>, target: Target) -> Self {
        let name = name.into();
        Self {
            prefix: Some(name.clone()),
            name,
            target,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reconnect: true,
        }
    }

    /// A server started as `program` (found on `PATH` like [`std::process::Command`]
    /// does) and spoken to over its standard input and output. It is stopped when the
    /// last [`McpConnection`] and [`McpTool`] of it are dropped. Its standard error is
    /// the agent process's unless [`Self::quiet`].
    pub fn stdio(name: impl Into<String>, program: impl Into<OsString>) -> Self {
        Self::new(
            name,
            Target::Stdio {
                program: program.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                dir: None,
                quiet: false,
            },
        )
    }

    /// A server at a streamable HTTP endpoint (`http://127.0.0.1:3001/mcp`); `https`
    /// uses rustls with the system's root certificates.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            Target::Http {
                url: url.into(),
                bearer: None,
            },
        )
    }

    /// Add an argument to the server's command line (stdio; ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        if let Target::Stdio { args, .. } = &mut self.target {
            args.push(arg.into());
        }
        self
    }

    /// Add arguments to the server's command line (stdio; ignored for HTTP).
    pub fn args<I, S>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        if let Target::Stdio { args, .. } = &mut self.target {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Set an environment variable of the server process (stdio; ignored for HTTP).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let Target::Stdio { env, .. } = &mut self.target {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// The server process's working directory (stdio; ignored for HTTP).
    pub fn current_dir(mut self, path: impl Into<PathBuf>) -> Self {
        if let Target::Stdio { dir, .. } = &mut self.target {
            *dir = Some(path.into());
        }
        self
    }

    /// Discard the server process's standard error (stdio; ignored for HTTP).
    pub fn quiet(mut self) -> Self {
        if let Target::Stdio { quiet, .. } = &mut self.target {
            *quiet = true;
        }
        self
    }

    /// Send `Authorization: Bearer <token>` with every request (HTTP; ignored for
    /// stdio).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Target::Http { bearer, .. } = &mut self.target {
            *bearer = Some(token.into());
        }
        self
    }

    /// The time limit of each tool call, a reconnect included (default
    /// [`DEFAULT_TIMEOUT`]). A call past it is cancelled (the server is told) and
    /// fails with [`ToolError::TimedOut`].
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// The time limit of [`Self::connect`] (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Prefix the tool names the model sees with `prefix` (`{prefix}__{tool}`)
    /// instead of the server's name.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Show the tools to the model under their own names, without a prefix (two
    /// servers with a tool of the same name then fail `build()` as duplicates).
    pub fn bare_names(mut self) -> Self {
        self.prefix = None;
        self
    }

    /// Whether a call that finds the connection lost opens it again first (default:
    /// yes). Without it, every call after a lost connection fails.
    pub fn reconnect(mut self, on: bool) -> Self {
        self.reconnect = on;
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Start or reach the server, do the MCP handshake and list its tools.
    pub async fn connect(self) -> Result<McpConnection, McpError> {
        if !crate::tool::valid_tool_name(&self.name) {
            return Err(McpError::InvalidName(self.name));
        }
        if let Some(p) = &self.prefix
            && !crate::tool::valid_tool_name(p)
        {
            return Err(McpError::InvalidName(p.clone()));
        }
        let limit = self.connect_timeout;
        let connecting =
            async {
                let session = self.open().await?;
                let tools = session.service.peer().list_all_tools().await.map_err(|e| {
                    McpError::ListTools {
                        server: self.name.clone(),
                        message: e.to_string(),
                    }
                })?;
                Ok::<_, McpError>((session, tools))
            };
        let (session, tools) = tokio::time::timeout(limit, connecting)
            .await
            .map_err(|_| self.connect_timed_out())??;
        Ok(McpConnection {
            shared: Arc::new(Shared {
                server: self,
                tools,
                session: tokio::sync::Mutex::new(Slot {
                    session: Some(session),
                    generation: 0,
                }),
            }),
        })
    }

    fn connect_timed_out(&self) -> McpError {
        McpError::ConnectTimedOut {
            server: self.name.clone(),
            target: self.target.to_string(),
            after: self.connect_timeout,
        }
    }

    /// Open a session (no time limit of its own).
    async fn open(&self) -> Result<Session, McpError> {
        let handshake = |message: String| McpError::Handshake {
            server: self.name.clone(),
            target: self.target.to_string(),
            message,
        };
        match &self.target {
            Target::Stdio {
                program,
                args,
                env,
                dir,
                quiet,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).envs(env).kill_on_drop(true);
                if let Some(d) = dir {
                    command.current_dir(d);
                }
                let stderr = if *quiet {
                    std::process::Stdio::null()
                } else {
                    std::process::Stdio::inherit()
                };
                let (process, _) = TokioChildProcess::builder(command)
                    .stderr(stderr)
                    .spawn()
                    .map_err(|e| McpError::Spawn {
                        server: self.name.clone(),
                        command: self.target.to_string(),
                        message: e.to_string(),
                    })?;
                let pid = process.id();
                let service = ().serve(process).await.map_err(|e| handshake(e.to_string()))?;
                Ok(Session { service, pid })
            }
            Target::Http { url, bearer } => {
                ensure_crypto_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = ().serve(transport).await.map_err(|e| handshake(e.to_string()))?;
                Ok(Session { service, pid: None })
            }
        }
    }
}

/// The HTTP client (reqwest with rustls, built without a crypto provider of its own)
/// needs a process-wide rustls provider; install ring's unless the application
/// installed one.
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread installing one is fine: one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// One open MCP session.
struct Session {
    service: RunningService<RoleClient, ()>,
    pid: Option<u32>,
}

impl Session {
    fn is_open(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

struct Slot {
    session: Option<Session>,
    /// Bumped at each reconnect, so a failed call drops only the session it used.
    generation: u64,
}

struct Shared {
    server: McpServer,
    tools: Vec<rmcp::model::Tool>,
    session: tokio::sync::Mutex<Slot>,
}

impl Shared {
    /// The open session's peer, reconnecting first if it was lost (and allowed).
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = &slot.session
            && s.is_open()
        {
            return Ok((s.service.peer().clone(), slot.generation));
        }
        let name = &self.server.name;
        if !self.server.reconnect {
            return Err(ToolError::Failed(format!(
                "the connection to MCP server `{name}` is closed and reconnecting is off; the tool did not run"
            )));
        }
        // Dropping the old session cancels it (and stops its process).
        slot.session = None;
        let session = self.server.open().await.map_err(|e| {
            ToolError::Failed(format!(
                "the connection to MCP server `{name}` was lost and reconnecting failed ({e}); the tool did not run"
            ))
        })?;
        tracing::info!(server = %name, "reconnected to MCP server");
        slot.generation += 1;
        let peer = session.service.peer().clone();
        slot.session = Some(session);
        Ok((peer, slot.generation))
    }

    /// Forget the session of `generation` after its transport failed, so the next call
    /// reconnects.
    async fn lost(&self, generation: u64) {
        let mut slot = self.session.lock().await;
        if slot.generation == generation {
            slot.session = None;
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(o) => Some(o),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        let (peer, generation) = self.peer().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        let server = &self.server.name;
        match peer.call_tool(params).await {
            Ok(result) => {
                let text = render(&result);
                if result.is_error == Some(true) {
                    Err(ToolError::Failed(if text.is_empty() {
                        format!("MCP server `{server}` reported an error without a message")
                    } else {
                        text
                    }))
                } else {
                    Ok(ToolOutput::text(text))
                }
            }
            Err(ServiceError::McpError(e)) if e.code == ErrorCode::INVALID_PARAMS => {
                Err(ToolError::InvalidArguments(e.message.into_owned()))
            }
            Err(ServiceError::McpError(e)) => Err(ToolError::Failed(format!(
                "MCP server `{server}` refused the call: {} (JSON-RPC error {})",
                e.message, e.code.0
            ))),
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::TimedOut(timeout)),
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                self.lost(generation).await;
                let why = match &e {
                    // Its own message names the transport's Rust type; the cause is enough.
                    ServiceError::TransportSend(t) => chain(t.error.as_ref()),
                    other => other.to_string(),
                };
                let next = if self.server.reconnect {
                    "the next call reconnects"
                } else {
                    "reconnecting is off"
                };
                Err(ToolError::Failed(format!(
                    "the connection to MCP server `{server}` broke during the call ({why}); the tool may or may not have run; {next}"
                )))
            }
            Err(e) => Err(ToolError::Failed(format!(
                "MCP server `{server}`: the call failed: {e}"
            ))),
        }
    }
}

/// `e` and its causes, each left out when the one before already says it:
/// `Client error: error sending request for url (…): tcp connect error: Connection refused`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !parts.last().is_some_and(|prev| prev.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}

/// The result's content as text for the model: text parts joined by new lines, other
/// parts described in a line; with no content, the structured content as JSON.
fn render(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(v) = &result.structured_content
    {
        return v.to_string();
    }
    parts.join("\n")
}

fn describe(block: &ContentBlock) -> String {
    // base64 is 4 characters per 3 bytes.
    let size = |b64: &str| b64.len() / 4 * 3;
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {} bytes]", i.mime_type, size(&i.data)),
        ContentBlock::Audio(a) => format!("[audio: {}, {} bytes]", a.mime_type, size(&a.data)),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                size(blob)
            ),
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(l) => format!("[resource link: {} <{}>]", l.name, l.uri),
        _ => "[content of a kind this client does not show]".to_owned(),
    }
}

/// A connected MCP server: its tools, and the session their calls go through. Cheap to
/// clone (shared); the session closes (a stdio server stops) when the connection and
/// every tool taken from it are dropped.
#[derive(Clone)]
pub struct McpConnection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.shared.server.name)
            .field("target", &self.shared.server.target.to_string())
            .field("tools", &self.tool_names())
            .finish()
    }
}

impl McpConnection {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.shared.server.name
    }

    /// The server-side names of its tools, as listed when it connected.
    pub fn tool_names(&self) -> Vec<&str> {
        self.shared.tools.iter().map(|t| t.name.as_ref()).collect()
    }

    /// Every tool of the server, as agent tools.
    pub fn tools(&self) -> Vec<McpTool> {
        self.shared
            .tools
            .iter()
            .map(|t| McpTool::new(self.shared.clone(), t))
            .collect()
    }

    /// One tool, by its server-side name (`echo`, not `everything__echo`).
    pub fn tool(&self, name: &str) -> Result<McpTool, McpError> {
        match self.shared.tools.iter().find(|t| t.name == name) {
            Some(t) => Ok(McpTool::new(self.shared.clone(), t)),
            None => Err(McpError::UnknownTool {
                server: self.shared.server.name.clone(),
                tool: name.to_owned(),
                available: self.tool_names().into_iter().map(str::to_owned).collect(),
            }),
        }
    }

    /// The process id of a stdio server (its current process, after a reconnect the
    /// new one); `None` for HTTP or when no session is open.
    pub async fn process_id(&self) -> Option<u32> {
        let slot = self.shared.session.lock().await;
        slot.session.as_ref().and_then(|s| s.pid)
    }

    /// Whether the session is open now (a lost one is opened again by the next call
    /// unless [`McpServer::reconnect`] is off).
    pub async fn is_connected(&self) -> bool {
        let slot = self.shared.session.lock().await;
        slot.session.as_ref().is_some_and(Session::is_open)
    }

    /// Close the session now (a stdio server is stopped), instead of when the last
    /// connection and tool are dropped. Later calls reconnect, unless
    /// [`McpServer::reconnect`] is off.
    pub async fn close(&self) {
        let session = self.shared.session.lock().await.session.take();
        if let Some(mut s) = session {
            let _ = s.service.close().await;
        }
    }
}

/// Offer every tool of a connected MCP server agent-wide.
impl<D: AgentData, C: AgentContext> AgentBuilder<D, C> {
    /// Offer every tool of a connected MCP server ([`crate::mcp`]) agent-wide; pick
    /// single tools with [`McpConnection::tool`] to offer them in a flow or a step
    /// only.
    pub fn tools_of(self, server: &McpConnection) -> Self {
        server.tools().into_iter().fold(self, |b, t| b.tool(t))
    }
}

/// One tool of an MCP server as an agent [`Tool`], for any data and context types.
/// Cheap to clone. Its settings start from what the server says (name, description,
/// input schema; read-only tools are concurrency-safe) and can be changed here.
#[derive(Clone)]
pub struct McpTool {
    shared: Arc<Shared>,
    remote: String,
    name: String,
    description: String,
    parameters: Value,
    effect: Effect,
    approval: bool,
    concurrency_safe: bool,
    timeout: Duration,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.shared.server.name)
            .field("remote", &self.remote)
            .field("name", &self.name)
            .field("effect", &self.effect)
            .finish()
    }
}

impl McpTool {
    fn new(shared: Arc<Shared>, tool: &rmcp::model::Tool) -> Self {
        let remote = tool.name.to_string();
        let name = model_name(shared.server.prefix.as_deref(), &remote);
        let description = tool
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .or_else(|| tool.title.clone())
            .unwrap_or_else(|| {
                format!(
                    "Tool `{remote}` of the MCP server `{}`.",
                    shared.server.name
                )
            });
        let mut schema = tool.input_schema.as_ref().clone();
        schema.remove("$schema");
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Self {
            timeout: shared.server.timeout,
            shared,
            remote,
            name,
            description,
            parameters: Value::Object(schema),
            effect: Effect::Idempotent,
            approval: false,
            concurrency_safe: read_only,
        }
    }

    /// The name the server knows it by.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The name of the server it belongs to.
    pub fn server(&self) -> &str {
        &self.shared.server.name
    }

    /// Show it to the model under another name (`[A-Za-z0-9_-]{1,64}`, checked at
    /// `build()`).
    pub fn rename(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Replace the server's description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Declare what re-running a call does (default [`Effect::Idempotent`]).
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// Every call waits for a person's decision before it runs
    /// ([`crate::approval`]).
    pub fn needs_approval(mut self) -> Self {
        self.approval = true;
        self
    }

    /// Whether calls may run in parallel with other concurrency-safe calls (default:
    /// when the server marks the tool read-only).
    pub fn concurrency_safe(mut self, safe: bool) -> Self {
        self.concurrency_safe = safe;
        self
    }

    /// This tool's time limit per call (default: the server's [`McpServer::timeout`]).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// Call it outside a turn (scripts, tests): the same path a turn's call takes,
    /// time limit included.
    pub async fn call_detached(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.run(args).await
    }

    async fn run(&self, args: Value) -> Result<ToolOutput, ToolError> {
        match tokio::time::timeout(self.timeout, self.shared.call(&self.remote, args)).await {
            Ok(r) => r,
            Err(_) => Err(ToolError::TimedOut(self.timeout)),
        }
    }
}

/// `{prefix}__{tool}` (or the bare tool name), with characters outside
/// `[A-Za-z0-9_-]` replaced by `_` and cut to 64 characters.
fn model_name(prefix: Option<&str>, tool: &str) -> String {
    let full = match prefix {
        Some(p) => format!("{p}__{tool}"),
        None => tool.to_owned(),
    };
    let mut name: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        name.push('_');
    }
    name
}

#[async_trait]
impl<D: Send + Sync + 'static, C: Send + Sync + 'static> Tool<D, C> for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }
    fn effect(&self) -> Effect {
        self.effect
    }
    fn needs_approval(&self, _args: &Value) -> bool {
        self.approval
    }
    async fn call(&self, _cx: ToolCx<D, C>, args: Value) -> Result<ToolOutput, ToolError> {
        self.run(args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_valid_for_every_vendor() {
        assert_eq!(
            model_name(Some("everything"), "get-sum"),
            "everything__get-sum"
        );
        assert_eq!(model_name(None, "files.read/all"), "files_read_all");
        let long = model_name(Some("srv"), &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(crate::tool::valid_tool_name(&long));
        assert_eq!(model_name(None, ""), "_");
    }

    #[tokio::test]
    async fn a_program_that_is_not_there_is_a_spawn_error() {
        let e = McpServer::stdio("nothing", "/nonexistent/mcp-server")
            .connect()
            .await
            .err();
        assert!(matches!(e, Some(McpError::Spawn { .. })), "{e:?}");
    }

    #[tokio::test]
    async fn a_bad_server_name_is_refused() {
        let e = McpServer::http("my server", "http://127.0.0.1:1/mcp")
            .connect()
            .await
            .err();
        assert_eq!(e, Some(McpError::InvalidName("my server".into())));
    }
}
