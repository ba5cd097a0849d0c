//! Flow control: everything that moves a conversation is a directive (go to a flow or
//! a step, complete, abort, reset, reply, write data), whoever emits it: the
//! application from outside, hooks, tools, `on_complete`. The engine merges them with
//! one documented rule and lists every emission in `directive_chain`.
//!
//! `cargo run -p examples --example flow_control`
//!
//! Written with the plain builders. Account recovery: the app dispatches the user into
//! the flow, hooks steer the prompt and guard the attempts, a tool checks the code and
//! completes the flow, and `on_complete` starts a survey, which asks its question in
//! the same turn.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::show::{self, Transcript};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the recovery collects.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Recovery {
    /// Email address of the account
    pub email: Option<String>,
    /// Set by the check_code tool
    pub verified: Option<bool>,
    /// Wrong codes so far
    pub attempts: Option<u8>,
    /// Satisfaction, 1 to 5
    pub rating: Option<u8>,
}

type Cx<'a> = agent_core::hook::Cx<'a, Recovery, ()>;

#[derive(Deserialize, JsonSchema)]
struct CodeArgs {
    /// The 6-digit code from the email
    code: String,
}

/// A tool that emits directives: `complete` on success, nothing on a wrong code.
fn check_code() -> Arc<dyn Tool<Recovery, ()>> {
    FnTool::new(
        "check_code",
        "Check the code the user got by email.",
        |cx: ToolCx<Recovery, ()>, a: CodeArgs| async move {
            if a.code == "424242" {
                let patch = patch_of(&json!({ "verified": true })).map_err(ToolError::msg)?;
                return Ok(ToolOutput::text("code accepted")
                    .data(patch)
                    .directive(Directive::complete()));
            }
            let attempts = cx.data().attempts.unwrap_or(0) + 1;
            let patch = patch_of(&json!({ "attempts": attempts })).map_err(ToolError::msg)?;
            Ok(ToolOutput::text("wrong code").data(patch))
        },
    )
    .into_arc()
}

fn recover() -> Result<Flow<Recovery, ()>, ConfigErrors> {
    Flow::builder("recover")
        .required(["email", "verified"])
        // When the flow completes, the survey starts in the same turn and asks its
        // question after the completing message.
        .on_complete(Directive::go_to("survey"))
        .step(
            Step::model("ask_email")
                .prompt("Ask for the account's email address.")
                .collect(["email"])
                // `prepare` runs before this step's model call and feeds its prompt.
                .prepare(|_cx: &Cx<'_>| {
                    PreDirective::new().append_prompt("Never say whether an account exists.")
                }),
        )
        .step(
            Step::model("verify")
                .prompt("Ask for the 6-digit code we emailed; check it with check_code.")
                .tool(check_code())
                // Until the tool has verified the code, the answer comes back here.
                .branch(
                    Branch::to_step("verify").if_(|cx: &Cx<'_>| cx.data().verified != Some(true)),
                )
                // `finalize` runs after the model: three wrong codes end the conversation.
                .finalize(|cx: &Cx<'_>| {
                    if cx.data().attempts.unwrap_or(0) >= 3 {
                        Directive::abort("too many wrong codes")
                    } else {
                        Directive::new()
                    }
                }),
        )
        .build()
}

fn survey() -> Result<Flow<Recovery, ()>, ConfigErrors> {
    Flow::builder("survey")
        .step(
            Step::model("ask_rating")
                .prompt("Ask how helpful this was, 1 to 5.")
                .collect(["rating"]),
        )
        .build()
}

/// What the user says.
pub const MESSAGES: [&str; 5] = [
    "Hi, I can't log in",
    "ada@example.com",
    "123456",
    "Sorry, it's 424242",
    "4",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.respond(Answer::message("I can help. What's the email address?"));
    model.respond(
        Answer::message("I've sent you a code. What is it?")
            .with_data(json!({ "email": "ada@example.com" }))
            .claiming("verify"),
    );
    model.respond(Answer::tool("check_code", json!({ "code": "123456" })));
    model.tool_round(Answer::message(
        "That code is not right. Please check the email again.",
    ));
    model.respond(Answer::tool("check_code", json!({ "code": "424242" })));
    model.tool_round(Answer::message("You're verified: you can log in again."));
    // `on_complete` moved to the survey: it asks in the same turn (no routing call).
    model.respond(Answer::message("How helpful was this, from 1 to 5?"));
    // The rating completes the survey.
    model.respond(Answer::message("Thank you!").with_data(json!({ "rating": 4 })));
    model
}

/// Build the agent, dispatch the user into the recovery, and talk. In the turn with
/// the right code, the chain holds both the loop branch (`goToStep verify`) and the
/// tool's `complete`: one merge rule decides, by precedence
/// `abort > complete > go_to = go_to_step > reset`.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Recovery>, Box<dyn Error>> {
    let agent: Agent<Recovery, ()> = Agent::builder()
        .name("Accounts")
        .provider_arc(provider)
        .flow(recover()?)
        .flow(survey()?)
        .build()?;

    // The app knows the user clicked "forgot password": a directive from outside any
    // turn, applied first thing next turn (so no routing call is needed).
    agent.dispatch("ada", Directive::go_to("recover")).await?;
    writeln!(out, "(dispatched go_to recover)\n")?;
    Ok(show::converse(&agent, "ada", &MESSAGES, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Recovery>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
