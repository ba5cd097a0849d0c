//! Serving any agent over HTTP (feature `serve`): an OpenAI-compatible chat endpoint,
//! the OpenAI Responses API, AG-UI events and the web chat's JSON API, each an [`axum`] router, behind
//! authentication.
//!
//! ```no_run
//! use agent_core::prelude::*;
//! use agent_core::serve::{BearerTokens, Server};
//! # async fn run(agent: Agent<serde_json::Value, ()>) -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder(agent)
//!     .auth(BearerTokens::new().user("token-of-ana", "ana").operator("token-of-the-desk", "desk"))
//!     .model("concierge")
//!     .allowed_origins(["https://app.example.com"])
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! agent_core::serve::axum::serve(listener, server.router()).await?;
//! # Ok(()) }
//! ```
//!
//! - [`Server::openai_router`]: `POST /v1/chat/completions`, `GET /v1/models`
//!   ([below](self#openai-compatible-chat)) and `POST /v1/responses`
//!   ([below](self#openai-responses-api)).
//! - [`Server::agui_router`]: `POST /agui`, AG-UI's `RunAgentInput` answered with AG-UI
//!   events ([below](self#ag-ui)).
//! - [`Server::web_router`]: the web chat's API under `/api` ([below](self#web-chat-api)).
//! - `Server::mcp_router` (feature `mcp-server`): the agent as an MCP server over
//!   streamable HTTP ([below](self#mcp-server)).
//! - `Server::a2a_router` (feature `a2a`): the agent over the A2A protocol
//!   ([below](self#a2a)).
//! - [`Server::router`]: all of them together (the MCP server at `/mcp` with the feature
//!   `mcp-server`, A2A with the feature `a2a`).
//!
//! # Authentication and sessions
//!
//! Every request of every route is authenticated by the [`Authenticator`] the server is
//! built with: [`BearerTokens`] (static `Authorization: Bearer` tokens, what OpenAI
//! clients send as their API key), the application's own implementation (a cookie, a
//! JWT, a gateway's header), or [`Anonymous`] (nobody is authenticated: for a
//! developer's machine). A refused request is a `401`.
//!
//! A session belongs to the first [`Principal`] that writes to it ([`SessionOwners`];
//! [`MemoryOwners`] by default). Another principal's request on it is a `403`, on every
//! protocol, and `GET /api/sessions` lists only the caller's own sessions.
//!
//! A tool call that waits for a person's approval is decided only by an operator
//! ([`Principal::operator`]): the approval route, an AG-UI `resume` and an OpenAI `tool`
//! message from anyone else are a `403`. Operators may read and decide on any session;
//! they send messages only in their own.
//!
//! # OpenAI-compatible chat
//!
//! `POST /v1/chat/completions` runs one turn; `stream: true` streams it as
//! `chat.completion.chunk` events. `GET /v1/models` lists the served model names
//! ([`ServerBuilder::model`]); another `model` is a `404` `model_not_found`.
//!
//! **Keeping a conversation.** The agent keeps its own history and state: the turn's
//! input is the last `user` message, and the assistant messages a client sends back are
//! never read into the engine. The session is, in this order:
//! 1. the `x-session-id` header, or `metadata.session_id` in the body (any OpenAI client
//!    can send it: `extra_headers` or `metadata`); every answer carries the session in
//!    its `x-session-id` header and in `agent.session_id`;
//! 2. otherwise a session derived from the caller's identity (the authenticated
//!    principal, else the API key, plus the `user` field when set) and the first user
//!    message, so a client that re-sends the whole history (what the `openai` SDKs and
//!    the OpenAI Agents SDK do) continues its conversation. Two conversations that open
//!    with the same message are kept apart: a new one (one user message) gets a new
//!    session, and a re-sent history continues the session whose last recorded user
//!    message is the latest of the history's earlier ones (a message answered while a
//!    call waited runs no turn and is not recorded). A history that matches none of the caller's
//!    conversations is a `400` (`session_not_found`), never a new session that forgot the
//!    earlier turns;
//! 3. a caller without identity (an [`Anonymous`] server, no API key, no `user`) gets a
//!    new session for a first message; a longer history is a `400`
//!    (`session_required`) saying how to carry the session.
//!
//! **Approvals.** A turn that ends with calls waiting for approval finishes with
//! `finish_reason: "tool_calls"` and the waiting calls as `tool_calls` (the content says
//! they wait). While calls wait, a user message runs no turn: the answer lists them
//! again (an action that may still happen is never reported as not done). An operator
//! decides a call with a `tool` message (`tool_call_id` the call's id, `content`
//! `approve`, `deny: <reason>` or an `{"decision": ...}` object), naming the session by
//! `x-session-id`; the answer is the resumed turn.
//!
//! **Errors** are OpenAI-style `{"error": {"message", "type", "param", "code"}}`: `400`
//! for a request the endpoint does not take (no user message, `tools`, `n` > 1, a user
//! message over the agent's `max_message_bytes`: `string_above_max_length`), `401`,
//! `403`, `404` `model_not_found`, `413` for a body over [`ServerBuilder::body_limit`],
//! `500` for a failed turn (the session is unchanged).
//!
//! # OpenAI Responses API
//!
//! `POST /v1/responses` runs one turn on the chat endpoint's rules (the same
//! authentication, model names, sessions, limits and errors); it is what the OpenAI
//! Agents SDK's default model class, `OpenAIResponsesModel`, calls. The answer is a
//! `response` object (`id` `resp_...`, `status`, `model`, one `message` item in `output`
//! whose content is one `output_text`, `usage` with the turn's `input_tokens`,
//! `output_tokens` and `total_tokens`, `metadata.session_id`, and the `agent` field of
//! the chat endpoint); `stream: true` streams it as server-sent events, each with its
//! `sequence_number`: `response.created`, `response.in_progress`,
//! `response.output_item.added`, `response.content_part.added`,
//! `response.output_text.delta`..., `response.output_text.done`,
//! `response.content_part.done`, `response.output_item.done`, then `response.completed`
//! (or `response.incomplete`, below; `response.failed` when the turn fails, the session
//! unchanged).
//!
//! **Input.** `input` is a string, or a list of input items: `user` messages (a string
//! or `input_text` parts), `system`/`developer` messages and earlier output (`assistant`
//! messages, reasoning items, ...). As on the chat endpoint, the turn's input is the last
//! user message: earlier items are never read into the engine, which keeps its own
//! history. `instructions` is echoed but not given to the engine (the agent has its own
//! instructions).
//!
//! **Keeping a conversation**, in this order:
//! 1. `previous_response_id`: the session of that response (the server remembers the
//!    last 10 000 response ids; an id it does not know is a `404`
//!    `previous_response_not_found`, another principal's a `403`);
//! 2. the `x-session-id` header or `metadata.session_id`, as on the chat endpoint (every
//!    response carries its session in the header and in `metadata.session_id`);
//! 3. otherwise the chat endpoint's derived session, read from the `input` list: a
//!    client that re-sends the whole history (the Agents SDK's `to_input_list()`)
//!    continues its conversation.
//!
//! **Refused** with a `400` naming the parameter, because they would change what the
//! answer means: `tools` that are not empty (the agent calls its own tools),
//! `tool_choice` other than `auto` or `none`, `text.format` other than `text`
//! (structured outputs), `conversation` (use `previous_response_id`), `prompt`,
//! `background: true`, and `function_call_output` items. Parameters that do not apply to
//! an agent (`include`, `store`, `temperature`, `top_p`, `max_output_tokens`,
//! `truncation`, `parallel_tool_calls`, `reasoning`, `user`...) are accepted; `tools: []`
//! (what the Agents SDK sends for an agent without tools) too. A user message over the
//! agent's `max_message_bytes` is a `400` `string_above_max_length`, a body over
//! [`ServerBuilder::body_limit`] a `413`: neither is retried by the clients.
//!
//! **Approvals.** A turn that ends with calls waiting for a person's approval is never
//! reported as done: its status is `incomplete` with `incomplete_details.reason`
//! `awaiting_approval` (streamed: `response.incomplete`), the message says the calls
//! wait, and `agent.awaiting_approval` lists them (the Agents SDK raises a
//! `ModelBehaviorError` naming the reason). While calls wait, a message runs no turn and
//! is answered the same way. The calls are decided by an operator on the other routes
//! (a `tool` message on `/v1/chat/completions` naming the session, an AG-UI `resume`, or
//! the web chat's approval route), not here.
//!
//! # AG-UI
//!
//! `POST /agui`: `threadId` is the session; the input is the last `user` message, or a
//! `resume` of the interrupt a waiting call ended the previous run with (operators
//! only). The run streams `RUN_STARTED`, state snapshots and deltas (`{flow, step, data,
//! awaiting_approval}`), steps, text messages and tool calls, then `RUN_FINISHED` (an
//! `interrupt` outcome when a call waits) or `RUN_ERROR`. A run whose session is
//! handed over to a person ([`crate::agent::HumanHandoff`]) sends a `CUSTOM` event
//! named `human_handoff` (`{threadId, flow, step}`) before its state snapshot.
//!
//! What the frontend sends besides messages: `state.data`, when it differs from the
//! session's data, is written to the session (as a directive, validated by the engine)
//! before the turn (on a message run of the session's owner, not on a `resume`); the engine decides the position, so `state.flow` and `state.step`
//! are not read. `tools` (frontend tools) and `context` cannot be used by the engine:
//! each run that carries them logs a warning naming them and what is ignored.
//!
//! **CORS**: a browser frontend on another origin needs its origin listed in
//! [`ServerBuilder::allowed_origins`].
//!
//! # Web chat API
//!
//! - `GET /api/sessions`: the caller's sessions (`{"sessions": [...]}`).
//! - `GET /api/sessions/{id}`: flow, step, data, transcript and `awaiting_approval`.
//! - `POST /api/sessions/{id}/messages` with `{"text"}`: the turn as typed server-sent
//!   events (`step`, `transition`, `tool_call`, `tool_result`, `approval`, `delta`,
//!   `dropped`, then one `done` or `error`).
//! - `POST /api/sessions/{id}/approvals/{call_id}` with a
//!   [`Decision`](crate::approval::Decision) (operators only): the resumed turn, as the
//!   same events; a call that does not wait is a `409`.
//! - `GET /api/graph?session={id}`: every flow as Mermaid text, the session's step in
//!   the `current` class.
//!
//! # MCP server
//!
//! With the feature `mcp-server` (which turns on `serve`, not the MCP client), `Server::mcp_router`
//! serves the agent to MCP clients (an IDE, a desktop assistant, another agent) over
//! streamable HTTP, through the server side of the official Rust SDK (`rmcp`): `POST`
//! for requests, `GET` for the server's stream, `DELETE` to end an MCP session. Every
//! request is authenticated first, like every other route (a refused one is a `401`,
//! before any MCP session opens: send the token as `Authorization: Bearer`). Two tools:
//!
//! - `message` (`{"text", "session_id"?}`): the user's message; the result's text is the
//!   reply, and its `structuredContent` is `{session_id, message, flow, step, stopped,
//!   awaiting_approval}`. The tool's description names the agent's flows.
//! - `decide` (`{"session_id", "call_id", "decision": "approve" | "deny", "reason"?}`,
//!   operators only): decides a call that waits for a person's approval; the result is
//!   the resumed turn.
//!
//! **Conversations.** One conversation per MCP session (its `Mcp-Session-Id`): the calls
//! of one MCP session continue one conversation, whose id (`mcp-` and the MCP session
//! id) the results carry. A `session_id` argument names the conversation instead (to
//! continue it from another MCP session, or with a client that opens no session: one
//! is required then). A conversation belongs to the principal that started it, as on
//! every protocol: another principal's call on it is refused with a tool error.
//!
//! **Approvals.** A turn that ends with calls waiting for a person's approval returns a
//! result naming each waiting call (tool and call id) and saying it has not run; its
//! `awaiting_approval` lists them. While calls wait, a `message` runs no turn and names
//! them again: a "yes" in the chat never decides a call. An operator decides with
//! `decide` (or on the other protocols' routes); from anyone else it is a tool error.
//!
//! rmcp refuses a request whose `Host` is not a loopback name unless it is listed with
//! `ServerBuilder::mcp_allowed_host` (protection against DNS rebinding); a request body
//! over [`ServerBuilder::body_limit`] is a `413`.
//!
//! # A2A
//!
//! With the feature `a2a`, `Server::a2a_router` serves the agent over the A2A protocol,
//! version 1.0, JSON-RPC binding (what the official SDKs speak by default). There is no
//! official Rust SDK: the module writes the protocol's JSON itself, and is tested with
//! the official Python SDK's client (`a2a-sdk` 1.3.0):
//!
//! - `GET /.well-known/agent-card.json`: the agent card (public, like every agent card):
//!   the agent's name, one skill per flow, streaming, the bearer scheme the endpoint
//!   requires, and the endpoint's URL (`ServerBuilder::a2a_url`, by default `http://`,
//!   the request's `Host` and `/a2a`).
//! - `POST /a2a`, authenticated like every route (`401`): `SendMessage`,
//!   `SendStreamingMessage` (server-sent events: the task, the reply as `artifactUpdate`
//!   chunks, then a `statusUpdate` with the final status) and `GetTask` (`historyLength`
//!   honoured). `CancelTask` is `TaskNotCancelableError` (a task ends with its turn);
//!   other methods are `-32601`; a request whose `A2A-Version` header names another
//!   version than 1.0 is `VersionNotSupportedError` (without the header, 1.0 is read).
//!
//! **Conversations and tasks.** A message's `contextId` is the conversation (the agent's
//! session); without one, a new context is opened and named in the task. Each message
//! is a task: the reply is its status message and an artifact (`reply`), the history
//! holds the user's and the agent's messages, and `metadata` carries `session_id`,
//! `flow`, `step` and `awaiting_approval`. Its state: `TASK_STATE_INPUT_REQUIRED` when
//! the agent waits for the user's answer or for a person's approval,
//! `TASK_STATE_FAILED` when a flow failed, else `TASK_STATE_COMPLETED`. A message
//! naming a task that waits for input (`taskId`) continues that task; a finished task
//! is `UnsupportedOperationError` (send the message in its context instead). The last
//! 10 000 tasks are remembered.
//!
//! **Principals.** A context is its first principal's, as on every protocol: another
//! principal's message in it is a `403`, and another principal's task is
//! `TaskNotFoundError` (operators read every task).
//!
//! **Approvals.** A turn that ends with calls waiting for a person's approval is
//! `TASK_STATE_INPUT_REQUIRED`, its status message naming each waiting call (tool and
//! call id) and saying it has not run. While calls wait, a message runs no turn and
//! names them again: a "yes" never decides a call. An operator decides on the other
//! routes (the web chat's approval route, the MCP server's `decide`, an AG-UI `resume`,
//! an OpenAI `tool` message); the next message in the context continues from there.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::agent::Agent;
use crate::data::{AgentContext, AgentData};

#[cfg(feature = "a2a")]
mod a2a;
mod agui;
mod auth;
mod events;
#[cfg(feature = "mcp-server")]
mod mcp;
mod openai;
mod responses;
mod web;

#[cfg(feature = "a2a")]
pub use a2a::{A2A_PATH, A2A_VERSION, AGENT_CARD_PATH};
pub use auth::{
    Anonymous, AuthError, Authenticator, BearerTokens, MemoryOwners, Principal, SessionOwners,
    bearer_token,
};
/// The axum version the routers are built with (to serve them: `axum::serve`).
pub use axum;
#[cfg(feature = "mcp-server")]
pub use mcp::{DECIDE_TOOL, MESSAGE_TOOL};
pub use openai::SESSION_HEADER;

/// Where the server logs what went wrong (failed turns, ignored AG-UI input).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// A server configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// An allowed origin is not a valid header value.
    #[error("allowed origin {0:?} is not a valid origin (scheme://host[:port])")]
    Origin(String),
    /// A model name is empty.
    #[error("a served model name is empty")]
    EmptyModel,
}

/// An agent served over HTTP: build it with [`Server::builder`], then serve
/// [`Server::router`] (or the protocol routers you want). Cheap to clone.
pub struct Server<D, C> {
    shared: Arc<Shared<D, C>>,
}

impl<D, C> Clone for Server<D, C> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

pub(crate) struct Shared<D, C> {
    pub(crate) agent: Agent<D, C>,
    pub(crate) auth: Arc<dyn Authenticator>,
    pub(crate) owners: Arc<dyn SessionOwners>,
    pub(crate) log: Log,
    pub(crate) models: Vec<String>,
    origins: Vec<HeaderValue>,
    body_limit: usize,
    /// The `Host` names the MCP endpoint answers (empty: rmcp's loopback names).
    #[cfg_attr(not(feature = "mcp-server"), allow(dead_code))]
    mcp_hosts: Vec<String>,
    /// The URL the agent card names for the A2A endpoint (none: from `Host`).
    #[cfg_attr(not(feature = "a2a"), allow(dead_code))]
    a2a_url: Option<String>,
    /// The A2A tasks.
    #[cfg(feature = "a2a")]
    a2a: a2a::Tasks,
    /// The Responses API's response ids, for `previous_response_id`.
    responses: responses::ResponseIds,
}

/// Configures a [`Server`] (authentication, which sessions a caller owns, logging) before
/// you take routers from it; from [`Server::builder`].
pub struct ServerBuilder<D, C> {
    agent: Agent<D, C>,
    auth: Option<Arc<dyn Authenticator>>,
    owners: Arc<dyn SessionOwners>,
    log: Log,
    models: Vec<String>,
    origins: Vec<String>,
    body_limit: usize,
    mcp_hosts: Vec<String>,
    a2a_url: Option<String>,
}

/// The default limit of a request body: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

impl<D: AgentData, C: AgentContext> ServerBuilder<D, C> {
    /// How callers are authenticated (required; [`Anonymous`] authenticates nobody).
    pub fn auth(mut self, auth: impl Authenticator) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// [`ServerBuilder::auth`] with a shared authenticator.
    pub fn auth_arc(mut self, auth: Arc<dyn Authenticator>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Where session ownership is kept ([`MemoryOwners`] by default).
    pub fn owners(mut self, owners: impl SessionOwners) -> Self {
        self.owners = Arc::new(owners);
        self
    }

    /// Where failures are logged (stderr by default).
    pub fn log(mut self, log: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.log = Arc::new(log);
        self
    }

    /// A model name the OpenAI endpoint answers to (and lists); call it once per name.
    /// Without any, the agent's name (`agent` when it has none).
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.models.push(name.into());
        self
    }

    /// Browser origins (`https://app.example.com`) allowed to call the server from
    /// another origin (CORS). None by default: only same-origin pages.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins.extend(origins.into_iter().map(Into::into));
        self
    }

    /// The largest request body, in bytes ([`DEFAULT_BODY_LIMIT`]); a larger one is a
    /// `413`.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The `Host` names (`example.com`, or `example.com:8080` for one port) the MCP
    /// endpoint ([`Server::mcp_router`]) answers; call it once per name. By default
    /// `localhost`, `127.0.0.1` and `::1` only: a request naming another host is refused
    /// (`403`), which keeps web pages from reaching a server on the developer's machine
    /// through DNS rebinding. A server reached under a public name lists that name (the
    /// names listed replace the loopback ones: list those too if they are used).
    #[cfg(feature = "mcp-server")]
    pub fn mcp_allowed_host(mut self, host: impl Into<String>) -> Self {
        self.mcp_hosts.push(host.into());
        self
    }

    /// The URL of the A2A endpoint the agent card names (`https://agent.example.com/a2a`):
    /// where A2A clients send their requests. By default `http://` and the `Host` the
    /// card was asked from, then `/a2a`: set it behind a proxy or TLS terminator.
    #[cfg(feature = "a2a")]
    pub fn a2a_url(mut self, url: impl Into<String>) -> Self {
        self.a2a_url = Some(url.into());
        self
    }

    /// The server. Without [`ServerBuilder::auth`], [`Anonymous`].
    pub fn build(self) -> Result<Server<D, C>, ServeError> {
        let origins = self
            .origins
            .iter()
            .map(|o| {
                let trimmed = o.trim().trim_end_matches('/');
                if trimmed.is_empty() || !trimmed.contains("://") {
                    return Err(ServeError::Origin(o.clone()));
                }
                HeaderValue::from_str(trimmed).map_err(|_| ServeError::Origin(o.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut models = self.models;
        if models.iter().any(|m| m.trim().is_empty()) {
            return Err(ServeError::EmptyModel);
        }
        if models.is_empty() {
            let name = self.agent.name().trim();
            models.push(if name.is_empty() { "agent" } else { name }.to_owned());
        }
        Ok(Server {
            shared: Arc::new(Shared {
                agent: self.agent,
                auth: self.auth.unwrap_or_else(|| Arc::new(Anonymous)),
                owners: self.owners,
                log: self.log,
                models,
                origins,
                body_limit: self.body_limit,
                mcp_hosts: self.mcp_hosts,
                a2a_url: self.a2a_url,
                #[cfg(feature = "a2a")]
                a2a: a2a::Tasks::default(),
                responses: responses::ResponseIds::default(),
            }),
        })
    }
}

impl<D: AgentData, C: AgentContext> Server<D, C> {
    /// Start a server over `agent`.
    pub fn builder(agent: Agent<D, C>) -> ServerBuilder<D, C> {
        ServerBuilder {
            agent,
            auth: None,
            owners: Arc::new(MemoryOwners::new()),
            log: Arc::new(|line: &str| eprintln!("{line}")),
            models: Vec::new(),
            origins: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            mcp_hosts: Vec::new(),
            a2a_url: None,
        }
    }

    /// The agent every router of this server serves, for calls outside HTTP (tests, an admin
    /// task).
    pub fn agent(&self) -> &Agent<D, C> {
        &self.shared.agent
    }

    /// The model names the OpenAI endpoint answers to.
    pub fn models(&self) -> &[String] {
        &self.shared.models
    }

    /// Every protocol: the OpenAI-compatible endpoint, AG-UI, the web chat's API and,
    /// with the feature `mcp-server`, the MCP server at `/mcp`.
    pub fn router(&self) -> Router {
        let routes = openai::routes::<D, C>()
            .merge(agui::routes::<D, C>())
            .merge(web::routes::<D, C>());
        #[cfg(feature = "mcp-server")]
        let routes = routes.merge(mcp::routes(self, "/mcp"));
        #[cfg(feature = "a2a")]
        let routes = routes.merge(a2a::routes::<D, C>());
        self.finish(routes)
    }

    /// A2A (feature `a2a`): the agent card at `/.well-known/agent-card.json` and the
    /// JSON-RPC endpoint at `POST /a2a` ([module docs](self#a2a)).
    ///
    /// ```no_run
    /// use agent_core::prelude::*;
    /// use agent_core::serve::{BearerTokens, Server};
    /// # async fn run(agent: Agent<serde_json::Value, ()>) -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder(agent)
    ///     .auth(BearerTokens::new().user("token-of-ana", "ana"))
    ///     .a2a_url("https://agent.example.com/a2a") // what the agent card names
    ///     .build()?;
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
    /// agent_core::serve::axum::serve(listener, server.a2a_router()).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "a2a")]
    pub fn a2a_router(&self) -> Router {
        self.finish(a2a::routes::<D, C>())
    }

    /// The MCP server (streamable HTTP) at `path` (`/mcp` in [`Server::router`]);
    /// feature `mcp-server` (the [module docs](self#mcp-server) say what it serves).
    ///
    /// ```no_run
    /// use agent_core::prelude::*;
    /// use agent_core::serve::{BearerTokens, Server};
    /// # async fn run(agent: Agent<serde_json::Value, ()>) -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder(agent)
    ///     .auth(BearerTokens::new().user("token-of-ana", "ana").operator("token-of-the-desk", "desk"))
    ///     .mcp_allowed_host("agent.example.com") // the name clients reach it by
    ///     .build()?;
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
    /// // MCP clients connect to http://agent.example.com:3000/mcp with a bearer token.
    /// agent_core::serve::axum::serve(listener, server.mcp_router("/mcp")).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "mcp-server")]
    pub fn mcp_router(&self, path: &str) -> Router {
        self.finish(mcp::routes(self, path))
    }

    /// `POST /v1/chat/completions`, `POST /v1/responses` and `GET /v1/models`.
    pub fn openai_router(&self) -> Router {
        self.finish(openai::routes::<D, C>())
    }

    /// The AG-UI endpoint `POST /agui`: each run's events (text deltas, steps, tool calls,
    /// state) streamed as server-sent events, for AG-UI clients.
    pub fn agui_router(&self) -> Router {
        self.finish(agui::routes::<D, C>())
    }

    /// The web chat's API under `/api`.
    pub fn web_router(&self) -> Router {
        self.finish(web::routes::<D, C>())
    }

    fn finish(&self, routes: Router<Server<D, C>>) -> Router {
        let router = routes
            .layer(DefaultBodyLimit::max(self.shared.body_limit))
            .with_state(self.clone());
        if self.shared.origins.is_empty() {
            return router;
        }
        router.layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(self.shared.origins.clone()))
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::ACCEPT,
                    HeaderName::from_static(SESSION_HEADER),
                ])
                .expose_headers([HeaderName::from_static(SESSION_HEADER)]),
        )
    }

    /// The caller of a request.
    pub(crate) async fn caller(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        self.shared.auth.authenticate(headers).await
    }

    /// Whether `who` may read `session` (its owner, or an operator; a session nobody
    /// owns is readable: it has no turn from this server).
    pub(crate) async fn may_read(&self, who: &Principal, session: &str) -> bool {
        if who.is_operator() {
            return true;
        }
        match self.shared.owners.owner(session).await {
            Some(owner) => owner == who.id(),
            None => true,
        }
    }

    /// Whether `who` may send a message in `session`: its owner only (an operator
    /// decides calls on any session, but does not speak in another's); a session nobody
    /// owns becomes `who`'s.
    pub(crate) async fn may_write(&self, who: &Principal, session: &str) -> bool {
        self.shared.owners.claim(session, who.id()).await
    }
}

/// Why a request body was not read as JSON.
pub(crate) enum BodyError {
    /// Larger than the limit (`413`).
    TooLarge(usize),
    /// Not JSON, or cut short (`400`).
    Invalid(String),
}

/// The most a body over the limit is read (and dropped) so that the client, which
/// writes its whole body before it reads the answer, gets the `413` rather than a
/// broken connection.
const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// A request body as JSON, at most `limit` bytes.
pub(crate) async fn read_json(
    body: axum::body::Body,
    limit: usize,
) -> Result<serde_json::Value, BodyError> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| BodyError::Invalid(format!("the body could not be read: {e}")))?;
        seen += chunk.len();
        if seen <= limit {
            bytes.extend_from_slice(&chunk);
        } else if seen > DRAIN_LIMIT {
            break;
        }
    }
    if seen > limit {
        return Err(BodyError::TooLarge(limit));
    }
    serde_json::from_slice(&bytes).map_err(|e| BodyError::Invalid(e.to_string()))
}

/// Session ids are short and plain: they appear in URLs and logs.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Call ids come from the model (or the engine): anything short and printable.
pub(crate) fn valid_call_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic())
}

/// What a refused session access says.
pub(crate) fn not_yours(session: &str) -> String {
    format!("session {session} belongs to another principal")
}

/// What a decision without the operator role says.
pub(crate) const OPERATOR_ONLY: &str =
    "deciding a call that waits for approval needs an operator's credential";
