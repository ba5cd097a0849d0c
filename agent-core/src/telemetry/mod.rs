//! Traces and metrics in the OpenTelemetry GenAI semantic conventions.
//!
//! The engine's `tracing` spans carry the conventions' attributes whatever subscriber
//! reads them (plain `tracing` fields cost nothing when no one listens):
//!
//! | span (`tracing` name) | OpenTelemetry name | kind | attributes |
//! | --- | --- | --- | --- |
//! | `turn` | `invoke_agent {agent}` | internal | `gen_ai.operation.name` = `invoke_agent`, `gen_ai.agent.name`, `gen_ai.conversation.id` (the session id), `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.*`, `error.type` |
//! | `model_call` | `chat {model}` | client | `gen_ai.operation.name` = `chat`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.request.temperature`, `gen_ai.request.seed`, `gen_ai.request.stream`, `gen_ai.output.type`, `gen_ai.conversation.id`, `server.address`, `server.port`, `gen_ai.response.model`, `gen_ai.response.id`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`, `gen_ai.response.finish_reasons`, `error.type` |
//! | `tool_call` | `execute_tool {tool}` | internal | `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`, `gen_ai.tool.description`, `error.type` |
//! | `mcp_call` (feature `mcp`) | `tools/call {tool}` | client | `mcp.method.name`, `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `mcp.session.id`, `mcp.protocol.version`, `network.transport`, `network.protocol.name`, `server.address`, `server.port`, `rpc.response.status_code`, `error.type` (see the `mcp` module) |
//!
//! Attributes the engine does not know are left out: `server.address` and
//! `server.port` come from the provider's [`server`](crate::provider::Provider::server)
//! (the vendor clients of `agent-providers` give their base URL's; scripted providers
//! and fallback chains none), `gen_ai.response.id` from
//! [`ModelResponse::id`](crate::provider::ModelResponse::id) (OpenAI, Anthropic and
//! Gemini send one), `gen_ai.usage.cache_read.input_tokens` from
//! [`Usage::cached_input_tokens`](crate::provider::Usage::cached_input_tokens) when
//! the provider reported cached tokens. `gen_ai.request.stream` is `true` for the calls
//! of a streamed turn (`Agent::respond_stream`).
//!
//! All three are `INFO` spans. Model calls and tool calls are children of their turn's
//! span. A failed operation carries the error status with the error's message, and
//! `error.type`:
//!
//! - model calls and turns: the API's HTTP status (`429`, `503`, …; `4xx`/`5xx` for
//!   unusual ones), `timeout`, `network`, `invalid_response`, `malformed_model_output`,
//!   `store`, `panicked`, else `_OTHER`;
//! - tool calls: `failed`, `invalid_arguments`, `permission_denied`, `unknown_tool`,
//!   `panicked`, `timeout`, `invalid_directive`, `outcome_unknown`, `recorded_failure`,
//!   `denied`, `approval_pending`.
//!
//! Message contents (system instructions, the messages sent to the model, its answers,
//! tool arguments and results) are left out unless capture is on: process-wide with
//! [`set_capture_content`], or for one subscriber with the `otel` feature's
//! `TelemetryBuilder::capture_content`. They are then recorded as JSON strings in
//! `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`,
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.
//!
//! # Export (feature `otel`)
//!
//! `Telemetry` sends these spans over OTLP/HTTP (protobuf) through
//! `tracing-opentelemetry`, with `code.file.path` relative to the crate's folder
//! (`agent-core/src/agent/turn.rs`, never the absolute path of the machine that built
//! it), and records these metrics, sent to the same collector's `/v1/metrics` every
//! 60 s and on `flush` and `shutdown`:
//!
//! | metric | kind, unit | attributes |
//! | --- | --- | --- |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | `gen_ai.token.type` (`input`, `output`), `gen_ai.operation.name` = `chat`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `server.address`, `server.port` |
//! | `gen_ai.client.operation.duration` | histogram, `s` | the same without `gen_ai.token.type`, and `error.type` of a failed call |
//! | `agent.turn.duration` | histogram, `s` | `gen_ai.operation.name` = `invoke_agent`, `gen_ai.agent.name`, `gen_ai.provider.name`, `error.type` |
//!
//! The histograms use the bucket boundaries the conventions advise. Metrics are
//! recorded by the subscriber that holds the exporter's layer, like the spans.
//!
//! The standard environment variables are read; what the code sets wins:
//!
//! | variable | what | set in code with |
//! | --- | --- | --- |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector's base address (`/v1/traces` and `/v1/metrics` added); default `http://localhost:4318` | `Telemetry::otlp(endpoint)`, `TelemetryBuilder::endpoint` |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` | the full URL of one signal; wins over the base address | the same |
//! | `OTEL_EXPORTER_OTLP_HEADERS` (and `…_TRACES_HEADERS`, `…_METRICS_HEADERS`) | `name=value,…` headers of every export request | `TelemetryBuilder::header` |
//! | `OTEL_SERVICE_NAME` | `service.name`; else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `agent` | `TelemetryBuilder::service_name` |
//! | `OTEL_RESOURCE_ATTRIBUTES` | more attributes of the resource | |
//! | `OTEL_SDK_DISABLED` | `true`: nothing is exported, no thread is started | |
//!
//! `Telemetry::from_env` starts from the environment alone. Only `http://` endpoints
//! (no TLS, no gRPC): run a collector next to the process and let it forward.
//!
//! An export request the collector does not take is reported once per kind of failure
//! (`connection refused`, `HTTP 404 Not Found`, `no answer within 10s`, …) as a `WARN`
//! event of the target `agent_core::telemetry` that names the URL and the cause, on
//! the application's global subscriber (`Telemetry::init` prints these to stderr);
//! the next `flush` or `shutdown` returns `TelemetryError::Export` with the same URL
//! and cause.
//!
//! A runnable example: `cargo run -p examples --example otel --features otel`
//! (`examples/examples/otel.rs`: `Telemetry::init`, two turns, `shutdown`).
//!
//! ```no_run
//! # #[cfg(feature = "otel")]
//! # fn main() -> Result<(), agent_core::telemetry::TelemetryError> {
//! // Spans and metrics of this process go to a collector on the default OTLP/HTTP port.
//! let telemetry = agent_core::telemetry::init_otlp("http://127.0.0.1:4318", "concierge")?;
//! // ... run the agent ...
//! telemetry.shutdown()?; // sends what is still buffered; fails if anything was lost
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "otel"))]
//! # fn main() {}
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use crate::error::{AgentError, ProviderError};
use crate::provider::{FinishReason, Message, ModelRequest, ModelResponse, Role, ToolCall};
use crate::tool::{ToolError, ToolOutput};

#[cfg(feature = "otel")]
mod otlp;
#[cfg(feature = "otel")]
pub use otlp::{Telemetry, TelemetryBuilder, TelemetryError, init_otlp};

/// Attribute names of the GenAI semantic conventions that the engine records.
pub mod attr {
    /// The operation: `invoke_agent`, `chat` or `execute_tool`.
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// The provider, in the conventions' spelling (`openai`, `anthropic`, `gcp.gemini`).
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    /// The model asked for.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// The model that answered.
    pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
    /// The call's token limit.
    pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
    /// The call's sampling temperature.
    pub const REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
    /// The call's sampling seed.
    pub const REQUEST_SEED: &str = "gen_ai.request.seed";
    /// `json` when the call asks for structured output, else `text`.
    pub const OUTPUT_TYPE: &str = "gen_ai.output.type";
    /// Prompt tokens (cached ones included).
    pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    /// Tokens the model generated in the call.
    pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    /// The part of the prompt tokens the provider read from its prompt cache.
    pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    /// The provider's id of the answer (`chatcmpl-…`, `msg_…`), when it gives one.
    pub const RESPONSE_ID: &str = "gen_ai.response.id";
    /// Whether the answer was asked for as a stream.
    pub const REQUEST_STREAM: &str = "gen_ai.request.stream";
    /// The host of the provider's API.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The port of the provider's API.
    pub const SERVER_PORT: &str = "server.port";
    /// Why generation stopped (`stop`, `tool_calls`, `length`, `content_filter`).
    pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    /// The agent's session id, so a backend groups a conversation's spans.
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
    /// The agent's name, as given to `AgentBuilder::name`.
    pub const AGENT_NAME: &str = "gen_ai.agent.name";
    /// The name of the tool the span's call ran.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The provider-assigned id of the tool call.
    pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    /// `function`: the engine runs the tool in process.
    pub const TOOL_TYPE: &str = "gen_ai.tool.type";
    /// The tool's description, as the model was given it.
    pub const TOOL_DESCRIPTION: &str = "gen_ai.tool.description";
    /// The class of error an operation ended with.
    pub const ERROR_TYPE: &str = "error.type";
    /// Content (opt-in): the system prompt, as `[{"type":"text","content":…}]`.
    pub const SYSTEM_INSTRUCTIONS: &str = "gen_ai.system_instructions";
    /// Content (opt-in): the messages sent to the model, as JSON.
    pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
    /// Content (opt-in): the model's answer, as JSON.
    pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
    /// Content (opt-in): the tool call's arguments, as JSON.
    pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
    /// Content (opt-in): the tool's result text.
    pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
}

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Record message contents (prompts, answers, tool arguments and results) on the spans
/// of every turn in this process, or stop. Off by default: contents are often personal
/// data, and large.
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// Whether spans created now record message contents: on process-wide
/// ([`set_capture_content`]) or in the current subscriber (with the `otel` feature,
/// a layer built with `TelemetryBuilder::capture_content`).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
        || tracing::dispatcher::get_default(|d| {
            d.downcast_ref::<CaptureContent>().is_some_and(|c| c.0)
        })
}

/// A marker in a subscriber (the `otel` feature's layer carries one): whether its spans
/// record message contents.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CaptureContent(pub(crate) bool);

/// The provider and model a provider's [`name`](crate::provider::Provider::name)
/// stands for: `openai/gpt-4o` is `openai` and `gpt-4o`; of a fallback chain
/// (`a/m > b/n`) the first; a name without a slash is both.
fn provider_and_model(name: &str) -> (&str, &str) {
    // The text before the first ` > `, found without a substring searcher's set-up
    // (two spans a turn ask for it, whether or not anything records them).
    let end = name
        .as_bytes()
        .windows(3)
        .position(|w| w == b" > ")
        .unwrap_or(name.len());
    let first = name.get(..end).unwrap_or(name).trim();
    let (vendor, model) = first.split_once('/').unwrap_or((first, first));
    let provider = match vendor {
        // The OpenAI wire format, whoever serves it (OpenAI instrumentations say so too).
        "compatible" => "openai",
        "gemini" => "gcp.gemini",
        other => other,
    };
    (provider, model)
}

/// When an operation started, for the duration metrics. Only the `otel` feature reads
/// the clock: without it there is nothing to record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started(#[cfg(feature = "otel")] std::time::Instant);

impl Started {
    pub(crate) fn now() -> Self {
        Self(
            #[cfg(feature = "otel")]
            std::time::Instant::now(),
        )
    }

    #[cfg(feature = "otel")]
    fn elapsed(self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// The span of one turn (`invoke_agent {agent}`).
pub(crate) fn turn_span(session: &str, agent: &str, provider: &str) -> Span {
    let (provider, model) = provider_and_model(provider);
    tracing::info_span!(
        "turn",
        session,
        agent = %agent,
        source = Empty,
        flow = Empty,
        otel.name = format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = agent,
        "gen_ai.conversation.id" = session,
        "gen_ai.provider.name" = provider,
        "gen_ai.request.model" = model,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.input.messages" = Empty,
        "gen_ai.output.messages" = Empty,
        "error.type" = Empty,
    )
}

/// The user's message on a turn's span, when contents are captured.
pub(crate) fn record_turn_input(span: &Span, message: &str) {
    if !span.is_disabled() && capture_content() {
        let messages =
            json!([{ "role": "user", "parts": [{ "type": "text", "content": message }] }]);
        span.record("gen_ai.input.messages", messages.to_string());
    }
}

/// A turn's outcome on its span (usage, the reply when contents are captured, or the
/// error) and in the turn-duration metric.
pub(crate) fn record_turn<D>(
    span: &Span,
    agent: &str,
    provider: &str,
    started: Started,
    result: &Result<crate::response::AgentResponse<D>, AgentError>,
) {
    #[cfg(feature = "otel")]
    otlp::record_turn_metrics(
        agent,
        provider_and_model(provider).0,
        result.as_ref().err().map(agent_error_type),
        started.elapsed(),
    );
    #[cfg(not(feature = "otel"))]
    let _ = (agent, provider, started);
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(r) => {
            record_usage(span, r.usage);
            if capture_content() {
                let messages = json!([{
                    "role": "assistant",
                    "parts": [{ "type": "text", "content": r.message }],
                }]);
                span.record("gen_ai.output.messages", messages.to_string());
            }
        }
        Err(e) => record_error(span, agent_error_type(e), e),
    }
}

/// Where a model call goes and how: the provider's name, its API's host and port, and
/// whether the answer is streamed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallTarget<'a> {
    pub(crate) provider: &'a str,
    pub(crate) server: Option<(&'a str, u16)>,
    pub(crate) stream: bool,
}

/// The span of one model call (`chat {model}`).
pub(crate) fn chat_span(
    target: CallTarget<'_>,
    req: &ModelRequest,
    session: &str,
    flow: &str,
) -> Span {
    let provider = target.provider;
    let (provider_name, model) = provider_and_model(provider);
    let span = tracing::info_span!(
        "model_call",
        kind = ?req.kind,
        session,
        flow,
        provider,
        otel.name = format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = provider_name,
        "gen_ai.request.model" = model,
        "gen_ai.request.max_tokens" = req.max_tokens.map(i64::from),
        "gen_ai.request.temperature" = req.temperature.map(f64::from),
        "gen_ai.request.seed" = req.seed.and_then(|s| i64::try_from(s).ok()),
        "gen_ai.output.type" = if req.output.is_some() { "json" } else { "text" },
        "gen_ai.request.stream" = target.stream,
        "gen_ai.conversation.id" = session,
        "server.address" = target.server.map(|(host, _)| host),
        "server.port" = target.server.map(|(_, port)| i64::from(port)),
        "gen_ai.response.model" = Empty,
        "gen_ai.response.id" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.system_instructions" = Empty,
        "gen_ai.input.messages" = Empty,
        "gen_ai.output.messages" = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() && capture_content() {
        let system = json!([{ "type": "text", "content": req.system }]);
        span.record("gen_ai.system_instructions", system.to_string());
        let input: Vec<Value> = req.messages.iter().map(message_json).collect();
        span.record("gen_ai.input.messages", Value::Array(input).to_string());
    }
    span
}

/// A model call's outcome on its span and in the GenAI client metrics.
pub(crate) fn record_chat<T>(
    span: &Span,
    target: CallTarget<'_>,
    started: Started,
    result: &Result<(ModelResponse, T), AgentError>,
) {
    let provider = target.provider;
    let (provider_name, model) = provider_and_model(provider);
    // Providers do not report the serving model apart from the one asked for; a
    // fallback chain may have answered with a later model, so it stays unset.
    let response_model = (!provider.contains(" > ")).then_some(model);
    #[cfg(feature = "otel")]
    otlp::record_chat_metrics(&otlp::ChatMetrics {
        provider: provider_name,
        request_model: model,
        response_model,
        server: target.server,
        error_type: result.as_ref().err().map(agent_error_type),
        usage: result.as_ref().ok().map(|(r, _)| r.usage),
        elapsed: started.elapsed(),
    });
    #[cfg(not(feature = "otel"))]
    let _ = (provider_name, started);
    if span.is_disabled() {
        return;
    }
    match result {
        Ok((resp, _)) => {
            if let Some(model) = response_model {
                span.record("gen_ai.response.model", model);
            }
            if let Some(id) = &resp.id {
                span.record("gen_ai.response.id", id.as_str());
            }
            record_usage(span, resp.usage);
            let reason = finish_reason(resp.finish);
            record_finish_reasons(span, reason);
            if capture_content() {
                let mut parts = Vec::new();
                if !resp.content.is_empty() {
                    parts.push(json!({ "type": "text", "content": resp.content }));
                }
                parts.extend(resp.tool_calls.iter().map(tool_call_part));
                let out = json!([{ "role": "assistant", "parts": parts, "finish_reason": reason }]);
                span.record("gen_ai.output.messages", out.to_string());
            }
        }
        Err(e) => record_error(span, agent_error_type(e), e),
    }
}

/// Token counts on a turn's or model call's span; cached tokens only when the provider
/// reported some.
fn record_usage(span: &Span, usage: crate::provider::Usage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    if usage.cached_input_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            int(usage.cached_input_tokens),
        );
    }
}

/// `gen_ai.response.finish_reasons`: a string array on the OpenTelemetry span (with
/// the `otel` feature), the one reason as a plain field otherwise.
fn record_finish_reasons(span: &Span, reason: &'static str) {
    #[cfg(feature = "otel")]
    if otlp::set_string_array(span, attr::RESPONSE_FINISH_REASONS, &[reason]) {
        return;
    }
    span.record("gen_ai.response.finish_reasons", reason);
}

/// The span of one tool call (`execute_tool {tool}`); `id` is the model's call id
/// (none for calls from code flows).
pub(crate) fn tool_span(
    name: &str,
    id: Option<&str>,
    description: Option<&str>,
    arguments: &Value,
    flow: Option<&str>,
    parallel: bool,
) -> Span {
    let span = tracing::info_span!(
        "tool_call",
        tool = %name,
        parallel,
        flow,
        otel.name = format_args!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = name,
        "gen_ai.tool.call.id" = id,
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.description" = description,
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() && capture_content() {
        span.record("gen_ai.tool.call.arguments", arguments.to_string());
    }
    span
}

/// A tool call's outcome on its span.
pub(crate) fn record_tool(span: &Span, result: &Result<ToolOutput, ToolError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(out) => {
            if capture_content() {
                span.record("gen_ai.tool.call.result", out.content.as_str());
            }
        }
        Err(e) => record_error(span, tool_error_type(e), e),
    }
}

/// A count as `i64`: `tracing-opentelemetry` writes `u64` fields as strings, and OTLP
/// integers are signed 64-bit.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn record_error(span: &Span, kind: &str, error: &dyn std::fmt::Display) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", error.to_string());
}

/// `error.type` of a failed model call or turn: the HTTP status of an API error, else
/// a short name of the failure.
fn agent_error_type(e: &AgentError) -> &'static str {
    match e {
        AgentError::Provider { source, .. } => match source {
            ProviderError::Http { status, .. } => http_status(*status),
            ProviderError::Network(_) => "network",
            ProviderError::Timeout(_) => "timeout",
            ProviderError::InvalidResponse(_) => "invalid_response",
            ProviderError::Other(_) => "_OTHER",
            ProviderError::EmptyAnswer(_) => "empty_answer",
        },
        AgentError::MalformedModelOutput { .. } => "malformed_model_output",
        AgentError::TurnTimeout { .. } => "timeout",
        AgentError::Store(_) => "store",
        AgentError::HookPanicked { .. } => "panicked",
        _ => "_OTHER",
    }
}

/// The usual API statuses as static strings (`error.type` is low-cardinality).
fn http_status(status: u16) -> &'static str {
    const KNOWN: [&str; 14] = [
        "400", "401", "403", "404", "408", "409", "413", "422", "429", "500", "502", "503", "504",
        "529",
    ];
    let code = status.to_string();
    match KNOWN.iter().find(|k| **k == code) {
        Some(k) => k,
        None if (400..500).contains(&status) => "4xx",
        None if (500..600).contains(&status) => "5xx",
        None => "_OTHER",
    }
}

/// `error.type` of a failed tool call.
fn tool_error_type(e: &ToolError) -> &'static str {
    match e {
        ToolError::Failed(_) => "failed",
        ToolError::InvalidArguments(_) => "invalid_arguments",
        ToolError::PermissionDenied(_) => "permission_denied",
        ToolError::Unknown { .. } => "unknown_tool",
        ToolError::Panicked(_) => "panicked",
        ToolError::TimedOut(_) => "timeout",
        ToolError::InvalidDirective(_) => "invalid_directive",
        ToolError::OutcomeUnknown(_) => "outcome_unknown",
        ToolError::Recorded(_) => "recorded_failure",
        ToolError::Denied(_) => "denied",
        ToolError::ApprovalPending(_) => "approval_pending",
    }
}

fn finish_reason(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
    }
}

/// One message in the conventions' input-message shape.
fn message_json(m: &Message) -> Value {
    match m.role {
        Role::User => {
            json!({ "role": "user", "parts": [{ "type": "text", "content": m.content.as_str() }] })
        }
        Role::Assistant => {
            let mut parts = Vec::new();
            if !m.content.is_empty() {
                parts.push(json!({ "type": "text", "content": m.content.as_str() }));
            }
            parts.extend(m.tool_calls.iter().map(tool_call_part));
            json!({ "role": "assistant", "parts": parts })
        }
        Role::Tool => json!({
            "role": "tool",
            "parts": [{
                "type": "tool_call_response",
                "id": m.tool_call_id,
                "result": m.content.as_str(),
            }],
        }),
    }
}

fn tool_call_part(c: &ToolCall) -> Value {
    json!({ "type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_split_into_the_conventions_provider_and_model() {
        assert_eq!(provider_and_model("openai/gpt-4o"), ("openai", "gpt-4o"));
        assert_eq!(
            provider_and_model("anthropic/claude-sonnet-4-5"),
            ("anthropic", "claude-sonnet-4-5")
        );
        assert_eq!(
            provider_and_model("gemini/gemini-2.5-flash"),
            ("gcp.gemini", "gemini-2.5-flash")
        );
        assert_eq!(
            provider_and_model("compatible/gemma-3-270m"),
            ("openai", "gemma-3-270m")
        );
        assert_eq!(
            provider_and_model("openai/gpt-4o > anthropic/claude"),
            ("openai", "gpt-4o")
        );
        assert_eq!(provider_and_model("scripted"), ("scripted", "scripted"));
        assert_eq!(provider_and_model(" a/b  > c/d > e"), ("a", "b"));
        assert_eq!(provider_and_model("é/ü>x"), ("é", "ü>x"));
        assert_eq!(provider_and_model(""), ("", ""));
        assert_eq!(provider_and_model(" > x"), ("", ""));
    }

    #[test]
    fn content_capture_is_off_by_default() {
        assert!(!capture_content());
    }

    #[test]
    fn error_types_are_low_cardinality() {
        let e = AgentError::Provider {
            kind: crate::provider::CallKind::Respond,
            source: ProviderError::Http {
                status: 429,
                message: "slow down".into(),
                retry_after: None,
            },
        };
        assert_eq!(agent_error_type(&e), "429");
        assert_eq!(http_status(418), "4xx");
        assert_eq!(
            tool_error_type(&ToolError::TimedOut(std::time::Duration::from_secs(1))),
            "timeout"
        );
    }
}
