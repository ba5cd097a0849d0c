//! Streaming: `respond_stream` yields events while the turn runs: steps entered, tool
//! calls and results, flow hops, then the reply text, then exactly one `Done` (or
//! `Error`, with the session unchanged).
//!
//! `cargo run -p examples --example streaming`
//!
//! The text deltas always add up to the final message: they go out as the model writes
//! them when the reply is known to be final, otherwise once the turn is saved. The
//! scripted model here streams its answers in pieces of a few characters, as a real
//! model streams tokens.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use agent_core::provider::Provider;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use examples::exit::Tally;
use examples::show;
use futures::StreamExt;
use serde_json::json;

/// A pizza order.
#[data]
pub struct Order {
    /// Which pizza
    pub pizza: String,
    /// Delivery address
    pub address: String,
    /// Order number
    pub order_id: String,
}

/// Place the order.
#[tool]
async fn place_order(cx: ToolCx<Order, ()>) -> Result<ToolOutput, ToolError> {
    let pizza = cx.data().pizza.clone().unwrap_or_default();
    // The kitchen's estimate: the tool knows it, the model does not.
    let eta_minutes = 30;
    Ok(
        ToolOutput::text(format!("order P-17 placed: {pizza}, {eta_minutes} min"))
            .data(Order::patch().order_id("P-17"))
            .directive(Directive::complete()),
    )
}

#[flow(data = Order, required(pizza, address))]
mod order {
    #[step(prompt = "Ask which pizza.", collect(pizza))]
    fn ask_pizza() {}

    #[step(prompt = "Ask for the delivery address.", collect(address))]
    fn ask_address() {}

    #[step(end, prompt = "Confirm and place the order.", tools(place_order))]
    fn confirm() {}
}

/// What the user says.
pub const MESSAGES: [&str; 3] = [
    "A margherita, please",
    "12 Rua Augusta, Lisbon",
    "Yes, go ahead",
];

/// The scripted model's answers.
pub fn scripted() -> ScriptedProvider {
    let model = ScriptedProvider::new();
    model.stream_in_chunks(6);
    // The opening message answers the first step: one call stores the pizza and asks
    // the next step's question.
    model.respond(
        Answer::message("One margherita. Where should we deliver it?")
            .with_data(json!({ "pizza": "margherita" }))
            .claiming("ask_address"),
    );
    model.respond(
        Answer::message("12 Rua Augusta: shall I place the order?")
            .with_data(json!({ "address": "12 Rua Augusta, Lisbon" }))
            .claiming("confirm"),
    );
    model.respond(Answer::tool("place_order", json!({})));
    model.tool_round(Answer::message(
        "Ordered! Your margherita arrives in about 30 minutes.",
    ));
    model
}

/// Stream each turn, printing every event as it arrives. Returns, per turn, the
/// events' names in order, and how the turns went.
pub async fn run(
    provider: Arc<dyn Provider>,
    out: &mut dyn Write,
) -> Result<(Vec<Vec<&'static str>>, Tally), Box<dyn Error>> {
    let agent: Agent<Order, ()> = Agent::builder()
        .name("Pizzeria")
        .provider_arc(provider)
        .flow(order::flow()?)
        .build()?;

    let mut turns = Vec::new();
    let mut tally = Tally::default();
    for message in MESSAGES {
        writeln!(out, "user:  {message}")?;
        let mut events = agent.respond_stream("pizza", message);
        let mut seen = Vec::new();
        let mut speaking = false; // in the middle of a line of text
        while let Some(event) = events.next().await {
            if speaking && !matches!(event, Event::TextDelta(_)) {
                writeln!(out)?;
                speaking = false;
            }
            match event {
                Event::Transition(t) => {
                    seen.push("transition");
                    let from = t.from.as_deref().unwrap_or("(none)");
                    writeln!(out, "  ~ hop {from} -> {}", t.to)?;
                }
                Event::StepEntered(s) => {
                    seen.push("step");
                    writeln!(out, "  ~ step {}/{}", s.flow, s.step)?;
                }
                Event::ToolCall { name, arguments } => {
                    seen.push("tool_call");
                    writeln!(out, "  ~ calling {name}({arguments})")?;
                }
                Event::ToolResult(t) => {
                    seen.push("tool_result");
                    writeln!(out, "  ~ {} returned: {}", t.name, t.output)?;
                }
                Event::ApprovalRequested(c) => {
                    seen.push("approval_requested");
                    writeln!(out, "  ~ {}({}) waits for approval", c.tool, c.arguments)?;
                }
                Event::DataDropped(d) => {
                    seen.push("data_dropped");
                    writeln!(
                        out,
                        "  ~ not stored: {} = {} ({})",
                        d.field, d.value, d.reason
                    )?;
                }
                // Text as it arrives, on one line.
                Event::TextDelta(text) => {
                    if !speaking {
                        write!(out, "  ~ text: ")?;
                        speaking = true;
                    }
                    seen.push("text");
                    write!(out, "{text}")?;
                }
                Event::Done(r) => {
                    seen.push("done");
                    let deltas = seen.iter().filter(|e| **e == "text").count();
                    writeln!(out, "  ~ done ({deltas} text deltas)")?;
                    show::details(out, &r)?;
                    tally.ok();
                }
                Event::Error(e) => {
                    seen.push("error");
                    writeln!(out, "  ~ error: {e} (the session is unchanged)\n")?;
                    tally.failure(&e);
                }
            }
            out.flush()?;
        }
        turns.push(seen);
        if show::stop_if_unreachable(&tally, out)? {
            break;
        }
    }
    Ok((turns, tally))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    examples::exit::report(demo().await)
}

/// The conversation on the model the environment chooses.
async fn demo() -> Result<(Vec<Vec<&'static str>>, Tally), Box<dyn Error>> {
    let model = examples::model::real_or_scripted(scripted)?;
    println!("{}", model.description());
    run(model.provider(), &mut std::io::stdout()).await
}
