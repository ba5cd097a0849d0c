//! OpenTelemetry: the spans of turns, model calls and tool calls (GenAI semantic
//! conventions) and the GenAI metrics, exported over OTLP/HTTP (`agent_core::telemetry`,
//! feature `otel`).
//!
//! `cargo run -p examples --example otel --features otel`
//!
//! The standard variables say where: `OTEL_EXPORTER_OTLP_ENDPOINT` is the collector's
//! OTLP/HTTP base address (default `http://localhost:4318`; `/v1/traces` and
//! `/v1/metrics` are added), `OTEL_SERVICE_NAME` the service (here `otel-example` unless
//! set), and the other `OTEL_*` variables of the module docs. Any OTLP/HTTP collector
//! works: the OpenTelemetry Collector, Jaeger (its OTLP port 4318), or the test receiver
//! (`agent-core/tests/otel_receiver.py`, installed by `scripts/otel.sh`).
//!
//! Shows: `Telemetry::init` (a global subscriber with the exporter's layer, export
//! failures on stderr), two turns of a small agent (the first calls a tool), then
//! `shutdown`, which sends what is buffered and fails if anything was lost. It prints
//! the spans it sent and where; when the collector cannot be reached it prints the
//! export error the library reports and exits with status 1.

use std::error::Error;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::telemetry::Telemetry;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::model::Env;
use examples::show::{self, Transcript};
use serde_json::json;

/// The agent's name (the turn spans are `invoke_agent {AGENT}`).
pub const AGENT: &str = "otel-desk";
/// The service name unless `OTEL_SERVICE_NAME` says otherwise.
pub const SERVICE: &str = "otel-example";
/// The collector when `OTEL_EXPORTER_OTLP_ENDPOINT` is unset.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// What the user says.
pub const MESSAGES: [&str; 2] = ["What's the weather in Lisbon?", "Thanks!"];

/// Today's weather forecast for a city.
#[tool(concurrency_safe)]
async fn weather(
    /// City name, e.g. "Lisbon"
    city: String,
) -> Result<ToolOutput, ToolError> {
    match city.to_lowercase().as_str() {
        "lisbon" => Ok(ToolOutput::text("sunny, 24 °C")),
        _ => Err(ToolError::msg(format!("no forecast for {city}"))),
    }
}

/// The scripted model: a tool call and its reply, then a second reply.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.respond(Answer::tool("weather", json!({ "city": "Lisbon" })));
    model.tool_round(Answer::message("Lisbon is sunny, 24 °C."));
    model.respond(Answer::message("You're welcome!"));
    model
}

/// Build the agent and have the conversation (the spans go to whatever subscriber is
/// current: `Telemetry::init`'s in `main`).
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<()>, Box<dyn Error>> {
    let agent: Agent<(), ()> = Agent::builder()
        .name(AGENT)
        .provider_arc(provider)
        .tool(weather)
        .build()?;
    Ok(show::converse(&agent, "otel", &MESSAGES, out).await?)
}

/// Where the spans go, from the environment as the exporter reads it.
pub fn traces_url(env: Env<'_>) -> String {
    if let Some(url) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return url;
    }
    let base = env("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// The model in a `chat` span's name, from the provider's name (`openai/gpt-4o-mini`:
/// `gpt-4o-mini`; a fallback chain `a > b` is named after its first).
pub fn span_model(provider: &str) -> &str {
    let first = provider.split(" > ").next().unwrap_or(provider).trim();
    first.split_once('/').map_or(first, |(_, model)| model)
}

/// The spans a conversation made, by name and count, in the order the engine opens
/// them: one `invoke_agent` per turn, one `chat` per model call, one `execute_tool` per
/// tool call.
pub fn spans(t: &Transcript<()>, model: &str) -> Vec<(String, usize)> {
    let mut found: Vec<(String, usize)> = Vec::new();
    let mut add = |name: String, n: usize| {
        if n == 0 {
            return;
        }
        match found.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, count)) => *count += n,
            None => found.push((name, n)),
        }
    };
    add(format!("invoke_agent {AGENT}"), t.turns.len());
    add(format!("chat {model}"), t.model_calls() as usize);
    for r in t.turns.iter().filter_map(|turn| turn.outcome.as_ref().ok()) {
        for call in &r.tool_calls {
            add(format!("execute_tool {}", call.name), 1);
        }
    }
    found
}

/// Send what is buffered and stop; say what was sent and where, or return the
/// library's export error.
pub fn finish(
    telemetry: &Telemetry,
    sent: &[(String, usize)],
    to: &str,
    out: &mut dyn Write,
) -> Result<(), Box<dyn Error>> {
    telemetry.shutdown()?;
    let list: Vec<String> = sent
        .iter()
        .map(|(name, n)| format!("{n} x `{name}`"))
        .collect();
    writeln!(out, "exported to {to}: spans {}", list.join(", "))?;
    writeln!(
        out,
        "and the GenAI metrics (gen_ai.client.token.usage, gen_ai.client.operation.duration, agent.turn.duration) to the same collector (/v1/metrics, or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)"
    )?;
    Ok(())
}

fn main() -> ExitCode {
    examples::exit::report(demo())
}

/// The conversation on the model the environment chooses, exported where the `OTEL_*`
/// variables say. `shutdown` blocks, so the runtime is the example's own.
fn demo() -> Result<Transcript<()>, Box<dyn Error>> {
    let env = &examples::model::process_env;
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    let mut builder = Telemetry::from_env();
    if env("OTEL_SERVICE_NAME").is_none() {
        builder = builder.service_name(SERVICE);
    }
    let telemetry = builder.build()?.init()?;
    let to = traces_url(env);
    println!("exporting spans to {to}\n");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let transcript = runtime.block_on(run(model.provider(), &mut std::io::stdout()))?;
    drop(runtime);
    let sent = spans(&transcript, span_model(model.provider().name()));
    finish(&telemetry, &sent, &to, &mut std::io::stdout())?;
    Ok(transcript)
}
