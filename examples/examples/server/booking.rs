//! The hotel-booking agent the server runs: what it collects ([`Booking`]), its flow
//! (city, date, guests, then confirmation or a group specialist) and the approval that
//! booking a room may wait for ([`Approvals`]).

use std::sync::Arc;

use agent_core::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the booking collects. Field docs become extraction hints for the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: Option<String>,
    /// Check-in date, ISO 8601 (YYYY-MM-DD)
    pub check_in: Option<String>,
    /// Number of guests, 1 to 12
    pub guests: Option<u8>,
    /// Confirmation number, set once the room is booked
    pub booking_id: Option<String>,
}

/// The agent the server runs.
pub type BookingAgent = Agent<Booking, ()>;

/// The model-judged condition of the confirmation step.
pub(super) const ANOTHER_DATE: &str = "the user wants another check-in date";

#[derive(Deserialize, JsonSchema)]
struct BookArgs {
    /// The hotel the agent picks in the city
    hotel: String,
}

/// The hotel-booking flow: city, date, guests, then a code-only route to the
/// confirmation (or to a specialist for large groups). The room is booked as soon as
/// the guest confirms.
pub fn booking_flow() -> Result<Flow<Booking, ()>, ConfigErrors> {
    booking_flow_with(Approvals::Off)
}

/// Whether booking the room waits for a person's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approvals {
    /// `book_room` runs as soon as the model calls it.
    Off,
    /// Every `book_room` call waits for a person's decision (the page's Approve /
    /// Deny buttons, `POST /api/sessions/{id}/approvals/{call_id}`).
    #[default]
    Bookings,
}

impl Approvals {
    /// `APPROVE_BOOKINGS`: unset, `1`, `true`, `yes` or `on` ask for approval; `0`,
    /// `false`, `no` or `off` book without asking.
    pub fn from_env(value: Option<&str>) -> Result<Self, String> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("1" | "true" | "yes" | "on") => Ok(Self::Bookings),
            Some("0" | "false" | "no" | "off") => Ok(Self::Off),
            Some(other) => Err(format!(
                "APPROVE_BOOKINGS must be 1 or 0 (true/false, yes/no, on/off), got {other:?}"
            )),
        }
    }
}

/// [`booking_flow`], with `book_room` waiting for a person's approval when
/// `approvals` says so.
pub fn booking_flow_with(approvals: Approvals) -> Result<Flow<Booking, ()>, ConfigErrors> {
    let book_room = FnTool::new(
        "book_room",
        "Book the room once the guest confirmed the booking.",
        |cx: ToolCx<Booking, ()>, a: BookArgs| async move {
            let d = cx.data();
            let city: String = d
                .city
                .as_deref()
                .unwrap_or("XXX")
                .chars()
                .filter(char::is_ascii_alphabetic)
                .take(3)
                .collect();
            let date: String = d
                .check_in
                .as_deref()
                .unwrap_or("")
                .chars()
                .filter(char::is_ascii_digit)
                .skip(4)
                .collect();
            let id = format!("{}-{date}-{}", city.to_uppercase(), d.guests.unwrap_or(1));
            Ok(ToolOutput::text(format!("booked {} as {id}", a.hotel))
                .data(patch_of(&json!({ "booking_id": id })).map_err(ToolError::msg)?)
                .directive(Directive::complete()))
        },
    )
    // The agent picks the hotel; the guest gives the city, date and guests.
    .derived_args(["hotel"]);
    let book_room = match approvals {
        Approvals::Off => book_room,
        Approvals::Bookings => book_room.needs_approval(),
    }
    .into_arc();

    Flow::builder("booking")
        .title("Hotel booking")
        .when("the user wants to book a hotel room")
        .required(["city", "check_in", "guests"])
        .optional(["booking_id"])
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
                .prompt("Ask how many guests will stay.")
                .collect(["guests"]),
        )
        .step(
            Step::auto("route")
                .requires(["city", "check_in", "guests"])
                .branch(
                    Branch::to_step("large_group")
                        .if_(|cx: &Cx<'_, Booking, ()>| cx.data().guests.is_some_and(|g| g > 8))
                        .label("more than 8 guests"),
                )
                .branch(Branch::to_step("confirm")),
        )
        .step(
            Step::model("confirm")
                .prompt("Summarise the booking and ask the guest to confirm; book the room with the tool once they do.")
                .tool(book_room)
                .branch(Branch::to_step("ask_date").when(ANOTHER_DATE))
                .end(),
        )
        .step(
            Step::reply(
                "large_group",
                "For more than 8 guests a group specialist will call you to arrange the stay.",
            )
            .end(),
        )
        .build()
}

/// The booking agent over the given model.
pub fn booking_agent(provider: Arc<dyn Provider>) -> Result<BookingAgent, ConfigErrors> {
    booking_agent_with(provider, AgentConfig::default())
}

/// The booking agent with the engine settings suited to its model
/// ([`examples::model::Model::config`]); rooms are booked without approval
/// ([`booking_agent_approving`] asks for it, as the server does by default).
pub fn booking_agent_with(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
) -> Result<BookingAgent, ConfigErrors> {
    booking_agent_approving(provider, config, Approvals::Off)
}

/// What the guest reads while the booking waits for a person's decision.
pub const APPROVAL_REPLY: &str =
    "Booking the room needs a person's approval. I will book it as soon as it is approved.";

/// The booking agent whose `book_room` calls wait for a person's approval when
/// `approvals` says so (the server's default).
pub fn booking_agent_approving(
    provider: Arc<dyn Provider>,
    config: AgentConfig,
    approvals: Approvals,
) -> Result<BookingAgent, ConfigErrors> {
    let config = AgentConfig {
        approval_reply: APPROVAL_REPLY.into(),
        ..config
    };
    Agent::builder()
        .config(config)
        .name("Concierge")
        .persona("A friendly hotel concierge. Short answers, one question at a time.")
        .instruction(Instruction::never("invent prices"))
        // What guests say for a count without naming the number (grounding accepts it).
        .synonyms("guests", 1, ["just me", "only me", "alone"])
        .synonyms("guests", 2, ["my wife and I", "my partner and I"])
        .provider_arc(provider)
        .flow(booking_flow_with(approvals))
        .build()
}
