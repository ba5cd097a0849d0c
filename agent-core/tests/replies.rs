//! What the user reads of a model-written reply: the reply style told to the model;
//! on a model profiled as small, sentences said twice, sentences read back from the
//! instructions and a sentence cut by the length limit removed (a capable model's
//! reply is its own); code's verbatim replies and text already streamed live are left
//! as they are.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::policy::ModelProfile;
use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::{AgentConfig, DEFAULT_REPLY_STYLE};
use common::*;
use futures::StreamExt;
use serde_json::json;

fn configured(
    p: &ScriptedProvider,
    flow: Flow<Booking, Concierge>,
    config: AgentConfig,
) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(flow)
        .config(config)
        .build()
        .unwrap()
}

/// An agent with no flow on a model profiled as small: every reply is the model's.
fn small(p: &ScriptedProvider, config: AgentConfig) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone().with_profile(ModelProfile::Small))
        .config(config)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_reply_style_is_in_the_static_system_prompt_and_can_be_changed_or_removed() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let system = p.last_request().unwrap().system;
    assert!(system.contains(DEFAULT_REPLY_STYLE), "{system}");

    let p = ScriptedProvider::new();
    let own = "Answer in French.";
    let a = configured(
        &p,
        booking_flow(false),
        AgentConfig {
            reply_style: Some(own.into()),
            ..AgentConfig::default()
        },
    );
    p.respond(Answer::message("Quelle ville ?"));
    a.respond("s", "hi").await.unwrap();
    let system = p.last_request().unwrap().system;
    assert!(
        system.contains(own) && !system.contains(DEFAULT_REPLY_STYLE),
        "{system}"
    );

    let p = ScriptedProvider::new();
    let a = configured(
        &p,
        booking_flow(false),
        AgentConfig {
            reply_style: None,
            ..AgentConfig::default()
        },
    );
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    let system = p.last_request().unwrap().system;
    assert!(!system.contains(DEFAULT_REPLY_STYLE), "{system}");
}

#[tokio::test]
async fn a_sentence_said_twice_is_said_once() {
    let p = ScriptedProvider::new();
    let a = small(&p, AgentConfig::default());
    let twice =
        "Which city would you like? I'm here to help! Just tell me the city. I'm here to help!";
    p.respond(Answer::message(twice));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(
        r.message,
        "Which city would you like? I'm here to help! Just tell me the city."
    );
    // The history keeps what the user read.
    let p2 = p.clone();
    p.respond(Answer::message("Lisbon is lovely."));
    a.respond("s", "Lisbon").await.unwrap();
    let history = &p2.last_request().unwrap().messages;
    assert!(
        history
            .iter()
            .any(|m| m.content
                == "Which city would you like? I'm here to help! Just tell me the city."),
        "{history:?}"
    );
    // A capable model's reply is its own.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message(twice));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, twice);
}

#[tokio::test]
async fn the_instructions_read_back_are_not_what_the_user_reads() {
    let p = ScriptedProvider::new();
    let a = small(&p, AgentConfig::default());
    // The engine's own rule and a note about the user, read back by a small model.
    p.respond(Answer::message(
        "The user wants a hotel. Which city would you like? \
         Never say an action (a booking, a refund, a change) was made unless a tool made it.",
    ));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Which city would you like?");
    // Nothing but the instructions: kept rather than sending nothing.
    let rule =
        "Never say an action (a booking, a refund, a change) was made unless a tool made it.";
    p.respond(Answer::message(rule));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, rule);
}

#[tokio::test]
async fn a_sentence_cut_by_the_length_limit_is_left_out() {
    let p = ScriptedProvider::new();
    let text = "Which city would you like? I can also help you with restaurants and";
    let a = small(
        &p,
        AgentConfig {
            max_reply_chars: text.chars().count(),
            ..AgentConfig::default()
        },
    );
    p.respond(Answer::message(text));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Which city would you like?");

    // Under the limit, an unfinished sentence is the model's own and stays.
    let p = ScriptedProvider::new();
    let a = small(&p, AgentConfig::default());
    p.respond(Answer::message("Which city would you like? Tell me"));
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Which city would you like? Tell me");
}

#[tokio::test]
async fn a_verbatim_reply_is_never_changed() {
    let p = ScriptedProvider::new();
    let flow = Flow::builder("greet")
        .title("Greeting")
        .step(Step::reply("hello", "Hello! Hello! Welcome.").end())
        .build()
        .unwrap();
    let a = agent(&p, vec![flow]);
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Hello! Hello! Welcome.");
    assert_eq!(r.model_calls, 0);
}

#[tokio::test]
async fn a_reply_streamed_live_is_what_the_user_saw() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    let said = "Which city? I'm here to help! I'm here to help!";
    p.respond(Answer::message(said));
    let mut events = a.respond_stream("s", "hi");
    let mut streamed = String::new();
    let mut done = None;
    while let Some(e) = events.next().await {
        match e {
            Event::TextDelta(t) => streamed.push_str(&t),
            Event::Done(r) => done = Some(r),
            Event::Error(e) => panic!("turn failed: {e}"),
            _ => {}
        }
    }
    let r = done.unwrap();
    if streamed.is_empty() {
        // Held back until the turn settled: tidied like any reply.
        assert_eq!(r.message, "Which city? I'm here to help!");
    } else {
        assert_eq!(
            r.message, streamed,
            "the final message is the text streamed"
        );
    }
}

#[tokio::test]
async fn on_a_small_model_what_a_turn_stored_is_said_before_codes_question() {
    use agent_core::provider::Role;
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    // Two values land; the next step's question is code's, after them.
    p.respond(
        Answer::message("Great choice! When do you check in?")
            .with_data(json!({"city": "Lisbon", "guests": 2})),
    );
    let r = a.respond("s", "Lisbon, 2 guests").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    let asked = r
        .message
        .strip_prefix("Noted: Lisbon, 2 guests. ")
        .unwrap_or_else(|| panic!("{}", r.message));
    // The history the model reads keeps the question, not the line about the values.
    let s = a.session("s").await.unwrap().unwrap();
    let last = s.history.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.content.as_str(), asked);

    // A text by itself (this fixture's day is a plain string; a field with a date
    // schema is said as a summary says it, "Wednesday 1 July").
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?").with_data(json!({"city": "Lisbon"})));
    a.respond("s", "A hotel in Lisbon").await.unwrap();
    p.respond(Answer::message("How many?").with_data(json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert!(
        r.message.starts_with("Noted: 2026-07-01. "),
        "{}",
        r.message
    );

    // A value the question shows already is not said twice, and a number is matched
    // as a word ("2" is not said by "12").
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    let flow = Flow::builder("booking")
        .title("Hotel booking")
        .when("the user wants to book a hotel room")
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .ask("How many guests in {city} (1 to 12)?")
                .collect(["guests"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask the date.")
                .collect(["check_in"]),
        )
        .build()
        .unwrap();
    let a = agent(&p, vec![flow]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(Answer::message("How many?").with_data(json!({"city": "Lisbon"})));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, "How many guests in Lisbon (1 to 12)?");
    p.respond(Answer::message("When?").with_data(json!({"guests": 2})));
    let r = a.respond("s", "2").await.unwrap();
    assert!(r.message.starts_with("Noted: 2 guests. "), "{}", r.message);

    // A capable model writes its own reply.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "I need a hotel").await.unwrap();
    p.respond(Answer::message("When do you check in?").with_data(json!({"city": "Lisbon"})));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.message, "When do you check in?");
}

#[tokio::test]
async fn on_a_small_model_a_reply_that_says_the_last_one_again_is_rendered_again_told_so() {
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    let a = agent(&p, vec![]);
    p.respond(Answer::message("Done: a room in Lisbon, 2 guests."));
    a.respond("s", "thanks").await.unwrap();
    // The draft copies the last message: one more rendering, told so.
    p.respond(Answer::message("Done: a room in Lisbon, 2 guests."));
    p.respond(Answer::message("Yes, there is a gym on the first floor."));
    let r = a.respond("s", "Is there a gym?").await.unwrap();
    assert_eq!(r.message, "Yes, there is a gym on the first floor.");
    assert_eq!(r.model_calls, 2);
    let told = p.last_request().unwrap();
    let text = format!("{}{:?}", told.system, told.messages);
    assert!(text.contains("said your previous message again"), "{text}");
    // A copy again is left as it is (one more rendering at most).
    p.respond(Answer::message("Yes, there is a gym on the first floor."));
    p.respond(Answer::message("Yes, there is a gym on the first floor."));
    let r = a.respond("s", "And a pool?").await.unwrap();
    assert_eq!(r.model_calls, 2);
    assert_eq!(r.message, "Yes, there is a gym on the first floor.");

    // A capable model's reply is its own.
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![]);
    p.respond(Answer::message("Done: a room in Lisbon, 2 guests."));
    a.respond("s", "thanks").await.unwrap();
    p.respond(Answer::message("Done: a room in Lisbon, 2 guests."));
    let r = a.respond("s", "Is there a gym?").await.unwrap();
    assert_eq!(r.model_calls, 1);
}
