//! The live MCP session behind a connection and its tools: reconnecting after a lost
//! transport and turning every call's outcome into a tool result the model can read.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, ResourceContents,
};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::McpServer;
use crate::tool::{ToolError, ToolOutput};

/// One open MCP session.
pub(super) struct Session {
    pub(super) service: RunningService<RoleClient, ()>,
    pub(super) pid: Option<u32>,
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
    pub(super) session: tokio::sync::Mutex<Slot>,
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

    pub(super) async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
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
