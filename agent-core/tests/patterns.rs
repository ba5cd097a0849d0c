//! The repair patterns besides cancel: a request for a person (human handoff) and a
//! request to hear the last message again (repeat); and a flow's `on_complete` taking
//! over in the same turn.

#![allow(clippy::unwrap_used)] // fixture builders outside #[test] fns

mod common;

use agent_core::agent::HumanHandoff;
use agent_core::command::Command;
use agent_core::prelude::*;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

fn agent_handing(p: &ScriptedProvider, h: HumanHandoff) -> Agent<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(booking_flow(false))
        .flow(feedback_flow())
        .human_handoff(h)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_plain_request_for_a_person_hands_over_until_the_host_ends_it() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    let r = a
        .respond("s", "can I talk to a real person please")
        .await
        .unwrap();
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    assert_eq!(
        r.message,
        "I'm passing you to a person from our team; they will reply here."
    );
    assert_eq!(r.commands, vec![Command::ask_for_human()]);
    let s = a.session("s").await.unwrap().unwrap();
    let h = s.handed_off.clone().unwrap();
    assert_eq!(
        (h.flow.as_deref(), h.step.as_deref(), h.at_ms),
        (Some("booking"), Some("ask_date"), TODAY_MS)
    );

    // Handed over: no model call, the waiting reply, the message kept in the history.
    let calls = p.calls();
    let r = a.respond("s", "hello? anyone there?").await.unwrap();
    assert_eq!(p.calls(), calls, "no model call while a person has it");
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    assert_eq!(r.message, "A person from our team will reply here soon.");
    assert_eq!(r.model_calls, 0);
    let s = a.session("s").await.unwrap().unwrap();
    assert!(
        s.history
            .iter()
            .any(|m| m.content == "hello? anyone there?")
    );

    // The host ends it: the conversation goes on at the step it was handed over from.
    assert!(a.end_human_handoff("s").await.unwrap());
    assert!(
        !a.end_human_handoff("s").await.unwrap(),
        "nothing to end twice"
    );
    p.respond(Answer::message("How many guests?").with_data(json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "July 1").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
}

#[tokio::test]
async fn a_request_in_other_words_is_asked_about_first() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over().reply("Connecting you."));
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    let r = a
        .respond("s", "is there someone I could write to instead?")
        .await
        .unwrap();
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(
        r.message,
        "Do you want me to pass you to a person from our team?"
    );
    assert!(a.session("s").await.unwrap().unwrap().asking_handoff);

    // A yes hands over.
    let r = a.respond("s", "yes please").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    assert_eq!(r.message, "Connecting you.");
    assert_eq!(r.commands, vec![Command::agree(), Command::ask_for_human()]);
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.handed_off.is_some());
    assert!(!s.asking_handoff);
}

#[tokio::test]
async fn a_no_to_the_question_goes_on_with_the_flow() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    a.respond("s", "is there someone else?").await.unwrap();
    // Not a plain yes or no: a short call judges the answer to the question.
    p.agreement(false);
    p.respond(Answer::message("How many guests?").with_data(json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "no, July 1 works").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert!(r.commands.contains(&Command::decline()));
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.handed_off.is_none());
    assert!(!s.asking_handoff);
}

#[tokio::test]
async fn an_agent_with_no_one_to_hand_to_says_so_and_the_flow_goes_on() {
    let p = ScriptedProvider::new();
    let a = agent_handing(
        &p,
        HumanHandoff::unavailable("Our staff answer at desk@example.com."),
    );
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    let r = a.respond("s", "I want a human").await.unwrap();
    assert_eq!(r.message, "Our staff answer at desk@example.com.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert!(a.session("s").await.unwrap().unwrap().handed_off.is_none());
}

#[tokio::test]
async fn an_agent_s_own_flow_can_take_the_request() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::flow("feedback"));
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    p.respond(Answer::message("What would you like to tell our staff?"));
    let r = a.respond("s", "I want a human").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("feedback"));
    assert_eq!(r.message, "What would you like to tell our staff?");
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.stack.len(), 1, "booking waits on the stack");
}

#[test]
fn a_handoff_flow_that_is_not_registered_is_a_build_error() {
    let p = ScriptedProvider::new();
    let e = Agent::<Booking, Concierge>::builder()
        .provider(p)
        .flow(booking_flow(false))
        .human_handoff(HumanHandoff::flow("callbak"))
        .build()
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("the human handoff flow `callbak` is not a registered flow"),
        "{e}"
    );
}

#[tokio::test]
async fn repeat_says_the_last_message_again_written_by_code() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(
        Answer::message("I said: when?")
            .with_data(json!({"city": "Lisbon"}))
            .command(Command::repeat()),
    );
    let r = a
        .respond("s", "sorry, what was the question?")
        .await
        .unwrap();
    assert_eq!(r.message, "Lisbon it is. When do you check in?");
    assert_eq!(r.commands, vec![Command::repeat()]);
    assert_eq!(r.step.as_deref(), Some("ask_date"));
}

#[tokio::test]
async fn a_value_nothing_shows_read_beside_a_repeat_or_a_request_for_a_person_is_dropped() {
    // Small models fill the awaited field when the message asks for something else
    // (measured on Qwen2.5 1.5B: "Can you repeat that?" and "Can I speak to a real
    // person?" each read with a patient name nobody gave). Such a value is not shown
    // back for a yes: the reply is the pattern's.
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(
        Answer::message("I said: when?")
            .with_data(json!({"check_in": "2026-06-20"}))
            .command(Command::repeat()),
    );
    let r = a.respond("s", "sorry, what was that?").await.unwrap();
    assert_eq!(r.message, "Lisbon it is. When do you check in?");
    assert!(r.tentative.is_empty());
    assert_eq!(r.data.check_in, None);
    assert!(r.ungrounded.iter().any(|d| d.field == "check_in"));

    p.respond(
        Answer::message("Sure.")
            .with_data(json!({"check_in": "2026-06-20"}))
            .command(Command::ask_for_human()),
    );
    let r = a.respond("s", "can I talk to someone").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    assert_eq!(
        r.message,
        "I'm passing you to a person from our team; they will reply here."
    );
    assert!(r.tentative.is_empty());
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.tentative.is_empty());
}

#[tokio::test]
async fn a_repeat_read_beside_a_new_value_is_not_a_repeat() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(
        Answer::message("How many guests?")
            .with_data(json!({"check_in": "2026-07-01"}))
            .command(Command::repeat()),
    );
    let r = a.respond("s", "say again? oh, July 1").await.unwrap();
    assert_eq!(r.message, "How many guests?");
    assert_eq!(r.step.as_deref(), Some("ask_guests"));
    assert!(!r.commands.contains(&Command::repeat()));
}

#[tokio::test]
async fn the_answer_s_is_asking_for_key_reads_as_commands() {
    let p = ScriptedProvider::new();
    let a = agent(&p, vec![booking_flow(false)]);
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::raw(
        json!({"cancel": false, "data": {}, "is_asking_for": "your_last_message_again", "message": "?"}).to_string(),
    ));
    let r = a.respond("s", "come again?").await.unwrap();
    assert_eq!(r.message, "Lisbon it is. When do you check in?");
    // The schema asks for it, and the prompt says what each value means.
    let req = p.last_request().unwrap();
    let schema = req.output.as_ref().unwrap().schema.clone();
    assert_eq!(
        schema["properties"]["is_asking_for"]["enum"],
        json!(["nothing_else", "a_person", "your_last_message_again"])
    );
}

#[tokio::test]
async fn outside_any_flow_a_plain_request_for_a_person_hands_over() {
    use agent_core::codeflow::{Fallback, Router};
    let p = ScriptedProvider::new();
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .flow(booking_flow(false))
        .flow(feedback_flow())
        .router(Router::SchemaIntent {
            fallback: Fallback::Classic,
        })
        .build()
        .unwrap();
    // The routing answer has no key for it: code recognises the plain request.
    p.respond(Answer::intent("Hm.", None));
    let r = a.respond("s", "get me a human").await.unwrap();
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    assert_eq!(r.flow, None);
    let req = p.last_request().unwrap();
    assert!(req.output.unwrap().schema["properties"]["is_asking_for"].is_null());
}

#[tokio::test]
async fn in_a_flow_a_plain_request_for_a_person_hands_over_when_the_model_missed_it() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("When do you check in?"));
    let r = a
        .respond("s", "Can I talk to someone from your staff?")
        .await
        .unwrap();
    assert_eq!(r.stopped, StoppedReason::HumanHandoff);
    // "My manager told me to talk to you" names no request for a person.
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.default_answer(
        agent_core::provider::CallKind::Respond,
        Answer::message("When do you check in?"),
    );
    let r = a
        .respond("s", "My manager told me to talk to you")
        .await
        .unwrap();
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
}

#[tokio::test]
async fn a_request_for_a_person_read_in_a_message_naming_none_counts_by_the_models_profile() {
    use agent_core::policy::ModelProfile;
    const MSG: &str = "I have a question that the booking cannot answer";
    // A capable model's reading is asked about.
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    let r = a.respond("s", MSG).await.unwrap();
    assert_eq!(r.profile, ModelProfile::Capable);
    assert_eq!(
        r.message,
        "Do you want me to pass you to a person from our team?"
    );
    // A small model's reading needs the message to name a person: read as usual.
    let p = ScriptedProvider::new().with_profile(ModelProfile::Small);
    // The digression check of small models sorts each answer: an answer.
    p.default_answer(
        agent_core::provider::CallKind::Route,
        Answer::raw(r#"{"about": "answer"}"#),
    );
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.respond(
        Answer::message("When would you like to check in?").command(Command::ask_for_human()),
    );
    p.default_answer(
        agent_core::provider::CallKind::Respond,
        Answer::message("When would you like to check in?"),
    );
    let r = a.respond("s", MSG).await.unwrap();
    assert_eq!(r.profile, ModelProfile::Small);
    // The step's question again, in code's words on a small model.
    assert_eq!(r.message, "Could you tell me the check-in date?");
    assert!(!a.session("s").await.unwrap().unwrap().asking_handoff);
    // ... and counts when it names one.
    p.respond(Answer::message("Sure.").command(Command::ask_for_human()));
    let r = a
        .respond("s", "is there someone I could write to instead?")
        .await
        .unwrap();
    assert_eq!(
        r.message,
        "Do you want me to pass you to a person from our team?"
    );
}

// ---------------------------------------------------------------------------
// Skip question
// ---------------------------------------------------------------------------

/// city (needed) -> feedback (optional) -> check_in (needed) -> done.
fn skippable_agent(p: &ScriptedProvider) -> Agent<Booking, Concierge> {
    let flow = Flow::builder("stay")
        .title("Stay")
        .required(["city", "check_in"])
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_wishes")
                .prompt("Ask for any wishes.")
                .collect(["feedback"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"]),
        )
        .step(Step::reply("done", "Noted: {city} on {check_in}.").end())
        .build()
        .unwrap();
    Agent::builder()
        .clock(agent_core::clock::ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(flow)
        .build()
        .unwrap()
}

async fn at_ask_wishes(a: &Agent<Booking, Concierge>, p: &ScriptedProvider) {
    p.respond(Answer::message("Any wishes?").with_data(json!({"city": "Lisbon"})));
    let r = a.respond("s", "A room in Lisbon").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_wishes"));
}

#[tokio::test]
async fn a_skipped_optional_question_is_passed_and_the_next_one_asked_in_the_same_turn() {
    let p = ScriptedProvider::new();
    let a = skippable_agent(&p);
    at_ask_wishes(&a, &p).await;
    // The answer's own key, as a model writes it.
    p.respond(Answer::raw(
        json!({"cancel": false, "data": {}, "is_asking_for": "to_skip_this_question", "message": "Okay."})
            .to_string(),
    ));
    p.respond(Answer::message("When do you check in?"));
    let r = a.respond("s", "I'd rather not say").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_date"));
    assert_eq!(r.message, "When do you check in?");
    assert!(r.commands.contains(&Command::SkipQuestion));
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source.to_string().contains("skip_question")),
        "{:?}",
        r.directive_chain
    );
    assert_eq!(r.data.feedback, None);
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.skipped, vec!["feedback".to_owned()]);
    // The schema offers the key in this flow.
    let req = p.last_request().unwrap();
    let asking = &req.output.unwrap().schema["properties"]["is_asking_for"]["enum"];
    assert!(
        asking
            .as_array()
            .unwrap()
            .contains(&json!("to_skip_this_question")),
        "{asking}"
    );
    // The next answer completes the flow without the skipped value; a new run of the
    // flow asks the question again.
    // (The last question before a reply step is read by an extraction call.)
    p.extract(Answer::data(json!({"check_in": "2026-07-01"})));
    let r = a.respond("s", "July 1st").await.unwrap();
    assert_eq!(r.message, "Noted: Lisbon on 2026-07-01.");
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
}

#[tokio::test]
async fn a_question_the_flow_needs_is_not_skipped() {
    let p = ScriptedProvider::new();
    let a = skippable_agent(&p);
    p.respond(Answer::message("Which city?"));
    a.respond("s", "Hi, I need a room").await.unwrap();
    // The city is required: a skip leaves the question standing.
    p.default_answer(
        agent_core::provider::CallKind::Respond,
        Answer::message("I need the city to go on.").command(Command::skip_question()),
    );
    let r = a.respond("s", "skip that").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.message, "I need the city to go on.");
    assert!(!r.commands.contains(&Command::SkipQuestion));
    let s = a.session("s").await.unwrap().unwrap();
    assert!(s.skipped.is_empty());
}

#[tokio::test]
async fn a_flow_without_an_optional_question_offers_no_skip() {
    let p = ScriptedProvider::new();
    let a = agent_handing(&p, HumanHandoff::hand_over());
    wait_at_ask_date(&a, &p, "booking").await;
    p.default_answer(
        agent_core::provider::CallKind::Respond,
        Answer::message("When do you check in?"),
    );
    a.respond("s", "hmm").await.unwrap();
    let req = p.last_request().unwrap();
    let asking = &req.output.unwrap().schema["properties"]["is_asking_for"]["enum"];
    assert!(
        !asking
            .as_array()
            .unwrap()
            .contains(&json!("to_skip_this_question")),
        "{asking}"
    );
}
