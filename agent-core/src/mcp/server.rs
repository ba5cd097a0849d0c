//! Describing an MCP server (where it is, how its tools are named and timed) and opening
//! sessions to it: the one place that knows about stdio processes and HTTP transports.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
#[allow(deprecated)] // roots: see `session::Client`
use rmcp::model::Root;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

#[cfg(doc)]
use super::McpTool;
use super::http::{SessionAwareClient, SessionIdCell};
use super::session::{Session, Shared, Slot};
use super::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, McpConnection, McpError};
#[cfg(doc)]
use crate::tool::ToolError;

/// Where a server is and how to reach it.
#[derive(Debug, Clone)]
pub(super) enum Target {
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
    pub(super) name: String,
    pub(super) target: Target,
    pub(super) prefix: Option<String>,
    pub(super) timeout: Duration,
    connect_timeout: Duration,
    pub(super) reconnect: bool,
    pub(super) trusted: bool,
    #[allow(deprecated)]
    roots: Vec<Root>,
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
            trusted: false,
            roots: Vec::new(),
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

    /// Trust this server's tools to run without a person's approval. By default a tool
    /// that may change something (annotated `destructiveHint: true`, or not annotated
    /// `readOnlyHint: true`) waits for a person's decision before each call
    /// ([`crate::approval`]); [`McpTool::needs_approval`] still decides per tool.
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// Offer the server a root: a `file://` URI of a directory it may work in, with a
    /// name for people. With at least one root the client declares the `roots`
    /// capability and answers the server's `roots/list`; without, it declares none.
    #[allow(deprecated)]
    pub fn root(mut self, uri: impl Into<String>, name: impl Into<String>) -> Self {
        self.roots.push(Root::new(uri).with_name(name));
        self
    }

    /// The server's name, as given when it was described (used in tool ids and errors).
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
        let instructions = session
            .service
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .filter(|i| !i.trim().is_empty());
        Ok(McpConnection::new(Arc::new(Shared {
            server: self,
            tools,
            instructions,
            session: tokio::sync::Mutex::new(Slot {
                session: Some(session),
                generation: 0,
            }),
        })))
    }

    fn connect_timed_out(&self) -> McpError {
        McpError::ConnectTimedOut {
            server: self.name.clone(),
            target: self.target.to_string(),
            after: self.connect_timeout,
        }
    }

    /// Open a session (no time limit of its own).
    pub(super) async fn open(&self) -> Result<Session, McpError> {
        let handshake = |message: String| McpError::Handshake {
            server: self.name.clone(),
            target: self.target.to_string(),
            message,
        };
        let failed = |e: ClientInitializeError| match &e {
            ClientInitializeError::TransportError { error, .. } => {
                let cause = super::session::cause(error.error.as_ref());
                match &self.target {
                    Target::Http { url, .. } => McpError::Unreachable {
                        server: self.name.clone(),
                        url: url.clone(),
                        cause,
                    },
                    Target::Stdio { .. } => handshake(cause),
                }
            }
            _ => handshake(e.to_string()),
        };
        let client = super::session::Client {
            roots: self.roots.clone(),
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
                let service = client.serve(process).await.map_err(failed)?;
                Ok(Session {
                    service,
                    pid,
                    http_session: None,
                })
            }
            Target::Http { url, bearer } => {
                ensure_crypto_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.clone());
                }
                let seen = SessionIdCell::default();
                let http = SessionAwareClient::new(seen.clone()).map_err(handshake)?;
                let transport = StreamableHttpClientTransport::with_client(http, config);
                let service = client.serve(transport).await.map_err(failed)?;
                Ok(Session {
                    service,
                    pid: None,
                    http_session: Some(seen),
                })
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

#[cfg(test)]
mod tests {
    use super::*;

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
