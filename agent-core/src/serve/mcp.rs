//! The MCP server (feature `mcp-server`): the served agent as the tools of an MCP server
//! over streamable HTTP, through the server side of the official Rust SDK (`rmcp`). The
//! module docs of [`crate::serve`] say what it serves.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::events::pending_list;
use super::web::unauthorized;
use super::{OPERATOR_ONLY, Principal, Server, not_yours, valid_call_id, valid_id};
use crate::approval::{Decision, PendingCall};
use crate::data::{AgentContext, AgentData};

/// The tool that sends the user's message.
pub const MESSAGE_TOOL: &str = "message";
/// The tool that decides a call waiting for a person's approval (operators only).
pub const DECIDE_TOOL: &str = "decide";

/// The MCP endpoint under `path`, authenticated like every other route.
pub(super) fn routes<D: AgentData, C: AgentContext>(
    server: &Server<D, C>,
    path: &str,
) -> Router<Server<D, C>> {
    let handler = Handler {
        server: server.clone(),
    };
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(server.shared.body_limit)
        .with_sse_keep_alive(None);
    if !server.shared.mcp_hosts.is_empty() {
        config = config.with_allowed_hosts(server.shared.mcp_hosts.clone());
    }
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(path, service)
        .layer(axum::middleware::from_fn_with_state(
            server.clone(),
            authenticate::<D, C>,
        ))
}

/// Every MCP request is authenticated before rmcp reads it: a refused one is a `401`,
/// an accepted one carries its [`Principal`] to the tools.
async fn authenticate<D: AgentData, C: AgentContext>(
    State(server): State<Server<D, C>>,
    mut request: Request,
    next: Next,
) -> Response {
    match server.caller(request.headers()).await {
        Ok(who) => {
            request.extensions_mut().insert(who);
            next.run(request).await
        }
        Err(e) => unauthorized(json!({ "error": e.to_string() })),
    }
}

/// One rmcp service per MCP session, all over the same [`Server`].
struct Handler<D, C> {
    server: Server<D, C>,
}

impl<D, C> Clone for Handler<D, C> {
    fn clone(&self) -> Self {
        Self {
            server: self.server.clone(),
        }
    }
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn text_result(text: impl Into<String>, structured: Value) -> CallToolResponse {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r.into()
}

fn refused(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}

/// What a result says about calls waiting for a person's approval.
fn waiting_text(calls: &[PendingCall]) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|c| format!("`{}` (call `{}`)", c.tool, c.id))
        .collect();
    format!(
        "{} {} for a person's approval: it has not run yet, and it runs once an operator \
         approves it (the `{DECIDE_TOOL}` tool with an operator's credential, or the web \
         chat's approval route).",
        names.join(", "),
        if calls.len() == 1 { "waits" } else { "wait" }
    )
}

impl<D: AgentData, C: AgentContext> Handler<D, C> {
    fn message_tool(&self) -> Tool {
        let agent = self.server.agent();
        let name = match agent.name().trim() {
            "" => "the agent",
            n => n,
        };
        let flows: Vec<String> = agent
            .flows()
            .map(|f| {
                if f.title().trim().is_empty() || f.title() == f.id() {
                    format!("- {}", f.id())
                } else {
                    format!("- {}: {}", f.id(), f.title())
                }
            })
            .collect();
        let mut description = format!(
            "Send the user's message to {name} and get its reply. The conversation \
             continues over the calls of one MCP session; pass `session_id` (the result \
             names it) to continue a conversation from another MCP session."
        );
        if !flows.is_empty() {
            description.push_str(&format!("\nWhat it handles:\n{}", flows.join("\n")));
        }
        Tool::new(
            MESSAGE_TOOL,
            description,
            object(json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The user's message" },
                    "session_id": {
                        "type": "string",
                        "description": "The conversation to continue (1 to 64 letters, digits, '-' or '_'); by default the MCP session's",
                    },
                },
                "required": ["text"],
            })),
        )
    }

    fn decide_tool() -> Tool {
        Tool::new(
            DECIDE_TOOL,
            "Decide a tool call that waits for a person's approval (operators only): \
             approve it or deny it with a reason. The result is the resumed turn.",
            object(json!({
                "type": "object",
                "properties": {
                    "session_id": { "type": "string", "description": "The conversation" },
                    "call_id": { "type": "string", "description": "The waiting call's id" },
                    "decision": { "type": "string", "enum": ["approve", "deny"] },
                    "reason": { "type": "string", "description": "Why it is denied" },
                },
                "required": ["session_id", "call_id", "decision"],
            })),
        )
    }

    /// The conversation of a call: its `session_id`, else the MCP session's.
    fn session_of(
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<String, String> {
        if let Some(v) = arguments.get("session_id") {
            let id = v
                .as_str()
                .filter(|s| valid_id(s))
                .ok_or("`session_id` must be 1 to 64 letters, digits, '-' or '_'")?;
            return Ok(id.to_owned());
        }
        let mcp = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(|s| format!("mcp-{s}"))
            .filter(|s| valid_id(s));
        mcp.ok_or_else(|| {
            "this call has no MCP session: pass `session_id` to name the conversation".into()
        })
    }

    fn answer(&self, r: &crate::response::AgentResponse<D>) -> CallToolResponse {
        let mut text = r.message.clone();
        if !r.awaiting_approval.is_empty() {
            if !text.trim().is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&waiting_text(&r.awaiting_approval));
        }
        text_result(
            text,
            json!({
                "session_id": r.session_id,
                "message": r.message,
                "flow": r.flow,
                "step": r.step,
                "stopped": r.stopped,
                "awaiting_approval": pending_list(&r.awaiting_approval),
            }),
        )
    }

    fn failed(&self, session: &str, e: &crate::error::AgentError) -> CallToolResponse {
        (self.server.shared.log)(&format!(
            "[server] MCP session {session}: turn failed: {e} (the session is unchanged)"
        ));
        refused(format!(
            "the turn failed: {e} (the conversation is unchanged)"
        ))
    }

    async fn message(
        &self,
        who: &Principal,
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Some(text) = arguments
            .get("text")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
        else {
            return refused("`text` (the user's message) is required");
        };
        let session = match Self::session_of(arguments, context) {
            Ok(s) => s,
            Err(e) => return refused(e),
        };
        if !self.server.may_write(who, &session).await {
            return refused(not_yours(&session));
        }
        let agent = self.server.agent();
        // While calls wait, a message runs no turn: only an operator's decision
        // resolves them (a "yes" in the chat never does).
        match agent.session(&session).await {
            Ok(Some(s)) => {
                let waiting = s.approval.as_ref().map(|p| p.waiting()).unwrap_or_default();
                if !waiting.is_empty() {
                    return text_result(
                        waiting_text(&waiting),
                        json!({
                            "session_id": session,
                            "message": null,
                            "flow": s.flow,
                            "step": s.step,
                            "stopped": "awaiting_approval",
                            "awaiting_approval": pending_list(&waiting),
                        }),
                    );
                }
            }
            Ok(None) => {}
            Err(e) => return self.failed(&session, &e),
        }
        match agent.respond(&session, text).await {
            Ok(r) => self.answer(&r),
            Err(e) => self.failed(&session, &e),
        }
    }

    async fn decide(&self, who: &Principal, arguments: &JsonObject) -> CallToolResponse {
        if !who.is_operator() {
            return refused(OPERATOR_ONLY);
        }
        let field = |name: &str| arguments.get(name).and_then(Value::as_str).map(str::trim);
        let Some(session) = field("session_id").filter(|s| valid_id(s)) else {
            return refused("`session_id` must be 1 to 64 letters, digits, '-' or '_'");
        };
        let Some(call) = field("call_id").filter(|c| valid_call_id(c)) else {
            return refused("`call_id` (the waiting call's id) is required");
        };
        let decision = match (field("decision"), field("reason").filter(|r| !r.is_empty())) {
            (Some("approve"), _) => Decision::Approve,
            (Some("deny"), Some(reason)) => Decision::Deny {
                reason: reason.to_owned(),
            },
            (Some("deny"), None) => return refused("a denial needs a `reason`"),
            _ => return refused("`decision` must be `approve` or `deny`"),
        };
        match self
            .server
            .agent()
            .resolve_approval(session, call, decision)
            .await
        {
            Ok(r) => self.answer(&r),
            Err(crate::error::AgentError::NoPendingApproval { .. }) => refused(format!(
                "no call `{call}` waits for a decision in session {session}"
            )),
            Err(e) => self.failed(session, &e),
        }
    }
}

impl<D: AgentData, C: AgentContext> ServerHandler for Handler<D, C> {
    fn get_info(&self) -> ServerConfig {
        let name = match self.server.agent().name().trim() {
            "" => "agent",
            n => n,
        };
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(format!(
                "{name} is a conversational agent: send each of the user's messages with \
                 the `{MESSAGE_TOOL}` tool and show its reply. A call that waits for a \
                 person's approval has not run until an operator decides it."
            ));
        info.server_info = Implementation::new(name, env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            self.message_tool(),
            Self::decide_tool(),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Principal>())
            .cloned();
        // The router authenticates every request: a call without a principal did not
        // come through it.
        let Some(who) = who else {
            return Ok(refused("the request is not authenticated"));
        };
        let arguments = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            MESSAGE_TOOL => Ok(self.message(&who, &arguments, &context).await),
            DECIDE_TOOL => Ok(self.decide(&who, &arguments).await),
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`: the tools are `{MESSAGE_TOOL}` and `{DECIDE_TOOL}`"),
                None,
            )),
        }
    }
}
