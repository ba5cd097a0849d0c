//! Corrections: a value the user changes is read at every step, even once everything is
//! collected, and the steps that depend on it ask again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

fn patch(v: serde_json::Value) -> Patch {
    v.as_object().cloned().unwrap()
}

fn at_confirm() -> Directive {
    Directive::go_to_step_in("booking", "confirm").data(patch(
        json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2 }),
    ))
}

#[tokio::test]
async fn a_correction_at_the_last_step_is_read_and_stored() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    a.dispatch("s", at_confirm()).await.unwrap();
    p.respond(
        Answer::message("Porto then, from July 1st for two. Shall I book?")
            .with_data(json!({ "city": "Porto" })),
    );
    let r = a.respond("s", "Actually, make it Porto").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.data.guests, Some(2), "the other values stay");
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.model_calls, 1, "read in the one call of the turn");
    // The call that read it offered the extraction schema.
    let req = p.last_request().unwrap();
    let schema = &req.output.as_ref().unwrap().schema;
    assert!(schema["properties"]["data"]["properties"]["city"].is_object());
}

#[tokio::test]
async fn an_unsaid_change_at_the_last_step_is_not_stored() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    a.dispatch("s", at_confirm()).await.unwrap();
    p.respond(Answer::message("Shall I book Madrid?").with_data(json!({ "city": "Madrid" })));
    p.default_answer(CallKind::Respond, Answer::message("Shall I book Lisbon?"));
    let r = a.respond("s", "What's the weather like?").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.ungrounded.len(), 1);
}

fn dependent_flow() -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .required(["city", "check_in", "guests"])
        .step(Step::model("ask_city").collect(["city"]))
        .step(
            Step::model("ask_date")
                .collect(["check_in"])
                .depends_on(["city"]),
        )
        .step(Step::model("ask_guests").collect(["guests"]))
        .step(Step::model("confirm").end())
        .build()
        .unwrap()
}

#[tokio::test]
async fn correcting_a_field_asks_again_for_the_steps_that_depend_on_it() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![dependent_flow()]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "ask_guests")
            .data(patch(json!({ "city": "Lisbon", "check_in": "2026-07-01" }))),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Porto. How many guests?").with_data(json!({ "city": "Porto" })));
    p.default_answer(
        CallKind::Respond,
        Answer::message("Porto it is. Which check-in date?"),
    );
    let r = a.respond("s", "Actually Porto, not Lisbon").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.data.check_in, None, "the date depended on the city");
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.message, "Porto it is. Which check-in date?");

    // A first value is not a correction: nothing is cleared.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![dependent_flow()]);
    a.dispatch(
        "s",
        Directive::go_to_step_in("booking", "ask_guests")
            .data(patch(json!({ "check_in": "2026-07-01" }))),
    )
    .await
    .unwrap();
    p.respond(Answer::message("How many guests?").with_data(json!({ "city": "Porto" })));
    p.default_answer(CallKind::Respond, Answer::message("How many guests?"));
    let r = a.respond("s", "Porto").await.unwrap();
    assert_eq!(r.data.check_in.as_deref(), Some("2026-07-01"));
}

#[test]
fn depends_on_is_checked_when_the_flow_is_built() {
    let err = Flow::<Booking, Concierge>::builder("booking")
        .step(Step::model("ask_city").collect(["city"]))
        .step(
            Step::model("ask_date")
                .collect(["check_in"])
                .depends_on(["cty"]),
        )
        .step(Step::model("chat").depends_on(["city"]))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cty"), "{err}");
    assert!(
        err.contains("`depends_on` on a step that collects nothing"),
        "{err}"
    );
}

/// ask_city -> confirm (book_room completes the flow), with a correction policy.
fn short_booking(policy: agent_core::flow::Corrections) -> Flow<Booking, Concierge> {
    Flow::builder("booking")
        .title("hotel booking")
        .required(["city"])
        .corrections(policy)
        .step(Step::model("ask_city").collect(["city"]))
        .step(Step::model("confirm").tool(book_room()).end())
        .build()
        .unwrap()
}

/// Book in Lisbon: the flow completes on turn 2.
async fn booked(p: &ScriptedProvider, a: &Agent<Booking, Concierge>) {
    p.respond(
        Answer::message("Lisbon. Shall I book?")
            .with_data(json!({ "city": "Lisbon" }))
            .claiming("confirm"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.model_calls, 1, "the first step is read ahead");
    assert_eq!(r.step.as_deref(), Some("confirm"));
    p.respond(Answer::tool("book_room", json!({ "hotel": "Grand" })));
    p.tool_round(Answer::message("Booked: BK-5."));
    let r = a.respond("s", "Yes, book it").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(r.flow, None);
}

#[tokio::test]
async fn a_correction_after_completion_is_refused_with_a_reply_that_says_so() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![short_booking(Default::default())]);
    booked(&p, &a).await;
    p.respond(
        Answer::message("Done, your booking is now in Porto!")
            .with_data(json!({ "city": "Porto" })),
    );
    p.respond(Answer::message(
        "Your booking is already made and stays in Lisbon.",
    ));
    let r = a.respond("s", "Actually, make it Porto").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"), "nothing changed");
    assert_eq!(
        r.message,
        "Your booking is already made and stays in Lisbon."
    );
    assert_eq!(
        r.rejected_data,
        ["city Porto not applied: hotel booking is complete"]
    );
    assert_eq!(r.model_calls, 2);
    let reqs = p.requests();
    // The first call read the message for corrections, with the completed values.
    let first = &reqs[reqs.len() - 2];
    let schema = &first.output.as_ref().unwrap().schema;
    assert!(schema["properties"]["data"]["properties"]["city"].is_object());
    assert!(
        first
            .instructions()
            .contains("The user's hotel booking is complete, with {\"city\":\"Lisbon\"}"),
        "{}",
        first.instructions()
    );
    // The second says why nothing changed, and reads nothing more.
    let last = reqs.last().unwrap();
    assert!(last.output.is_none());
    assert!(
        last.instructions().contains(
            "The hotel booking is already complete and cannot be changed: city stays Lisbon"
        ),
        "{}",
        last.instructions()
    );
}

#[tokio::test]
async fn a_correction_after_completion_reopens_the_flow_when_configured() {
    let p = ScriptedProvider::new();
    let a = agent(
        &p,
        vec![short_booking(agent_core::flow::Corrections::Reopen)],
    );
    booked(&p, &a).await;
    p.respond(Answer::message("Sure!").with_data(json!({ "city": "Porto" })));
    p.respond(Answer::message("Porto it is. Shall I book it?"));
    let r = a.respond("s", "Actually, make it Porto").await.unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
    assert_eq!(r.flow.as_deref(), Some("booking"));
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert_eq!(r.message, "Porto it is. Shall I book it?");
    assert!(r.rejected_data.is_empty());
    // Booking again runs the tool again, with the new city in the data.
    p.respond(Answer::tool("book_room", json!({ "hotel": "Porto Grand" })));
    p.tool_round(Answer::message("Booked: BK-11."));
    let r = a.respond("s", "Yes").await.unwrap();
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-11"));
    assert_eq!(r.data.city.as_deref(), Some("Porto"));
}

#[tokio::test]
async fn no_change_and_the_end_of_the_window_cost_nothing() {
    let p = ScriptedProvider::new();
    let a = Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .config(AgentConfig {
            correction_window: 2,
            ..AgentConfig::default()
        })
        .flow(short_booking(Default::default()))
        .build()
        .unwrap();
    booked(&p, &a).await;
    // Within the window, a message that changes nothing: one call, nothing refused.
    p.respond(Answer::message("You're welcome!").with_data(json!({ "city": "Lisbon" })));
    let r = a
        .respond("s", "Thanks, Lisbon will be lovely")
        .await
        .unwrap();
    assert_eq!(r.model_calls, 1);
    assert!(r.rejected_data.is_empty());
    p.respond(Answer::message("Bye!").with_data(json!({ "city": null })));
    a.respond("s", "Bye").await.unwrap();
    assert!(p.last_request().unwrap().output.is_some(), "turn 2 of 2");
    // Past the window: a plain reply, no extraction.
    p.respond(Answer::message("Hello again!"));
    a.respond("s", "Hello").await.unwrap();
    assert!(p.last_request().unwrap().output.is_none());
}

mod typed {
    use agent_core::testing::{Answer, ScriptedProvider};
    use agent_core::typed::prelude::*;
    use serde_json::json;

    #[data]
    pub struct Order {
        /// Pizza
        pub pizza: String,
        /// Order number
        pub order_id: String,
    }

    /// Place the order.
    #[tool]
    async fn place(_cx: ToolCx<Order, ()>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("placed")
            .data(Order::patch().order_id("A1"))
            .directive(Directive::complete()))
    }

    #[flow(title = "pizza order", data = Order, required(pizza), corrections = reopen)]
    mod order {
        #[step(prompt = "Ask which pizza.", collect(pizza))]
        fn ask() {}

        #[step(end, prompt = "Confirm.", tools(place))]
        fn confirm() {}
    }

    #[tokio::test]
    async fn corrections_reopen_is_a_flow_key() {
        let p = ScriptedProvider::new();
        let a = Agent::<Order, ()>::builder()
            .provider(p.clone())
            .flow(order::flow())
            .tool(place)
            .build()
            .unwrap();
        p.respond(
            Answer::message("Margherita?")
                .with_data(json!({ "pizza": "margherita" }))
                .claiming("confirm"),
        );
        a.respond("s", "a margherita").await.unwrap();
        p.respond(Answer::tool("place", json!({})));
        p.tool_round(Answer::message("Ordered."));
        assert_eq!(a.respond("s", "yes").await.unwrap().flow, None);
        p.respond(Answer::message("Sure.").with_data(json!({ "pizza": "diavola" })));
        p.respond(Answer::message("Diavola then. Order it?"));
        let r = a.respond("s", "make it a diavola").await.unwrap();
        assert_eq!(r.flow.as_deref(), Some("order"));
        assert_eq!(r.data.pizza.as_deref(), Some("diavola"));
    }
}
