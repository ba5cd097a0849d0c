//! Prompt composition: persona, goal, scoped instructions (must / should / never, with
//! `when` and `if`), glossary, knowledge, step prompt and collected data reach the
//! model; conditional pieces appear only when they apply.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, Conversation, ScriptedProvider};
use common::*;
use serde_json::json;

fn agent_with_prompt_parts(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let flow = Flow::builder("booking")
        .title("Hotel booking")
        .description("Book one hotel room.")
        .instruction(Instruction::must("confirm the city before booking"))
        .instruction(
            Instruction::should("mention the gold lounge")
                .if_(|cx: &Cx<'_, Booking, Concierge>| cx.context().tier == "gold"),
        )
        .step(
            Step::model("ask_city")
                .prompt("Ask which city the user wants to stay in.")
                .collect(["city"])
                .instruction(
                    Instruction::never("suggest a city yourself").when("the user is undecided"),
                ),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"]),
        )
        .build()
        .unwrap();
    Agent::builder()
        .name("Concierge")
        .persona("A friendly hotel concierge.")
        .goal("Book hotel rooms.")
        .instruction(Instruction::never("invent prices"))
        .term("BK", "a booking confirmation number")
        .knowledge("Check-in is from 3 pm.")
        .provider(p.clone())
        .context(Concierge {
            tier: "silver".into(),
        })
        .flow(flow)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_system_prompt_carries_every_static_section_and_the_step_prompt() {
    let p = ScriptedProvider::new();
    let a = agent_with_prompt_parts(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let sys = p.last_request().unwrap().instructions();
    for needle in [
        "You are Concierge. A friendly hotel concierge.",
        "Goal: Book hotel rooms.",
        "- NEVER invent prices",
        "- BK: a booking confirmation number",
        "- Check-in is from 3 pm.",
        "Current task: Hotel booking. Book one hotel room.",
        "- MUST confirm the city before booking",
        "Step `ask_city`: Ask which city the user wants to stay in.\n",
        "- When the user is undecided: NEVER suggest a city yourself",
    ] {
        assert!(sys.contains(needle), "missing {needle:?} in:\n{sys}");
    }
}

#[tokio::test]
async fn an_if_instruction_appears_only_while_its_predicate_holds() {
    let p = ScriptedProvider::new();
    let a = agent_with_prompt_parts(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    assert!(
        !p.last_request()
            .unwrap()
            .instructions()
            .contains("gold lounge")
    );

    a.dispatch(
        "s",
        Directive::new().context(json!({"tier": "gold"}).as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    // The user did not answer: the model re-asks and claims the awaiting step.
    p.respond(Answer::message("Which city?").claiming("ask_city"));
    let r = a.respond("s", "hello again").await.unwrap();
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_city"), 1));
    assert!(
        p.last_request()
            .unwrap()
            .instructions()
            .contains("- SHOULD mention the gold lounge")
    );
}

#[tokio::test]
async fn collected_data_and_history_reach_the_model() {
    let p = ScriptedProvider::new();
    let a = agent_with_prompt_parts(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Which date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.respond("s", "Lisbon").await.unwrap();
    p.respond(Answer::message("Noted").with_data(json!({"check_in": "2026-07-01"})));
    a.respond("s", "July 1").await.unwrap();
    let req = p.last_request().unwrap();
    assert!(
        req.instructions().contains("city = Lisbon"),
        "{}",
        req.system
    );
    let texts: Vec<&str> = req.messages.iter().map(|m| m.authored()).collect();
    assert_eq!(
        texts,
        ["hi", "Which city?", "Lisbon", "Which date?", "July 1"]
    );
    // Known values and this task's fields; not the empty fields other parts of the
    // agent fill (a booking id a tool writes), which small models list as "null".
    let state = req.instructions();
    let line = state
        .lines()
        .find(|l| l.starts_with("Collected so far"))
        .unwrap();
    assert!(line.contains("city = Lisbon"), "{line}");
    assert!(line.contains("Not given yet: check_in"), "{line}");
    assert!(!line.contains("booking_id"), "{line}");
    assert!(!line.contains("feedback"), "{line}");
}

#[tokio::test]
async fn the_clock_and_the_state_come_after_the_history_and_the_schema_stays_put() {
    let p = ScriptedProvider::new();
    let a = agent_with_prompt_parts(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(
        Answer::message("Which date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    a.respond("s", "Lisbon").await.unwrap();
    let reqs = p.requests();
    let (first, second) = (&reqs[0], &reqs[reqs.len() - 1]);
    // The system prompt is the same bytes at every step (the date in it changes once
    // a day); the step and the collected data are per-call state, after the history.
    assert_eq!(first.system, second.system);
    assert!(first.system.contains("Today is "), "{}", first.system);
    let last = second.messages.last().unwrap().content.to_string();
    let (_, state) = last.split_once(agent_core::provider::STATE_MARKER).unwrap();
    assert!(
        !state.contains("Today is"),
        "a small model echoes it: {state}"
    );
    assert!(state.contains("Collected so far"), "{state}");
    assert!(
        second.system.contains("Fields of `data`"),
        "{}",
        second.system
    );
    // One answer schema for the flow, whichever step the call is for.
    let schema =
        |r: &agent_core::provider::ModelRequest| r.output.as_ref().map(|o| o.schema.clone());
    assert_eq!(schema(first), schema(second));
    let s = schema(second).unwrap();
    assert!(
        s["properties"].get("step").is_none(),
        "no per-step enum: {s}"
    );
    // What the reply asks for, one label per model step of the flow (its fields, or
    // its id when it collects nothing), the same list whichever step the call is for.
    assert_eq!(
        s["properties"]["reply_asks_for"]["enum"],
        serde_json::json!(["city", "check_in"]),
        "{s}"
    );
    assert!(
        s["properties"]["data"]["properties"]["check_in"].is_object(),
        "{s}"
    );
}

#[tokio::test]
async fn the_respond_call_sends_a_schema_with_only_the_fields_the_flow_collects() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let req = p.last_request().unwrap();
    assert_eq!(req.kind, CallKind::Respond);
    let schema = &req.output.unwrap().schema;
    let data = &schema["properties"]["data"];
    let data_props = data["properties"].as_object().unwrap();
    let mut keys: Vec<&str> = data_props.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["check_in", "city", "guests"]);
    // Every field is required (a constrained decoder writes keys in schema order, so
    // an optional earlier key could never follow a later one) and may be null.
    let mut required: Vec<&str> = data["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, keys);
    let city = &data_props["city"]["anyOf"];
    assert_eq!(city[1]["type"], "null");
    assert_eq!(
        city[0]["description"], "City the guest wants to stay in",
        "field docs become extraction hints"
    );
    assert_eq!(city[0]["type"], "string");
    assert!(schema["properties"]["message"]["maxLength"].is_number());
}

#[tokio::test]
async fn the_conversation_helper_asserts_steps_calls_and_data() {
    let p = ScriptedProvider::new();
    let conv = Conversation::new(agent(&p, vec![booking_flow(false)]), p.clone());
    conv.provider().respond(Answer::message("Which city?"));
    conv.say("I need a room")
        .await
        .unwrap()
        .expect_step("ask_city")
        .expect_calls(1);
    conv.provider().respond(
        Answer::message("When?")
            .with_data(json!({"city": "Porto"}))
            .claiming("ask_date"),
    );
    conv.say("Porto")
        .await
        .unwrap()
        .expect_step("ask_date")
        .expect_calls(1)
        .expect_stopped(StoppedReason::NeedsInput)
        .expect_data(|d| d.city.as_deref() == Some("Porto"))
        .expect_message("When?");
}

/// A front desk that hands over to the booking flow, or else asks again.
fn front_desk() -> Flow<Booking, Concierge> {
    Flow::builder("desk")
        .title("Front desk")
        .step(
            Step::model("ask_need")
                .prompt("Find out what the user needs.")
                .branch(Branch::to_flow("booking").when("the user wants a hotel room"))
                .branch(Branch::to_step("ask_need")),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_front_desk_with_a_fallback_to_itself_stays_when_no_branch_holds() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![front_desk(), booking_flow(false)]);
    a.dispatch("s", Directive::go_to("desk")).await.unwrap();
    p.respond(Answer::message("How can I help?"));
    a.respond("s", "hi").await.unwrap();
    p.respond(Answer::message("Hello again! What do you need?"));
    let r = a.respond("s", "Hi again, anyone there?").await.unwrap();
    assert_eq!(r.message, "Hello again! What do you need?");
    assert_eq!(r.flow.as_deref(), Some("desk"));
    assert_eq!(r.step.as_deref(), Some("ask_need"));
    assert_eq!(r.model_calls, 1);
}

/// Two steps that collect the same field are told apart by their ids in the labels a
/// reply gives for what it asks.
#[tokio::test]
async fn steps_with_the_same_fields_are_labelled_by_their_ids() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("booking")
        .title("Hotel booking")
        .step(Step::model("ask_city").collect(["city"]))
        .step(Step::model("recheck_city").collect(["city"]))
        .step(Step::model("ask_date").collect(["check_in", "guests"]))
        .step(Step::model("wrap_up").prompt("Thank the user."))
        .build()
        .unwrap();
    let a = agent(&p, vec![flow]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let s = p.last_request().unwrap().output.unwrap().schema;
    assert_eq!(
        s["properties"]["reply_asks_for"]["enum"],
        serde_json::json!(["ask_city", "recheck_city", "check_in and guests", "wrap_up"]),
        "{s}"
    );
}

#[tokio::test]
async fn the_instruction_to_fill_data_comes_after_the_step_it_might_answer() {
    let p = ScriptedProvider::new();
    let a = agent_with_prompt_parts(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "Lisbon on 2026-07-01").await.unwrap();
    // Read after "Ask for ...", it is the last thing before `data` is written: read
    // before, the step's instruction told a small model the value was missing.
    let state = p.last_request().unwrap().instructions();
    let step = state.find("Now, Step").expect("the step's instruction");
    let fill = state
        .find("Before replying, fill `data`")
        .expect("the instruction to fill data");
    assert!(step < fill, "{state}");
}

/// A field whose doc comment is wrapped over two lines.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
struct Ticket {
    /// The device the problem is on, as the user names it (a phone, tablet or computer
    /// such as a Pixel 8), not the app
    device: Option<String>,
}

#[tokio::test]
async fn a_wrapped_field_doc_is_one_line_of_the_field_list() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("support")
        .step(Step::model("ask_device").collect(["device"]))
        .build()
        .unwrap();
    let a: Agent<Ticket, ()> = Agent::builder()
        .name("Desk")
        .provider(p.clone())
        .flow(flow)
        .build()
        .unwrap();
    p.respond(Answer::message("Which device?"));
    a.respond("s", "hi").await.unwrap();
    let system = p.last_request().unwrap().system;
    assert!(
        system.contains(
            "- device: The device the problem is on, as the user names it (a phone, tablet or computer such as a Pixel 8), not the app\n"
        ),
        "{system}"
    );
}
