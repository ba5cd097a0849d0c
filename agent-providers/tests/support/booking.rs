//! The booking agent of the engine tests (copied from agent-core's test kit: tests do not
//! import each other's code across crates).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

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

pub fn book_room() -> Arc<dyn Tool<Booking, Concierge>> {
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// Hotel name
        hotel: String,
    }
    FnTool::new(
        "book_room",
        "Book the room.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            let id = format!("BK-{}", a.hotel.len());
            Ok(ToolOutput::text(format!("booked {id}"))
                .data(
                    json!({ "booking_id": id })
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                )
                .directive(Directive::complete()))
        },
    )
    .into_arc()
}

/// ask_city → ask_date → ask_guests → route (auto) → confirm (end) | large_group (reply, end)
pub fn booking_flow() -> Flow<Booking, Concierge> {
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
        .expect("booking flow is valid")
}

/// The concierge with one flow, on any provider.
pub fn agent(provider: impl Provider + 'static) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .provider(provider)
        .flow(booking_flow())
        .build()
        .expect("agent is valid")
}
