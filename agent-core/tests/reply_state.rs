//! What a model-written reply may state, by one rule for every agent: a tool's outcome
//! only in a turn in which that tool succeeded, and a field's value only as the state
//! holds it. A reply that says otherwise is rendered again once, told why; then the
//! sentences that still say it are withheld.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

/// `book_room` (which completes the flow), declaring the words that state its outcome.
fn book_room_stating() -> FnTool<Booking, Concierge> {
    book_room_tool().outcome(["booked", "reserved"])
}

fn agent(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let flow = Flow::builder("booking")
        .when("the user wants to book a hotel room")
        .required(["city", "check_in", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .tool(book_room_stating())
                .end(),
        )
        .build()
        .unwrap();
    Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(flow)
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_outcome_stated_without_its_tool_is_rendered_again_with_the_reason() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
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
    assert_eq!(r.model_calls, 2);
    assert!(r.withheld_claims.is_empty());
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains(
            "Your draft said \"booked\", which is not so (`book_room` has not run in this turn)"
        ),
        "{again}"
    );
}

#[tokio::test]
async fn an_outcome_stated_twice_is_withheld_and_a_denial_or_question_is_not_a_claim() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Lisbon: reserved for you. When do you arrive?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message(
        "All booked. Nothing is reserved until you say yes, though. When do you arrive?",
    ));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(
        r.message,
        "Nothing is reserved until you say yes, though. When do you arrive?"
    );
    assert_eq!(r.withheld_claims, ["All booked."]);
    assert_eq!(r.model_calls, 2, "one rendering again, not more");
}

#[tokio::test]
async fn in_the_turn_the_tool_succeeded_its_outcome_may_be_stated() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
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
    assert!(
        r.message.starts_with("Booked: your booking id is BK-5."),
        "{}",
        r.message
    );
    assert!(r.withheld_claims.is_empty());
    // The next turn, nothing ran: saying it again is not this turn's to say.
    p.respond(Answer::message("Your room is booked. Anything else?"));
    p.respond(Answer::message("Anything else?"));
    let r = a.respond("s", "thanks").await.unwrap();
    assert_eq!(r.message, "Anything else?");
}

#[tokio::test]
async fn a_value_the_state_does_not_hold_is_not_named() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // The model reads a date nobody said: not stored, and not to be named.
    p.respond(
        Answer::message("Arriving 2026-08-01, lovely. Which city?")
            .with_data(json!({ "check_in": "2026-08-01" }))
            .claiming("ask_city"),
    );
    // Written again, told at once why the draft was not used, it still names the
    // date: that sentence is withheld (one rendering after the draft, not two).
    p.respond(Answer::message("From 2026-08-01 then. Which city?"));
    let r = a.respond("s", "somewhere warm").await.unwrap();
    assert_eq!(r.data.check_in, None);
    assert_eq!(r.message, "Which city?");
    assert_eq!(r.withheld_claims.len(), 1, "{:?}", r.withheld_claims);
    assert_eq!(p.unused(), 0);
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains("Your draft said \"2026-08-01\", which is not so (`check_in` is not set)"),
        "{again}"
    );
}

#[tokio::test]
async fn a_count_must_be_the_stored_one() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "ask_date").data(
            json!({ "city": "Rome", "guests": 2 })
                .as_object()
                .cloned()
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    p.respond(Answer::message("A room in Rome for 3 guests. Which date?").claiming("ask_date"));
    p.respond(Answer::message("A room in Rome for 3 guests. Which date?"));
    let r = a.respond("s", "hello").await.unwrap();
    assert_eq!(r.message, "Which date?");
    assert_eq!(r.withheld_claims, ["A room in Rome for 3 guests."]);
    // The stored count may be said.
    p.respond(Answer::message("A room in Rome for 2 guests. Which date?").claiming("ask_date"));
    let r = a.respond("s", "hm").await.unwrap();
    assert_eq!(r.message, "A room in Rome for 2 guests. Which date?");
    assert!(r.withheld_claims.is_empty());
}

#[tokio::test]
async fn a_value_changed_this_turn_is_not_named_as_if_it_still_held() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "ask_date")
            .data(json!({ "city": "Rome" }).as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    p.respond(
        Answer::message("Rome it is. Which date?")
            .with_data(json!({ "city": "Naples" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Naples, then. Which date?"));
    let r = a.respond("s", "make it Naples").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Naples"));
    assert_eq!(r.message, "Naples, then. Which date?");
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains("Your draft said \"Rome\", which is not so (`city` is Naples)"),
        "{again}"
    );
}

#[tokio::test]
async fn a_reply_asking_again_for_the_value_just_given_is_rendered_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // The value is stored, and the reply asks for it again (in the question's words,
    // then in others): told why, then the sentence is withheld.
    p.respond(
        Answer::message("Thanks! Which city would you like to stay in?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Lisbon it is. When do you arrive?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.message, "Lisbon it is. When do you arrive?");
    assert_eq!(r.model_calls, 2);
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains("the user has just given it: `city` is Lisbon"),
        "{again}"
    );

    // Twice: the sentence goes, the rest stays.
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    for _ in 0..2 {
        p.respond(
            Answer::message("When do you arrive? And which city was it again?")
                .with_data(json!({ "city": "Lisbon" }))
                .claiming("ask_date"),
        );
    }
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, "When do you arrive?");
    assert_eq!(r.withheld_claims, vec!["And which city was it again?"]);
}
