//! Tools: functions the model may call. A tool returns text for the model and may
//! write session data and steer the flow.
//!
//! `cargo run -p examples --example tools`
//!
//! Shows: `#[tool]` (the doc comment is the description, argument docs the schema),
//! two calls in one answer, a failing tool (the model sees the error and carries on),
//! a tool reading and writing the session data, and the flow completing once the tool
//! has written the last required field.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::show::{self, Transcript};
use serde_json::json;

/// A weekend trip.
#[data]
pub struct Trip {
    /// Destination city
    pub city: String,
    /// Price quote in euros
    pub quote: u32,
}

/// Today's weather forecast for a city.
// `concurrency_safe`: several calls of it may run at the same time.
#[tool(concurrency_safe)]
async fn weather(
    /// City name, e.g. "Lisbon"
    city: String,
) -> Result<ToolOutput, ToolError> {
    // A real tool would call a weather API.
    match city.to_lowercase().as_str() {
        "lisbon" => Ok(ToolOutput::text("sunny, 24 °C")),
        "oslo" => Ok(ToolOutput::text("snow, -3 °C")),
        _ => Err(ToolError::msg(format!("no forecast for {city}"))),
    }
}

/// Quote the price of a stay in the chosen city.
#[tool]
async fn quote(
    // A `ToolCx` parameter gives the session (kept out of the schema).
    cx: ToolCx<Trip, ()>,
    /// Number of nights
    nights: u32,
) -> Result<ToolOutput, ToolError> {
    let Some(city) = cx.data().city.clone() else {
        return Err(ToolError::msg("ask for the city first"));
    };
    let price = 90 * nights;
    Ok(
        ToolOutput::text(format!("{nights} nights in {city}: {price} EUR"))
            .data(Trip::patch().quote(price)),
    )
}

/// Pick a city (the weather tool helps), then get a price (the quote tool).
#[flow(data = Trip, required(city))]
mod trip {
    #[step(
        prompt = "Help the user pick a city; check the weather with the tool.",
        collect(city),
        tools(weather)
    )]
    fn pick_city() {}

    #[step(
        end,
        prompt = "Ask for how many nights and quote the price with the tool.",
        requires(city),
        tools(quote)
    )]
    fn price() {}
}

/// What the user says.
pub const MESSAGES: [&str; 3] = [
    "What's the weather in Lisbon and in Atlantis?",
    "Lisbon it is!",
    "How much for 3 nights?",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    // Two calls in one answer; the tools' results go back to the model (a tool round).
    model.respond(
        Answer::tool("weather", json!({ "city": "Lisbon" }))
            .and_tool("weather", json!({ "city": "Atlantis" })),
    );
    model.tool_round(Answer::message(
        "Lisbon is sunny, 24 °C. I have no forecast for Atlantis, sorry! Where to?",
    ));
    // The answer fills `city`, so the reply already speaks for the next step.
    model.respond(
        Answer::message("Lisbon, lovely. For how many nights?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("price"),
    );
    model.respond(Answer::tool("quote", json!({ "nights": 3 })));
    model.tool_round(Answer::message("Three nights in Lisbon come to 270 EUR."));
    model
}

/// Build the agent and have the conversation.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<Transcript<Trip>, Box<dyn Error>> {
    let agent: Agent<Trip, ()> = Agent::builder()
        .name("Travel desk")
        .provider_arc(provider)
        .flow(trip::flow()?)
        .build()?;
    Ok(show::converse(&agent, "trip", &MESSAGES, out).await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<Transcript<Trip>, Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
