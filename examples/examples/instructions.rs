//! Instructions: rules for the model at agent, flow and step scope: `must`, `should`,
//! `never`; with `when` (the model judges whether it applies, no extra call) or `if`
//! (code decides, each turn: the rule is only sent when it holds).
//!
//! `cargo run -p examples --example instructions`
//!
//! Written with the plain builders (no macros). After each turn it prints the rules
//! the model was given, read from the prompts actually sent.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::Recorder;
use examples::show::{self, Transcript};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A table reservation. With the builders, the data type is a plain serde struct with
/// `Option` fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Reservation {
    /// Number of people, 1 to 20
    pub party: Option<u8>,
    /// Time of the reservation, HH:MM
    pub time: Option<String>,
    /// Phone number with country code
    pub phone: Option<String>,
}

type Cx<'a> = agent_core::hook::Cx<'a, Reservation, ()>;

fn reservation_flow() -> Result<Flow<Reservation, ()>, ConfigErrors> {
    Flow::builder("reservation")
        .required(["party", "time", "phone"])
        // A flow rule that only holds for small parties: checked in code every turn.
        .instruction(
            Instruction::should("offer a table on the terrace")
                .if_(|cx: &Cx<'_>| cx.data().party.is_some_and(|n| n <= 4)),
        )
        .step(
            Step::model("ask_table")
                .prompt("Ask for the party size and the time.")
                .collect(["party", "time"]),
        )
        .step(
            Step::model("ask_phone")
                .prompt("Ask for a phone number to confirm the table.")
                .collect(["phone"])
                // A step rule: only while this step speaks.
                .instruction(Instruction::must("ask for the country code")),
        )
        .step(Step::reply("done", "Your table is booked. See you soon!").end())
        .build()
}

/// What the user says.
pub const MESSAGES: [&str; 2] = ["A table for 2 at 20:00, please", "+351 912 345 678"];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // The first call reads the message as the answer to `ask_table` and writes for
    // `ask_phone` (with that step's rule). Its values make the terrace rule hold,
    // which its prompt could not have: the engine renders `ask_phone` again with it.
    model.respond(
        Answer::message("Your phone number, with country code?")
            .with_data(json!({ "party": 2, "time": "20:00" })),
    );
    model.respond(Answer::message(
        "Lovely: 2 at 20:00, on the terrace if you like. Your phone number, with country code?",
    ));
    // The last step is a verbatim reply: the engine only extracts the data.
    model.extract(Answer::data(json!({ "phone": "+351912345678" })));
    model
}

/// The rule lines of a system prompt.
fn rules(prompt: &str) -> Vec<&str> {
    prompt
        .lines()
        .filter(|l| {
            l.starts_with("- ")
                && [" MUST ", " SHOULD ", " NEVER "]
                    .iter()
                    .any(|k| l.contains(k))
        })
        .collect()
}

/// Build the agent, then print each turn and the rules sent with each model call.
/// Returns the rules of every call, in order.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<(Transcript<Reservation>, Vec<Vec<String>>), Box<dyn Error>> {
    let recorder = Recorder::new(provider);
    let agent: Agent<Reservation, ()> = Agent::builder()
        .name("Maitre d'")
        .provider(recorder.clone())
        // Agent rules: sent with every call.
        .instruction(Instruction::must("answer in the user's language"))
        .instruction(Instruction::never(
            "promise a table before the phone number is given",
        ))
        // A `when` rule: the model judges whether it applies.
        .instruction(
            Instruction::should("mention the vegetarian menu").when("the user asks about food"),
        )
        .flow(reservation_flow()?)
        .build()?;

    let mut transcript = Transcript::default();
    let mut calls = Vec::new();
    for m in MESSAGES {
        show::say(&agent, "table", m, &mut transcript, out).await?;
        for prompt in recorder.take() {
            let lines: Vec<String> = rules(&prompt).into_iter().map(str::to_owned).collect();
            writeln!(out, "       rules of model call {}:", calls.len() + 1)?;
            for l in &lines {
                writeln!(out, "         {l}")?;
            }
            if lines.is_empty() {
                writeln!(out, "         (none: a data-only call)")?;
            }
            calls.push(lines);
        }
        writeln!(out)?;
    }
    Ok((transcript, calls))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Reservation>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    let (transcript, _prompts) = run(model.provider(), &mut std::io::stdout()).await?;
    Ok(transcript)
}
