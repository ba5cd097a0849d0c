//! Model calls per turn and the idle session's size (rows 2 and 4): the booking
//! conversation of `agent-core/tests/booking.rs` (its `common` agent) with the scripted
//! provider.

use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::BoxError;
use super::measure::current_thread;
use super::report::{IdleSession, ModelCalls};

/// What the concierge collects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: Option<String>,
    /// Check-in date, ISO 8601
    pub check_in: Option<String>,
    /// Number of guests, 1 to 12
    pub guests: Option<u8>,
    /// Confirmation id
    pub booking_id: Option<String>,
    /// Free-text feedback
    pub feedback: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Concierge {
    pub tier: String,
}

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// Hotel name
    hotel: String,
}

fn book_room() -> FnTool<Booking, Concierge> {
    FnTool::new(
        "book_room",
        "Book the room.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            let id = format!("BK-{}", a.hotel.len());
            Ok(ToolOutput::text(format!("booked {id}"))
                .data(patch_of(&json!({ "booking_id": id })).map_err(ToolError::msg)?)
                .directive(Directive::complete()))
        },
    )
}

/// ask_city → ask_date → ask_guests → route (auto) → confirm (end) | large_group
pub fn booking_flow() -> Result<Flow<Booking, Concierge>, ConfigErrors> {
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
                .prompt("Confirm the booking.")
                .tool(book_room())
                .end(),
        )
        .step(Step::reply("large_group", "A specialist will call you about groups.").end())
        .build()
}

/// Rows 2 and 4: the booking conversation of `tests/booking.rs` with the scripted
/// provider: one field per turn, then all data in one message; and the stored size of
/// the first conversation's stored session once idle.
pub(crate) fn booking_conversation() -> Result<(ModelCalls, IdleSession), BoxError> {
    let rt = current_thread()?;
    rt.block_on(async {
        // One field per turn.
        let p = ScriptedProvider::new();
        let store = Arc::new(MemoryStore::new());
        let a: Agent<Booking, Concierge> = Agent::builder()
            .name("Concierge")
            .provider(p.clone())
            .store_arc(store.clone())
            .flow(booking_flow()?)
            .build()?;
        p.respond(Answer::message("Which city?"));
        p.respond(
            Answer::message("Check-in date?")
                .with_data(json!({"city": "Lisbon"}))
                .claiming("ask_date"),
        );
        p.respond(
            Answer::message("How many guests?")
                .with_data(json!({"check_in": "2026-07-01"}))
                .claiming("ask_guests"),
        );
        p.respond(
            Answer::message("Shall I book?")
                .with_data(json!({"guests": 2}))
                .claiming("confirm"),
        );
        let mut per_turn = Vec::new();
        let mut steps = Vec::new();
        for said in ["I want to book a hotel", "Lisbon", "July 1", "two of us"] {
            let r = a.respond("one-field", said).await?;
            per_turn.push(r.model_calls);
            steps.push(r.step);
        }
        let one_field_provider_calls = p.calls();

        // The idle session it left behind.
        let stored = store
            .load("one-field")
            .await?
            .ok_or("the booking session was not stored")?;
        let session = a
            .session("one-field")
            .await?
            .ok_or("the booking session was not stored")?;
        let history_text_bytes: usize = session.history.iter().map(|m| m.content.len()).sum();
        let idle = IdleSession {
            turns: per_turn.len(),
            stored_bytes: stored.bytes.len(),
            history_text_bytes,
            without_history_bytes: stored.bytes.len().saturating_sub(history_text_bytes),
        };

        // All data in one message.
        let p = ScriptedProvider::new();
        let a: Agent<Booking, Concierge> = Agent::builder()
            .name("Concierge")
            .provider(p.clone())
            .flow(booking_flow()?)
            .build()?;
        p.respond(
            Answer::message("Which city?")
                .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})),
        );
        p.respond(Answer::message("Lisbon, July 1, 2 guests. Shall I book?"));
        let r = a.respond("all-in-one", "Lisbon, July 1, two of us").await?;
        let calls = ModelCalls {
            one_field_per_turn: per_turn,
            one_field_steps: steps,
            one_field_provider_calls,
            all_in_one_calls: r.model_calls,
            all_in_one_turns: 1,
            all_in_one_step: r.step,
            all_in_one_provider_calls: p.calls(),
        };
        Ok((calls, idle))
    })
}
