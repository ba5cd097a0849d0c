//! The booking agent used across the engine tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use agent_core::prelude::*;
use agent_core::testing::ScriptedProvider;
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

pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(l: &Log) -> Vec<String> {
    l.lock().unwrap().clone()
}

pub fn book_room() -> Arc<dyn Tool<Booking, Concierge>> {
    book_room_tool().into_arc()
}

/// [`book_room`] before it is shared, for tests that declare more on it.
pub fn book_room_tool() -> FnTool<Booking, Concierge> {
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
    // The tests script hotels the model picks; `tests/tool_args.rs` checks a hotel
    // argument that is the user's to give.
    .derived_args(["hotel"])
}

/// ask_city → ask_date → ask_guests → route (auto) → confirm (end) | large_group (reply, end)
pub fn booking_flow(confirm_branches: bool) -> Flow<Booking, Concierge> {
    let mut confirm = Step::model("confirm")
        .prompt("Confirm the booking.")
        .tool(book_room())
        .end();
    if confirm_branches {
        confirm = confirm
            .branch(Branch::to_step("ask_date").when("the user wants another date"))
            .branch(Branch::to_flow("feedback").when("the user wants to leave feedback"));
    }
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
        .step(confirm)
        .step(Step::reply("large_group", "A specialist will call you about groups.").end())
        .build()
        .expect("booking flow is valid")
}

pub fn feedback_flow() -> Flow<Booking, Concierge> {
    Flow::builder("feedback")
        .title("Feedback")
        .when("the user wants to leave feedback")
        .step(
            Step::model("ask_feedback")
                .prompt("Ask how the booking went.")
                .collect(["feedback"]),
        )
        .build()
        .expect("feedback flow is valid")
}

/// `flow` (whose first step collects the city and whose second is `ask_date`)
/// started and answered with Lisbon: it waits at `ask_date`.
pub async fn wait_at_ask_date(a: &Agent<Booking, Concierge>, p: &ScriptedProvider, flow: &str) {
    p.respond(
        agent_core::testing::Answer::message("Lisbon it is. When do you check in?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.dispatch("s", Directive::go_to(flow)).await.unwrap();
    let r = a.respond("s", "A hotel in Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
}

/// The last call's latest message, with the per-turn state the engine appended.
pub fn last_state(p: &ScriptedProvider) -> String {
    p.last_request()
        .and_then(|r| r.messages.last().map(|m| m.content.to_string()))
        .unwrap_or_default()
}

/// The tests' "today": Monday 2026-06-15, 09:30 UTC (so "July 1" is 2026-07-01).
pub const TODAY_MS: u64 = 1_781_515_800_000;

pub fn agent(
    provider: &ScriptedProvider,
    flows: Vec<Flow<Booking, Concierge>>,
) -> Agent<Booking, Concierge> {
    agent_with(provider, flows, AgentConfig::default())
}

/// [`agent`] with hand-over read-aheads on (`AgentConfig::preview_handoffs`).
pub fn agent_with_read_ahead(
    provider: &ScriptedProvider,
    flows: Vec<Flow<Booking, Concierge>>,
) -> Agent<Booking, Concierge> {
    agent_with(
        provider,
        flows,
        AgentConfig {
            preview_handoffs: true,
            ..AgentConfig::default()
        },
    )
}

pub fn agent_with(
    provider: &ScriptedProvider,
    flows: Vec<Flow<Booking, Concierge>>,
    config: AgentConfig,
) -> Agent<Booking, Concierge> {
    let mut b = Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .config(config)
        .provider(provider.clone());
    for f in flows {
        b = b.flow(f);
    }
    b.build().expect("agent is valid")
}

/// The booking agent on `provider`, with a handle on its memory store.
pub fn booking_with_store(
    provider: &ScriptedProvider,
) -> (
    Agent<Booking, Concierge>,
    Arc<agent_core::store::MemoryStore>,
) {
    let store = Arc::new(agent_core::store::MemoryStore::new());
    let a = Agent::builder()
        .name("Concierge")
        .provider(provider.clone())
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .flow(booking_flow(false))
        .store_arc(store.clone())
        .build()
        .expect("agent is valid");
    (a, store)
}
