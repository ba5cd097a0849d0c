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

/// The booking agent at its confirmation (Lisbon, July 1st, 2 guests).
async fn at_confirm(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let a = agent(p, vec![booking_flow(false)]);
    let data = json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2});
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(data.as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    a
}

#[tokio::test]
async fn a_call_with_an_argument_nobody_gave_does_not_run_and_the_model_asks() {
    let p = ScriptedProvider::new();
    let a = at_confirm(&p).await;
    p.respond(Answer::tool("book_room", json!({"hotel": "Grand"})));
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
    p.respond(Answer::tool("book_room", json!({"hotel": "Grand"})));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes, the Grand please").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));

    // A stored value (the city) is given too: it was said or confirmed when stored.
    let p = ScriptedProvider::new();
    let a = at_confirm(&p).await;
    p.respond(Answer::tool("book_room", json!({"hotel": "lisbon"})));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
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
    let a = agent_with(
        &p,
        vec![booking_flow(false)],
        AgentConfig {
            grounding: false,
            ..AgentConfig::default()
        },
    );
    let data = json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2});
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "confirm").data(data.as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    p.respond(Answer::tool("book_room", json!({"hotel": "Grand"})));
    p.tool_round(Answer::message("Booked."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert!(r.tool_calls[0].ok, "{:?}", r.tool_calls);
}
