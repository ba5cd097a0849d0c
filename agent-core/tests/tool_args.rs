//! Tool arguments are the user's to give, like field values: a call whose argument
//! neither the user's words show nor the stored data holds does not run, and the
//! model is told to ask for it; arguments a tool declares as derived (computed by
//! the model) are not checked.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A booking tool whose hotel is the user's to give.
fn book_named() -> Arc<dyn Tool<Booking, Concierge>> {
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// Hotel name
        hotel: String,
        /// City
        city: String,
    }
    FnTool::new(
        "book_room",
        "Book the room.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            let id = format!("BK-{}", a.hotel.len());
            Ok(ToolOutput::text(format!("booked {id} in {}", a.city))
                .data(json!({ "booking_id": id }).as_object().cloned().unwrap())
                .directive(Directive::complete()))
        },
    )
    .into_arc()
}

/// The booking agent at its confirmation (Lisbon, July 1st, 2 guests), the agent's
/// last message `asked`.
async fn at_confirm_after(
    p: &ScriptedProvider,
    config: AgentConfig,
    asked: &str,
) -> Agent<Booking, Concierge> {
    let flow = Flow::builder("booking")
        .required(["city", "check_in", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .tool(book_named())
                .end(),
        )
        .build()
        .unwrap();
    let a = agent_with(p, vec![flow], config);
    let data = json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2});
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(data.as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    // One turn renders the confirmation: its message is the agent's last.
    p.respond(Answer::message(asked));
    a.respond("s", "ok").await.unwrap();
    a
}

async fn at_confirm(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    at_confirm_after(
        p,
        AgentConfig::default(),
        "Shall I book a room in Lisbon for 2 on July 1st?",
    )
    .await
}

#[tokio::test]
async fn a_call_with_an_argument_nobody_gave_does_not_run_and_the_model_asks() {
    let p = ScriptedProvider::new();
    let a = at_confirm(&p).await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "Grand", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Which hotel would you like?"));
    let r = a.respond("s", "yes please, book it").await.unwrap();
    assert_eq!(r.data.booking_id, None, "nothing booked");
    assert_eq!(r.tool_calls.len(), 1);
    assert!(!r.tool_calls[0].ok);
    assert_eq!(
        r.tool_calls[0].output,
        "Not run: the user has not given `hotel` (Grand). Ask the user for it; do not say it was done."
    );
    assert_eq!(r.message, "Which hotel would you like?");
    // The model read the reason as the tool's result.
    let last = p.last_request().unwrap();
    assert!(
        last.messages.iter().any(|m| m
            .content
            .to_string()
            .starts_with("Not run: the user has not given `hotel`")),
        "{:?}",
        last.messages
    );
}

#[tokio::test]
async fn an_argument_the_user_named_or_the_data_holds_runs() {
    let p = ScriptedProvider::new();
    let a = at_confirm(&p).await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "Grand", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes, the Grand please").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
}

#[tokio::test]
async fn a_stored_value_is_given_under_its_own_name_only() {
    // The city argument holds the stored city: given. The same city written as the
    // hotel names no hotel.
    let p = ScriptedProvider::new();
    let a = at_confirm(&p).await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "lisbon", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Which hotel would you like?"));
    let r = a.respond("s", "yes please").await.unwrap();
    assert!(!r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(
        r.tool_calls[0].output,
        "Not run: the user has not given `hotel` (lisbon). Ask the user for it; do not say it was done."
    );
    assert_eq!(r.data.booking_id, None);
}

#[tokio::test]
async fn a_value_the_agent_showed_runs_on_the_users_yes() {
    let asked = "Shall I book the Grand Hotel in Lisbon for 2 on July 1st?";
    let p = ScriptedProvider::new();
    let a = at_confirm_after(&p, AgentConfig::default(), asked).await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "Grand Hotel", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-11"));

    // Shown, but the user did not agree to it: not given.
    let p = ScriptedProvider::new();
    let a = at_confirm_after(&p, AgentConfig::default(), asked).await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "Grand Hotel", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Which hotel would you like?"));
    p.default_answer(
        agent_core::provider::CallKind::Agreement,
        Answer::message("no"),
    );
    let r = a.respond("s", "what does it cost?").await.unwrap();
    assert!(r.tool_calls.iter().all(|c| !c.ok), "{:?}", r.tool_calls);
    assert_eq!(r.data.booking_id, None);
}

#[tokio::test]
async fn a_derived_argument_is_not_checked() {
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// Words to search for
        query: String,
    }
    let search: Arc<dyn Tool<Booking, Concierge>> = FnTool::new(
        "search_hotels",
        "Search hotels.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            Ok(ToolOutput::text(format!("3 hotels for {}", a.query)))
        },
    )
    .effect(Effect::Pure)
    .derived_args(["query"])
    .into_arc();
    let p = ScriptedProvider::new();
    let a = Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .tool(search)
        .build()
        .unwrap();
    p.respond(Answer::tool(
        "search_hotels",
        json!({"query": "quiet hotels near the beach"}),
    ));
    p.tool_round(Answer::message("I found 3 hotels."));
    let r = a.respond("s", "anything calm by the sea?").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(
        r.tool_calls[0].output,
        "3 hotels for quiet hotels near the beach"
    );
}

#[tokio::test]
async fn with_grounding_off_arguments_are_not_checked() {
    let p = ScriptedProvider::new();
    let config = AgentConfig {
        grounding: false,
        ..AgentConfig::default()
    };
    let a = at_confirm_after(&p, config, "Shall I book it?").await;
    p.respond(Answer::tool(
        "book_room",
        json!({"hotel": "Grand", "city": "Lisbon"}),
    ));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
}

#[tokio::test]
async fn an_optional_argument_nobody_gave_is_left_out_and_the_call_runs() {
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// The hotel, when the user named one
        hotel: Option<String>,
    }
    let book: Arc<dyn Tool<Booking, Concierge>> = FnTool::new(
        "book_room",
        "Book the room.",
        |_cx: ToolCx<Booking, Concierge>, a: Args| async move {
            Ok(ToolOutput::text(format!("booked at {:?}", a.hotel)))
        },
    )
    .into_arc();
    let flow = Flow::builder("booking")
        .step(
            Step::model("confirm")
                .prompt("Confirm the booking.")
                .tool(book)
                .end(),
        )
        .build()
        .unwrap();
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![flow]);
    let data = json!({"city": "Lisbon"});
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(data.as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Shall I book a room in Lisbon?"));
    a.respond("s", "ok").await.unwrap();
    // The city copied into the hotel: left out.
    p.respond(Answer::tool("book_room", json!({"hotel": "Lisbon"})));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(r.tool_calls[0].output, "booked at None");
    assert_eq!(r.tool_calls[0].arguments, json!({}));
}
