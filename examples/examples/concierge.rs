//! The concierge: a hotel-booking agent driven by a scripted model, printing each turn's
//! step, collected data and model-call count.
//!
//! `cargo run -p examples --example concierge`
//!
//! The scripted provider stands in for a real model (the providers crate adds OpenAI,
//! Anthropic, Gemini and OpenAI-compatible servers); the engine, the flow and the
//! directives are the real thing.

use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the concierge collects. Field docs become extraction hints for the model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
struct Booking {
    /// City the guest wants to stay in
    city: Option<String>,
    /// Check-in date, ISO 8601
    check_in: Option<String>,
    /// Number of guests, 1 to 12
    guests: Option<u8>,
    /// Confirmation number
    booking_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Concierge {
    tier: String,
}

#[derive(Deserialize, JsonSchema)]
struct BookArgs {
    /// Hotel name
    hotel: String,
}

fn booking_flow() -> Result<Flow<Booking, Concierge>, ConfigErrors> {
    let book_room = FnTool::new(
        "book_room",
        "Book the room once the guest confirmed.",
        |cx: ToolCx<Booking, Concierge>, a: BookArgs| async move {
            let id = format!(
                "{}-{}",
                a.hotel.to_uppercase(),
                cx.data().guests.unwrap_or(1)
            );
            Ok(ToolOutput::text(format!("booked {id}"))
                .data(patch_of(&json!({ "booking_id": id })).map_err(ToolError::msg)?)
                .directive(Directive::complete()))
        },
    )
    .into_arc();

    Flow::builder("booking")
        .title("Hotel booking")
        .when("the user wants to book a hotel room")
        .required(["city", "check_in", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask which city the user wants to stay in.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"])
                .requires(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        // An auto step: code-only branches, no model call.
        .step(
            Step::auto("route")
                .requires(["city", "check_in", "guests"])
                .branch(
                    Branch::to_step("large_group").if_(|cx: &Cx<'_, Booking, Concierge>| {
                        cx.data().guests.is_some_and(|g| g > 8)
                    }),
                )
                .branch(Branch::to_step("confirm")),
        )
        .step(
            Step::model("confirm")
                .prompt("Summarise the booking and ask the guest to confirm.")
                .tool(book_room)
                .prepare(|cx: &Cx<'_, Booking, Concierge>| {
                    PreDirective::new().append_prompt(format!("Guest tier: {}", cx.context().tier))
                })
                .branch(Branch::to_step("ask_date").when("the user wants another date"))
                .end(),
        )
        .step(Step::reply("large_group", "A specialist will call you about groups.").end())
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("concierge: scripted model (no API key needed); the engine is real\n");
    let model = ScriptedProvider::new();
    let agent: Agent<Booking, Concierge> = Agent::builder()
        .name("Concierge")
        .persona("A friendly hotel concierge.")
        .instruction(Instruction::never("invent prices"))
        .provider(model.clone())
        .context(Concierge {
            tier: "gold".into(),
        })
        .flow(booking_flow()?)
        .build()?;

    // What the model will answer, turn by turn.
    model.respond(Answer::message("Happy to help! Which city?"));
    model.respond(
        Answer::message("Lisbon for two. From which date?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 }))
            .claiming("ask_date"),
    );
    // The engine predicted `confirm` (guests were given already): one call.
    model.respond(
        Answer::message("Lisbon, July 1st, 2 guests. Shall I book the Grand?")
            .with_data(json!({ "check_in": "2026-07-01" })),
    );
    model.respond(Answer::tool("book_room", json!({ "hotel": "grand" })));
    model.tool_round(Answer::message("Done! Your booking number is GRAND-2."));

    for user in [
        "Hi, I need a hotel",
        "Lisbon, for the two of us",
        "July 1st",
        "Yes, book it",
    ] {
        let r = agent.respond("demo", user).await?;
        println!("user:  {user}");
        println!("agent: {}", r.message);
        println!(
            "       step={:?} stopped={:?} model_calls={} data={}\n",
            r.step.as_deref().unwrap_or("-"),
            r.stopped,
            r.model_calls,
            serde_json::to_string(&r.data)?
        );
    }
    Ok(())
}
