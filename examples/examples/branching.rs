//! Branching: where a step goes next, decided by code (`if`: free, exact) or judged by
//! the model (`when`: in the same call as the reply, no extra call), to a step of the
//! same flow or to another flow.
//!
//! `cargo run -p examples --example branching`
//!
//! Written with the plain builders. Two tickets: a printer problem that gets a fix,
//! then a hand-off to a human (a `when` branch into another flow), and an emergency
//! that a code branch escalates without asking the model.

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

/// A support ticket.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// What is wrong, in a few words
    pub issue: Option<String>,
    /// How bad it is: 1 (cosmetic) to 5 (emergency)
    pub severity: Option<u8>,
    /// Phone number for a call back
    pub phone: Option<String>,
}

type Cx<'a> = agent_core::hook::Cx<'a, Ticket, ()>;

fn support() -> Result<Flow<Ticket, ()>, ConfigErrors> {
    Flow::builder("support")
        .when("the user has a problem with a product")
        .required(["issue", "severity"])
        .step(
            Step::model("ask_issue")
                .prompt("Ask what is wrong and how bad it is.")
                .collect(["issue", "severity"]),
        )
        // An auto step makes no model call: its branches are code, tried in order.
        .step(
            Step::auto("triage")
                .requires(["severity"])
                .branch(
                    Branch::to_step("escalate")
                        .if_(|cx: &Cx<'_>| cx.data().severity.is_some_and(|s| s >= 4))
                        .label("urgent"),
                )
                .branch(Branch::to_step("self_help")),
        )
        // A `when` branch: the model judges it in the same call as its reply. When no
        // branch holds, this terminal (`end`) step closes the ticket.
        .step(
            Step::model("self_help")
                .prompt("Suggest one simple fix.")
                .branch(Branch::to_flow("callback").when("the user wants to talk to a person"))
                .end(),
        )
        .step(Step::reply("escalate", "An engineer will call you within the hour.").end())
        .build()
}

fn callback() -> Result<Flow<Ticket, ()>, ConfigErrors> {
    Flow::builder("callback")
        .when("the user wants a call back")
        .required(["phone"])
        .step(
            Step::model("ask_phone")
                .prompt("Ask for a phone number.")
                .collect(["phone"]),
        )
        .build()
}

/// The tickets: (session, what the user says).
pub const MESSAGES: [(&str, &str); 3] = [
    ("printer", "My printer shows error E42"),
    ("printer", "Still broken. Can I talk to a person?"),
    ("fire", "The server room is on fire!"),
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // Two flows: the first message is routed (a small call) before the reply. The
    // reply call reads the message as the answer to the first step and writes for
    // the step after it, `self_help`, where the code branch leads.
    model.route(Answer::route("support"));
    model.respond(
        Answer::message("E42 is a paper jam: open tray 2 and pull the sheet out.")
            .with_data(json!({ "issue": "printer error E42", "severity": 2 })),
    );
    // The model judges "wants a person" true: the branch leaves for `callback`, which
    // speaks in the same turn.
    model.respond(
        Answer::message("Sorry it didn't help.")
            .judging("the user wants to talk to a person", true),
    );
    model.respond(Answer::message("Of course. Which number should we call?"));
    // Severity 5: the code branch escalates; the reply step needs no model reply.
    model.route(Answer::route("support"));
    model.respond(
        Answer::message("Oh no!")
            .with_data(json!({ "issue": "fire in the server room", "severity": 5 })),
    );
    model
}

/// Build the agent and run both tickets.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Ticket>, Box<dyn Error>> {
    let agent: Agent<Ticket, ()> = Agent::builder()
        .name("Helpdesk")
        .provider_arc(provider)
        // The model judges severity; nobody states it, so it is not grounded.
        .constrain(
            "severity",
            json!({ "minimum": 1, "maximum": 5, "x-inferred": true }),
        )
        .flow(support()?)
        .flow(callback()?)
        .build()?;
    let mut transcript = Transcript::default();
    for (session, message) in MESSAGES {
        writeln!(out, "[ticket {session}]")?;
        show::say(&agent, session, message, &mut transcript, out).await?;
    }
    Ok(transcript)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Ticket>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
