//! Claim guards: a model-written reply may say a room is booked only when the state
//! holds a booking id. Rendered again once with the reason, then the claiming sentences
//! are withheld; code's verbatim replies and replies after the tool are left alone.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns
#![allow(deprecated)] // `guard_claim` stays working while deprecated

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use futures::StreamExt;
use serde_json::json;

const BOOKED: &str = r"(?i)\b(booked|confirmed|booking (id|number|reference))\b";

fn guarded(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(booking_flow(false))
        .guard_claim(BOOKED, ["booking_id"])
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_reply_claiming_a_booking_that_does_not_exist_is_rendered_again_with_the_reason() {
    let p = ScriptedProvider::new();
    let a = guarded(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(
        Answer::message("Your room in Lisbon is booked! When do you arrive?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Lisbon it is. When do you arrive?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, "Lisbon it is. When do you arrive?");
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.model_calls, 2);
    assert!(r.withheld_claims.is_empty());
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains("Your draft said \"booked\", which is not so (booking_id not set)"),
        "{again}"
    );
}

#[tokio::test]
async fn a_claim_made_twice_is_withheld_sentence_by_sentence() {
    let p = ScriptedProvider::new();
    let a = guarded(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Booked in Lisbon. When do you arrive?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message(
        "Great choice.\n- City: Lisbon\n- Booking ID: null\nWhen do you arrive?",
    ));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(
        r.message,
        "Great choice.\n- City: Lisbon\nWhen do you arrive?"
    );
    assert_eq!(r.withheld_claims, ["- Booking ID: null"]);
    assert_eq!(r.model_calls, 2, "one rendering again, not more");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    // What the user reads is what history keeps.
    let stored = a.session("s").await.unwrap().unwrap();
    assert_eq!(
        stored.history.last().map(|m| m.content.to_string()),
        Some(r.message.clone())
    );
}

#[tokio::test]
async fn once_the_tool_wrote_the_id_the_reply_may_say_it() {
    let p = ScriptedProvider::new();
    let a = guarded(&p);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(
            json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2 })
                .as_object()
                .cloned()
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    p.respond(Answer::tool("book_room", json!({ "hotel": "Grand" })));
    p.tool_round(Answer::message("Booked: your booking id is BK-5."));
    let r = a.respond("s", "yes, book it").await.unwrap();
    assert_eq!(
        r.message,
        "Booked: your booking id is BK-5. Is there anything else I can help with?"
    );
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert!(r.withheld_claims.is_empty());
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn verbatim_replies_are_code_s_text_and_are_not_checked() {
    let p = ScriptedProvider::new();
    let notice = Flow::<Booking, Concierge>::builder("notice")
        .step(Step::reply("say", "Booked rooms are listed in the app.").end())
        .build()
        .unwrap();
    let a = Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .flow(notice)
        .guard_claim(BOOKED, ["booking_id"])
        .build()
        .unwrap();
    a.dispatch("s", Directive::go_to("notice")).await.unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Booked rooms are listed in the app.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert!(r.withheld_claims.is_empty());
    assert_eq!(r.model_calls, 0);
}

#[tokio::test]
async fn a_guarded_reply_streams_only_once_checked() {
    let p = ScriptedProvider::new();
    let a = guarded(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Booked in Lisbon. When do you arrive?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Booked, surely. When do you arrive?"));
    let events: Vec<Event<Booking>> = a.respond_stream("s", "Lisbon").collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !text.contains("Booked"),
        "nothing withheld was streamed: {text}"
    );
    let Some(Event::Done(r)) = events.last() else {
        panic!("the stream ends with Done: {events:#?}");
    };
    assert_eq!(r.message, "When do you arrive?");
    assert_eq!(r.withheld_claims, ["Booked, surely."]);
    assert!(
        p.requests().iter().all(|q| q.kind != CallKind::ToolRound),
        "no tool ran"
    );
}

#[test]
fn a_guard_on_an_unknown_field_or_with_a_bad_pattern_fails_the_build() {
    let p = ScriptedProvider::new();
    let e = Agent::<Booking, Concierge>::builder()
        .name("Concierge")
        .provider(p.clone())
        .flow(booking_flow(false))
        .guard_claim(BOOKED, ["bookingid"])
        .guard_claim("(unclosed", ["booking_id"])
        .guard_claim("booked", Vec::<String>::new())
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("requires `bookingid`, which is not a data field"),
        "{e}"
    );
    assert!(e.contains("booking_id"), "a suggestion: {e}");
    assert!(e.contains("does not compile"), "{e}");
    assert!(e.contains("requires no field"), "{e}");
}
