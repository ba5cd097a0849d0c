//! One tool of an MCP server as an agent tool: its model-facing name, settings the
//! application may override, and the time limit around each call.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

#[cfg(doc)]
use super::McpServer;
use super::session::Shared;
use crate::tool::{Effect, Tool, ToolCx, ToolError, ToolOutput};

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
    read_only: bool,
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
            .field("needs_approval", &self.approval)
            .finish()
    }
}

impl McpTool {
    pub(super) fn new(shared: Arc<Shared>, tool: &rmcp::model::Tool) -> Self {
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
        let annotations = tool.annotations.as_ref();
        let read_only = annotations.and_then(|a| a.read_only_hint) == Some(true);
        let destructive = annotations.and_then(|a| a.destructive_hint) == Some(true);
        Self {
            timeout: shared.server.timeout,
            approval: (destructive || !read_only) && !shared.server.trusted,
            shared,
            remote,
            name,
            description,
            parameters: Value::Object(schema),
            effect: Effect::Idempotent,
            read_only,
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
    /// ([`crate::approval`]). The default for a tool that may change something: one
    /// the server annotates `destructiveHint: true`, or does not annotate
    /// `readOnlyHint: true`, unless the server is [`McpServer::trusted`].
    pub fn needs_approval(mut self) -> Self {
        self.approval = true;
        self
    }

    /// Whether calls wait for a person's decision (see [`Self::needs_approval`]);
    /// `false` runs this tool without approval, whatever its annotations say.
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }

    /// Whether calls wait for a person's decision before they run.
    pub fn requires_approval(&self) -> bool {
        self.approval
    }

    /// Whether the server annotates the tool `readOnlyHint: true` (it changes
    /// nothing). Only such a tool's call (unless its effect is set to
    /// [`Effect::Once`]), or one set to [`Effect::Pure`], is sent again after the
    /// connection broke while it ran (see the [module docs](super)).
    pub fn read_only(&self) -> bool {
        self.read_only
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
        // Read-only (by the server's word) or pure (by the application's), and not
        // declared `Once` by the application: running it twice changes nothing.
        let repeatable = match self.effect {
            Effect::Pure => true,
            Effect::Idempotent => self.read_only,
            Effect::Once => false,
        };
        let call = self.shared.call(&self.remote, args, repeatable);
        match tokio::time::timeout(self.timeout, call).await {
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
}
