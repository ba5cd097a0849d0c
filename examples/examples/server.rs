//! A hotel-booking agent behind an HTTP server, with a web chat page that shows the
//! reply as it streams, the current flow and step, the collected data and the flow's
//! graph.
//!
//! `cargo run -p examples --example server`, then open <http://127.0.0.1:3000>
//! (`PORT` changes the port).
//!
//! The model is scripted by default: it reads the user's message with simple rules
//! (a city, a date, a number of guests, a yes) and answers like a concierge would, so
//! the server works offline and gives the same conversation every time. The model is
//! chosen as in every example (`examples::model`): `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `AGENT_BASE_URL` (with `AGENT_MODEL`), or the
//! local model (`AGENT_LOCAL=1`, `LOCAL_MODEL`), with retries for the hosted ones.
//!
//! Booking the room needs a person's approval: when the guest confirms, the model's
//! `book_room` call does not run; the turn ends with the call waiting, and the page
//! shows it with Approve and Deny buttons. The decision resumes the turn: the room is
//! booked (or not) and the reply says so. `APPROVE_BOOKINGS=0` books without asking.
//!
//! A failed turn is logged on stderr (`[server] session ID: turn failed: ...`) and sent
//! to the page as an `error` event; the session is unchanged.
//!
//! Routes:
//! - `GET /`: the chat page (`GET /app.js`, `GET /style.css`: its script and style).
//! - `POST /api/sessions/{id}/messages` with `{"text": "..."}`: the turn as a stream of
//!   server-sent events: `step`, `transition`, `tool_call`, `tool_result`, `approval`
//!   (`{"id", "tool", "arguments"}`: a call that waits for a person's decision),
//!   `delta` (`{"text"}`), then exactly one `done` (the flow, step, data, stopped
//!   reason and `awaiting_approval` calls after the turn) or `error` (`{"message"}`;
//!   the session is unchanged).
//! - `POST /api/sessions/{id}/approvals/{call_id}` with `{"decision": "approve"}`,
//!   `{"decision": "deny", "reason": "..."}` or `{"decision": "edit", "arguments":
//!   {...}}`: decides a waiting call and answers with the resumed turn, as the same
//!   stream of events. A call that does not wait (unknown, or already decided) is a
//!   `409` with `{"error", "waiting"}` (the ids that do wait); a body that is not a
//!   decision, or a denial without a reason, is a `400` with `{"error"}`.
//! - `GET /api/sessions/{id}`: the session's flow, step, data, transcript and the
//!   calls awaiting approval (`awaiting_approval`).
//! - `GET /api/graph?session={id}`: every flow as Mermaid text, with the session's
//!   current step in the `current` class (`&format=mermaid`: the text alone).
//! - `POST /v1/chat/completions`, `GET /v1/models`: an OpenAI-compatible endpoint
//!   (`server/openai.rs`); `POST /agui`: AG-UI events (`server/agui.rs`);
//!   `GET /vendor/mermaid.min.js`: Mermaid from `AGENT_MERMAID_JS` (`server/vendor.rs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agent_core::prelude::*;
use agent_core::provider::{
    CallKind, FinishReason, ModelRequest, ModelResponse, Role, StreamChunk, ToolCall, Usage,
};
use agent_core::response::Event as TurnEvent;
use agent_core::step::StepKind;
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use futures::stream::BoxStream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

// Not a sibling file: cargo would take `examples/server_*.rs` for an example of its own.
#[path = "server/agui.rs"]
mod agui;
#[path = "server/approvals.rs"]
mod approvals;
#[path = "server/openai.rs"]
mod openai;
#[path = "server/vendor.rs"]
mod vendor;

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
const ANOTHER_DATE: &str = "the user wants another check-in date";

#[derive(Deserialize, JsonSchema)]
struct BookArgs {
    /// Hotel name
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
    );
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
        .provider_arc(provider)
        .flow(booking_flow_with(approvals))
        .build()
}

// ---------------------------------------------------------------------------------------
// The scripted model
// ---------------------------------------------------------------------------------------

const CITIES: &[&str] = &[
    "Amsterdam",
    "Barcelona",
    "Berlin",
    "Copenhagen",
    "Dublin",
    "Lisbon",
    "London",
    "Madrid",
    "New York",
    "Paris",
    "Porto",
    "Prague",
    "Rome",
    "Tokyo",
    "Vienna",
];

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const NUMBERS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn find_city(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    CITIES
        .iter()
        .find(|c| {
            let c = c.to_lowercase();
            lower.match_indices(&c).any(|(i, _)| {
                let before = lower[..i].chars().next_back();
                let after = lower[i + c.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
        })
        .map(|c| (*c).to_owned())
}

/// `2026-07-01`, `July 1st`, `1 July`, `jul 1` (the year defaults to 2026).
fn find_date(text: &str) -> Option<String> {
    let w = words(text);
    for t in &w {
        let parts: Vec<&str> = t.split('-').collect();
        if let [y, m, d] = parts.as_slice()
            && y.len() == 4
            && let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>())
            && (1..=12).contains(&m)
            && (1..=31).contains(&d)
        {
            return Some(format!("{y:04}-{m:02}-{d:02}"));
        }
    }
    let month_of = |t: &str| {
        MONTHS
            .iter()
            .position(|m| t.len() >= 3 && m.starts_with(t))
            .map(|i| i as u32 + 1)
    };
    let day_of = |t: &str| {
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
        let rest = &t[digits.len()..];
        let ok_suffix = matches!(rest, "" | "st" | "nd" | "rd" | "th");
        digits
            .parse::<u32>()
            .ok()
            .filter(|d| ok_suffix && (1..=31).contains(d))
    };
    for (i, t) in w.iter().enumerate() {
        if let Some(m) = month_of(t) {
            let next = w.get(i + 1).and_then(|t| day_of(t));
            let prev = i.checked_sub(1).and_then(|j| day_of(&w[j]));
            if let Some(d) = next.or(prev) {
                return Some(format!("2026-{m:02}-{d:02}"));
            }
        }
    }
    None
}

/// A number of guests: `2 guests`, `for two`, `the three of us`, `just me`, or a bare
/// number as the whole answer.
fn find_guests(text: &str) -> Option<u8> {
    let w = words(text);
    let number = |t: &str| -> Option<u8> {
        t.parse::<u8>()
            .ok()
            .or_else(|| NUMBERS.iter().position(|n| *n == t).map(|n| n as u8))
            .filter(|n| (1..=20).contains(n))
    };
    if w.len() == 1 {
        return number(&w[0]);
    }
    for (i, t) in w.iter().enumerate() {
        let Some(n) = number(t) else { continue };
        let next = w.get(i + 1).map(String::as_str);
        let prev = i.checked_sub(1).map(|j| w[j].as_str());
        let counts_people = matches!(
            next,
            Some("guest" | "guests" | "people" | "persons" | "adults" | "of" | "pax")
        );
        let for_n = prev == Some("for") && next.is_none_or(|n| month_of_word(n).is_none());
        if counts_people || for_n {
            return Some(n);
        }
    }
    if w.iter().any(|t| t == "alone") || text.to_lowercase().contains("just me") {
        return Some(1);
    }
    if w.iter().any(|t| t == "couple") {
        return Some(2);
    }
    None
}

fn month_of_word(t: &str) -> Option<usize> {
    MONTHS.iter().position(|m| t.len() >= 3 && m.starts_with(t))
}

fn affirmative(text: &str) -> bool {
    let w = words(text);
    let yes = [
        "yes",
        "yep",
        "yeah",
        "sure",
        "ok",
        "okay",
        "book",
        "confirm",
        "confirmed",
        "please",
        "perfect",
        "great",
    ];
    let no = ["no", "not", "don", "cancel", "wait"];
    w.iter().any(|t| yes.contains(&t.as_str())) && !w.iter().any(|t| no.contains(&t.as_str()))
}

/// The scripted verdict on a condition.
fn judge(condition: &str, user: &str) -> bool {
    let u = user.to_lowercase();
    match condition {
        ANOTHER_DATE => [
            "another date",
            "different date",
            "change the date",
            "other date",
        ]
        .iter()
        .any(|p| u.contains(p)),
        _ => false,
    }
}

/// Verdicts on the conditions the engine lists in the system prompt (`- cN: text`).
fn judged(system: &str, user: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for line in system.lines() {
        if let Some(rest) = line.strip_prefix("- c")
            && let Some((n, text)) = rest.split_once(": ")
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
        {
            out.insert(format!("c{n}"), Value::Bool(judge(text, user)));
        }
    }
    out
}

fn schema_prop<'a>(req: &'a ModelRequest, key: &str) -> Option<&'a Value> {
    req.output
        .as_ref()
        .and_then(|o| o.schema.get("properties"))
        .and_then(|p| p.get(key))
}

/// The data the engine says it has ("Collected so far (null = not yet): {...}").
fn collected(system: &str) -> Booking {
    system
        .lines()
        .find_map(|l| l.strip_prefix("Collected so far (null = not yet): "))
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default()
}

fn reply(content: String) -> Result<ModelResponse, agent_core::error::ProviderError> {
    Ok(ModelResponse {
        usage: Usage {
            input_tokens: 0,
            output_tokens: (content.len() / 4) as u64,
            cached_input_tokens: 0,
        },
        content,
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
    })
}

/// One answer of the scripted concierge.
fn scripted_answer(req: &ModelRequest) -> Result<ModelResponse, agent_core::error::ProviderError> {
    let user = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.authored())
        .unwrap_or("");
    match req.kind {
        CallKind::Classify | CallKind::Route => {
            let flow = (req.kind == CallKind::Route).then(|| "booking".to_owned());
            reply(
                json!({ "conditions": judged(&req.instructions(), user), "flow": flow })
                    .to_string(),
            )
        }
        CallKind::Summarize => reply("The guest is booking a hotel room.".into()),
        CallKind::Extract => reply(json!({ "data": extract(user) }).to_string()),
        CallKind::Respond | CallKind::ToolRound => respond(req, user),
    }
}

/// What the user's message states, as a data object.
fn extract(user: &str) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(c) = find_city(user) {
        m.insert("city".into(), json!(c));
    }
    if let Some(d) = find_date(user) {
        m.insert("check_in".into(), json!(d));
    }
    if let Some(g) = find_guests(user) {
        m.insert("guests".into(), json!(g));
    }
    m
}

fn respond(
    req: &ModelRequest,
    user: &str,
) -> Result<ModelResponse, agent_core::error::ProviderError> {
    // After a tool round, also one a person's decision resumed (that answer offers no
    // tools): report the booking, or that it did not happen.
    if let Some(last) = req.messages.last()
        && last.role == Role::Tool
    {
        let message = after_booking(&collected(&req.instructions()), &last.content);
        return reply(if req.output.is_some() {
            structured(req, user, Map::new(), None, message)
        } else {
            message
        });
    }
    let Some(_) = req.output else {
        // No active flow: plain text.
        return reply(
            "Your booking is complete. Reload the page to start a new conversation.".into(),
        );
    };
    let said = req.instructions();
    let known = collected(&said);
    let extracting = schema_prop(req, "data").is_some();
    let data = if extracting {
        extract(user)
    } else {
        Map::new()
    };
    let mut b = known.clone();
    if let Some(c) = data.get("city").and_then(Value::as_str) {
        b.city = Some(c.to_owned());
    }
    if let Some(d) = data.get("check_in").and_then(Value::as_str) {
        b.check_in = Some(d.to_owned());
    }
    if let Some(g) = data.get("guests").and_then(Value::as_u64) {
        b.guests = u8::try_from(g).ok();
    }

    let closing = said.contains("The task is finishing");
    let offers_booking = req.tools.iter().any(|t| t.name == "book_room");
    let complete = b.city.is_some() && b.check_in.is_some() && b.guests.is_some();
    if closing {
        if offers_booking && complete && affirmative(user) && !judge(ANOTHER_DATE, user) {
            let hotel = format!("Grand Hotel {}", b.city.as_deref().unwrap_or(""));
            return Ok(ModelResponse {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_book".into(),
                    name: "book_room".into(),
                    arguments: json!({ "hotel": hotel }),
                }],
                usage: Usage::default(),
                finish: FinishReason::ToolCalls,
            });
        }
        let message =
            "No problem, I have not booked anything. Write again whenever you want to book.";
        return reply(structured(req, user, data, None, message.into()));
    }

    // Speak for the step the engine asks for ("Now, Step `x`: ..."), or re-ask the
    // pending question when the message does not answer it (the engine offers both).
    let target = between(&said, "Now, Step `", "`");
    let pending = between(&said, "Set `step` to \"", "\" in that case");
    let answers = |step: &str| match step {
        "ask_city" => data.contains_key("city"),
        "ask_date" => data.contains_key("check_in"),
        "ask_guests" => data.contains_key("guests"),
        _ => true,
    };
    let speak = match pending {
        Some(p) if !answers(p) => Some(p),
        _ => target,
    };
    let mut ack = String::new();
    if judge(ANOTHER_DATE, user) {
        ack.push_str("Sure, let's change the date. ");
    }
    if let Some(c) = data.get("city").and_then(Value::as_str) {
        ack.push_str(&format!("{c}, lovely choice! "));
    }
    if let Some(d) = data.get("check_in").and_then(Value::as_str) {
        ack.push_str(&format!("Checking in on {d}, noted. "));
    }
    if let Some(g) = data.get("guests").and_then(Value::as_u64) {
        ack.push_str(&format!("{g} guest(s), got it. "));
    }
    let ask = match speak {
        Some("ask_city") => {
            let hello = if known == Booking::default() && data.is_empty() {
                "Happy to help you book a hotel! "
            } else {
                ""
            };
            format!("{hello}Which city would you like to stay in?")
        }
        Some("ask_date") => "What date would you like to check in (for example July 1)?".into(),
        Some("ask_guests") => "How many guests will be staying?".into(),
        Some("confirm") => format!(
            "Here is your booking: a room in {} from {} for {} guest(s). Shall I book it?",
            b.city.as_deref().unwrap_or("?"),
            b.check_in.as_deref().unwrap_or("?"),
            b.guests.unwrap_or(1),
        ),
        _ => "How can I help you with your hotel booking?".into(),
    };
    reply(structured(req, user, data, speak, format!("{ack}{ask}")))
}

/// The answer to `book_room`'s result: the confirmation number, or why nothing was
/// booked (a person denied the call, or it failed).
fn after_booking(b: &Booking, result: &str) -> String {
    if let Some(reason) = result.strip_prefix("ERROR: denied by a person: ") {
        return format!(
            "I'm sorry, the room was not booked: the booking was declined ({reason}). Write again whenever you want to book."
        );
    }
    if let Some(problem) = result.strip_prefix("ERROR: ") {
        return format!(
            "I'm sorry, the room was not booked: {problem}. Write again whenever you want to try again."
        );
    }
    let id = result.rsplit(' ').next().unwrap_or("");
    format!(
        "All set! Your room in {} is booked from {} for {} guest(s). Your confirmation number is {id}. Have a lovely stay!",
        b.city.as_deref().unwrap_or("the city"),
        b.check_in.as_deref().unwrap_or("the date you chose"),
        b.guests.unwrap_or(1),
    )
}

/// The text between `start` and the next `end` in `text`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// The respond call's JSON object, with only the keys its schema has.
fn structured(
    req: &ModelRequest,
    user: &str,
    data: Map<String, Value>,
    claim: Option<&str>,
    message: String,
) -> String {
    let mut m = Map::new();
    if schema_prop(req, "data").is_some() {
        m.insert("data".into(), Value::Object(data));
    }
    if schema_prop(req, "conditions").is_some() {
        m.insert(
            "conditions".into(),
            Value::Object(judged(&req.instructions(), user)),
        );
    }
    if let Some(Value::Array(allowed)) = schema_prop(req, "step").and_then(|s| s.get("enum")) {
        let pick = claim
            .filter(|c| allowed.iter().any(|a| a.as_str() == Some(c)))
            .map(str::to_owned)
            .or_else(|| allowed.first().and_then(Value::as_str).map(str::to_owned));
        if let Some(p) = pick {
            m.insert("step".into(), Value::String(p));
        }
    }
    if let Some(flows) = schema_prop(req, "handoff")
        .and_then(|h| h.get("properties"))
        .and_then(Value::as_object)
    {
        let stay = flows.keys().map(|k| (k.clone(), Value::Bool(false)));
        m.insert("handoff".into(), Value::Object(stay.collect()));
    }
    m.insert("message".into(), Value::String(message));
    Value::Object(m).to_string()
}

/// The scripted concierge: every call kind answered by [`scripted_answer`].
pub fn scripted_model() -> ScriptedProvider {
    let p = ScriptedProvider::new();
    for kind in [
        CallKind::Respond,
        CallKind::ToolRound,
        CallKind::Classify,
        CallKind::Route,
        CallKind::Extract,
        CallKind::Summarize,
    ] {
        p.default_answer(kind, Answer::from_fn(scripted_answer));
    }
    p
}

/// Streams a provider's whole answers in small pieces with a pause between them, as a
/// real model's tokens arrive.
pub struct Typewriter<P> {
    inner: P,
    chunk_chars: usize,
    pause: Duration,
}

impl<P> Typewriter<P> {
    /// Pieces of `chunk_chars` characters, `pause` apart.
    pub fn new(inner: P, chunk_chars: usize, pause: Duration) -> Self {
        Self {
            inner,
            chunk_chars: chunk_chars.max(1),
            pause,
        }
    }
}

#[async_trait]
impl<P: Provider> Provider for Typewriter<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn generate(
        &self,
        request: &ModelRequest,
    ) -> Result<ModelResponse, agent_core::error::ProviderError> {
        self.inner.generate(request).await
    }

    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, agent_core::error::ProviderError>> {
        let (n, pause) = (self.chunk_chars, self.pause);
        Box::pin(
            futures::stream::once(self.inner.generate(request))
                .flat_map(move |r| {
                    let items: Vec<Result<StreamChunk, _>> = match r {
                        Ok(resp) => {
                            let chars: Vec<char> = resp.content.chars().collect();
                            let mut items: Vec<Result<StreamChunk, _>> = chars
                                .chunks(n)
                                .map(|c| Ok(StreamChunk::Text(c.iter().collect())))
                                .collect();
                            items.push(Ok(StreamChunk::Done(resp)));
                            items
                        }
                        Err(e) => vec![Err(e)],
                    };
                    futures::stream::iter(items)
                })
                .then(move |item| async move {
                    if matches!(item, Ok(StreamChunk::Text(_))) {
                        tokio::time::sleep(pause).await;
                    }
                    item
                }),
        )
    }
}

/// The model chosen by `env`, as every example chooses it ([`examples::model`]: vendor
/// keys, `AGENT_BASE_URL`, `LOCAL_MODEL` / `AGENT_MODEL`, `AGENT_LOCAL=1`), else the
/// scripted concierge. `start_local` starts the local model (the examples'
/// [`examples::model::start_local_server`]).
pub fn model_from(
    env: examples::model::Env<'_>,
    start_local: impl FnOnce(Option<&str>) -> Result<String, examples::model::ModelError>,
) -> Result<examples::model::Model, examples::model::ModelError> {
    let choice = examples::model::choose(env, examples::model::Fallback::Scripted);
    examples::model::connect(choice, env, scripted_model, start_local)
}

/// The provider to serve: the chosen model, or the scripted concierge typing its
/// answers out as a real model streams them.
pub fn served(model: &examples::model::Model) -> Arc<dyn Provider> {
    if *model.choice() != examples::model::Choice::Scripted {
        return model.provider();
    }
    Arc::new(Typewriter::new(
        scripted_model(),
        4,
        Duration::from_millis(15),
    ))
}

// ---------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------

/// The body of `POST /api/sessions/{id}/messages`.
#[derive(Debug, Deserialize)]
pub struct MessageIn {
    /// The user's message.
    pub text: String,
}

/// Query of `GET /api/graph`.
#[derive(Debug, Deserialize)]
pub struct GraphQuery {
    /// Highlight this session's current step.
    pub session: Option<String>,
    /// `mermaid`: answer with the Mermaid text alone (`text/plain`) instead of JSON.
    pub format: Option<String>,
}

/// Where the server logs what went wrong (stderr; tests keep the lines).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// What the handlers share.
#[derive(Clone)]
pub struct Served {
    agent: Arc<BookingAgent>,
    log: Log,
}

/// The router: the page, its assets and the JSON/SSE API over `agent`, logging
/// failures on stderr.
pub fn app(agent: Arc<BookingAgent>) -> Router {
    app_with_log(agent, Arc::new(|line: &str| eprintln!("{line}")))
}

/// [`app`] logging to `log`.
pub fn app_with_log(agent: Arc<BookingAgent>, log: Log) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(script))
        .route("/style.css", get(style))
        .route("/api/sessions/{id}", get(session))
        .route("/api/sessions/{id}/messages", post(message))
        .route(
            "/api/sessions/{id}/approvals/{call_id}",
            post(approvals::decide),
        )
        .route("/api/graph", get(graph))
        .merge(openai::routes())
        .merge(agui::routes())
        .merge(vendor::routes(vendor::mermaid_from_env()))
        .with_state(Served { agent, log })
}

async fn page() -> Html<&'static str> {
    Html(include_str!("../web/index.html"))
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../web/app.js"),
    )
}

async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../web/style.css"),
    )
}

/// Session ids are short and plain: they appear in URLs and logs.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn bad_request(what: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": what }))).into_response()
}

/// A store failure: logged, and answered with a 500.
fn server_error(log: &Log, what: &str, e: &AgentError) -> Response {
    log(&format!("[server] {what}: {e}"));
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({ "error": e.to_string() })),
    )
        .into_response()
}

/// A call waiting for a person's decision, as the page reads it.
fn pending_json(c: &PendingCall) -> Value {
    json!({ "id": c.id, "tool": c.tool, "arguments": c.arguments })
}

fn pending_list(calls: &[PendingCall]) -> Vec<Value> {
    calls.iter().map(pending_json).collect()
}

fn sse(name: &str, data: Value) -> SseEvent {
    SseEvent::default().event(name).data(data.to_string())
}

/// One turn event as a typed server-sent event.
fn to_sse(event: TurnEvent<Booking>) -> SseEvent {
    match event {
        TurnEvent::TextDelta(text) => sse("delta", json!({ "text": text })),
        TurnEvent::StepEntered(r) => sse("step", json!({ "flow": r.flow, "step": r.step })),
        TurnEvent::Transition(t) => sse("transition", json!({ "from": t.from, "to": t.to })),
        TurnEvent::ToolCall { name, arguments } => {
            sse("tool_call", json!({ "name": name, "arguments": arguments }))
        }
        TurnEvent::ToolResult(r) => sse(
            "tool_result",
            json!({ "name": r.name, "arguments": r.arguments, "output": r.output, "ok": r.ok }),
        ),
        TurnEvent::ApprovalRequested(c) => sse("approval", pending_json(&c)),
        TurnEvent::Done(r) => sse(
            "done",
            json!({
                "message": r.message,
                "flow": r.flow,
                "step": r.step,
                "data": r.data,
                "stopped": r.stopped,
                "executed_steps": r.executed_steps,
                "transitions": r.transitions,
                "tool_calls": r.tool_calls,
                "model_calls": r.model_calls,
                "dropped_fields": r.dropped_fields,
                "awaiting_approval": pending_list(&r.awaiting_approval),
                "version": r.version,
            }),
        ),
        TurnEvent::DataDropped(d) => sse(
            "dropped",
            json!({ "field": d.field, "value": d.value, "reason": d.reason }),
        ),
        TurnEvent::Error(e) => sse("error", json!({ "message": e.to_string() })),
    }
}

async fn message(
    State(Served { agent, log }): State<Served>,
    Path(id): Path<String>,
    Json(body): Json<MessageIn>,
) -> Response {
    if !valid_id(&id) {
        return bad_request("session ids are 1 to 64 letters, digits, '-' or '_'");
    }
    if body.text.trim().is_empty() {
        return bad_request("the message is empty");
    }
    let events = agent.respond_stream(&id, body.text.trim());
    turn_stream(events, log, format!("session {id}: turn failed"))
}

/// A turn's events as the server-sent event response; a failed turn reaches the page
/// as an `error` event, and the log (`[server] {failed}: {error}`).
fn turn_stream(
    events: BoxStream<'static, TurnEvent<Booking>>,
    log: Log,
    failed: String,
) -> Response {
    let events = events.map(move |e| {
        if let TurnEvent::Error(err) = &e {
            log(&format!(
                "[server] {failed}: {err} (the session is unchanged)"
            ));
        }
        Ok::<_, Infallible>(to_sse(e))
    });
    Sse::new(events).into_response()
}

async fn session(State(Served { agent, log }): State<Served>, Path(id): Path<String>) -> Response {
    if !valid_id(&id) {
        return bad_request("session ids are 1 to 64 letters, digits, '-' or '_'");
    }
    match agent.session(&id).await {
        Ok(Some(s)) => {
            let transcript: Vec<Value> = s
                .history
                .iter()
                .filter(|m| matches!(m.role, Role::User | Role::Assistant))
                .filter(|m| !m.content.is_empty())
                .map(|m| {
                    json!({
                        "role": if m.role == Role::User { "user" } else { "assistant" },
                        "text": m.content.as_str(),
                    })
                })
                .collect();
            Json(json!({
                "id": s.id,
                "flow": s.flow,
                "step": s.step,
                "data": s.data,
                "completed_flows": s.completed_flows,
                "turns": s.turns,
                "transcript": transcript,
                "awaiting_approval": pending_list(
                    &s.approval.as_ref().map(|p| p.waiting()).unwrap_or_default()
                ),
            }))
            .into_response()
        }
        Ok(None) => Json(json!({
            "id": id,
            "flow": null,
            "step": null,
            "data": Booking::default(),
            "completed_flows": [],
            "turns": 0,
            "transcript": [],
            "awaiting_approval": [],
        }))
        .into_response(),
        Err(e) => server_error(&log, &format!("session {id}"), &e),
    }
}

async fn graph(
    State(Served { agent, log }): State<Served>,
    Query(q): Query<GraphQuery>,
) -> Response {
    let mut at: Option<(String, String)> = None;
    if let Some(id) = q.session.as_deref().filter(|id| valid_id(id)) {
        match agent.session(id).await {
            Ok(Some(s)) => {
                if let (Some(f), Some(st)) = (s.flow, s.step) {
                    at = Some((f, st));
                }
            }
            Ok(None) => {}
            Err(e) => return server_error(&log, &format!("graph of session {id}"), &e),
        }
    }
    let flows: Vec<Value> = agent
        .flows()
        .map(|f| {
            let current = at
                .as_ref()
                .filter(|(flow, _)| flow == f.id())
                .map(|(_, step)| step.as_str());
            let steps: Vec<Value> = f
                .steps()
                .iter()
                .map(|s| {
                    json!({
                        "id": s.id(),
                        "kind": match s.kind() {
                            StepKind::Model => "model",
                            StepKind::Auto => "auto",
                            StepKind::Reply(_) => "reply",
                        },
                        "end": s.is_end(),
                        "node": f.mermaid_node_id(s.id()),
                    })
                })
                .collect();
            json!({
                "id": f.id(),
                "title": f.title(),
                "mermaid": f.mermaid_with_current(current),
                "steps": steps,
            })
        })
        .collect();
    if q.format.as_deref() == Some("mermaid") {
        let text: Vec<&str> = flows.iter().filter_map(|f| f["mermaid"].as_str()).collect();
        return (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text.join("\n"),
        )
            .into_response();
    }
    let current = at.map(|(flow, step)| {
        let node = agent
            .flows()
            .find(|f| f.id() == flow)
            .and_then(|f| f.mermaid_node_id(&step));
        json!({ "flow": flow, "step": step, "node": node })
    });
    Json(json!({ "flows": flows, "current": current })).into_response()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::var("PORT") {
        Ok(p) => p
            .parse()
            .map_err(|e| format!("PORT must be a port number, got {p:?}: {e}"))?,
        Err(_) => 3000,
    };
    let model = model_from(
        &examples::model::process_env,
        examples::model::start_local_server,
    )?;
    let approvals = Approvals::from_env(std::env::var("APPROVE_BOOKINGS").ok().as_deref())?;
    let agent = Arc::new(booking_agent_approving(
        served(&model),
        model.config(),
        approvals,
    )?);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("{}", model.description());
    println!(
        "{}",
        match approvals {
            Approvals::Bookings =>
                "booking a room waits for a person's approval (APPROVE_BOOKINGS=0: it does not)",
            Approvals::Off => "rooms are booked without approval (APPROVE_BOOKINGS=0)",
        }
    );
    println!("web chat on http://{}/", listener.local_addr()?);
    axum::serve(listener, app(agent)).await?;
    Ok(())
}
