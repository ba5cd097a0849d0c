//! `#[tool]` forms: with and without a context, sync and async, optional arguments,
//! doc comments as descriptions, `name`, `description`, `concurrency_safe` and `timeout_ms`.
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agent_core::__private::serde_json::json;
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Booking id
    pub booking_id: String,
}

/// Book a room in a hotel.
#[tool]
async fn book_room(
    cx: ToolCx<Booking, ()>,
    /// Hotel name
    hotel: String,
    /// Nights, 1 to 30
    nights: u8,
    /// Special requests, if any
    notes: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let city = cx.data().city.clone().unwrap_or_default();
    let id = format!("{hotel}-{city}-{nights}-{}", notes.unwrap_or_default());
    Ok(ToolOutput::text(format!("booked {id}"))
        .data(Booking::patch().booking_id(id))
        .directive(Directive::complete()))
}

/// Current time (works in any agent: no context parameter).
#[tool(name = "clock", concurrency_safe)]
fn now() -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("12:00"))
}

/// Charge a card: never twice for the same call (journaled by the agent).
#[tool(effect = once)]
async fn charge(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("charged {amount_cents}")))
}

/// Refund a payment: every call waits for a person's approval. Users ask for it in
/// English or Spanish.
#[tool(effect = once, approval, request_words = ["refund", "reembols"])]
async fn refund(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("refunded {amount_cents}")))
}

/// Large transfers (over 1000) wait for a person.
fn large(args: &agent_core::__private::serde_json::Value) -> bool {
    args["amount_cents"].as_u64().is_some_and(|c| c > 1000)
}

/// Transfer money: large amounts wait for a person's approval.
#[tool(approval = large)]
async fn transfer(amount_cents: u64) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("sent {amount_cents}")))
}

/// Look a price up: re-running it is always fine.
#[tool(effect = pure, concurrency_safe)]
fn price(item: String) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(format!("{item}: 5")))
}

#[tool(description = "Say hello.", timeout_ms = 2_500)]
async fn hello(name: String) -> Result<agent_core::tool::ToolOutput, String> {
    Ok(agent_core::tool::ToolOutput::text(format!("hello {name}")))
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() {
    agreement::check();
    let t: &dyn Tool<Booking, ()> = &book_room;
    assert_eq!(t.name(), "book_room");
    assert_eq!(t.description(), "Book a room in a hotel.");
    let p = t.parameters();
    assert_eq!(p["required"], json!(["hotel", "nights"]));
    assert_eq!(p["properties"]["hotel"]["description"], "Hotel name");
    assert_eq!(
        p["properties"]["notes"]["description"],
        "Special requests, if any"
    );
    assert!(
        p["properties"].get("cx").is_none(),
        "the context is not an argument"
    );

    let data = Booking {
        city: Some("Lisbon".into()),
        booking_id: None,
    };
    let cx = ToolCx::detached("s", data, ());
    let out = block_on(t.call(cx.clone(), json!({"hotel": "Grand", "nights": 2}))).expect("ok");
    assert_eq!(out.content, "booked Grand-Lisbon-2-");
    assert!(out.directive.position.is_some());
    let err = block_on(t.call(cx.clone(), json!({"nights": 2}))).expect_err("missing hotel");
    assert!(err.to_string().contains("hotel"), "{err}");

    let c: &dyn Tool<Booking, ()> = &now;
    assert_eq!((c.name(), c.concurrency_safe()), ("clock", true));
    assert_eq!(c.timeout(), None, "no own limit: the agent's applies");
    assert_eq!(
        c.effect(),
        agent_core::tool::Effect::Idempotent,
        "the default class"
    );
    let ch: &dyn Tool<Booking, ()> = &charge;
    assert_eq!(ch.effect(), agent_core::tool::Effect::Once);
    assert_eq!(ch.request_words(), ["charge"], "a once tool: its name's first word");
    assert!(c.request_words().is_empty(), "not once: the model's judgement decides");
    let pr: &dyn Tool<Booking, ()> = &price;
    assert_eq!(pr.effect(), agent_core::tool::Effect::Pure);
    assert!(
        !pr.needs_approval(&json!({"item": "x"})),
        "no approval by default"
    );
    let rf: &dyn Tool<Booking, ()> = &refund;
    assert!(rf.needs_approval(&json!({"amount_cents": 1})));
    assert_eq!(rf.request_words(), ["refund", "reembols"]);
    let tr: &dyn Tool<Booking, ()> = &transfer;
    assert!(!tr.needs_approval(&json!({"amount_cents": 5})));
    assert!(tr.needs_approval(&json!({"amount_cents": 5000})));
    assert_eq!(
        block_on(c.call(cx.clone(), json!({}))).expect("ok").content,
        "12:00"
    );

    let h = hello.arc::<Booking, ()>();
    assert_eq!(h.description(), "Say hello.");
    assert_eq!(h.timeout(), Some(std::time::Duration::from_millis(2500)));
    let err = block_on(h.call(cx, json!({"name": 3}))).expect_err("wrong type");
    assert!(matches!(err, ToolError::InvalidArguments(_)), "{err}");
}

/// A tool that waits for the user's yes to its summary, with the summary written
/// over its arguments; and a `once` tool that does not wait.
mod agreement {
    use agent_core::typed::prelude::*;

    /// Send an invoice by email.
    #[tool(confirm, summary = "Send invoice {invoice} to {email}")]
    pub async fn send_invoice(invoice: String, email: String) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("sent {invoice} to {email}")))
    }

    /// Log a call for the team.
    #[tool(effect = once, confirm = false)]
    pub async fn log_call(note: String) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(note))
    }

    pub fn check() {
        assert!(Tool::<(), ()>::needs_agreement(&send_invoice));
        assert_eq!(
            Tool::<(), ()>::summary_template(&send_invoice),
            Some("Send invoice {invoice} to {email}")
        );
        assert!(!Tool::<(), ()>::needs_agreement(&log_call));
    }
}
