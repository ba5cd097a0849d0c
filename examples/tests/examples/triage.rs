//! `triage` on its scripted model: three kinds of hand-over inside single turns.

#[allow(dead_code)]
#[path = "../../examples/triage.rs"]
mod triage;

use agent_core::Agent;
use agent_core::provider::CallKind;
use agent_core::response::{AgentResponse, DirectiveSource, Transition};
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::json;

fn hop(from: &str, to: &str) -> Transition {
    Transition {
        from: Some(from.into()),
        to: to.into(),
    }
}

#[tokio::test]
async fn the_desk_hands_over_and_takes_back_within_each_turn() {
    let (model, (rs, tally), printed) = run_example!(triage);
    assert_eq!(tally.failed, 0, "{printed}");
    assert_eq!(rs.len(), 4, "{printed}");

    // The model switched to billing; the message names no invoice, so billing reads
    // nothing and its first question is code's: one call in the turn.
    assert!(rs[0].transitions.contains(&hop("triage", "billing")));
    assert_eq!(rs[0].flow.as_deref(), Some("billing"));
    assert_eq!(rs[0].message, ASK_INVOICE);
    assert_eq!(rs[0].model_calls, 1, "{printed}");
    assert!(
        rs[0]
            .directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::Command("start_flow billing".into()))
    );

    // The model's refund call waits for the user's yes: code wrote its summary.
    assert!(rs[1].tool_calls.is_empty(), "{printed}");
    assert_eq!(
        rs[1].message,
        "Refund the duplicate charge on INV-7. Shall I go ahead?"
    );
    assert_eq!(rs[1].model_calls, 1, "{printed}");

    // The yes ran that call with no model call; the refund sent the user back to the
    // desk (code decides) and wrote the reply.
    assert!(rs[2].transitions.contains(&hop("billing", "triage")));
    assert_eq!(rs[2].flow.as_deref(), Some("triage"));
    assert_eq!(rs[2].tool_calls[0].name, "refund");
    assert_eq!(rs[2].tool_calls[0].arguments, json!({ "invoice": "INV-7" }));
    assert_eq!(rs[2].data.invoice.as_deref(), Some("INV-7"));
    assert_eq!(
        rs[2].message,
        "Refunded the duplicate charge on INV-7. Anything else I can help with?"
    );
    assert_eq!(rs[2].model_calls, 0, "{printed}");

    // The desk's `when` branch, judged in its reply call, sent the user to support,
    // whose question is code's.
    assert!(rs[3].transitions.contains(&hop("triage", "tech")));
    assert_eq!(
        (rs[3].flow.as_deref(), rs[3].step.as_deref()),
        (Some("tech"), Some("ask_device"))
    );
    assert_eq!(rs[3].message, "Which device is the problem on?");
    assert_eq!(rs[3].model_calls, 1, "{printed}");

    // The stream showed every hop.
    for line in [
        "transition triage -> billing",
        "transition billing -> triage",
        "transition triage -> tech",
    ] {
        assert!(printed.contains(line), "{line} missing from\n{printed}");
    }
    assert_eq!(
        model.calls_of(CallKind::Route) + model.calls_of(CallKind::Classify),
        0
    );
    assert_eq!(model.unused(), 0);
}

/// The help desk on `model`, at the front desk.
async fn desk(model: &ScriptedProvider) -> Agent<triage::Case, ()> {
    let agent = triage::builder()
        .unwrap()
        .provider(model.clone())
        .build()
        .unwrap();
    triage::start(&agent, "s").await.unwrap();
    agent
}

/// Where a response left the user.
fn at(r: &AgentResponse<triage::Case>) -> (Option<&str>, Option<&str>) {
    (r.flow.as_deref(), r.step.as_deref())
}

/// Billing's first question, written by code.
const ASK_INVOICE: &str =
    "Which invoice is it about? Please give me its number (it starts with INV-).";

#[tokio::test]
async fn a_refund_request_at_the_desk_goes_to_billing_by_code_without_a_call() {
    let model = ScriptedProvider::new();
    let agent = desk(&model).await;
    let r = agent.respond("s", "I want a refund").await.unwrap();
    assert!(r.transitions.contains(&hop("triage", "billing")), "{r:?}");
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    // Routed by code, nothing to read (no "INV-" in the message), the question is
    // code's: no model call at all.
    assert_eq!(r.message, ASK_INVOICE);
    assert_eq!(r.model_calls, 0);
    assert!(r.tool_calls.is_empty());
    assert!(model.requests().is_empty());

    // Answered with something else: the model replies, and is not asked to read an
    // invoice the message cannot hold, nor offered the refund.
    model.respond(Answer::message("I need the invoice number to refund it."));
    let r = agent
        .respond("s", "I don't have the number, just refund me")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.model_calls, 1);
    let req = model.last_request().unwrap();
    let schema = &req.output.as_ref().unwrap().schema["properties"];
    assert!(schema.get("data").is_none(), "{schema}");
    assert!(schema.get("action").is_none(), "{schema}");
    assert!(
        !req.instructions().contains("fill `data`"),
        "{}",
        req.instructions()
    );
    assert_eq!(model.unused(), 0);
}

#[tokio::test]
async fn a_message_without_the_refund_words_stays_at_the_desk() {
    let model = ScriptedProvider::new();
    model.respond(Answer::message("How can I help?"));
    let agent = desk(&model).await;
    let r = agent.respond("s", "Hello").await.unwrap();
    assert_eq!(at(&r), (Some("triage"), Some("ask_need")));
    assert!(!r.transitions.iter().any(|t| t.to == "billing"), "{r:?}");
}

#[tokio::test]
async fn the_device_given_is_acknowledged_by_code() {
    let model = ScriptedProvider::new();
    model.respond(Answer::message("Let me get you to support.").switching_to("tech"));
    model.respond(Answer::message("Which device has the problem?").claiming("ask_device"));
    // The answer lands on a reply written by code: the model only reads the message
    // (an extraction call, with no message of its own to copy the question into).
    model.extract(Answer::data(json!({ "device": "Pixel 8" })));
    let agent = desk(&model).await;
    let r = agent.respond("s", "My app crashes on start").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_device"));
    let r = agent.respond("s", "Pixel 8").await.unwrap();
    assert_eq!(r.data.device.as_deref(), Some("Pixel 8"));
    assert_eq!(
        r.message,
        "Thanks. I've logged the problem on your Pixel 8; a technician will follow up here."
    );
    assert_eq!(r.model_calls, 1);
}

/// Billing's answer to a refund request naming `invoice`.
fn offers_refund_of(invoice: &str) -> Answer {
    Answer::message(format!(
        "Do you want the duplicate charge on {invoice} refunded?"
    ))
    .with_data(json!({ "invoice": invoice }))
    .claiming("settle")
}

#[tokio::test]
async fn billing_reads_the_message_the_desk_sent_on() {
    // The first message (the desk entered by `start`'s pending directive, no
    // speculative call): billing's one call reads the invoice.
    let model = ScriptedProvider::new();
    model.respond(offers_refund_of("INV-7"));
    let agent = desk(&model).await;
    let r = agent
        .respond("s", "I need a refund for INV-7")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(r.data.invoice.as_deref(), Some("INV-7"));
    assert_eq!(r.model_calls, 1);

    // A later message at the desk (its answer awaited): the same.
    let model = ScriptedProvider::new();
    model.respond(Answer::message("How can I help?"));
    model.respond(offers_refund_of("INV-9"));
    let agent = desk(&model).await;
    agent.respond("s", "hi").await.unwrap();
    let r = agent
        .respond("s", "Refund INV-9 please, I paid twice")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(r.data.invoice.as_deref(), Some("INV-9"));
    assert_eq!(r.model_calls, 1);
    assert_eq!(model.unused(), 0);
}

/// With tools in the answer (llama.cpp), an answer that reads the invoice and names
/// the refund the user asked for is summarised by code in that one call, whatever its
/// message says (it is never shown); a yes then runs exactly that call.
#[tokio::test]
async fn a_refund_named_with_the_invoice_is_summarised_in_one_call_and_a_yes_runs_it() {
    let model = ScriptedProvider::new();
    let agent = triage::builder()
        .unwrap()
        .config(agent_core::AgentConfig {
            tools_in_answer: true,
            ..agent_core::AgentConfig::default()
        })
        .provider(model.clone())
        .build()
        .unwrap();
    triage::start(&agent, "s").await.unwrap();
    model.respond(Answer::raw(
        r#"{"handoff":{"billing":true,"tech":false},"message":"Let me get you to billing."}"#,
    ));
    let r = agent
        .respond("s", "Hi, I was charged twice this month")
        .await
        .unwrap();
    assert_eq!(r.message, ASK_INVOICE);
    model.respond(Answer::raw(
        r#"{"action":{"tool":"refund","with":{"invoice":"INV-7"}},"data":{"invoice":"INV-7"},"handoff":{"tech":false},"message":"Which invoice is it about?","reply_asks_for":"invoice"}"#,
    ));
    let r = agent
        .respond("s", "It's invoice INV-7. Please refund it")
        .await
        .unwrap();
    assert_eq!(r.model_calls, 1, "{r:?}");
    assert!(r.tool_calls.is_empty());
    assert_eq!(
        r.message,
        "Refund the duplicate charge on INV-7. Shall I go ahead?"
    );
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    let r = agent.respond("s", "yes, go ahead").await.unwrap();
    assert_eq!(r.model_calls, 0, "{r:?}");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(
        r.message,
        "Refunded the duplicate charge on INV-7. Anything else I can help with?"
    );
    assert_eq!(at(&r), (Some("triage"), Some("ask_need")));
    assert_eq!(model.unused(), 0);
}

/// A message that names an invoice number goes to billing by code, which reads it in
/// the turn's one call; a message without one is the front desk's to judge.
#[tokio::test]
async fn an_invoice_number_at_the_desk_goes_to_billing_by_code() {
    let model = ScriptedProvider::new();
    model.respond(
        Answer::message("INV-12 is due on the 30th. Anything else about it?")
            .with_data(json!({ "invoice": "INV-12" }))
            .claiming("settle"),
    );
    let agent = desk(&model).await;
    let r = agent
        .respond("s", "Question about invoice inv-12: when is it due?")
        .await
        .unwrap();
    assert!(r.transitions.contains(&hop("triage", "billing")), "{r:?}");
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(r.data.invoice.as_deref(), Some("INV-12"));
    assert_eq!(r.model_calls, 1);
    assert!(r.tool_calls.is_empty());

    let model = ScriptedProvider::new();
    model.respond(Answer::message("How can I help with your invoice?"));
    let agent = desk(&model).await;
    let r = agent.respond("s", "My invoice looks odd").await.unwrap();
    assert_eq!(at(&r), (Some("triage"), Some("ask_need")));
}

/// The help desk on a scripted small model, at billing's question for the invoice
/// (the refund words send the user there by code; billing's question is code's).
async fn small_at_ask_invoice() -> (ScriptedProvider, Agent<triage::Case, ()>) {
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    let r = agent.respond("s", "I want a refund").await.unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.message, ASK_INVOICE);
    model.clear_requests();
    (model, agent)
}

#[tokio::test]
async fn a_small_model_sorts_a_message_that_cannot_be_the_invoice_and_tech_takes_it() {
    let (model, agent) = small_at_ask_invoice().await;
    // The label is the flow's title: "technical_support", not the id "tech".
    model.route(Answer::raw(r#"{"about": "technical_support"}"#));
    model.respond(Answer::message("Which device has the problem?"));
    let r = agent
        .respond("s", "Before that, my app keeps crashing")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("tech"), Some("ask_device")));
    let sort = &model.requests()[0];
    assert_eq!(sort.kind, CallKind::Route);
    // Code sees no invoice number in the message: the options are the other flows
    // and something else, not an answer.
    assert!(
        sort.system.contains("the message does not give it"),
        "{}",
        sort.system
    );
    assert!(
        sort.system
            .contains("- technical_support: the user reports a technical problem"),
        "{}",
        sort.system
    );
    assert!(
        sort.system.contains("- other: something else"),
        "{}",
        sort.system
    );
    assert!(!sort.system.contains("- answer:"), "{}", sort.system);
}

#[tokio::test]
async fn on_a_small_model_an_invoice_number_and_nothing_else_is_read_by_code() {
    let (model, agent) = small_at_ask_invoice().await;
    // No sorting call: the number is the answer; settle's call answers with it.
    model.respond(Answer::message(
        "What would you like to know about invoice INV-7?",
    ));
    let r = agent.respond("s", "It's INV-7").await.unwrap();
    assert_eq!(r.data.invoice.as_deref(), Some("INV-7"));
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(model.calls_of(CallKind::Route), 0);
    assert_eq!(r.model_calls, 1);
    // Written otherwise than the pattern wants, or with more said, it is sorted.
    let (model, agent) = small_at_ask_invoice().await;
    model.route(Answer::raw(r#"{"about": "answer"}"#));
    model.default_answer(CallKind::Respond, Answer::message("Noted."));
    agent
        .respond("s", "It's INV-7, and my app crashes too")
        .await
        .unwrap();
    assert_eq!(model.calls_of(CallKind::Route), 1);
}

#[tokio::test]
async fn a_reply_with_nothing_left_to_say_is_codes_never_empty() {
    // Settle's call asks again for the invoice just given, twice: the sentence is
    // withheld, and settle has no question of its own: code says what it stored.
    let (model, agent) = small_at_ask_invoice().await;
    model.default_answer(
        CallKind::Respond,
        Answer::message("Could you please provide the invoice number?"),
    );
    let r = agent.respond("s", "It's INV-7").await.unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(
        r.message,
        "Noted: INV-7. What would you like me to do next?"
    );
    assert_eq!(r.withheld_claims.len(), 1, "{:?}", r.withheld_claims);
}

#[tokio::test]
async fn once_sorted_as_something_else_billings_call_starts_no_other_flow() {
    let (model, agent) = small_at_ask_invoice().await;
    model.route(Answer::raw(r#"{"about": "other"}"#));
    // The full call judged a hand-over to tech (what Qwen2.5 1.5B did for "who won
    // the World Cup?"): the sorting call's reading stands.
    model.respond(
        Answer::message("I can only help with billing. Which invoice is it about?")
            .command(agent_core::command::Command::start_flow("tech")),
    );
    let r = agent
        .respond("s", "By the way, who won the football World Cup in 2018?")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert!(r.transitions.is_empty(), "{:?}", r.transitions);
    assert_eq!(r.data.invoice, None);
    assert_eq!(model.calls_of(CallKind::Route), 1);
}

#[tokio::test]
async fn a_plain_request_for_a_person_in_billing_is_not_sorted_and_starts_no_flow() {
    let (model, agent) = small_at_ask_invoice().await;
    model.default_answer(
        CallKind::Respond,
        Answer::message("I can't help you with that.")
            .command(agent_core::command::Command::start_flow("tech")),
    );
    let r = agent
        .respond("s", "Can I talk to a human please?")
        .await
        .unwrap();
    assert_eq!(model.calls_of(CallKind::Route), 0);
    assert_ne!(r.flow.as_deref(), Some("tech"), "{r:?}");
    assert!(
        r.transitions.iter().all(|t| t.to != "tech"),
        "{:?}",
        r.transitions
    );
    assert_eq!(
        r.stopped,
        agent_core::response::StoppedReason::HumanHandoff,
        "{r:?}"
    );
}

#[tokio::test]
async fn on_a_small_model_the_desk_sorts_the_message_among_the_flows_its_conditions_lead_to() {
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.clear_requests();
    model.route(Answer::raw(r#"{"about": "billing"}"#));
    let r = agent
        .respond("s", "I have a question about my latest invoice")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.message, ASK_INVOICE);
    // One short call decided the branch; billing's question is code's.
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
    let sort = &model.requests()[0];
    assert_eq!(sort.kind, CallKind::Route);
    for option in [
        "- billing: the user has a billing or payment question",
        "- technical_support: the user reports a technical problem",
        "- other: something else",
    ] {
        assert!(sort.system.contains(option), "{}", sort.system);
    }

    // Something else that asks something: no condition holds, the desk's own call
    // answers it, and the question after the answer is code's (the model's question
    // is left out, as is a message that only reads the user's back).
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.clear_requests();
    model.route(Answer::raw(r#"{"about": "other"}"#));
    model.default_answer(
        CallKind::Respond,
        Answer::message("I can't check the weather. How can I help?"),
    );
    let r = agent
        .respond("s", "What's the weather like in Paris today?")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("triage"), Some("ask_need")));
    assert_eq!(
        r.message,
        "I can't check the weather. What can I help you with: billing or technical support?"
    );
    assert_eq!(r.model_calls, 2, "{:?}", model.requests());
    model.route(Answer::raw(r#"{"about": "other"}"#));
    model.default_answer(
        CallKind::Respond,
        Answer::message("Hi again, anyone there?"),
    );
    let r = agent.respond("s", "Hi again, anyone there?").await.unwrap();
    assert_eq!(
        r.message,
        "What can I help you with: billing or technical support?"
    );
    assert!(
        r.transitions.iter().all(|t| t.to == "triage"),
        "{:?}",
        r.transitions
    );
}

#[tokio::test]
async fn on_a_small_model_a_message_the_desk_keeps_that_asks_nothing_gets_codes_question() {
    // "hi", "thanks": kept at the desk by the sorting call, asking nothing. The desk's
    // question is code's, from the titles of the flows its conditions lead to, in the
    // one call; so on every message of that kind, asked before or not.
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.default_answer(CallKind::Respond, Answer::message("Hello there! Hello!"));
    for said in ["hi", "Thanks!", "Hello, I own a Pixel 8"] {
        model.clear_requests();
        model.route(Answer::raw(
            r#"{"about": "other", "data": {"device": "Pixel 8", "invoice": null}}"#,
        ));
        let r = agent.respond("s", said).await.unwrap();
        assert_eq!(at(&r), (Some("triage"), Some("ask_need")), "{said}");
        assert_eq!(
            r.message, "What can I help you with: billing or technical support?",
            "{said}"
        );
        assert_eq!(r.model_calls, 1, "{said}: {:?}", model.requests());
        assert_eq!(model.requests()[0].kind, CallKind::Route);
        // What it read for a flow it did not start is not stored.
        assert_eq!(r.data.device, None, "{said}");
    }
}

#[tokio::test]
async fn on_a_small_model_the_desks_sorting_call_reads_what_the_message_gives_the_flow_it_picks() {
    // The device is read with the pick: tech starts with it and its last step
    // answers, in the one call.
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.clear_requests();
    model.route(Answer::raw(
        r#"{"about": "technical_support", "data": {"device": "iPhone 15", "invoice": null}}"#,
    ));
    let r = agent
        .respond("s", "My iPhone 15 keeps restarting every few minutes")
        .await
        .unwrap();
    assert_eq!(r.data.device.as_deref(), Some("iPhone 15"));
    assert_eq!(
        r.message,
        "Thanks. I've logged the problem on your iPhone 15; a technician will follow up here."
    );
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
    assert_sort_reads_device(&model);

    // Nothing given: code asks tech's question, in the same one call.
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.clear_requests();
    model.route(Answer::raw(
        r#"{"about": "technical_support", "data": {"device": null, "invoice": null}}"#,
    ));
    let r = agent.respond("s", "My app crashes on start").await.unwrap();
    assert_eq!(at(&r), (Some("tech"), Some("ask_device")));
    assert_eq!(r.message, "Which device is the problem on?");
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
}

#[tokio::test]
async fn a_plain_request_for_a_person_read_as_a_cancel_still_hands_over() {
    let (model, agent) = small_at_ask_invoice().await;
    // What Qwen2.5 1.5B read in "Can I talk to a human please?" at billing's question:
    // a cancel, which asked "Do you want to stop billing?".
    model.default_answer(
        CallKind::Respond,
        Answer::message("Do you want to stop billing?")
            .command(agent_core::command::Command::CancelFlow),
    );
    let r = agent
        .respond("s", "Can I talk to a human please?")
        .await
        .unwrap();
    assert_eq!(
        r.stopped,
        agent_core::response::StoppedReason::HumanHandoff,
        "{r:?}"
    );
    assert_ne!(r.message, "Do you want to stop billing?");
}

/// The help desk on a scripted small model, at tech's question for the device (the
/// desk's sorting call picked tech and read no device).
async fn small_at_ask_device() -> (ScriptedProvider, Agent<triage::Case, ()>) {
    let model = ScriptedProvider::new().with_profile(agent_core::policy::ModelProfile::Small);
    let agent = desk(&model).await;
    model.route(Answer::raw(
        r#"{"about": "technical_support", "data": {"device": null, "invoice": null}}"#,
    ));
    let r = agent.respond("s", "My app crashes on start").await.unwrap();
    assert_eq!(at(&r), (Some("tech"), Some("ask_device")));
    model.clear_requests();
    (model, agent)
}

/// The turn's first call was a sorting call whose instructions are those of the sort
/// without values and whose answer's schema carries tech's device.
fn assert_sort_reads_device(model: &ScriptedProvider) {
    let sort = &model.requests()[0];
    assert_eq!(sort.kind, CallKind::Route);
    assert!(!sort.system.contains("`data`"), "{}", sort.system);
    let schema = &sort.output.as_ref().unwrap().schema;
    assert!(
        schema["properties"]["data"]["properties"]["device"].is_object(),
        "{schema}"
    );
}

#[tokio::test]
async fn on_a_small_model_a_flow_the_sorting_call_picks_inside_another_starts_with_what_it_read() {
    // At billing's question, "It's my iPhone" is sorted to tech, whose device the
    // same call read: tech's last step answers and billing, interrupted, asks its
    // question again, in the one call.
    let (model, agent) = small_at_ask_invoice().await;
    model.route(Answer::raw(
        r#"{"about": "technical_support", "data": {"device": "iPhone", "invoice": null}}"#,
    ));
    let r = agent.respond("s", "It's my iPhone").await.unwrap();
    assert_eq!(r.data.device.as_deref(), Some("iPhone"));
    assert_eq!(
        r.message,
        format!(
            "Thanks. I've logged the problem on your iPhone; a technician will follow up here.\n\n{ASK_INVOICE}"
        )
    );
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
    assert_sort_reads_device(&model);

    // At tech's question, a billing question: billing starts and code asks its
    // question, with no call of billing's own.
    let (model, agent) = small_at_ask_device().await;
    model.route(Answer::raw(
        r#"{"about": "billing", "data": {"device": null, "invoice": null}}"#,
    ));
    let r = agent
        .respond("s", "I have a billing question as well")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.message, ASK_INVOICE);
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
}

#[tokio::test]
async fn on_a_small_model_a_message_that_answers_the_question_and_asks_nothing_stays_in_the_flow() {
    // At tech's question, the device with an invoice "if that helps": the sort picks
    // billing, but the message gives the device it was asked for and asks nothing.
    let (model, agent) = small_at_ask_device().await;
    model.route(Answer::raw(
        r#"{"about": "billing", "data": {"device": "Pixel 8", "invoice": "INV-5"}}"#,
    ));
    model.default_answer(CallKind::Respond, Answer::message("Thanks."));
    // The flow's own reading of the message follows.
    model.default_answer(
        CallKind::Extract,
        Answer::data(json!({"device": "Pixel 8", "invoice": "INV-5"})),
    );
    let r = agent
        .respond("s", "It's a Pixel 8, and my invoice is INV-5 if that helps")
        .await
        .unwrap();
    assert_ne!(r.flow.as_deref(), Some("billing"), "{:?}", r.transitions);
    assert!(
        !r.transitions
            .iter()
            .any(|t| format!("{t:?}").contains("billing")),
        "{:?}",
        r.transitions
    );
    assert_eq!(r.data.device.as_deref(), Some("Pixel 8"));
    assert_eq!(r.data.invoice, None);

    // The same with a question: billing starts (tech waits on the stack).
    let (model, agent) = small_at_ask_device().await;
    model.route(Answer::raw(
        r#"{"about": "billing", "data": {"device": "Pixel 8", "invoice": "INV-5"}}"#,
    ));
    model.default_answer(CallKind::Respond, Answer::message("Thanks."));
    model.default_answer(CallKind::Extract, Answer::data(json!({})));
    let r = agent
        .respond("s", "It's a Pixel 8. Can you also refund my invoice INV-5?")
        .await
        .unwrap();
    assert_eq!(r.flow.as_deref(), Some("billing"), "{:?}", r.transitions);
}

#[tokio::test]
async fn on_a_small_model_the_answer_the_sorting_call_read_is_the_steps_own_fields_only() {
    // At tech's question, the sort reads the device and (wrongly) an invoice nobody
    // named: the answer is the device alone, stored with no other call; the invoice
    // is billing's to read, and billing did not start.
    let (model, agent) = small_at_ask_device().await;
    model.route(Answer::raw(
        r#"{"about": "answer", "data": {"device": "iPhone", "invoice": "INV-3"}}"#,
    ));
    let r = agent.respond("s", "My iPhone").await.unwrap();
    assert_eq!(r.data.device.as_deref(), Some("iPhone"));
    assert_eq!(r.data.invoice, None);
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
}

#[tokio::test]
async fn a_draft_that_asks_again_for_the_value_just_given_is_rendered_again_once_told_why() {
    // The first call reads the invoice and asks for it again (a small model copying
    // its last question): the rendering of settle is told why at once, and what it
    // still says is withheld, in three calls, not four.
    let (model, agent) = small_at_ask_invoice().await;
    model.route(Answer::raw(
        r#"{"about": "answer", "data": {"invoice": "INV-9", "device": null}}"#,
    ));
    model.respond(
        Answer::message(ASK_INVOICE)
            .with_data(json!({"invoice": "INV-9"}))
            .claiming("ask_invoice"),
    );
    model.default_answer(CallKind::Respond, Answer::message(ASK_INVOICE));
    let r = agent
        .respond("s", "Invoice INV-9 has a charge I don't recognise")
        .await
        .unwrap();
    assert_eq!(r.data.invoice.as_deref(), Some("INV-9"));
    assert_eq!(at(&r), (Some("billing"), Some("settle")));
    assert_eq!(
        model.calls_of(CallKind::Respond),
        2,
        "{:?}",
        model.requests()
    );
    let again = &model.requests()[2];
    assert!(
        serde_json::to_string(&again.messages)
            .unwrap()
            .contains("which is not so"),
        "{again:?}"
    );
    assert_eq!(
        r.message,
        "Noted: INV-9. What would you like me to do next?"
    );
}

#[tokio::test]
async fn a_message_that_speaks_of_stopping_is_read_by_the_steps_own_call_alone() {
    // "Never mind that, I have a billing question instead" at support's question: the
    // call that reads it is the one that reads a cancel and a flow to start (not a call
    // that only extracts the device, followed by that one).
    let (model, agent) = small_at_ask_device().await;
    model.default_answer(
        CallKind::Respond,
        Answer::message("Sure.")
            .command(agent_core::command::Command::CancelFlow)
            .command(agent_core::command::Command::start_flow("billing")),
    );
    let r = agent
        .respond("s", "Never mind that, I have a billing question instead")
        .await
        .unwrap();
    assert_eq!(at(&r), (Some("billing"), Some("ask_invoice")));
    assert_eq!(r.message, ASK_INVOICE);
    assert_eq!(r.model_calls, 1, "{:?}", model.requests());
    assert_eq!(model.requests()[0].kind, CallKind::Respond);
}
