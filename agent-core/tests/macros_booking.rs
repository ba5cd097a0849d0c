//! The booking conversation of `tests/booking.rs`, written with the macros: same
//! scripted provider, same assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use serde_json::json;

/// What the concierge collects.
#[data]
#[derive(PartialEq)]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: String,
    /// Check-in date, ISO 8601
    pub check_in: String,
    /// Number of guests, 1 to 12
    pub guests: u8,
    /// Confirmation id
    pub booking_id: String,
    /// Free-text feedback
    pub feedback: String,
}

/// The session context.
#[context]
#[derive(PartialEq)]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}

/// Book the room.
#[tool]
async fn book_room(
    _cx: ToolCx<Booking, Concierge>,
    /// Hotel name (the model picks one in the city)
    #[arg(derived)]
    hotel: String,
) -> Result<ToolOutput, ToolError> {
    let id = format!("BK-{}", hotel.len());
    Ok(ToolOutput::text(format!("booked {id}"))
        .data(Booking::patch().booking_id(id))
        .directive(Directive::complete()))
}

/// ask_city → ask_date → ask_guests → route (auto) → confirm (end) | large_group (reply, end)
#[flow(title = "Hotel booking", when = "the user wants to book a hotel room",
       data = Booking, context = Concierge, required(city, check_in, guests))]
mod booking {
    #[step(prompt = "Ask which city the user wants to stay in.", collect(city))]
    fn ask_city() {}

    #[step(
        prompt = "Ask for the check-in date.",
        collect(check_in),
        requires(city)
    )]
    fn ask_date() {}

    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    #[step(auto, requires(city, check_in, guests), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm the booking.", tools(book_room))]
    fn confirm() {}

    #[step(end, reply = "A specialist will call you about groups.")]
    fn large_group() {}
}

/// The same flow with `when` branches on the confirmation step (a second `booking`
/// module, so the flow id is the same as in the engine test).
mod branching {
    use super::*;

    #[flow(title = "Hotel booking", when = "the user wants to book a hotel room",
           data = Booking, context = Concierge, required(city, check_in, guests))]
    pub mod booking {
        #[step(prompt = "Ask which city the user wants to stay in.", collect(city))]
        fn ask_city() {}

        #[step(
            prompt = "Ask for the check-in date.",
            collect(check_in),
            requires(city)
        )]
        fn ask_date() {}

        #[step(prompt = "Ask how many guests.", collect(guests))]
        fn ask_guests() {}

        #[step(auto, requires(city, check_in, guests), branches(
            if |b| b.guests > 8 => large_group,
            else => confirm,
        ))]
        fn route() {}

        #[step(end, prompt = "Confirm the booking.", tools(book_room), branches(
            when "the user wants another date" => ask_date,
            when "the user wants to leave feedback" => FeedbackFlow,
        ))]
        fn confirm() {}

        #[step(end, reply = "A specialist will call you about groups.")]
        fn large_group() {}
    }
}

#[flow(title = "Feedback", when = "the user wants to leave feedback",
       data = Booking, context = Concierge)]
mod feedback {
    #[step(prompt = "Ask how the booking went.", collect(feedback))]
    fn ask_feedback() {}
}

fn agent(p: &ScriptedProvider, flows: Vec<Flow<Booking, Concierge>>) -> Agent<Booking, Concierge> {
    let mut b = Agent::builder().name("Concierge").provider(p.clone());
    for f in flows {
        b = b.flow(f);
    }
    b.build().expect("agent is valid")
}

fn booking_flow(confirm_branches: bool) -> Flow<Booking, Concierge> {
    if confirm_branches {
        branching::booking::flow().expect("booking flow is valid")
    } else {
        booking::flow().expect("booking flow is valid")
    }
}

fn feedback_flow() -> Flow<Booking, Concierge> {
    feedback::flow().expect("feedback flow is valid")
}

/// The data of a guest who gave everything (typed patch, no string keys).
fn everything() -> BookingPatch {
    Booking::patch()
        .city("Lisbon")
        .check_in("2026-07-01")
        .guests(2)
}

#[tokio::test]
async fn one_field_per_turn_costs_exactly_one_model_call_per_turn() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);

    p.respond(Answer::message("Which city?"));
    let r = a.respond("s", "I want to book a hotel").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    p.respond(
        Answer::message("Check-in date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_date"), 1));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.message, "Check-in date?");

    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .claiming("ask_guests"),
    );
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_guests"), 1));

    p.respond(
        Answer::message("Shall I book?")
            .with_data(json!({"guests": 2}))
            .claiming("confirm"),
    );
    let r = a.respond("s", "two of us").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("confirm"), 1));
    let steps: Vec<&str> = r.executed_steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, ["route", "confirm"]);
    assert_eq!(
        p.calls_of(CallKind::Classify) + p.calls_of(CallKind::Route),
        0
    );
}

#[tokio::test]
async fn all_data_in_one_message_lands_on_confirm_in_at_most_two_calls() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("Which city?")
            .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})),
    );
    p.respond(Answer::message("Lisbon, July 1, 2 guests. Shall I book?"));
    let r = a.respond("s", "Lisbon, July 1, two of us").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    assert!(r.model_calls <= 2, "{} calls", r.model_calls);
    assert_eq!(r.message, "Lisbon, July 1, 2 guests. Shall I book?");
    let steps: Vec<&str> = r.executed_steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(
        steps,
        ["ask_city", "ask_date", "ask_guests", "route", "confirm"]
    );
}

#[tokio::test]
async fn confirm_turn_books_through_the_tool_and_completes_the_flow() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(true), feedback_flow()]);
    a.dispatch(
        "s",
        Directive::go_to_step(branching::booking::Step::confirm)
            .data(everything())
            .into(),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Shall I book?"));
    let r = a.respond("s", "hello").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));

    // The confirm step's `when` branches are judged inside the respond call (no
    // classifier call), the tool books and completes the flow.
    p.respond(Answer::tool("book_room", json!({"hotel": "Grand"})));
    p.tool_round(Answer::message("Booked! Your id is BK-5."));
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "booking".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(r.data.booking_id.as_deref(), Some("BK-5"));
    assert_eq!(
        r.message,
        "Booked! Your id is BK-5. Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 2, "respond + tool round");
    assert_eq!(p.calls_of(CallKind::Classify), 0);
    assert!(r.tool_calls[0].ok);
}

#[tokio::test]
async fn a_when_branch_judged_true_redirects_and_rerenders() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(true), feedback_flow()]);
    a.dispatch(
        "s",
        Directive::go_to_step(branching::booking::Step::confirm)
            .data(everything())
            .into(),
    )
    .await
    .unwrap();
    p.respond(Answer::message("Shall I book?"));
    a.respond("s", "hi").await.unwrap();

    p.respond(Answer::message("Booking now").judging("the user wants another date", true));
    p.respond(Answer::message("Which date instead?"));
    let r = a.respond("s", "actually, another date").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.message, "Which date instead?");
    assert_eq!(r.model_calls, 2);
}

#[tokio::test]
async fn large_groups_get_the_verbatim_reply_with_no_extra_call() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(
        Answer::message("?")
            .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 10})),
    );
    let r = a.respond("s", "Lisbon July 1 for 10").await.unwrap();
    assert_eq!(r.message, "A specialist will call you about groups.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.model_calls, 1);
    assert_eq!(r.flow, None, "a terminal reply step completes the flow");
}

#[tokio::test]
async fn multi_flow_agents_route_once_then_stay_in_the_chosen_flow() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("feedback"));
    p.respond(Answer::message("How did it go?"));
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("feedback"), Some("ask_feedback"))
    );
    assert_eq!(r.model_calls, 2, "route + respond");
    let route = &p.requests()[0];
    assert_eq!(route.kind, CallKind::Route);
    assert!(route.instructions().contains("booking") && route.instructions().contains("feedback"));

    // Inside a flow no routing call is made; the respond call offers a switch instead.
    p.respond(Answer::message("Thanks!").with_data(json!({"feedback": "great"})));
    let r = a.respond("s", "it was great").await.unwrap();
    assert_eq!(r.model_calls, 1);
    assert_eq!(p.calls_of(CallKind::Route), 1);
    let schema = &p.last_request().unwrap().output.unwrap().schema;
    // One yes/no per other flow, before the message.
    assert_eq!(
        schema["properties"]["handoff"]["properties"]["booking"],
        json!({ "type": "boolean" })
    );
    assert_eq!(
        schema["properties"]["handoff"]["required"],
        json!(["booking"])
    );
}

#[tokio::test]
async fn the_model_can_switch_flows_from_the_respond_call_and_the_new_flow_speaks() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.route(Answer::route("booking"));
    p.respond(Answer::message("Which city?"));
    a.respond("s", "book a room").await.unwrap();

    p.respond(Answer::message("Which date?").switching_to("feedback"));
    p.respond(Answer::message("How was your last stay?"));
    let r = a
        .respond("s", "actually I want to leave feedback")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.message, "How was your last stay?");
    assert_eq!(
        r.transitions.last().map(|t| t.to.as_str()),
        Some("feedback")
    );
    assert!(r.directive_chain.iter().any(|e| e.source
        == agent_core::response::DirectiveSource::Command("start_flow feedback".into())));
}

#[tokio::test]
async fn when_routing_finds_no_flow_the_agent_replies_without_one() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false), feedback_flow()]);
    p.push(
        CallKind::Route,
        Answer::verdicts(Vec::<(String, bool)>::new()),
    );
    p.respond(Answer::message("I can book hotels or take feedback."));
    let r = a.respond("s", "what's the weather?").await.unwrap();
    assert_eq!(r.flow, None);
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.message, "I can book hotels or take feedback.");
    assert!(
        p.last_request().unwrap().output.is_none(),
        "a plain reply, no schema"
    );
}

#[test]
fn two_flows_with_the_same_id_are_rejected_when_the_agent_is_built() {
    // `booking` and `branching::booking` are different modules with the same id.
    let err = Agent::<Booking, Concierge>::builder()
        .provider(ScriptedProvider::new())
        .flow(booking::flow().unwrap())
        .flow(branching::booking::flow().unwrap())
        .build()
        .err()
        .expect("duplicate flow ids");
    assert!(
        err.to_string().contains("duplicate flow id `booking`"),
        "{err}"
    );
}

#[test]
fn flow_types_steps_and_diagrams_are_generated() {
    assert_eq!(<BookingFlow as FlowDef>::ID, "booking");
    assert_eq!(<FeedbackFlow as FlowDef>::ID, "feedback");
    assert_eq!(
        booking::Step::ALL.map(booking::Step::id),
        [
            "ask_city",
            "ask_date",
            "ask_guests",
            "route",
            "confirm",
            "large_group"
        ]
    );
    let d = branching::booking::diagram();
    assert!(
        d.contains("s_confirm -->|\"the user wants another date\"| s_ask_date"),
        "{d}"
    );
    assert!(d.contains("f_FeedbackFlow[[\"FeedbackFlow\"]]"), "{d}");
}
