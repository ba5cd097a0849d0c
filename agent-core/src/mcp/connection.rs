//! A connected MCP server as the application holds it: where its tools are picked
//! from, and how all of them are offered to an agent at once.

use std::sync::Arc;

#[cfg(doc)]
use super::McpServer;
use super::session::{Session, Shared};
use super::{McpError, McpTool};
use crate::agent::AgentBuilder;
use crate::data::{AgentContext, AgentData};

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
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The server's name, as given when it was described (used in tool ids and errors).
    pub fn name(&self) -> &str {
        &self.shared.server.name
    }

    /// The server-side names of its tools, as listed when it connected.
    pub fn tool_names(&self) -> Vec<&str> {
        self.shared.tools.iter().map(|t| t.name.as_ref()).collect()
    }

    /// The server's instructions from its handshake (how to use its tools), when it
    /// gave any. [`AgentBuilder::tools_of`] adds them to the agent's prompt.
    pub fn instructions(&self) -> Option<&str> {
        self.shared.instructions.as_deref()
    }

    /// The server's instructions as the prompt entry [`AgentBuilder::tools_of`] adds
    /// (naming the server and its tools' prefix), for an agent that offers single
    /// tools: `builder.knowledge(entry)`.
    pub fn prompt_entry(&self) -> Option<String> {
        let text = self.instructions()?;
        let server = self.name();
        Some(match &self.shared.server.prefix {
            Some(p) => format!(
                "Instructions of the MCP server `{server}` (its tools are named `{p}__…`):\n{}",
                text.trim()
            ),
            None => format!(
                "Instructions of the MCP server `{server}`:\n{}",
                text.trim()
            ),
        })
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
    /// Offer every tool of a connected MCP server ([`crate::mcp`]) agent-wide, and add
    /// the server's instructions, if it gave any, to the prompt's knowledge
    /// ([`McpConnection::prompt_entry`]); pick single tools with
    /// [`McpConnection::tool`] to offer them in a flow or a step only.
    pub fn tools_of(self, server: &McpConnection) -> Self {
        let with_tools = server.tools().into_iter().fold(self, |b, t| b.tool(t));
        match server.prompt_entry() {
            Some(entry) => with_tools.knowledge(entry),
            None => with_tools,
        }
    }
}
