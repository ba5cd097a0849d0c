//! Values the user confirms: a value the model read that the user's words do not
//! show is neither stored nor dropped; it is shown back with a question the code
//! writes and settled by the user's next message (a yes stores it, hooks and all;
//! anything else leaves it unstored and reported; a new value replaces it). Values
//! the words show are stored without asking; a value the constraints refuse is
//! refused with the reason, not asked about.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use std::sync::{Arc, Mutex};

use agent_core::command::Command;
use agent_core::policy::ModelProfile;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::session::Session;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

/// The booking flow's collecting steps with an `on_data_update` hook that logs the
/// guests it sees.
fn logged_flow(seen: Arc<Mutex<Vec<Option<u8>>>>) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .title("Hotel booking")
        .required(["city", "check_in", "guests"])
        .on_data_update(move |cx: &Cx<'_, Booking, Concierge>| {
            seen.lock().unwrap().push(cx.data().guests);
        })
        .step(Step::model("ask_city").collect(["city"]))
        .step(Step::model("ask_date").collect(["check_in"]))
        .step(Step::model("ask_guests").collect(["guests"]))
        .step(Step::model("confirm").end())
        .build()
        .unwrap()
}

/// The booking agent at the guests question, asked (Lisbon, July 1st stored).
async fn at_ask_guests(p: &ScriptedProvider, a: &Agent<Booking, Concierge>, s: &str) {
    let data = json!({"city": "Lisbon", "check_in": "2026-07-01"});
    let to =
        Directive::go_to_step_in("booking", "ask_guests").data(data.as_object().unwrap().clone());
    a.dispatch(s, to).await.unwrap();
    p.respond(Answer::message("How many guests?"));
    let r = a.respond(s, "hello").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
}

#[tokio::test]
async fn a_value_nobody_said_for_a_question_not_asked_is_dropped_not_asked_about() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    // The question was for guests; the date has nothing to do with the message.
    p.respond(Answer::message("How many guests?").with_data(json!({"check_in": "2026-08-02"})));
    p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
    let r = a.respond("s", "what a lovely day").await.unwrap();
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.ungrounded.len(), 1);
}

#[tokio::test]
async fn a_value_the_words_do_not_show_is_asked_about_and_stored_on_a_plain_yes() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;

    // The answer writes the stored city again: unchanged, so not "noted".
    p.respond(
        Answer::message("Great, 2 guests! Shall I book it?")
            .with_data(json!({"guests": 2, "city": "Lisbon"}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "me and my husband").await.unwrap();
    assert_eq!(r.data.guests, None, "not stored before the user agrees");
    assert_eq!(r.tentative.len(), 1);
    assert_eq!(r.tentative[0].field, "guests");
    assert_eq!(r.tentative[0].value, json!(2));
    assert_eq!(r.tentative[0].flow, "booking");
    assert_eq!(r.message, "Just to check: guests 2. Is that right?");
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(
        r.model_calls, 1,
        "the code writes the reply: no second rendering"
    );
    assert!(r.commands.is_empty(), "{:?}", r.commands);

    // A plain yes needs no call to judge it; the value is stored, the walk goes on.
    p.respond(Answer::message(
        "A room in Lisbon for 2 on July 1st. Shall I book it?",
    ));
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.data.guests, Some(2));
    assert!(r.tentative.is_empty());
    assert_eq!(
        r.commands,
        vec![Command::agree(), Command::set_value("guests", json!(2))]
    );
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.model_calls, 1);
    assert_eq!(p.calls_of(CallKind::Agreement), 0);
}

#[tokio::test]
async fn a_yes_in_other_words_is_judged_by_a_call_of_its_own() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 3})));
    a.respond("s", "me, my wife and our kid").await.unwrap();

    p.agreement(true);
    p.respond(Answer::message("Shall I book it?"));
    let r = a.respond("s", "you got it right, that's us").await.unwrap();
    assert_eq!(r.data.guests, Some(3));
    assert_eq!(r.model_calls, 2, "the agreement call and the reply");
    let judged = p
        .requests()
        .into_iter()
        .rfind(|q| q.kind == CallKind::Agreement)
        .unwrap();
    let asked = judged.messages[0].content.to_string();
    assert!(
        asked.contains("Just to check: guests 3. Is that right?")
            && asked.contains("you got it right, that's us"),
        "{asked}"
    );
}

#[tokio::test]
async fn anything_but_a_yes_leaves_the_value_unstored_and_reported() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 3})));
    a.respond("s", "the usual crowd").await.unwrap();

    p.agreement(false);
    p.default_answer(
        CallKind::Respond,
        Answer::message("How many guests will there be?"),
    );
    let r = a.respond("s", "hmm, let me count first").await.unwrap();
    assert_eq!(r.data.guests, None);
    assert!(r.tentative.is_empty());
    assert_eq!(r.commands, vec![Command::decline()]);
    assert_eq!(r.ungrounded.len(), 1);
    assert_eq!(r.ungrounded[0].field, "guests");
    assert_eq!(r.ungrounded[0].reason, "the user did not confirm it");
    assert_eq!(r.message, "How many guests will there be?");
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
}

#[tokio::test]
async fn a_new_value_in_the_answer_replaces_the_one_asked_about() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 3})));
    a.respond("s", "me and the kids").await.unwrap();

    p.agreement(false);
    p.respond(
        Answer::message("4 guests. Shall I book it?")
            .with_data(json!({"guests": 4}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "no, 4 of us").await.unwrap();
    assert_eq!(r.data.guests, Some(4), "the words show 4: stored");
    assert!(r.tentative.is_empty());
    assert_eq!(r.step.as_deref(), Some("confirm"));
}

#[tokio::test]
async fn a_value_the_words_show_is_stored_without_asking() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(
        Answer::message("Shall I book it?")
            .with_data(json!({"guests": 2}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "two of us").await.unwrap();
    assert_eq!(r.data.guests, Some(2));
    assert!(r.tentative.is_empty());
    assert_eq!(r.message, "Shall I book it?");
}

#[tokio::test]
async fn a_confirmed_value_written_again_is_not_asked_about_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 2})));
    a.respond("s", "me and my husband").await.unwrap();
    p.respond(Answer::message("Shall I book it?").with_data(json!({"guests": 2})));
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.data.guests, Some(2));
    // The model copies the stored value into its next answer: nothing to confirm.
    p.respond(
        Answer::message("Shall I book it?").with_data(json!({"guests": 2, "city": "Lisbon"})),
    );
    let r = a.respond("s", "what was the date again?").await.unwrap();
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
    assert_eq!(r.message, "Shall I book it?");
}

#[tokio::test]
async fn a_value_the_constraints_refuse_is_refused_with_the_reason_not_asked_about() {
    let p = ScriptedProvider::new();
    let a = Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .constrain("guests", json!({ "maximum": 12 }))
        .flow(booking_flow(false))
        .build()
        .unwrap();
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 40})));
    p.default_answer(
        CallKind::Respond,
        Answer::message("We take at most 12 guests. How many?"),
    );
    let r = a.respond("s", "the whole football club").await.unwrap();
    assert_eq!(r.data.guests, None);
    assert!(r.tentative.is_empty());
    assert_eq!(r.rejected_data.len(), 1, "{:?}", r.rejected_data);
    assert_eq!(r.message, "We take at most 12 guests. How many?");
}

#[tokio::test]
async fn the_hook_on_data_updates_runs_on_the_confirmation_only() {
    let p = ScriptedProvider::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a = agent(&p, vec![logged_flow(seen.clone())]);
    at_ask_guests(&p, &a, "s").await;
    let before = seen.lock().unwrap().len();
    p.respond(Answer::message("How many?").with_data(json!({"guests": 2})));
    a.respond("s", "me and my husband").await.unwrap();
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "not on a tentative value"
    );
    p.respond(Answer::message("Shall I book it?"));
    a.respond("s", "yes").await.unwrap();
    assert_eq!(seen.lock().unwrap()[before..], [Some(2)]);
}

#[tokio::test]
async fn a_value_asked_about_is_kept_with_the_session_across_processes() {
    let p = ScriptedProvider::new();
    let (a, store) = booking_with_store(&p);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"guests": 2})));
    a.respond("s", "me and my husband").await.unwrap();
    let saved = store.load("s").await.unwrap().unwrap();
    let text = String::from_utf8(saved.bytes.clone()).unwrap();
    assert!(
        text.contains(r#""tentative":[{"field":"guests","value":2"#),
        "{text}"
    );

    // Another agent on the same store (no cached session) settles it.
    let b = Agent::builder()
        .name("Concierge")
        .provider(p.clone())
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .flow(booking_flow(false))
        .store_arc(store.clone())
        .build()
        .unwrap();
    p.respond(Answer::message("Shall I book it?"));
    let r = b.respond("s", "yes").await.unwrap();
    assert_eq!(r.data.guests, Some(2));

    // A session saved before tentative values existed loads without them.
    let old = Session::<Booking, Concierge>::new("old", Concierge::default(), 0);
    let mut v = serde_json::to_value(&old).unwrap();
    v.as_object_mut().unwrap().remove("tentative");
    let back: Session<Booking, Concierge> = serde_json::from_value(v).unwrap();
    assert!(back.tentative.is_empty());
}

#[tokio::test]
async fn a_correction_the_words_do_not_show_names_the_stored_value() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(Answer::message("How many?").with_data(json!({"city": "Naples, Italy"})));
    let r = a.respond("s", "actually make it Naples").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(
        r.message,
        "Just to check: city Naples, Italy (instead of Lisbon). Is that right?"
    );
    p.respond(Answer::message("How many guests?"));
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Naples, Italy"));
    assert_eq!(
        r.commands,
        vec![
            Command::agree(),
            Command::correct_value("city", json!("Naples, Italy"))
        ]
    );
}

#[tokio::test]
async fn a_value_for_the_asked_field_is_not_held_when_the_same_reading_made_up_another() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    // "thanks" read as 3 guests and another day: nothing ties either to the message.
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"guests": 3, "check_in": "2026-08-02"})),
    );
    p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
    let r = a.respond("s", "thanks").await.unwrap();
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
    assert_eq!(r.data.guests, None);
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    let dropped: Vec<&str> = r.ungrounded.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped.contains(&"guests"), "{dropped:?}");
    let guests = r.ungrounded.iter().find(|d| d.field == "guests").unwrap();
    assert!(
        guests.reason.contains("made up another value"),
        "{}",
        guests.reason
    );
}

#[tokio::test]
async fn a_value_for_the_asked_field_is_not_held_when_the_reply_asks_for_it_again() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    // A side question read as a guest count, while the reply asks for the count.
    p.respond(
        Answer::message("How many guests will be staying?")
            .with_data(json!({"guests": 2}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "Is breakfast included?").await.unwrap();
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
    assert_eq!(r.data.guests, None);
    assert_eq!(r.ungrounded.len(), 1);
    assert!(
        r.ungrounded[0].reason.contains("asks for it again"),
        "{}",
        r.ungrounded[0].reason
    );
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
}

#[tokio::test]
async fn a_value_for_the_asked_field_is_held_when_the_reply_goes_on_to_the_next_question() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    p.respond(
        Answer::message("Great, 2 guests! Shall I book it?")
            .with_data(json!({"guests": 2}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "me and my husband").await.unwrap();
    assert_eq!(r.tentative.len(), 1, "{:?}", r.ungrounded);
    assert_eq!(r.message, "Just to check: guests 2. Is that right?");
}

#[tokio::test]
async fn on_a_small_model_a_value_dropped_beside_one_held_leaves_the_reply_to_code() {
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    let a = agent(&p, vec![booking_flow(false)]);
    at_ask_guests(&p, &a, "s").await;
    // The city is held (a word of it was said); the made-up date is dropped, which is
    // not told: the reply is code's check alone, not the model's question and the check.
    p.respond(
        Answer::message("How many guests are coming?")
            .with_data(json!({"city": "Naples, Italy", "check_in": "2026-08-02"})),
    );
    let r = a.respond("s", "actually make it Naples").await.unwrap();
    assert_eq!(r.ungrounded.len(), 1, "{:?}", r.ungrounded);
    assert_eq!(r.tentative.len(), 1, "{:?}", r.tentative);
    assert_eq!(
        r.message,
        "Just to check: city Naples, Italy (instead of Lisbon). Is that right?"
    );
}
