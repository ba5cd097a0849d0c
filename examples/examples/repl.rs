//! A terminal REPL for any agent: type messages, watch the replies stream in.
//!
//! `cargo run -p examples --example repl`
//!
//! Commands: `/state` (flow, step, collected data), `/reset` (start over), `/help`,
//! `/quit`, and the agent's own `/flow <id>`, `/flow stop`, `/flow status`. It runs the concierge's booking agent (`concierge.rs`, included as a
//! module); to try another agent, build it and call `examples::repl::run(&agent, id)`.
//!
//! On the scripted model the concierge's script plays out whatever you type; set
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or `AGENT_BASE_URL` (or
//! `AGENT_LOCAL=1` for the local model) to have a real conversation.

#[allow(dead_code)]
#[path = "concierge.rs"]
mod concierge;

use std::error::Error;
use std::io::{BufRead, Write};
use std::sync::Arc;

use agent_core::AgentConfig;
use agent_core::provider::{CallKind, Provider};
use agent_core::testing::{Answer, ScriptedProvider};
use examples::repl::ReplOutcome;

/// The concierge's script, then a hint once it has run out.
pub fn scripted() -> ScriptedProvider {
    let model = concierge::scripted();
    model.default_answer(
        CallKind::Respond,
        Answer::message("(the scripted model has no more answers: set OPENAI_API_KEY or AGENT_BASE_URL, or AGENT_LOCAL=1, for a real one)"),
    );
    model
}

/// The REPL on the concierge agent, reading `input` and writing `out`.
pub async fn run(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ReplOutcome<concierge::Booking>, Box<dyn Error>> {
    // `/flow stop`, `/flow status`, `/flow <id>` are handy when poking at an agent.
    let config = AgentConfig {
        flow_commands: true,
        ..config
    };
    let agent = concierge::agent(provider, config)?;
    Ok(examples::repl::run_with(&agent, "terminal", input, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::init_logging();
    examples::exit::report(session().await)
}

/// The REPL on the model the environment chooses.
async fn session() -> Result<ReplOutcome<concierge::Booking>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    let stdin = std::io::stdin();
    run(
        model.provider(),
        model.config(),
        &mut stdin.lock(),
        &mut std::io::stdout(),
    )
    .await
}
