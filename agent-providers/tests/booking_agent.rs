//! The booking agent runs through every provider against the fixture server, answered
//! by a fake model in each vendor's wire format: three turns (ask, all data at once,
//! confirm with the `book_room` tool), whole and streamed, through the resilience layer
//! too. Asserts what the agent did (steps, data, tool, completion) and what went on the
//! wire (history, tools, schema in every request).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use agent_core::prelude::*;
use agent_providers::resilience::{ManualClock, Resilient};
use agent_providers::{Anthropic, Gemini, OpenAi, OpenAiCompatible};
use futures::StreamExt;
use serde_json::Value;
use support::booking::{Booking, agent};
use support::fake_model::{self, Vendor};
use support::server::{FixtureServer, Recorded};

async fn turn(
    a: &Agent<Booking, support::booking::Concierge>,
    stream: bool,
    msg: &str,
) -> AgentResponse<Booking> {
    if !stream {
        return a.respond("guest-1", msg).await.unwrap();
    }
    let mut events = a.respond_stream("guest-1", msg);
    let mut text = String::new();
    while let Some(e) = events.next().await {
        match e {
            Event::TextDelta(t) => text.push_str(&t),
            Event::Done(r) => {
                assert_eq!(
                    text, r.message,
                    "streamed deltas concatenate to the message"
                );
                return *r;
            }
            Event::Error(e) => panic!("turn failed: {e}"),
            _ => {}
        }
    }
    panic!("the stream ended without Done")
}

/// The conversation, then checks on what the agent did.
async fn converse(a: Agent<Booking, support::booking::Concierge>, stream: bool) {
    let r = turn(&a, stream, "I want to book a hotel").await;
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "Which city would you like to stay in?");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    let r = turn(&a, stream, "Lisbon, check-in 2026-07-01, 2 guests").await;
    assert_eq!(
        r.step.as_deref(),
        Some("confirm"),
        "all data at once lands on confirm"
    );
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.data.guests, Some(2));
    assert!(r.model_calls <= 2, "{} calls", r.model_calls);

    let r = turn(&a, stream, "yes, book the Grand").await;
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"), "the tool ran");
    assert!(r.tool_calls.iter().any(|t| t.name == "book_room" && t.ok));
    assert_eq!(
        r.message,
        "Booked! Your id is BK-5. Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 2, "respond + tool round");
}

/// Every request carried the system prompt, the history so far, and the schema; the
/// confirm turn offered the tool and the tool round carried the tool result.
fn check_requests(reqs: &[Recorded], vendor: Vendor) {
    assert!(reqs.len() >= 5, "{} requests", reqs.len());
    let texts: Vec<String> = reqs.iter().map(|r| r.body.to_string()).collect();
    for (r, t) in reqs.iter().zip(&texts) {
        let view = match vendor {
            Vendor::OpenAi => fake_model::openai_view(r),
            Vendor::Anthropic => fake_model::anthropic_view(r),
            Vendor::Gemini => fake_model::gemini_view(r),
        };
        assert!(view.schema.is_some(), "no schema in {t}");
        assert!(
            t.contains("Ask which city") || t.contains("Confirm the booking"),
            "no step prompt in {t}"
        );
    }
    let last = texts.last().unwrap();
    for said in [
        "I want to book a hotel",
        "Lisbon, check-in 2026-07-01, 2 guests",
        "yes, book the Grand",
        "booked BK-5",
    ] {
        assert!(last.contains(said), "history lacks {said:?}: {last}");
    }
    let confirm = reqs
        .iter()
        .find(|r| r.body.to_string().contains("yes, book the Grand"))
        .unwrap();
    let tools = match vendor {
        Vendor::OpenAi => confirm.body["tools"][0]["function"].clone(),
        Vendor::Anthropic => confirm.body["tools"][0].clone(),
        Vendor::Gemini => confirm.body["tools"][0]["functionDeclarations"][0].clone(),
    };
    assert_eq!(tools["name"], "book_room");
    let params = ["parameters", "input_schema", "parametersJsonSchema"]
        .iter()
        .find_map(|k| tools.get(*k))
        .unwrap();
    assert_eq!(
        params["properties"]["hotel"]["type"],
        Value::String("string".into())
    );
}

async fn server(vendor: Vendor) -> FixtureServer {
    let s = FixtureServer::start().await;
    fake_model::install(&s, vendor);
    s
}

#[tokio::test]
async fn the_booking_agent_completes_through_openai() {
    for stream in [false, true] {
        let s = server(Vendor::OpenAi).await;
        let p = OpenAi::new("sk-test-0123456789")
            .base_url(&format!("{}/v1", s.url()))
            .unwrap();
        converse(agent(p), stream).await;
        check_requests(&s.requests(), Vendor::OpenAi);
        assert!(
            s.requests()
                .iter()
                .all(|r| (r.body["stream"] == true) == stream)
        );
    }
}

#[tokio::test]
async fn the_booking_agent_completes_through_an_openai_compatible_server() {
    for stream in [false, true] {
        let s = server(Vendor::OpenAi).await;
        let p = OpenAiCompatible::new(&format!("{}/v1", s.url()))
            .unwrap()
            .model("local");
        converse(agent(p), stream).await;
        check_requests(&s.requests(), Vendor::OpenAi);
    }
}

#[tokio::test]
async fn the_booking_agent_completes_through_anthropic() {
    for stream in [false, true] {
        let s = server(Vendor::Anthropic).await;
        let p = Anthropic::new("sk-ant-0123456789")
            .base_url(&s.url())
            .unwrap();
        converse(agent(p), stream).await;
        check_requests(&s.requests(), Vendor::Anthropic);
    }
}

#[tokio::test]
async fn the_booking_agent_completes_through_gemini() {
    for stream in [false, true] {
        let s = server(Vendor::Gemini).await;
        let p = Gemini::new("AIza-0123456789")
            .base_url(&format!("{}/v1beta", s.url()))
            .unwrap();
        converse(agent(p), stream).await;
        check_requests(&s.requests(), Vendor::Gemini);
    }
}

#[tokio::test]
async fn the_booking_agent_completes_through_the_resilience_layer_after_failures() {
    use support::server::Reply;
    for stream in [false, true] {
        let s = server(Vendor::OpenAi).await;
        // The primary model's endpoint is overloaded; the fallback's answers.
        s.always(
            "/primary/v1/chat/completions",
            Reply::json(
                503,
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            ),
        );
        let primary = OpenAi::new("sk-test-0123456789")
            .base_url(&format!("{}/primary/v1", s.url()))
            .unwrap();
        let fallback = OpenAi::new("sk-test-0123456789")
            .base_url(&format!("{}/v1", s.url()))
            .unwrap();
        let clock = ManualClock::auto_advance();
        let p = Resilient::new(primary)
            .fallback(fallback)
            .clock(clock.clone());
        converse(agent(p), stream).await;
        let primary_calls = s
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/primary"))
            .count();
        let fallback_calls = s.requests().len() - primary_calls;
        assert_eq!(
            primary_calls,
            3 * fallback_calls,
            "each call: 3 attempts on the primary first"
        );
        assert_eq!(
            clock.requested().len(),
            2 * fallback_calls,
            "2 backoff waits per call"
        );
    }
}
