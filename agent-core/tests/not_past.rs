//! Dates that must not be in the past (`not_past`, `#[field(not_past)]`), judged on the
//! agent's clock; a day the model left empty, read from the user's words; and the
//! answer to a confirmation whose `ask` summarises a call that waits for the user's
//! yes (`Tool::needs_agreement`): how the answer is judged before the call runs.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use std::sync::Arc;

use agent_core::AgentConfig;
use agent_core::clock::ManualClock;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

/// Wednesday 2026-11-25, 09:30 UTC: July 1st has passed this year.
const NOVEMBER_MS: u64 = TODAY_MS + 163 * 86_400_000;

fn dated(
    p: &ScriptedProvider,
    now_ms: u64,
    flow: Flow<Booking, Concierge>,
) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(ManualClock::new(now_ms))
        .provider(p.clone())
        .flow(flow)
        .constrain("check_in", json!({ "format": "date" }))
        .not_past("check_in")
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_past_day_is_refused_with_the_reason_and_the_step_asks_again() {
    let p = ScriptedProvider::new();
    let a = dated(&p, TODAY_MS, booking_flow(false));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(
        Answer::message("Lisbon on May 3rd. How many guests?")
            .with_data(json!({ "city": "Lisbon", "check_in": "2026-05-03" }))
            .claiming("ask_guests"),
    );
    p.respond(Answer::message("That day has passed. Which date?"));
    let r = a.respond("s", "Lisbon on 2026-05-03").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.check_in, None);
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert!(
        r.rejected_data
            .iter()
            .any(|x| x.contains("check_in") && x.contains("is in the past (today is 2026-06-15)")),
        "{:?}",
        r.rejected_data
    );
    let again = p.last_request().unwrap().instructions();
    assert!(
        again.contains(
            "check_in 2026-05-03 is not possible: it is in the past (today is 2026-06-15)"
        ),
        "{again}"
    );
    // The rule is in the field list the model reads, not in the schema it is sent.
    assert!(
        again.contains("- check_in: Check-in date, ISO 8601 (today or later)"),
        "{again}"
    );
    let schema = p.last_request().unwrap().output.unwrap().schema;
    assert!(!schema.to_string().contains("x-not-past"), "{schema}");
    // Today itself is fine.
    p.respond(Answer::message("How many guests?").with_data(json!({ "check_in": "2026-06-15" })));
    let r = a.respond("s", "today").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-06-15"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
}

#[tokio::test]
async fn a_day_without_a_year_written_as_a_past_day_is_the_next_such_day() {
    let p = ScriptedProvider::new();
    let a = dated(&p, NOVEMBER_MS, booking_flow(false));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(Answer::message("When?").with_data(json!({ "city": "Lisbon" })));
    a.respond("s", "Lisbon").await.unwrap();
    // A small model keeps this year: the user meant the next July 1st.
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2027-07-01"));
    assert!(r.rejected_data.is_empty(), "{:?}", r.rejected_data);
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    // Later, the model repeats last year's day from the history: the same next day
    // is meant, so nothing is refused and nothing changes.
    p.respond(
        Answer::message("Shall I book?")
            .with_data(json!({ "check_in": "2026-07-01", "guests": 2 }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "two of us").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2027-07-01"));
    assert_eq!(r.data.guests, Some(2));
    assert!(r.rejected_data.is_empty(), "{:?}", r.rejected_data);
}

#[tokio::test]
async fn an_explicit_past_year_is_not_moved() {
    let p = ScriptedProvider::new();
    let a = dated(&p, NOVEMBER_MS, booking_flow(false));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(
        Answer::message("When?")
            .with_data(json!({ "city": "Lisbon", "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    p.respond(Answer::message("That day has passed. Which date?"));
    let r = a.respond("s", "Lisbon, July 1st 2026").await.unwrap();
    assert_eq!(r.data.check_in, None);
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.rejected_data.len(), 1, "{:?}", r.rejected_data);
}

/// A dated booking agent that has asked for the city.
async fn asked_for_the_city(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let a = dated(p, TODAY_MS, booking_flow(false));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    a
}

#[tokio::test]
async fn a_day_the_model_left_empty_is_read_when_it_took_other_values_from_the_message() {
    let p = ScriptedProvider::new();
    let a = asked_for_the_city(&p).await;
    // The city and the guests read, the date missed: the code reads the one day named.
    p.respond(
        Answer::message("When do you arrive?")
            .with_data(json!({ "city": "Lisbon", "guests": 2, "check_in": null }))
            .claiming("ask_date"),
    );
    p.respond(Answer::message("Lisbon from July 1st for 2. Shall I book?"));
    let r = a
        .respond("s", "A hotel in Lisbon from July 1st for 2")
        .await
        .unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "Lisbon from July 1st for 2. Shall I book?");
    assert!(r.ungrounded.is_empty(), "{:?}", r.ungrounded);
}

#[tokio::test]
async fn a_day_is_read_for_the_date_asked_unless_the_message_is_a_question() {
    let p = ScriptedProvider::new();
    let a = asked_for_the_city(&p).await;
    p.respond(
        Answer::message("Which date?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    a.respond("s", "Lisbon").await.unwrap();
    // Asked for the date, the user asks about a day: not a check-in date.
    p.respond(Answer::message("I cannot tell. Which date?").claiming("ask_date"));
    let r = a
        .respond("s", "Is the pool open on July 4th?")
        .await
        .unwrap();
    assert_eq!(r.data.check_in, None);
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    // The answer to the question asked, missed by the model: read.
    p.respond(Answer::message("Which date?").claiming("ask_date"));
    p.respond(Answer::message("How many guests?"));
    let r = a.respond("s", "July 4th then").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-04"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.message, "How many guests?");
    // Two days named: none is read.
    let p = ScriptedProvider::new();
    let a = asked_for_the_city(&p).await;
    p.respond(
        Answer::message("Which date?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("ask_date"),
    );
    let r = a
        .respond("s", "Lisbon, July 4th or July 5th")
        .await
        .unwrap();
    assert_eq!(r.data.check_in, None);
}

/// The booking flow with `book_room` held back until the user answers `confirm`.
/// A dated booking agent at `ask_guests` with Lisbon and July 1st stored.
async fn dated_for_july_first(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let a = asked_for_the_city(p).await;
    p.respond(Answer::message("When?").with_data(json!({ "city": "Lisbon" })));
    a.respond("s", "Lisbon").await.unwrap();
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    a
}

#[tokio::test]
async fn a_correction_the_model_copied_over_stores_the_day_the_user_named() {
    let p = ScriptedProvider::new();
    let a = dated_for_july_first(&p).await;
    // The model wrote the stored day back (it is grounded: the user said it earlier).
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    p.respond(Answer::message("July 2nd it is. How many guests?"));
    let r = a
        .respond("s", "Wait, sorry, make that the 2nd of July")
        .await
        .unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-02"));
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert!(r.ungrounded.is_empty(), "{:?}", r.ungrounded);

    // A question naming a day is not a correction.
    let p = ScriptedProvider::new();
    let a = dated_for_july_first(&p).await;
    p.respond(
        Answer::message("I cannot tell. How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    let r = a
        .respond("s", "Is the pool open on July 4th?")
        .await
        .unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
    // Nor is a message naming no single day.
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({ "check_in": "2026-07-01" }))
            .claiming("ask_guests"),
    );
    let r = a
        .respond("s", "Not July 4th or July 5th, keep it")
        .await
        .unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
}

fn held_flow() -> Flow<Booking, Concierge> {
    held_flow_with(|s| s)
}

/// [`held_flow`] with more settings on `confirm`.
fn held_flow_with(
    confirm: impl FnOnce(Step<Booking, Concierge>) -> Step<Booking, Concierge>,
) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .cancel_after_tool("Okay, I've stopped here. What the tool did stays done.")
        .title("Hotel booking")
        .required(["city", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city and the number of guests.")
                .collect(["city", "guests"]),
        )
        .step(confirm(
            Step::model("confirm")
                .prompt("Summarise and ask the guest to confirm.")
                .ask("{guests} guests in {city}. Shall I book?")
                .tool(held_book())
                .end(),
        ))
        .build()
        .unwrap()
}

/// `book_room` waiting for the user's yes, with an optional hotel the model picks:
/// the confirmation's `ask` summarises its call.
fn held_book() -> FnTool<Booking, Concierge> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// Hotel name
        #[allow(dead_code)]
        hotel: Option<String>,
    }
    FnTool::new(
        "book_room",
        "Book the room.",
        |_cx: ToolCx<Booking, Concierge>, _a: Args| async move {
            Ok(ToolOutput::text("booked BK-5")
                .data(
                    json!({ "booking_id": "BK-5" })
                        .as_object()
                        .cloned()
                        .unwrap(),
                )
                .directive(Directive::complete()))
        },
    )
    .derived_args(["hotel"])
    .confirm(true)
}

fn tool_names(p: &ScriptedProvider) -> Vec<String> {
    p.last_request()
        .unwrap()
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[tokio::test]
async fn a_summarising_step_offers_its_tool_only_once_the_user_answers_it() {
    let p = ScriptedProvider::new();
    let a = dated(&p, TODAY_MS, held_flow());
    p.respond(Answer::message("Which city, and for how many?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // This turn reaches `confirm`: its question is code's summary, and no tool is
    // offered to the call that read the message.
    p.respond(
        Answer::message("Lisbon for two. Shall I book?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "Lisbon, two of us").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book?");
    assert_eq!(r.model_calls, 1, "{:?}", p.requests().len());
    assert!(tool_names(&p).is_empty(), "{:?}", tool_names(&p));
    // A plain yes to it books, with no model call to decide it; the model then says
    // the outcome, told what the call returned.
    p.respond(Answer::message("Booked."));
    let r = a.respond("s", "Yes, book it").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.model_calls, 1);
    let told = p.last_request().unwrap().instructions();
    assert!(told.contains("`book_room` ran: booked BK-5"), "{told}");
}

#[tokio::test]
async fn a_summarising_step_keeps_the_action_out_of_the_answer_schema_until_answered() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    let asked = p.last_request().unwrap();
    assert!(
        !asked
            .output
            .unwrap()
            .schema
            .to_string()
            .contains("book_room")
    );
    p.respond(Answer::message("Shall I book it?"));
    a.respond("s", "hmm, let me think").await.unwrap();
    let answered = p.last_request().unwrap();
    assert!(
        answered
            .output
            .unwrap()
            .schema
            .to_string()
            .contains("book_room"),
        "the call reading the answer offers the action"
    );
}

/// An agent that offers tools in the answer (`tools_in_answer`), on the test clock.
fn in_answer(p: &ScriptedProvider, flow: Flow<Booking, Concierge>) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(flow)
        .config(AgentConfig {
            tools_in_answer: true,
            ..AgentConfig::default()
        })
        .build()
        .unwrap()
}

/// An agent with tools in the answer, at `confirm` after the question was asked.
async fn asked_to_confirm(
    p: &ScriptedProvider,
    flow: Flow<Booking, Concierge>,
) -> Agent<Booking, Concierge> {
    confirm_asked(p, in_answer(p, flow)).await
}

/// `a` at `confirm` after the question was asked.
async fn confirm_asked(
    p: &ScriptedProvider,
    a: Agent<Booking, Concierge>,
) -> Agent<Booking, Concierge> {
    p.respond(Answer::message("Which city, and for how many?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(
        Answer::message("Lisbon for two. Shall I book?")
            .with_data(json!({ "city": "Lisbon", "guests": 2 }))
            .claiming("confirm"),
    );
    a.respond("s", "Lisbon, two of us").await.unwrap();
    a
}

#[tokio::test]
async fn the_answer_to_a_summary_judges_agreement_before_naming_a_tool() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    // The first reading is speculative (the walk may move); the walk settles on the
    // step it read, so its action runs without asking the model again.
    let yes = r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#;
    p.respond(Answer::raw(yes));
    p.agreement(true);
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "That is what we want").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.model_calls, 3, "the answer, the check and the tool round");
    assert_eq!(r.message, "Booked. Is there anything else I can help with?");

    let answered = p
        .requests()
        .into_iter()
        .rev()
        .find(|q| q.kind == CallKind::Respond && q.system.contains("book_room"))
        .expect("the answering call");
    assert!(
        answered.system.contains("first set `answer`"),
        "{}",
        answered.system
    );
    // The question quotes the answer: a small model asked about "the user's latest
    // message" copied its previous judgement.
    let asked = answered.instructions();
    assert!(
        asked.contains("Is the user's latest message, \"That is what we want\", a yes"),
        "{asked}"
    );
    let schema = answered.output.unwrap().schema;
    let options = schema["properties"]["action"]["anyOf"].as_array().unwrap();
    assert_eq!(
        options.len(),
        2,
        "one per tool, and the refusal: {options:?}"
    );
    assert_eq!(options[0]["properties"]["answer"]["const"], "yes");
    assert_eq!(options[0]["properties"]["tool"]["const"], "book_room");
    assert_eq!(options[0]["required"], json!(["answer", "tool", "with"]));
    assert_eq!(
        options[1],
        json!({
            "type": "object",
            "properties": { "answer": { "enum": ["no", "new details", "something else"] } },
            "required": ["answer"],
            "additionalProperties": false,
        }),
        "no null: the model classes the answer, and only a yes names a tool"
    );
    // A call that judges an answer writes `action` first: the question about it is
    // the last instruction, after the one to fill `data`.
    let judged = p
        .requests()
        .into_iter()
        .map(|q| q.instructions())
        .find(|s| s.contains("Set `action.answer`"))
        .expect("a call judged the answer");
    let fill = judged.find("Before replying, fill `data`").unwrap();
    let question = judged.find("Set `action.answer`").unwrap();
    assert!(fill < question, "{judged}");
}

#[tokio::test]
async fn a_tool_named_without_agreement_does_not_run() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    // A server without a grammar may send both: the judgement decides.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"something else","tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"No problem, tell me when."}"#,
    ));
    let r = a.respond("s", "No, not yet").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(
        r.message,
        "No problem, tell me when. Is there anything else I can help with?"
    );
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
}

#[tokio::test]
async fn an_agreement_in_a_message_that_changes_the_details_books_nothing() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow_with(|s| s.requires_tool("book_room"))).await;
    // Judged a yes, with a new value read from the same message.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"data":{"city":null,"guests":3},"message":"Booking it."}"#,
    ));
    p.respond(Answer::raw(
        r#"{"action":{"answer":"no"},"data":{"city":null,"guests":null},"message":"Lisbon for three. Shall I book?"}"#,
    ));
    let r = a.respond("s", "Book it, but we are 3").await.unwrap();
    assert_eq!(r.data.guests, Some(3));
    assert_eq!(r.data.booking_id, None);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "Lisbon for three. Shall I book?");
    // Rendered again without the action, told why.
    let again = p.last_request().unwrap();
    assert!(!again.system.contains("book_room"), "{}", again.system);
    let state = again.instructions();
    assert!(
        state
            .contains("Not offered now: book_room (the user's latest message changed the details)"),
        "{state}"
    );

    // The reply the user read was the model's: the next request for the action gets
    // code's summary of the new details, and a yes to it books.
    p.respond(Answer::raw(
        r#"{"action":{"tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#,
    ));
    let r = a.respond("s", "Book it please").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "3 guests in Lisbon. Shall I book?");
    p.respond(Answer::message("Booked."));
    let r = a.respond("s", "Yes").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
}

#[tokio::test]
async fn a_value_copied_in_another_case_is_no_change_of_the_details() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow_with(|s| s.requires_tool("book_room"))).await;
    // The yes copies the city in lower case: the details are the same, it books, and
    // the stored spelling stays.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"data":{"city":" lisbon","guests":2},"message":"Booking it."}"#,
    ));
    p.agreement(true);
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "That is right for lisbon").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.model_calls, 3, "the answer, its check and the tool round");
}

#[tokio::test]
async fn a_question_at_a_confirmation_books_nothing_unless_it_names_the_action() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow_with(|s| s.requires_tool("book_room"))).await;
    // A question that names no action: the tool is not offered, so whatever the model
    // judges, nothing runs; the reply answers and asks again.
    p.respond(Answer::raw(
        r#"{"data":{"city":null,"guests":null},"message":"Yes, there is parking. Shall I book it?"}"#,
    ));
    let r = a
        .respond("s", "Does the hotel have parking?")
        .await
        .unwrap();
    assert_eq!(r.data.booking_id, None);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.model_calls, 1);
    let asked = p.last_request().unwrap();
    assert!(!asked.system.contains("book_room"), "{}", asked.system);
    let state = asked.instructions();
    assert!(
        state.contains("Not offered now: book_room (the user's latest message asks a question)"),
        "{state}"
    );
    assert!(
        !state.contains("`action.answer`"),
        "no judgement asked: {state}"
    );
    let schema = asked.output.unwrap().schema;
    assert!(schema["properties"].get("action").is_none(), "{schema}");

    // The reply the user read was the model's, not the summary: a request for the
    // action is summarised again before it runs.
    p.respond(Answer::raw(
        r#"{"action":{"tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#,
    ));
    let r = a.respond("s", "Great. Can you book it now?").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book?");
    // A question that names the action, in answer to the summary: judged, checked
    // on its own (not agreement words only), then it runs.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#,
    ));
    p.tool_round(Answer::message("Booked."));
    p.agreement(true);
    let r = a.respond("s", "Great. Can you book it now?").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(p.calls_of(CallKind::Agreement), 1);
}

/// The answer a small model gives a hesitation at a confirmation too often: a yes
/// that names the tool.
const YES_BOOK: &str = r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it now."}"#;

#[tokio::test]
async fn a_hesitation_judged_a_yes_books_nothing_when_the_answer_alone_does_not_agree() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow_with(|s| s.requires_tool("book_room"))).await;
    p.respond(Answer::raw(YES_BOOK));
    p.agreement(false);
    p.respond(Answer::raw(
        r#"{"data":{"city":null,"guests":null},"message":"Take your time. Shall I book it when you are ready?"}"#,
    ));
    let r = a
        .respond("s", "Let me think about it for a moment")
        .await
        .unwrap();
    assert_eq!(r.data.booking_id, None);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(
        r.message,
        "Take your time. Shall I book it when you are ready?"
    );
    assert_eq!(r.model_calls, 3, "the answer, the check, the answer again");
    assert_eq!(p.unused(), 0, "{:?}", p.take_unused());

    // The check sees only the agent's question and the user's answer, quoted.
    let reqs = p.requests();
    let check = reqs
        .iter()
        .find(|q| q.kind == CallKind::Agreement)
        .expect("an agreement call");
    assert!(check.tools.is_empty() && check.messages.len() == 1);
    let said = check.messages[0].content.as_str();
    assert!(
        said.contains(r#"The assistant asked: "2 guests in Lisbon. Shall I book?""#),
        "{said}"
    );
    assert!(
        said.contains(r#"The user replied: "Let me think about it for a moment""#),
        "{said}"
    );
    assert!(
        check
            .output
            .as_ref()
            .unwrap()
            .schema
            .to_string()
            .contains("agrees")
    );

    // Rendered again with the tool held and the reason said.
    let again = reqs.last().unwrap();
    assert_eq!(again.kind, CallKind::Respond);
    let state = again.instructions();
    assert!(
        state.contains(
            "Not offered now: book_room (the user's latest message does not agree to go ahead yet)"
        ),
        "{state}"
    );
    assert!(
        again.output.as_ref().unwrap().schema["properties"]
            .get("action")
            .is_none()
    );

    // The reply the user read was the model's: the next yes gets the summary again,
    // and a plain yes to it books, with no model call and no check.
    p.respond(Answer::raw(YES_BOOK));
    let r = a.respond("s", "OK, go ahead and book it").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book?");
    p.respond(Answer::message("Booked."));
    let r = a.respond("s", "OK, go ahead and book it").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(
        r.model_calls, 1,
        "a plain yes needs no judgement: the outcome only"
    );
    assert_eq!(p.calls_of(CallKind::Agreement), 1);
}

#[tokio::test]
async fn a_yes_in_other_words_books_once_the_answer_alone_agrees() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    p.respond(Answer::raw(YES_BOOK));
    p.agreement(true);
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "That is what we want").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.model_calls, 3, "the answer, the check, the tool round");
}

#[tokio::test]
async fn an_unreadable_agreement_answer_books_nothing() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    p.respond(Answer::raw(YES_BOOK));
    p.push(CallKind::Agreement, Answer::raw("maybe"));
    p.respond(Answer::raw(
        r#"{"data":{"city":null,"guests":null},"message":"Shall I book it?"}"#,
    ));
    let r = a.respond("s", "Hmm, fine I guess").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.message, "Shall I book it?");
}

#[tokio::test]
async fn with_the_agreement_check_off_the_answers_judgement_stands() {
    let p = ScriptedProvider::new();
    let agent = Agent::builder()
        .name("Concierge")
        .clock(ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(held_flow())
        .config(AgentConfig {
            tools_in_answer: true,
            check_agreement: false,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let a = confirm_asked(&p, agent).await;
    p.respond(Answer::raw(YES_BOOK));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "That works for us").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(p.calls_of(CallKind::Agreement), 0);
}

#[tokio::test]
async fn a_native_tool_call_on_a_hesitation_does_not_run() {
    let p = ScriptedProvider::new();
    let native = dated(
        &p,
        TODAY_MS,
        held_flow_with(|s| s.requires_tool("book_room")),
    );
    let a = confirm_asked(&p, native).await;
    p.respond(Answer::tool("book_room", json!({ "hotel": "grand" })));
    p.agreement(false);
    p.tool_round(Answer::message("Sure, take your time."));
    let r = a.respond("s", "Not yet, thanks").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "Sure, take your time.");
    // The model reads why, and is offered no tool to call again.
    let last = p.last_request().unwrap();
    assert_eq!(last.kind, CallKind::ToolRound);
    assert!(last.tools.is_empty());
    let result = last.messages.last().unwrap().content.as_str();
    assert!(
        result.starts_with("Not run: the user's latest message does not agree"),
        "{result}"
    );
}

#[tokio::test]
async fn an_answer_outside_its_classes_is_repaired() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow()).await;
    p.respond(Answer::raw(
        r#"{"action":{"answer":"maybe","tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#,
    ));
    p.respond(Answer::raw(
        r#"{"action":{"answer":"no"},"data":{"city":null,"guests":null},"message":"Shall I book it?"}"#,
    ));
    let r = a.respond("s", "Hmm").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "Shall I book it?");
    let repair = p.last_request().unwrap();
    assert!(
        repair.messages.iter().any(|m| m
            .content
            .contains("`action.answer` is not one of \"yes\", \"no\"")),
        "the repair names the problem"
    );
}

#[tokio::test]
async fn a_declined_answer_keeps_a_step_that_requires_its_tool_in_one_call() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(&p, held_flow_with(|s| s.requires_tool("book_room"))).await;
    // "Not yet", judged so: the answer is the reply, the step waits for a yes.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"no"},"data":{"city":null,"guests":null},"message":"Sure, take your time."}"#,
    ));
    let r = a.respond("s", "No, not yet").await.unwrap();
    assert_eq!(r.message, "Sure, take your time.");
    assert_eq!(r.model_calls, 1, "no second rendering");
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.data.booking_id, None);
    // Then a request for it is summarised again, and a yes to that books it.
    let yes = r#"{"action":{"tool":"book_room","with":{}},"data":{"city":null,"guests":null},"message":"Booking it."}"#;
    p.respond(Answer::raw(yes));
    let r = a.respond("s", "OK, go ahead").await.unwrap();
    assert_eq!(r.message, "2 guests in Lisbon. Shall I book?");
    p.respond(Answer::message("Booked."));
    let r = a.respond("s", "OK, go ahead").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(
        r.model_calls, 1,
        "a plain yes to the summary: the outcome only"
    );
    assert_eq!(r.flow, None, "the booking completed the flow");
}

#[tokio::test]
async fn a_read_ahead_action_does_not_run_where_the_walk_does_not_land() {
    let p = ScriptedProvider::new();
    let a = asked_to_confirm(
        &p,
        held_flow_with(|s| {
            s.branch(Branch::to_step("ask_city").when("the user wants another city"))
        }),
    )
    .await;
    // The read-ahead answer agrees and names the tool, but also judges that the user
    // wants another city: the walk goes back to `ask_city`, the tool does not run, and
    // that step is rendered afresh.
    p.respond(Answer::raw(
        r#"{"action":{"answer":"yes","tool":"book_room","with":{}},"conditions":{"c0":true},"data":{"city":null,"guests":null},"message":"Booking it."}"#,
    ));
    p.respond(Answer::message("Which city, then?"));
    let r = a.respond("s", "Yes, but in Porto instead").await.unwrap();
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "Which city, then?");
    assert_eq!(r.model_calls, 2);
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
}

/// A flow whose one step collects the city and may call `tool` (not held back).
fn acting_flow(tool: Arc<dyn Tool<Booking, Concierge>>) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .cancel_after_tool("Okay, I've stopped here. What the tool did stays done.")
        .title("Hotel booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"])
                .tool(tool),
        )
        .build()
        .unwrap()
}

fn lookup(effect: Effect) -> Arc<dyn Tool<Booking, Concierge>> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// City
        city: String,
    }
    FnTool::new(
        "lookup",
        "Look up hotels in a city.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            Ok(ToolOutput::text(format!("3 hotels in {}", a.city)))
        },
    )
    .effect(effect)
    .into_arc()
}

#[tokio::test]
async fn an_idempotent_tool_named_in_the_answer_runs_with_no_consent_form() {
    let p = ScriptedProvider::new();
    let a = in_answer(&p, acting_flow(lookup(Effect::Idempotent)));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(Answer::raw(
        r#"{"action":{"tool":"lookup","with":{"city":"Lisbon"}},"data":{"city":"Lisbon"},"message":"Looking."}"#,
    ));
    p.default_answer(
        CallKind::ToolRound,
        Answer::message("There are 3 hotels in Lisbon."),
    );
    p.default_answer(
        CallKind::Respond,
        Answer::message("There are 3 hotels in Lisbon."),
    );
    let r = a
        .respond("s", "Which hotels are in Lisbon? Look them up")
        .await
        .unwrap();
    assert_eq!(r.tool_calls.len(), 1, "{:?}", r.tool_calls);
    let asked = &p.requests()[1];
    assert!(
        asked.system.contains("Otherwise set `action` to null"),
        "{}",
        asked.system
    );
}

#[tokio::test]
async fn a_pure_tool_is_named_or_not_without_a_consent_judgement() {
    let p = ScriptedProvider::new();
    let a = in_answer(&p, acting_flow(lookup(Effect::Pure)));
    p.respond(Answer::raw(
        r#"{"action":{"tool":"lookup","with":{"city":"Lisbon"}},"data":{"city":null},"message":"Looking."}"#,
    ));
    p.tool_round(Answer::message("There are 3 hotels in Lisbon."));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.tool_calls.len(), 1, "{:?}", r.tool_calls);
    let first = &p.requests()[0];
    assert!(
        !first.system.contains("first set `agreed`"),
        "{}",
        first.system
    );
    assert!(
        first.system.contains("Otherwise set `action` to null"),
        "{}",
        first.system
    );
}

/// A once tool that moves money, asked for in English or Spanish.
fn refund_tool() -> Arc<dyn Tool<Booking, Concierge>> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// City
        city: String,
    }
    FnTool::new(
        "refund",
        "Refund the stay in a city.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            Ok(ToolOutput::text(format!("refunded {}", a.city)))
        },
    )
    .effect(Effect::Once)
    .request_words(["refund", "reembols"])
    .into_arc()
}

#[tokio::test]
async fn a_once_tool_named_in_the_answer_is_summarised_and_a_yes_in_another_language_runs_it() {
    let p = ScriptedProvider::new();
    let a = in_answer(&p, acting_flow(refund_tool()));
    p.respond(Answer::message("Which city was it?"));
    a.respond("s", "I stayed with you last week").await.unwrap();
    // The answer names it: it does not run; code summarises the call.
    p.respond(Answer::raw(
        r#"{"action":{"tool":"refund","with":{"city":"Lisbon"}},"data":{"city":"Lisbon"},"message":"Refunded!"}"#,
    ));
    let r = a.respond("s", "Quiero un reembolso, Lisbon").await.unwrap();
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    // Judged as a request first: the answer names the tool only when the user asked.
    let asked = p.last_request().unwrap();
    assert!(
        asked.system.contains("first set `agreed`"),
        "{}",
        asked.system
    );
    assert_eq!(
        r.message,
        "Refund the stay in a city: Lisbon. Shall I go ahead?"
    );
    // A plain yes in Spanish runs it with the summary's arguments; the model only
    // says the outcome.
    p.respond(Answer::message("Reembolsado."));
    let r = a.respond("s", "Sí, por favor").await.unwrap();
    assert_eq!(r.tool_calls.len(), 1, "{:?}", r.tool_calls);
    assert_eq!(r.tool_calls[0].arguments, json!({ "city": "Lisbon" }));
}

#[tokio::test]
async fn a_day_just_past_said_without_a_year_is_shown_back_before_it_is_stored() {
    // 2026-06-15: "June 1st" is two weeks past; next year's is 351 days ahead. The
    // model reads next year's June 1st, from `said`, at the date step.
    async fn read_as_next_june_first(
        said: &str,
    ) -> (
        AgentResponse<Booking>,
        ScriptedProvider,
        Agent<Booking, Concierge>,
    ) {
        let p = ScriptedProvider::new();
        let a = dated(&p, TODAY_MS, booking_flow(false));
        p.respond(Answer::message("Which city?"));
        a.respond("s", "I need a hotel").await.unwrap();
        p.respond(Answer::message("When?").with_data(json!({ "city": "Lisbon" })));
        a.respond("s", "Lisbon").await.unwrap();
        p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
        p.respond(
            Answer::message("How many guests?")
                .with_data(json!({ "check_in": "2027-06-01" }))
                .claiming("ask_guests"),
        );
        let r = a.respond("s", said).await.unwrap();
        (r, p, a)
    }
    let (r, p, a) = read_as_next_june_first("June 1st").await;
    assert_eq!(r.data.check_in, None, "not stored before the user agrees");
    assert_eq!(r.tentative.len(), 1, "{:?}", r.tentative);
    // The day as people say it, with its year (not this year's).
    assert_eq!(
        r.message,
        "Just to check: check in Tuesday 1 June 2027. Is that right?"
    );
    // A yes stores it; the model writing it again later is not asked about again.
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2027-06-01"));
    p.respond(
        Answer::message("Shall I book?")
            .with_data(json!({ "check_in": "2027-06-01", "guests": 2 }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "two of us").await.unwrap();
    assert_eq!(r.data.guests, Some(2));
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
    // Said with its year, the same day is stored.
    let (r, _, _) = read_as_next_june_first("June 1st 2027").await;
    assert_eq!(r.data.check_in.as_deref(), Some("2027-06-01"));
    assert!(r.tentative.is_empty(), "{:?}", r.tentative);
}
