//! The live MCP session behind a connection and its tools: what the client declares and
//! serves, reopening a lost or expired session, and turning every call's outcome into a
//! tool result the model can read (with its span).

use std::error::Error as StdError;

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    ErrorCode, ErrorData, Implementation, JsonObject, ListRootsResult, ResourceContents, Root,
    RootsCapabilities,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError};
use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use super::McpServer;
use super::http::SessionIdCell;
use super::server::Target;
use crate::tool::{ToolError, ToolImage, ToolOutput};

/// The client side of a session: what it declares at the handshake and the requests
/// from the server it answers. Roots are declared only when the application gave some
/// ([`McpServer::root`]); sampling and elicitation are not declared, since no model or
/// person is at hand to answer them, so a server does not send them.
// Roots are deprecated by SEP-2577 (protocol 2026-07-28) but still what the servers
// of earlier protocol versions, the reference servers among them, ask for.
#[allow(deprecated)]
#[derive(Debug, Clone, Default)]
pub(super) struct Client {
    pub(super) roots: Vec<Root>,
}

#[allow(deprecated)]
impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agent-core", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        if self.roots.is_empty() {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "this client declares no roots",
                None,
            ));
        }
        Ok(ListRootsResult::new(self.roots.clone()))
    }
}

/// One open MCP session.
pub(super) struct Session {
    pub(super) service: RunningService<RoleClient, Client>,
    pub(super) pid: Option<u32>,
    /// The HTTP session id (`Mcp-Session-Id`) the transport sends, when it has one.
    pub(super) http_session: Option<SessionIdCell>,
}

impl Session {
    pub(super) fn is_open(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

pub(super) struct Slot {
    pub(super) session: Option<Session>,
    /// Bumped at each reconnect, so a failed call drops only the session it used.
    pub(super) generation: u64,
}

pub(super) struct Shared {
    pub(super) server: McpServer,
    pub(super) tools: Vec<rmcp::model::Tool>,
    /// The server's `instructions` from its handshake.
    pub(super) instructions: Option<String>,
    pub(super) session: tokio::sync::Mutex<Slot>,
}

/// The open session as one call uses it.
struct Lease {
    peer: Peer<RoleClient>,
    generation: u64,
    session_id: Option<String>,
}

/// How one attempt at a call ended.
#[expect(
    clippy::large_enum_variant,
    reason = "one per call attempt, moved once"
)]
enum Attempt {
    /// The server answered (or the call failed in a way a retry cannot mend).
    Done(Result<ToolOutput, ToolError>),
    /// The request provably did not run: the server refused it for an unknown session,
    /// or the connection could not be made. Sending it again is safe for any tool.
    NotRun(String),
    /// The connection broke after the request was sent: the server may have run it.
    Unknown(String),
}

impl Shared {
    /// The open session, reconnecting first if it was lost (and allowed).
    async fn lease(&self) -> Result<Lease, ToolError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = &slot.session
            && s.is_open()
        {
            return Ok(Lease {
                peer: s.service.peer().clone(),
                generation: slot.generation,
                session_id: s.http_session.as_ref().and_then(SessionIdCell::get),
            });
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
            ToolError::Failed(match e {
                super::McpError::Unreachable { url, cause, .. } => format!(
                    "MCP server `{name}` cannot be reached at {url} ({cause}); the tool did not run; the next call tries again"
                ),
                other => format!(
                    "the session with MCP server `{name}` was lost and opening a new one failed: {other}; the tool did not run"
                ),
            })
        })?;
        tracing::info!(server = %name, "opened a new session with the MCP server");
        slot.generation += 1;
        let lease = Lease {
            peer: session.service.peer().clone(),
            generation: slot.generation,
            session_id: session.http_session.as_ref().and_then(SessionIdCell::get),
        };
        slot.session = Some(session);
        Ok(lease)
    }

    /// Forget the session of `generation` after its transport failed, so the next call
    /// reconnects.
    async fn lost(&self, generation: u64) {
        let mut slot = self.session.lock().await;
        if slot.generation == generation {
            slot.session = None;
        }
    }

    /// Call `tool`. A call whose request provably did not run (the server no longer
    /// knew the session, or could not be reached) is sent once more on a new session;
    /// a call whose connection broke after it was sent is sent again only when
    /// `repeatable` (the tool is read-only or pure), never for a tool with side
    /// effects.
    pub(super) async fn call(
        &self,
        tool: &str,
        args: Value,
        repeatable: bool,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(o) => Some(o),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        let span = self.span(tool);
        let run = async {
            let server = &self.server.name;
            let next = if self.server.reconnect {
                "the next call opens a new session"
            } else {
                "reconnecting is off"
            };
            let first = self.attempt(tool, arguments.clone()).await;
            let retry = match &first {
                Attempt::NotRun(_) => self.server.reconnect,
                Attempt::Unknown(_) => self.server.reconnect && repeatable,
                Attempt::Done(_) => false,
            };
            let last = if retry {
                tracing::info!(server = %server, tool, "sending the call again on a new session");
                self.attempt(tool, arguments).await
            } else {
                first
            };
            match last {
                Attempt::Done(r) => r,
                Attempt::NotRun(why) => Err(ToolError::Failed(format!(
                    "MCP server `{server}` could not take the call ({why}); the tool did not run; {next}"
                ))),
                Attempt::Unknown(why) => Err(ToolError::Failed(format!(
                    "the connection to MCP server `{server}` broke during the call ({why}); the tool may or may not have run; {next}"
                ))),
            }
        };
        let result = run.instrument(span.clone()).await;
        if let Err(e) = &result {
            span.record("otel.status_code", "error");
            span.record("otel.status_description", e.to_string());
        }
        result
    }

    /// The span of one `tools/call` (the MCP semantic conventions' client span).
    fn span(&self, tool: &str) -> tracing::Span {
        let (transport, address, port) = match &self.server.target {
            Target::Stdio { .. } => ("pipe", None, None),
            Target::Http { url, .. } => {
                let (host, port) = host_port(url);
                ("tcp", host, port)
            }
        };
        let protocol = match &self.server.target {
            Target::Stdio { .. } => None,
            Target::Http { .. } => Some("http"),
        };
        tracing::info_span!(
            "mcp_call",
            server = %self.server.name,
            otel.name = format_args!("tools/call {tool}"),
            otel.kind = "client",
            otel.status_code = Empty,
            otel.status_description = Empty,
            "mcp.method.name" = "tools/call",
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = tool,
            "mcp.session.id" = Empty,
            "mcp.protocol.version" = Empty,
            "network.transport" = transport,
            "network.protocol.name" = protocol,
            "server.address" = address,
            "server.port" = port,
            "rpc.response.status_code" = Empty,
            "error.type" = Empty,
        )
    }

    async fn attempt(&self, tool: &str, arguments: Option<JsonObject>) -> Attempt {
        let span = tracing::Span::current();
        let lease = match self.lease().await {
            Ok(l) => l,
            Err(e) => {
                span.record("error.type", "connection");
                return Attempt::Done(Err(e));
            }
        };
        if let Some(id) = &lease.session_id {
            span.record("mcp.session.id", id.as_str());
        }
        if let Some(info) = lease.peer.peer_info() {
            span.record("mcp.protocol.version", info.protocol_version.as_str());
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(a) = arguments {
            params = params.with_arguments(a);
        }
        let server = &self.server.name;
        match lease.peer.call_tool(params).await {
            Ok(result) => {
                let out = output(result);
                if out.is_err() {
                    span.record("error.type", "tool_error");
                }
                Attempt::Done(out.map_err(|text| {
                    ToolError::Failed(if text.is_empty() {
                        format!("MCP server `{server}` reported an error without a message")
                    } else {
                        text
                    })
                }))
            }
            Err(ServiceError::McpError(e)) => {
                span.record("error.type", e.code.0.to_string());
                span.record("rpc.response.status_code", e.code.0.to_string());
                if e.code == ErrorCode::INVALID_PARAMS {
                    return Attempt::Done(Err(ToolError::InvalidArguments(e.message.into_owned())));
                }
                Attempt::Done(Err(ToolError::Failed(format!(
                    "MCP server `{server}` refused the call: {} (JSON-RPC error {})",
                    e.message, e.code.0
                ))))
            }
            Err(ServiceError::Timeout { timeout }) => {
                span.record("error.type", "timeout");
                Attempt::Done(Err(ToolError::TimedOut(timeout)))
            }
            Err(ServiceError::TransportSend(t)) => {
                span.record("error.type", "transport");
                self.lost(lease.generation).await;
                let e: &(dyn StdError + 'static) = t.error.as_ref();
                if not_delivered(e) {
                    Attempt::NotRun(cause(e))
                } else {
                    Attempt::Unknown(cause(e))
                }
            }
            Err(ServiceError::TransportClosed) => {
                span.record("error.type", "transport");
                self.lost(lease.generation).await;
                Attempt::Unknown("the transport closed".to_owned())
            }
            Err(e) => {
                span.record("error.type", "_OTHER");
                Attempt::Done(Err(ToolError::Failed(format!(
                    "MCP server `{server}`: the call failed: {e}"
                ))))
            }
        }
    }
}

/// The host and port of a URL, for `server.address` and `server.port`.
fn host_port(url: &str) -> (Option<String>, Option<u16>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (None, None);
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let default_port = match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => (v6, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = port.and_then(|p| p.parse().ok()).or(default_port);
    ((!host.is_empty()).then(|| host.to_owned()), port)
}

/// The errors in `e`'s chain (itself first), through the reqwest error that rmcp's
/// `StreamableHttpError::Client` holds without naming it as its source.
fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| {
        match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner as &(dyn StdError + 'static)),
            _ => e.source(),
        }
    })
}

/// Whether a transport failure proves the request did not reach a session that could
/// run it: the server no longer knew the session (HTTP 404, or the id-less error
/// [`super::http`] turns into the same), or no connection could be made.
fn not_delivered(e: &(dyn StdError + 'static)) -> bool {
    chain(e).any(|c| {
        if let Some(h) = c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return matches!(
                h,
                StreamableHttpError::SessionExpired
                    | StreamableHttpError::ReinitializationFailed(_)
            );
        }
        if let Some(r) = c.downcast_ref::<reqwest::Error>() {
            return r.is_connect();
        }
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// A transport failure in words, without the Rust type names rmcp's own messages carry:
/// `connection refused`, `the server no longer knows the session (…)`, or the deepest
/// cause's own message.
pub(super) fn cause(e: &(dyn StdError + 'static)) -> String {
    use std::io::ErrorKind;
    for c in chain(e) {
        if let Some(h) = c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match h {
                StreamableHttpError::SessionExpired => {
                    return "the server no longer knows the session: it restarted or ended it"
                        .to_owned();
                }
                StreamableHttpError::ReinitializationFailed(d) => {
                    return format!("opening a new session was refused: {}", d.message);
                }
                _ => {}
            }
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionRefused => return "connection refused".to_owned(),
                ErrorKind::ConnectionReset => return "connection reset by the server".to_owned(),
                ErrorKind::ConnectionAborted => return "connection aborted".to_owned(),
                ErrorKind::TimedOut => return "the connection timed out".to_owned(),
                ErrorKind::BrokenPipe => return "the server closed the connection".to_owned(),
                _ => {}
            }
        }
    }
    let deepest = chain(e).last().unwrap_or(e);
    if let Some(r) = deepest.downcast_ref::<reqwest::Error>() {
        if let Some(status) = r.status() {
            return format!("HTTP {status}");
        }
        if r.is_timeout() {
            return "no answer in time".to_owned();
        }
    }
    short(&deepest.to_string())
}

/// A message cut at its first line break and to 200 characters (an HTML error page in
/// a body is no help in a tool result).
fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim_end();
    let cut: String = line.chars().take(200).collect();
    if cut.len() < text.trim_end().len() {
        format!("{}…", cut.trim_end_matches([':', ' ']))
    } else {
        cut
    }
}

/// A result as a tool output: the text the model reads (text parts joined by new lines,
/// other parts described in a line; with no content, the structured content as JSON),
/// the structured content as JSON, and the images. `Err` with the text when the server
/// flagged the result as an error.
fn output(result: CallToolResult) -> Result<ToolOutput, String> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in &result.content {
        parts.push(describe(block));
        if let ContentBlock::Image(i) = block {
            images.push(ToolImage::base64(i.mime_type.clone(), i.data.clone()));
        }
    }
    let text = match (&result.structured_content, parts.is_empty()) {
        (Some(v), true) => v.to_string(),
        _ => parts.join("\n"),
    };
    if result.is_error == Some(true) {
        return Err(text);
    }
    let mut out = ToolOutput::text(text);
    out.structured = result.structured_content;
    out.images = images;
    Ok(out)
}

fn describe(block: &ContentBlock) -> String {
    // base64 is 4 characters per 3 bytes.
    let size = |b64: &str| b64.len() / 4 * 3;
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes; the tool returned an image that is not shown here]",
            i.mime_type,
            size(&i.data)
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_and_port() {
        assert_eq!(
            host_port("http://127.0.0.1:3001/mcp"),
            (Some("127.0.0.1".into()), Some(3001))
        );
        assert_eq!(
            host_port("https://user:pw@mcp.example.com/x?y"),
            (Some("mcp.example.com".into()), Some(443))
        );
        assert_eq!(
            host_port("http://[::1]:8/mcp"),
            (Some("::1".into()), Some(8))
        );
        assert_eq!(host_port("nonsense"), (None, None));
    }
}
