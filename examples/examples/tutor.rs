//! Code flows: the tutor → reminder pair. A conversation written as an async fn reads
//! top to bottom: ask, say, call a tool, hand off to the next flow.
//!
//! `cargo run -p examples --example tutor`
//!
//! The fn runs again from its start on every turn, against a journal of what it
//! recorded so far (answers, tool results, said texts): a paused flow survives a
//! restart, a duplicated inbound event never advances it twice, and a flow that does
//! not take the same path on replay is reported, not mis-fed. Runs on a scripted model
//! by default; set `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or
//! `AGENT_BASE_URL` (or `AGENT_LOCAL=1`) to talk to a real one.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::exit::Tally;
use serde_json::json;

/// What the agent keeps across flows.
#[data]
pub struct Notes {
    /// Id of the scheduled reminder
    pub reminder_id: String,
}

/// Correct one English sentence (a stand-in for a grammar service).
#[tool]
async fn correct_sentence(
    /// The sentence to correct
    sentence: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(
        sentence.replace("goed", "went").replace("i ", "I "),
    ))
}

/// Schedule a reminder; writes its id into the session's data.
#[tool]
async fn schedule_reminder(
    _cx: ToolCx<Notes, ()>,
    /// What to remind the user about
    task: String,
    /// When, as the user said it
    delay: String,
) -> Result<ToolOutput, ToolError> {
    let id = format!("R-{}", task.len() + delay.len());
    Ok(ToolOutput::text(format!("{id}: \"{task}\" {delay}")).data(Notes::patch().reminder_id(id)))
}

/// The tutor: learn the user's name, correct one sentence, then hand over to reminders.
#[flow(title = "English tutor", when = "the user wants to practise English")]
async fn tutor(ctx: FlowCx<Notes, ()>) -> FlowResult {
    let name: String = ctx.ask("name", "What's your name?").await;
    ctx.say(format!("Nice to meet you, {name}.")).await;
    // Taken verbatim (no model call): the tool must see what the user typed.
    let sentence = ctx
        .ask_text("sentence", "Send one sentence in English.")
        .await;
    // A failing tool comes back as an error the flow may handle; `?` fails the step.
    let fixed = ctx
        .tool(correct_sentence, json!({ "sentence": sentence }))
        .await?;
    ctx.say(format!("Corrected: {fixed}")).await;
    ctx.handoff::<ReminderFlow>() // a type: a misspelled flow does not compile
}

/// Reminders: what and when, then schedule it.
#[flow(title = "Reminders", when = "the user wants a reminder")]
async fn reminder(ctx: FlowCx<Notes, ()>) -> FlowResult {
    let task: String = ctx.ask("task", "What should I remind you about?").await;
    let delay: String = ctx.ask("delay", "When should I remind you?").await;
    let done = ctx
        .tool(schedule_reminder, json!({ "task": task, "delay": delay }))
        .await?;
    ctx.say(format!("Scheduled {done}.")).await;
    ctx.end("reminder_scheduled")
}

/// What the user says.
pub const MESSAGES: [&str; 5] = [
    "Hi! I'd like to practise my English.",
    "I'm Ana",
    "yesterday i goed to the market",
    "call my mother",
    "tomorrow at 9",
];

/// The scripted model: one routing answer, then one extraction per typed question
/// (the questions and replies themselves are code, not model calls; the sentence is
/// taken verbatim).
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.route(Answer::route("tutor"));
    for answer in ["Ana", "call my mother", "tomorrow at 9"] {
        model.extract(Answer::answering(json!(answer)));
    }
    model
}

/// Build the agent and have the conversation; returns the responses of the turns that
/// succeeded, and how the turns went.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<(Vec<AgentResponse<Notes>>, Tally), Box<dyn Error>> {
    let agent: Agent<Notes, ()> = Agent::builder()
        .name("Tutor")
        .provider_arc(provider)
        .code_flow(TutorFlow)
        .code_flow(ReminderFlow)
        // Runs once per completed turn, whichever path answered.
        .on_response(|r, meta| {
            tracing_free_log(&format!(
                "turn done: path {:?}, flow {:?}, handed off from {:?} ({} model call(s))",
                meta.source, meta.flow, meta.handoff_from, r.model_calls
            ));
        })
        .build()?;
    let mut responses = Vec::new();
    let mut tally = Tally::default();
    for m in MESSAGES {
        writeln!(out, "user:  {m}")?;
        let outcome = agent.respond("tutor-demo", m).await;
        tally.record(&outcome);
        let r = match outcome {
            Ok(r) => r,
            Err(e) => {
                // A failed turn (a model that cannot answer, an outage) changes nothing:
                // the flow still waits on the same question.
                writeln!(out, "error: {e}")?;
                if examples::show::stop_if_unreachable(&tally, out)? {
                    break;
                }
                continue;
            }
        };
        for line in r.message.lines() {
            writeln!(out, "agent: {line}")?;
        }
        // The reason the flow gave to `ctx.end(..)`, on the turn it ended.
        let ended = match &r.meta.end_reason {
            Some(reason) => format!(", ended: {reason}"),
            None => String::new(),
        };
        writeln!(
            out,
            "       [flow: {}, waiting on: {}, {:?}{ended}]",
            r.flow.as_deref().unwrap_or("-"),
            r.step.as_deref().unwrap_or("-"),
            r.stopped
        )?;
        responses.push(r);
    }
    Ok((responses, tally))
}

/// The hook's output goes to stderr so the transcript stays clean.
fn tracing_free_log(line: &str) {
    eprintln!("{line}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<(Vec<AgentResponse<Notes>>, Tally), Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
