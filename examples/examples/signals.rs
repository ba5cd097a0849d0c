//! Signals: detectors that run every turn, whatever the flow. A signal fires on a code
//! predicate (`if`: free) and/or a condition the model judges (`when`: all of a
//! turn's conditions in one classifier call), may extract a typed value, and answers
//! with a directive: write data, add to the prompt, reply and halt, redirect.
//!
//! `cargo run -p examples --example signals`
//!
//! Written with the plain builders. A parcel-support agent with three signals.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::Provider;
use agent_core::signal::SignalCx;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::show::{self, Transcript};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the support flow collects.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Parcel {
    /// Order number, like A-1042
    pub order_id: Option<String>,
    /// What went wrong with the delivery
    pub problem: Option<String>,
}

type Scx<'a> = SignalCx<'a, Parcel, ()>;
type Cx<'a> = agent_core::hook::Cx<'a, Parcel, ()>;
type Sd = SignalDirective<Parcel, ()>;

fn signals() -> Vec<Signal<Parcel, ()>> {
    vec![
        // Code only: no model involved. Replies verbatim and halts the turn (no reply
        // call), whatever flow the user is in.
        Signal::new("opening_hours")
            .if_(|cx: &Cx<'_>| cx.message().to_lowercase().contains("open"))
            .handle(|_cx: &Scx<'_>| {
                Sd::new()
                    .pre(PreDirective::new().halt())
                    .reply_with("We answer every day from 8:00 to 20:00.")
            }),
        // Judged by the model, with a typed value extracted in the same call: written
        // into the data before the flow runs, so its step is skipped.
        Signal::new("order_number")
            .when("the user mentions an order number")
            .extract::<String>()
            .handle(|cx: &Scx<'_>| match cx.extracted::<String>() {
                Some(id) => PreDirective::new()
                    .data(json_patch(json!({ "order_id": id })))
                    .into(),
                None => Sd::new(),
            }),
        // Judged by the model; at most once per session.
        Signal::new("frustrated")
            .when("the user is frustrated or angry")
            .once()
            .handle(|_cx: &Scx<'_>| {
                PreDirective::new()
                    .append_prompt("The user is upset: apologise first, once, briefly.")
                    .into()
            }),
    ]
}

fn json_patch(v: serde_json::Value) -> Patch {
    v.as_object().cloned().unwrap_or_default()
}

fn support() -> Result<Flow<Parcel, ()>, ConfigErrors> {
    Flow::builder("support")
        .required(["order_id", "problem"])
        .step(
            Step::model("ask_order")
                .prompt("Ask for the order number.")
                .collect(["order_id"]),
        )
        .step(
            Step::model("ask_problem")
                .prompt("Ask what went wrong.")
                .collect(["problem"]),
        )
        .step(
            Step::model("resolve")
                .prompt("Promise a replacement parcel within two days.")
                .end(),
        )
        .build()
}

/// What the user says.
pub const MESSAGES: [&str; 3] = [
    "When are you open?",
    "Order A-1042 is a week late and I'm furious!",
    "The box never arrived, this is so annoying",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    let frustrated = "the user is frustrated or angry";
    let order = "the user mentions an order number";
    // Turn 1: the `when` conditions are judged (one call), then the code signal halts.
    model.classify(Answer::verdicts([(frustrated, false), (order, false)]));
    // Turn 2: both fire; the order number is extracted by the same call.
    model.classify(
        Answer::verdicts([(frustrated, true), (order, true)]).extracting(order, json!("A-1042")),
    );
    model.respond(Answer::message(
        "I'm so sorry! What went wrong with order A-1042?",
    ));
    // Turn 3: still upset, but `frustrated` fires only once.
    model.classify(Answer::verdicts([(frustrated, true), (order, false)]));
    model.respond(
        Answer::message("A replacement parcel will reach you within two days.")
            .with_data(json!({ "problem": "never arrived" }))
            .claiming("resolve"),
    );
    model
}

/// Build the agent and have the conversation.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Parcel>, Box<dyn Error>> {
    let mut builder = Agent::builder()
        .name("Parcels")
        .provider_arc(provider)
        .flow(support()?);
    for s in signals() {
        builder = builder.signal(s);
    }
    let agent: Agent<Parcel, ()> = builder.build()?;
    Ok(show::converse(&agent, "parcel", &MESSAGES, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Parcel>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
