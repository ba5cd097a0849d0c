//! Quickstart: the smallest useful agent. One flow of two steps: ask the user's name,
//! then greet them by it.
//!
//! `cargo run -p examples --example quickstart`
//!
//! Runs on a scripted model by default (instant, no key needed); set `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or `AGENT_BASE_URL` (or `AGENT_LOCAL=1`) to
//! talk to a real one.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::show::{self, Transcript};
use serde_json::json;

/// What the agent collects. `#[data]` makes every field optional at run time (it is
/// collected over turns) and turns the doc comments into hints for the model.
#[data]
pub struct Guest {
    /// The user's first name
    pub name: String,
}

/// A flow is a module; each `#[step]` fn is a step, in order. The flow completes when
/// its last step has been answered and its `required` fields are present.
#[flow(data = Guest, required(name))]
mod greeting {
    #[step(prompt = "Ask the user for their name.", collect(name))]
    fn ask_name() {}

    #[step(prompt = "Greet the user warmly by name.", requires(name))]
    fn greet() {}
}

/// What the user says.
pub const MESSAGES: [&str; 3] = ["Hi there!", "I'm Ada", "Thanks, bye!"];

/// The scripted model's answers, one per model call.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.respond(Answer::message("Hello! What's your name?"));
    // One call both extracts the name and answers for the next step.
    model.respond(
        Answer::message("Nice to meet you, Ada!")
            .with_data(json!({ "name": "Ada" }))
            .claiming("greet"),
    );
    // `greet` collects nothing: the user's next message closes the flow.
    model.respond(Answer::message("Goodbye, Ada. Have a lovely day!"));
    model
}

/// Build the agent and have the conversation.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Guest>, Box<dyn Error>> {
    let agent: Agent<Guest, ()> = Agent::builder()
        .name("Greeter")
        .persona("A cheerful receptionist.")
        .provider_arc(provider)
        .flow(greeting::flow()?)
        .build()?;
    Ok(show::converse(&agent, "quickstart", &MESSAGES, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Guest>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
