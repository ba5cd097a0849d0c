//! What the user reads and what is stored follow the state: grounded and validated
//! values, notes that make the reply ask again, the date in the prompt, reply
//! templates, steps that need their tool, bounded replies and values, and tools that
//! fail without writing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use agent_core::clock::{ManualClock, TimeZone};
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::response::Event;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn booking(p: &ScriptedProvider) -> AgentBuilder<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(ManualClock::new(TODAY_MS))
        .provider(p.clone())
}

#[tokio::test]
async fn a_draft_that_never_repeats_an_invented_value_is_used_in_one_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Happy to help. Which city would you like?")
            .with_data(json!({ "city": "London" })),
    );
    let r = a.respond("s", "Hi, I need a hotel").await.unwrap();
    assert_eq!(r.data.city, None, "the invented value is not stored");
    assert_eq!(r.ungrounded.len(), 1);
    assert_eq!(r.message, "Happy to help. Which city would you like?");
    assert_eq!(r.model_calls, 1, "the draft did not build on the value");
}

#[tokio::test]
async fn a_value_nobody_said_is_not_stored_and_is_reported() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("London for 12, noted!")
            .with_data(json!({ "city": "London", "guests": 12 }))
            .claiming("ask_date"),
    );
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    let mut events = a.respond_stream("s", "Hi, I need a hotel");
    let mut dropped = Vec::new();
    let mut done = None;
    while let Some(e) = events.next().await {
        match e {
            Event::DataDropped(d) => dropped.push(d.field),
            Event::Done(r) => done = Some(r),
            _ => {}
        }
    }
    let r = done.unwrap();
    assert_eq!(r.data, Booking::default(), "nothing invented is stored");
    let fields: Vec<&str> = r.ungrounded.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(fields, ["city", "guests"]);
    assert_eq!(dropped, ["city", "guests"]);
    // The draft assumed the values: the step is rendered again, and says nothing of them.
    assert_eq!(r.message, "Which city?");
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    let last = p.last_request().unwrap().instructions();
    assert!(last.contains("city is not known yet"), "{last}");
}

#[tokio::test]
async fn said_values_are_stored_with_dates_resolved_on_the_agent_clock() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Lisbon for two from tomorrow. Shall I book?").with_data(json!({
            "city": "Lisbon",
            "guests": 2,
            // The model wrote today's date; the user said "tomorrow".
            "check_in": "2026-06-15",
        })),
    );
    p.default_answer(CallKind::Respond, Answer::message("Shall I book?"));
    let r = a
        .respond("s", "Lisbon, for the two of us, from tomorrow")
        .await
        .unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.guests, Some(2));
    assert_eq!(
        r.data.check_in.as_deref(),
        Some("2026-06-16"),
        "the day the user named, corrected by code"
    );
    assert!(r.ungrounded.is_empty(), "{:?}", r.ungrounded);
    // The date (no time of day) is in the system prompt: it changes once a day.
    let sys = p.requests()[0].system.clone();
    assert!(
        sys.contains("Today is Monday, 15 June 2026 (2026-06-15)"),
        "{sys}"
    );
}

#[tokio::test]
async fn the_time_zone_and_the_date_line_are_configurable() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .config(AgentConfig {
            time_zone: TimeZone::fixed("Asia/Tokyo", 9 * 60),
            ..AgentConfig::default()
        })
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let sys = p.last_request().unwrap().instructions();
    assert!(sys.contains("time zone Asia/Tokyo (UTC+09:00)"), "{sys}");

    let p = ScriptedProvider::new();
    let a = booking(&p)
        .config(AgentConfig {
            date_in_prompt: false,
            ..AgentConfig::default()
        })
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    assert!(
        !p.last_request()
            .unwrap()
            .instructions()
            .contains("Today is")
    );
}

#[tokio::test]
async fn a_value_outside_its_range_is_refused_and_asked_again_with_the_reason() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .constrain("guests", json!({ "minimum": 1, "maximum": 12 }))
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("40 guests in Lisbon, great!")
            .with_data(json!({ "city": "Lisbon", "guests": 40 })),
    );
    p.default_answer(
        CallKind::Respond,
        Answer::message("We take up to 12 guests. Which date?"),
    );
    let r = a.respond("s", "Lisbon, we are 40").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.data.guests, None);
    assert_eq!(r.rejected_data, ["guests must be at most 12"]);
    assert_eq!(r.message, "We take up to 12 guests. Which date?");
    let last = p.last_request().unwrap().instructions();
    assert!(
        last.contains("guests 40 is not possible: it must be at most 12"),
        "{last}"
    );
    // The model's schema carries the type, not the bounds: a decoding grammar with
    // `maximum: 12` cannot write 40 and would rewrite the user's number into one that
    // fits (40 -> 4) instead of letting code refuse it with the reason.
    let extracting = p
        .requests()
        .into_iter()
        .filter_map(|r| r.output)
        .find(|o| !o.schema["properties"]["data"].is_null())
        .unwrap();
    let guests = &extracting.schema["properties"]["data"]["properties"]["guests"]["anyOf"][0];
    assert_eq!(guests["type"], "integer", "{guests}");
    assert!(guests.get("maximum").is_none(), "{guests}");
    assert!(guests.get("minimum").is_none(), "{guests}");
}

#[tokio::test]
async fn declared_synonyms_ground_a_number_and_are_shown_to_the_model() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .synonyms("guests", 1, ["just me", "only me"])
        .synonyms("guests", 2, ["my wife and I"])
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Lisbon for one. Which date?")
            .with_data(json!({ "city": "Lisbon", "guests": 1 })),
    );
    let r = a.respond("s", "Lisbon, just me").await.unwrap();
    assert_eq!(r.data.guests, Some(1), "{:?}", r.ungrounded);
    assert!(r.ungrounded.is_empty());
    let system = p.last_request().unwrap().system;
    assert!(
        system.contains(
            r#"- guests: Number of guests, 1 to 12 ("just me"/"only me" = 1, "my wife and I" = 2)"#
        ),
        "{system}"
    );
    // A synonym states its own value only, and no synonym is no statement.
    p.respond(Answer::message("Which city?"));
    a.respond("t", "hi").await.unwrap();
    p.respond(
        Answer::message("Porto for two. Which date?")
            .with_data(json!({ "city": "Porto", "guests": 2 })),
    );
    p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
    let r = a.respond("t", "Porto, just me").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.data.guests, None);
    assert_eq!(r.ungrounded.len(), 1);
}

#[tokio::test]
async fn a_dispatched_write_that_breaks_a_constraint_is_a_typed_error_and_changes_nothing() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .constrain("guests", json!({ "maximum": 12 }))
        .flow(booking_flow(false))
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    a.dispatch(
        "s",
        Directive::new().data(json!({ "guests": 100 }).as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    // The dispatched directive applies at the next turn: a typed error, nothing saved.
    let err = a.respond("s", "hello").await.unwrap_err();
    assert!(
        err.to_string().contains("guests must be at most 12"),
        "{err}"
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.data.guests, None);
    assert_eq!(s.turns, 1);
}

#[tokio::test]
async fn a_bad_constraint_fails_build() {
    let p = ScriptedProvider::new();
    let err = booking(&p)
        .constrain("gusts", json!({ "maximum": 12 }))
        .constrain("city", json!({ "pattern": "(" }))
        .flow(booking_flow(false))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot constrain `gusts`"), "{err}");
    assert!(err.contains("guests"), "did you mean: {err}");
    assert!(err.contains("does not compile"), "{err}");
}

#[tokio::test]
async fn an_oversized_reply_is_cut_and_an_oversized_value_refused() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .config(AgentConfig {
            max_reply_chars: 50,
            max_value_bytes: 64,
            ..AgentConfig::default()
        })
        .flow(booking_flow(false))
        .build()
        .unwrap();
    let long_city = "Llanfair".repeat(20);
    p.respond(Answer::message("y".repeat(8 * 1024 * 1024)).with_data(json!({ "city": long_city })));
    p.default_answer(CallKind::Respond, Answer::message("z".repeat(100_000)));
    let r = a.respond("s", &long_city).await.unwrap();
    assert_eq!(r.message.chars().count(), 50);
    assert_eq!(r.data.city, None);
    assert!(
        r.rejected_data[0].starts_with("city is too long"),
        "{:?}",
        r.rejected_data
    );
}

fn failing_tool(fail: &'static str) -> Arc<dyn Tool<Booking, Concierge>> {
    #[derive(Deserialize, JsonSchema)]
    struct Args {}
    FnTool::new(
        "charge",
        "Charge the card.",
        move |cx: ToolCx<Booking, Concierge>, _a: Args| async move {
            cx.dispatch(
                Directive::new().data(
                    json!({ "booking_id": "CHARGED" })
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
            );
            match fail {
                "error" => Err(ToolError::Failed("card declined".into())),
                "panic" => panic!("tool bug"),
                _ => Ok(ToolOutput::text("ok")
                    .data(json!({ "guests": 99 }).as_object().cloned().unwrap())),
            }
        },
    )
    .into_arc()
}

#[tokio::test]
async fn a_failed_tool_writes_nothing_and_a_refused_write_fails_the_tool() {
    for fail in ["error", "panic", "refused"] {
        let p = ScriptedProvider::new();
        let a = booking(&p)
            .constrain("guests", json!({ "maximum": 12 }))
            .tool(failing_tool(fail))
            .flow(booking_flow(false))
            .build()
            .unwrap();
        p.respond(Answer::tool("charge", json!({})));
        p.tool_round(Answer::message("Something went wrong."));
        let r = a.respond("s", "charge me").await.unwrap();
        assert!(!r.tool_calls[0].ok, "{fail}");
        assert_eq!(
            r.data.booking_id, None,
            "{fail}: the dispatched write is dropped"
        );
        assert_eq!(r.data.guests, None, "{fail}");
        if fail == "refused" {
            assert!(
                r.tool_calls[0].output.contains("must be at most 12"),
                "{}",
                r.tool_calls[0].output
            );
        }
    }
}

/// ask_city -> confirm (offers `book_room`, which must run before the flow ends).
fn city_then_confirm() -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .required(["city"])
        .step(Step::model("ask_city").collect(["city"]))
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .tool(book_room())
                .requires_tool("book_room")
                .end(),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_step_that_requires_its_tool_does_not_end_the_flow_without_it() {
    let p = ScriptedProvider::new();
    let flow = city_then_confirm();
    let a = booking(&p).flow(flow).build().unwrap();
    p.respond(
        Answer::message("Lisbon. Shall I book?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"), "{r:?}");
    assert_eq!(r.model_calls, 1);

    // The model claims the booking without calling the tool: not used, asked again.
    p.respond(Answer::message("Your room is booked!"));
    p.respond(Answer::message("Shall I go ahead and book it?"));
    let r = a.respond("s", "yes").await.unwrap();
    assert_eq!(r.message, "Shall I go ahead and book it?");
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.data.booking_id, None);
    let last = p.last_request().unwrap().instructions();
    assert!(last.contains("book_room did not run"), "{last}");

    // With the tool, the flow completes.
    p.respond(Answer::tool("book_room", json!({ "hotel": "Grand" })));
    p.tool_round(Answer::message("Booked: BK-5."));
    let r = a.respond("s", "yes, book it").await.unwrap();
    assert_eq!(r.flow, None);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
}

#[tokio::test]
async fn requires_tool_must_name_an_offered_tool() {
    let p = ScriptedProvider::new();
    let flow = Flow::<Booking, Concierge>::builder("booking")
        .step(Step::model("confirm").requires_tool("book_rom").end())
        .build()
        .unwrap();
    let err = booking(&p)
        .tool(book_room())
        .flow(flow)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no tool `book_rom`"), "{err}");
    assert!(err.contains("book_room"), "did you mean: {err}");
}

#[tokio::test]
async fn a_reply_template_renders_the_data_and_is_checked_at_build() {
    let flow = |text: &str, requires: &[&str]| {
        Flow::<Booking, Concierge>::builder("booking")
            .required(["city"])
            .step(Step::model("ask_city").collect(["city"]))
            .step(
                Step::reply("done", text)
                    .requires(requires.iter().copied())
                    .end(),
            )
            .build()
    };
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .flow(flow("Noted {city} {{ok}}.", &[]).unwrap())
        .build()
        .unwrap();
    p.respond(Answer::message("Noted.").with_data(json!({ "city": "Lisbon" })));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, "Noted Lisbon {ok}.");

    let err = flow("Booked {booking_id}.", &[]).unwrap_err().to_string();
    assert!(err.contains("may be empty at this step"), "{err}");
    let err = flow("Booked {bookingid}.", &[]).unwrap_err().to_string();
    assert!(err.contains("not a data field"), "{err}");
    assert!(flow("Booked {booking_id}.", &["booking_id"]).is_ok());
    let err = flow("Booked {city.", &[]).unwrap_err().to_string();
    assert!(err.contains("malformed"), "{err}");
}

#[tokio::test]
async fn tools_can_be_called_through_the_structured_answer() {
    let p = ScriptedProvider::new();
    let flow = city_then_confirm();
    let a = booking(&p)
        .config(AgentConfig {
            tools_in_answer: true,
            ..AgentConfig::default()
        })
        .flow(flow)
        .build()
        .unwrap();
    p.respond(
        Answer::message("Lisbon. Shall I book?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("confirm"),
    );
    p.respond(Answer::message("Lisbon. Shall I book?"));
    a.respond("s", "Lisbon").await.unwrap();

    // The user's answer at the last step may correct a value, so the first call of
    // the turn extracts speculatively; its action waits, and the rendering at the
    // resolved step asks for it again, where it runs.
    let act = |req: &agent_core::provider::ModelRequest| {
        // No native tools: the tool is a field of the answer's schema.
        assert!(req.tools.is_empty());
        let schema = &req.output.as_ref().unwrap().schema;
        let options = schema["properties"]["action"]["anyOf"].as_array().unwrap();
        assert_eq!(options[0]["properties"]["tool"]["const"], "book_room");
        assert!(
            req.system
                .contains("Tools you can use:\n- book_room: Book the room.")
        );
        Ok(agent_core::provider::ModelResponse {
            content: json!({
                "message": "Booking now.",
                "action": { "tool": "book_room", "with": { "hotel": "Grand" } },
            })
            .to_string(),
            tool_calls: Vec::new(),
            usage: agent_core::provider::Usage::default(),
            finish: agent_core::provider::FinishReason::Stop,
            id: None,
        })
    };
    p.respond(Answer::from_fn(act));
    p.respond(Answer::from_fn(act));
    p.tool_round(Answer::message("Booked: BK-5."));
    let r = a.respond("s", "yes, book it").await.unwrap();
    assert_eq!(
        r.message,
        "Booked: BK-5. Is there anything else I can help with?"
    );
    assert_eq!(r.tool_calls.len(), 1);
    assert!(r.tool_calls[0].ok);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.flow, None, "the tool completed the flow");
    // The tool round saw the call and its result.
    let last = p.last_request().unwrap();
    assert_eq!(last.kind, CallKind::ToolRound);
    let follow_up = &last.output.as_ref().unwrap().schema;
    assert!(
        follow_up["properties"]["action"].is_null(),
        "one action per answer"
    );
    assert_eq!(
        last.messages.last().unwrap().content.as_str(),
        "booked BK-5"
    );
}

/// An answer (tools in the answer) with `message`, `data` and the action to book the
/// Grand.
fn acting(message: &'static str, data: serde_json::Value) -> Answer {
    Answer::from_fn(move |_req| {
        Ok(agent_core::provider::ModelResponse {
            content: json!({
                "message": message,
                "data": data,
                "action": { "tool": "book_room", "with": { "hotel": "Grand" } },
            })
            .to_string(),
            tool_calls: Vec::new(),
            usage: agent_core::provider::Usage::default(),
            finish: agent_core::provider::FinishReason::Stop,
            id: None,
        })
    })
}

#[tokio::test]
async fn an_action_in_a_speculative_answer_runs_only_once_its_step_is_reached() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("booking")
        .required(["city", "guests"])
        .step(Step::model("ask_city").collect(["city"]))
        .step(Step::model("ask_guests").collect(["guests"]))
        .step(Step::model("confirm").tool(book_room()).end())
        .build()
        .unwrap();
    let a = booking(&p)
        .constrain("guests", json!({ "minimum": 1 }))
        .config(AgentConfig {
            tools_in_answer: true,
            ..AgentConfig::default()
        })
        .flow(flow)
        .build()
        .unwrap();
    // "0 guests" is refused: the speculative answer for `confirm` asked to book, but
    // the walk stays at `ask_guests`, so nothing is booked.
    p.respond(acting("Booked!", json!({ "city": "Lisbon", "guests": 0 })));
    p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
    let r = a.respond("s", "Lisbon, 0 guests, book it").await.unwrap();
    assert!(r.tool_calls.is_empty(), "{:?}", r.tool_calls);
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.message, "How many guests?");
}

/// An action the accepted answer carries runs at the step it was for, also where code
/// writes that step's question (`ask`): the step's call replays it.
#[tokio::test]
async fn an_accepted_answers_action_runs_at_a_step_whose_question_is_codes() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("booking")
        .required(["city"])
        .step(Step::model("ask_city").collect(["city"]))
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .ask("Shall I book a room in {city}?")
                .requires(["city"])
                .tool(book_room())
                .end(),
        )
        .build()
        .unwrap();
    let a = booking(&p)
        .config(AgentConfig {
            tools_in_answer: true,
            ..AgentConfig::default()
        })
        .flow(flow)
        .build()
        .unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(acting("Booking now.", json!({ "city": "Lisbon" })));
    p.tool_round(Answer::message("Booked: BK-5."));
    let r = a.respond("s", "Lisbon, book it").await.unwrap();
    assert_eq!(r.tool_calls.len(), 1, "{r:?}");
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    // What the tool did is told, not code's question for the step.
    assert_eq!(
        r.message,
        "Booked: BK-5. Is there anything else I can help with?"
    );
}

/// A reference-number flow: the booking's id has a pattern, then a step that needs it.
fn change_flow() -> Flow<Booking, Concierge> {
    Flow::builder("change")
        .title("Change a booking")
        .when("the user wants to change a booking")
        .step(
            Step::model("ask_ref")
                .prompt("Ask for the booking reference.")
                .collect(["booking_id"]),
        )
        .step(
            Step::model("change")
                .prompt("Ask what the user wants to change.")
                .requires(["booking_id"]),
        )
        .build()
        .unwrap()
}

fn with_ref_pattern(p: &ScriptedProvider, grounding: bool) -> Agent<Booking, Concierge> {
    booking(p)
        .constrain("booking_id", json!({ "pattern": "^BK-[0-9]+$" }))
        .config(AgentConfig {
            grounding,
            ..AgentConfig::default()
        })
        .flow(change_flow())
        .build()
        .unwrap()
}

/// The `data` properties of the last respond call's schema.
fn asked_to_read(p: &ScriptedProvider) -> Option<serde_json::Value> {
    let req = p.last_request().unwrap();
    req.output.unwrap().schema["properties"]
        .get("data")
        .cloned()
}

/// A field with a pattern that nothing the user said matches is not asked of the
/// model (no slot to invent it in, no step predicted that needs it); once a message
/// holds a match, it is read as usual.
#[tokio::test]
async fn a_pattern_field_is_read_only_once_the_user_said_a_match() {
    let p = ScriptedProvider::new();
    let a = with_ref_pattern(&p, true);
    // A model that writes the field anyway (a scripted one ignores the schema) is
    // still checked: nothing the user said states it.
    p.respond(
        Answer::message("Sure. What is your booking reference?")
            .with_data(json!({ "booking_id": "BK-1" })),
    );
    let r = a.respond("s", "I want to change my booking").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_ref"));
    assert_eq!(r.data.booking_id, None);
    assert_eq!(r.model_calls, 1);
    assert_eq!(asked_to_read(&p), None, "no `data` to fill");
    let sys = p.last_request().unwrap().instructions();
    assert!(!sys.contains("fill `data`"), "{sys}");
    assert!(
        sys.contains("Now, Step `ask_ref`") && !sys.contains("But if"),
        "{sys}"
    );

    // Spelled in lower case: a match (case aside); read and stored in one call.
    p.respond(
        Answer::message("Found it. What would you like to change?")
            .with_data(json!({ "booking_id": "BK-42" }))
            .claiming("change"),
    );
    let r = a.respond("s", "it's bk-42").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-42"));
    assert_eq!(r.step.as_deref(), Some("change"));
    assert_eq!(r.model_calls, 1);
    let data = asked_to_read(&p).unwrap();
    assert_eq!(
        data["properties"]["booking_id"]["anyOf"][0]["pattern"],
        "^BK-[0-9]+$"
    );
}

/// A match in an earlier message of the session keeps the field readable (values may
/// be cited from any user turn), and with grounding off the field is always offered.
#[tokio::test]
async fn a_pattern_field_stays_readable_after_a_match_and_without_grounding() {
    let p = ScriptedProvider::new();
    let a = with_ref_pattern(&p, true);
    p.default_answer(CallKind::Respond, Answer::message("Which reference?"));
    a.respond("s", "BK-7 is the one, but first a question")
        .await
        .unwrap();
    a.respond("s", "what are your hours?").await.unwrap();
    assert!(asked_to_read(&p).is_some());

    let p = ScriptedProvider::new();
    let a = with_ref_pattern(&p, false);
    p.default_answer(CallKind::Respond, Answer::message("Which reference?"));
    a.respond("s", "I want to change my booking").await.unwrap();
    assert!(asked_to_read(&p).is_some());
}
