//! Code flows (the generator-flows RFC, stage-0 scenarios): async fns with
//! ask/say/tool/handoff/end, resumed by replay against a journal.
//!
//! One file over 600 lines: the generator-flows RFC's stage-0 scenarios share the tutor/reminder flows and their scripted provider.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::codeflow::{CodeFlow, Entry, FlowCx, ResponseMeta, Source};
use agent_core::error::CodeFlowError;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::response::Transition;
use agent_core::testing::{Answer, ScriptedProvider, always_replay};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Notes {
    /// Id of the scheduled reminder
    reminder_id: Option<String>,
    /// City for a hotel booking
    city: Option<String>,
}

type Cx = FlowCx<Notes, ()>;

#[derive(Deserialize, JsonSchema)]
struct SentenceArgs {
    sentence: String,
}

#[derive(Deserialize, JsonSchema)]
struct ReminderArgs {
    task: String,
    delay: String,
}

/// Counts real executions of the tools (a replay must not run them again).
#[derive(Clone, Default)]
struct Counters {
    correct: Arc<AtomicUsize>,
    schedule: Arc<AtomicUsize>,
}

fn correct_sentence(c: &Counters) -> FnTool<Notes, ()> {
    let n = c.correct.clone();
    FnTool::new(
        "correct_sentence",
        "Correct an English sentence.",
        move |_cx: ToolCx<Notes, ()>, a: SentenceArgs| {
            let n = n.clone();
            async move {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(a.sentence.replace("goed", "went")))
            }
        },
    )
}

fn schedule_reminder(c: &Counters) -> FnTool<Notes, ()> {
    let n = c.schedule.clone();
    FnTool::new(
        "schedule_reminder",
        "Schedule a reminder.",
        move |_cx: ToolCx<Notes, ()>, a: ReminderArgs| {
            let n = n.clone();
            async move {
                let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                let id = format!("R{k}");
                Ok(ToolOutput::text(format!("{id}: {} {}", a.task, a.delay))
                    .data(json!({ "reminder_id": id }).as_object().cloned().unwrap()))
            }
        },
    )
}

/// The RFC's tutor flow.
fn tutor(c: &Counters) -> CodeFlow<Notes, ()> {
    let tool = correct_sentence(c).into_arc();
    CodeFlow::new("tutor", move |ctx: Cx| {
        let tool = tool.clone();
        async move {
            let name: String = ctx.ask("name", "What's your name?").await;
            ctx.say(format!("Nice to meet you, {name}.")).await;
            let sentence: String = ctx.ask("sentence", "Send one sentence in English.").await;
            let fixed = ctx.tool(tool, json!({ "sentence": sentence })).await?;
            ctx.say(format!("Corrected: {fixed}")).await;
            ctx.handoff_to("reminder")
        }
    })
    .title("English tutor")
    .when("the user wants to practise English")
}

/// The RFC's reminder flow.
fn reminder(c: &Counters) -> CodeFlow<Notes, ()> {
    let tool = schedule_reminder(c).into_arc();
    CodeFlow::new("reminder", move |ctx: Cx| {
        let tool = tool.clone();
        async move {
            let task: String = ctx.ask("task", "What should I remind you about?").await;
            let delay: String = ctx.ask("delay", "When should I remind you?").await;
            let done = ctx
                .tool(tool, json!({ "task": task, "delay": delay }))
                .await?;
            ctx.say(format!("Scheduled ({done}).")).await;
            ctx.end("reminder_scheduled")
        }
    })
    .title("Reminders")
    .when("the user wants a reminder")
}

type Metas = Arc<Mutex<Vec<ResponseMeta>>>;

/// The tutor → reminder agent, recording the response hook's metadata.
fn pair_builder(
    p: &ScriptedProvider,
    c: &Counters,
) -> (agent_core::AgentBuilder<Notes, ()>, Metas) {
    let metas: Metas = Arc::default();
    let m = metas.clone();
    let b = Agent::builder()
        .provider(p.clone())
        .code_flow(tutor(c))
        .code_flow(reminder(c))
        .on_response(move |_r, meta| m.lock().unwrap().push(meta.clone()));
    (b, metas)
}

fn agent_with(
    p: &ScriptedProvider,
    c: &Counters,
    config: AgentConfig,
    store: Option<Arc<dyn SessionStore>>,
) -> (Agent<Notes, ()>, Metas) {
    let (mut b, metas) = pair_builder(p, c);
    b = b.config(config);
    if let Some(s) = store {
        b = b.store_arc(s);
    }
    (b.build().unwrap(), metas)
}

/// An agent running `flow` alone (a single flow starts on the first turn, no routing).
fn solo(p: &ScriptedProvider, flow: CodeFlow<Notes, ()>) -> Agent<Notes, ()> {
    Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .build()
        .unwrap()
}

/// The pair behind `router`.
fn routed(p: &ScriptedProvider, c: &Counters, router: Router) -> (Agent<Notes, ()>, Metas) {
    let (b, metas) = pair_builder(p, c);
    (b.router(router).build().unwrap(), metas)
}

fn journal_len(agent: &Agent<Notes, ()>, id: &str) -> impl std::future::Future<Output = usize> {
    let agent = agent.clone();
    let id = id.to_owned();
    async move {
        agent
            .session(&id)
            .await
            .unwrap()
            .and_then(|s| s.code)
            .map_or(0, |c| c.journal.len())
    }
}

/// The tutor → reminder pair end to end, as a user would run it.
async fn tutor_then_reminder(config: AgentConfig) {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, metas) = agent_with(&p, &c, config, None);

    p.route(Answer::route("tutor"));
    let r = agent
        .respond("s", "I want to practise my English")
        .await
        .unwrap();
    assert_eq!(r.message, "What's your name?");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
    assert_eq!(r.flow.as_deref(), Some("tutor"));
    assert_eq!(
        r.step.as_deref(),
        Some("name"),
        "the open question is the step"
    );
    assert_eq!(r.model_calls, 1, "one routing call; the question is code");

    p.extract(Answer::answering(json!("Ana")));
    let r = agent.respond("s", "I'm Ana").await.unwrap();
    assert_eq!(
        r.message,
        "Nice to meet you, Ana.\n\nSend one sentence in English."
    );
    assert_eq!(r.model_calls, 1, "one extraction per answered question");
    let extraction = p.requests().pop().unwrap();
    assert_eq!(extraction.kind, CallKind::Extract);
    assert!(extraction.instructions().contains("\"What's your name?\""));
    let sent: Vec<&str> = extraction
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        sent,
        ["I'm Ana"],
        "the question and the latest message only"
    );
    assert_eq!(
        extraction.max_tokens,
        Some(7 / 2 + r#"{"type":"string"}"#.len() as u32 / 4 + 64),
        "bounded by the lengths of the message and the answer's schema"
    );
    assert_eq!(r.meta.source, Source::Flow);

    p.extract(Answer::answering(json!("I goed home")));
    let r = agent.respond("s", "I goed home").await.unwrap();
    assert_eq!(
        r.message,
        "Corrected: I went home\n\nWhat should I remind you about?"
    );
    assert_eq!(
        r.flow.as_deref(),
        Some("reminder"),
        "handed off in the same turn"
    );
    assert_eq!(r.transitions.len(), 1);
    assert_eq!(r.transitions[0].from.as_deref(), Some("tutor"));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.meta.handoff_from.as_deref(), Some("tutor"));
    assert_eq!(c.correct.load(Ordering::SeqCst), 1);

    p.extract(Answer::answering(json!("call mom")));
    let r = agent.respond("s", "call mom").await.unwrap();
    assert_eq!(r.message, "When should I remind you?");

    p.extract(Answer::answering(json!("in 2 hours")));
    let r = agent.respond("s", "in two hours").await.unwrap();
    assert_eq!(r.message, "Scheduled (R1: call mom in 2 hours).");
    assert_eq!(r.meta.end_reason.as_deref(), Some("reminder_scheduled"));
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "reminder".into()
        }
    );
    assert_eq!(r.flow, None);
    assert_eq!(
        r.data.reminder_id.as_deref(),
        Some("R1"),
        "tool data writes apply"
    );
    assert_eq!(
        c.correct.load(Ordering::SeqCst),
        1,
        "replays never re-run tools"
    );
    assert_eq!(c.schedule.load(Ordering::SeqCst), 1);
    let s = agent.session("s").await.unwrap().unwrap();
    assert!(s.code.is_none());
    assert_eq!(s.completed_flows, vec!["tutor", "reminder"]);

    let metas = metas.lock().unwrap().clone();
    assert_eq!(metas.len(), 5, "the response hook runs once per turn");
    assert!(metas.iter().all(|m| m.source == Source::Flow));
    assert_eq!(metas[0].flow.as_deref(), Some("tutor"));
    assert_eq!(metas[4].flow.as_deref(), Some("reminder"));
    assert_eq!(metas[4].handoff_from.as_deref(), Some("tutor"));
    assert_eq!(metas[4].end_reason.as_deref(), Some("reminder_scheduled"));
    assert!(metas[..4].iter().all(|m| m.end_reason.is_none()));
}

#[tokio::test]
async fn tutor_hands_off_to_reminder() {
    tutor_then_reminder(AgentConfig::default()).await;
}

#[tokio::test]
async fn always_replay_mode_proves_the_tutor_pair_deterministic() {
    tutor_then_reminder(always_replay()).await;
}

/// A log sink for the telemetry test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// RFC stage 0, observability: traces mark `source=flow|classic`, and routes and
/// handoffs are reported (as trace events and as stream events).
#[tokio::test]
async fn telemetry_marks_the_source_and_reports_routes_and_handoffs() {
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_max_level(tracing::Level::INFO)
        .with_thread_ids(true)
        .without_time()
        .finish();
    // The process-wide subscriber (only this test sets one): a thread-local one lost
    // every line now and then, as the other tests of this binary, running on threads
    // without one, re-cached their callsites as "not interested". Their lines land
    // here too, and are told apart by the thread that wrote them (a current-thread
    // runtime runs this test's turns on its own thread).
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let me = format!("{:?}", std::thread::current().id());

    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::raw(r#"{"flow":null}"#));
    p.respond(Answer::message("Hi! I can tutor you or set reminders."));
    agent.respond("s", "hello").await.unwrap();
    p.route(Answer::route("tutor"));
    let events: Vec<Event<Notes>> = agent.respond_stream("s", "English please").collect().await;
    let routed: Vec<&Transition> = events
        .iter()
        .filter_map(|e| match e {
            Event::Transition(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(
        routed,
        vec![&Transition {
            from: None,
            to: "tutor".into()
        }]
    );
    p.extract(Answer::answering(json!("Ada")));
    agent.respond("s", "Ada").await.unwrap();
    p.extract(Answer::answering(json!("I goed home")));
    let r = agent.respond("s", "I goed home").await.unwrap();
    assert_eq!(
        r.transitions,
        vec![Transition {
            from: Some("tutor".into()),
            to: "reminder".into()
        }]
    );

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&me)).collect();
    let completed: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("turn completed"))
        .collect();
    assert_eq!(completed.len(), 4, "{text}");
    assert!(
        completed[0].contains("source=\"classic\""),
        "{}",
        completed[0]
    );
    for l in &completed[1..] {
        assert!(l.contains("source=\"flow\""), "{l}");
    }
    assert!(
        completed[3].contains("flow=\"reminder\"")
            && completed[3].contains("handoff_from=\"tutor\""),
        "{}",
        completed[3]
    );
    // The turn span carries the same marks, so every event inside a turn has them.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("turn{") && l.contains("source=\"flow\"")),
        "{text}"
    );
    let route = lines
        .iter()
        .find(|l| l.contains("transition") && l.contains("to=\"tutor\""))
        .unwrap_or_else(|| panic!("no route event: {text}"));
    assert!(route.contains("from=\"none\""), "{route}");
    assert!(route.contains("routing"), "{route}");
    let handoff = lines
        .iter()
        .find(|l| l.contains("transition") && l.contains("to=\"reminder\""))
        .unwrap_or_else(|| panic!("no handoff event: {text}"));
    assert!(
        handoff.contains("from=\"tutor\"") && handoff.contains("handoff"),
        "{handoff}"
    );
}

#[tokio::test]
async fn no_flow_agents_are_unchanged() {
    let p = ScriptedProvider::new();
    p.respond(Answer::message("Hello!"));
    let metas: Metas = Arc::default();
    let m = metas.clone();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .on_response(move |_r, meta| m.lock().unwrap().push(meta.clone()))
        .build()
        .unwrap();
    let r = agent.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Hello!");
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.model_calls, 1);
    assert!(
        p.requests()[0].output.is_none(),
        "the classic reply stays plain text"
    );
    let metas = metas.lock().unwrap().clone();
    assert_eq!(
        metas,
        vec![ResponseMeta::default()],
        "called once, classic path"
    );
}

#[tokio::test]
async fn detector_low_confidence_falls_back_to_classic() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, metas) = routed(
        &p,
        &c,
        Router::Detector {
            min_confidence: Some(0.7),
            prompt: Some("Only pick a task the user clearly asks for.".into()),
            fallback: Fallback::Classic,
        },
    );
    p.route(Answer::route_with_confidence("tutor", 0.3));
    p.respond(Answer::message("Happy to chat! What's on your mind?"));
    let r = agent.respond("s", "english maybe?").await.unwrap();
    assert_eq!(r.message, "Happy to chat! What's on your mind?");
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.flow, None);
    let route = &p.requests()[0];
    assert!(route.instructions().contains("confidence"));
    assert!(
        route
            .instructions()
            .contains("Only pick a task the user clearly asks for.")
    );

    p.route(Answer::route_with_confidence("tutor", 0.9));
    let r = agent
        .respond("s", "yes, practise English please")
        .await
        .unwrap();
    assert_eq!(r.message, "What's your name?");
    assert_eq!(r.meta.source, Source::Flow);
    assert_eq!(metas.lock().unwrap()[0].source, Source::Classic);
}

#[tokio::test]
async fn detector_unknown_pick_falls_back_to_the_configured_flow() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = routed(
        &p,
        &c,
        Router::Detector {
            min_confidence: None,
            prompt: None,
            fallback: Fallback::Flow("reminder".into()),
        },
    );
    p.route(Answer::raw(r#"{"flow":"weather"}"#));
    let r = agent.respond("s", "what's the weather").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("reminder"));
    assert_eq!(r.message, "What should I remind you about?");
}

#[tokio::test]
async fn detector_answer_that_cannot_be_read_is_repaired_once_then_falls_back() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = routed(&p, &c, Router::default());
    // Repaired: the second answer is read and routes.
    p.route(Answer::raw("tutor, I think"));
    p.route(Answer::route("tutor"));
    let r = agent.respond("a", "teach me English").await.unwrap();
    assert_eq!(r.message, "What's your name?");
    assert_eq!(p.calls_of(CallKind::Route), 2);
    let repair = p.requests().into_iter().nth(1).unwrap();
    let last = repair.messages.last().unwrap();
    assert!(
        last.content.contains("could not be used"),
        "{}",
        last.content
    );

    // Complete-looking JSON cut by the token limit is not trusted: repaired too.
    p.clear_requests();
    p.route(Answer::truncated(r#"{"flow":"reminder"}"#));
    p.route(Answer::route("tutor"));
    let r = agent.respond("c", "teach me English").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("tutor"));
    assert_eq!(p.calls_of(CallKind::Route), 2);

    // Unreadable twice: the fallback (classic) answers; the turn does not fail.
    p.clear_requests();
    p.route(Answer::raw("???"));
    p.route(Answer::raw("{\"flow\": 3}"));
    p.respond(Answer::message("How can I help?"));
    let r = agent.respond("b", "hmm").await.unwrap();
    assert_eq!(r.message, "How can I help?");
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert_eq!(r.meta.source, Source::Classic);
    assert_eq!(p.calls_of(CallKind::Route), 2);
}

#[tokio::test]
async fn schema_intent_routes_from_the_classic_reply() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = routed(
        &p,
        &c,
        Router::SchemaIntent {
            fallback: Fallback::Classic,
        },
    );
    p.respond(Answer::intent("Sure!", Some("tutor")));
    let r = agent.respond("s", "teach me English").await.unwrap();
    assert_eq!(
        r.message, "What's your name?",
        "the flow's reply replaces the classic one"
    );
    assert_eq!(r.model_calls, 1, "no classifier call");
    assert_eq!(p.calls_of(CallKind::Route), 0);
    let schema = p.requests()[0].output.clone().unwrap().schema;
    assert!(
        schema["properties"]["intent"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("reminder"))
    );

    // Missing or unknown intents keep the classic reply.
    let p = ScriptedProvider::new();
    let (agent, _) = routed(
        &p,
        &c,
        Router::SchemaIntent {
            fallback: Fallback::Classic,
        },
    );
    p.respond(Answer::intent("Hi there.", Some("nonsense")));
    let r = agent.respond("s2", "hello").await.unwrap();
    assert_eq!(r.message, "Hi there.");
    assert_eq!(r.stopped, StoppedReason::Responded);
}

#[tokio::test]
async fn ask_that_is_not_answered_is_asked_again() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::route("tutor"));
    agent.respond("s", "English practice").await.unwrap();
    p.extract(Answer::answering(serde_json::Value::Null));
    let r = agent.respond("s", "why do you ask?").await.unwrap();
    assert_eq!(r.message, "What's your name?");
    assert_eq!(r.step.as_deref(), Some("name"));
    assert_eq!(journal_len(&agent, "s").await, 1, "the question stays open");
    // An answer of the wrong type is not an answer either.
    let p2 = ScriptedProvider::new();
    let agent2 = solo(
        &p2,
        CodeFlow::new("age", |ctx: Cx| async move {
            let age: u8 = ctx.ask("age", "How old are you?").await;
            ctx.say(format!("{age} it is.")).await;
            ctx.end("done")
        }),
    );
    assert_eq!(
        agent2.respond("t", "hi").await.unwrap().message,
        "How old are you?"
    );
    p2.extract(Answer::answering(json!("old enough")));
    assert_eq!(
        agent2.respond("t", "old enough").await.unwrap().message,
        "How old are you?"
    );
    p2.extract(Answer::answering(json!(41)));
    let r = agent2.respond("t", "41").await.unwrap();
    assert_eq!(r.message, "41 it is.");
    let schema = p2.requests().last().unwrap().output.clone().unwrap().schema;
    assert_eq!(
        schema["properties"]["answer"]["anyOf"][0]["type"],
        json!("integer")
    );
}

#[tokio::test]
async fn ask_text_takes_the_message_verbatim_without_a_model_call() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("echo", |ctx: FlowCx<Notes, ()>| async move {
        let sentence = ctx
            .ask_text("sentence", "Send one sentence in English.")
            .await;
        ctx.say(format!("You wrote: {sentence}")).await;
        ctx.end("echoed")
    });
    let agent = solo(&p, flow);
    let r = agent.respond("s", "start").await.unwrap();
    assert_eq!(r.message, "Send one sentence in English.");
    assert_eq!(r.model_calls, 0);

    // A blank message does not answer: asked again, still no model call.
    let r = agent.respond("s", "   ").await.unwrap();
    assert_eq!(r.message, "Send one sentence in English.");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    let r = agent
        .respond("s", "  Yesterday I goed home.")
        .await
        .unwrap();
    assert_eq!(r.message, "You wrote:   Yesterday I goed home.");
    assert_eq!(r.model_calls, 0, "no extraction call");
    assert!(p.requests().is_empty());
    assert_eq!(r.meta.end_reason.as_deref(), Some("echoed"));
}

/// How old? (one typed question).
fn age_flow() -> CodeFlow<Notes, ()> {
    CodeFlow::new("age", |ctx: Cx| async move {
        let age: u8 = ctx.ask("age", "How old are you?").await;
        ctx.say(format!("{age} it is.")).await;
        ctx.end("done")
    })
}

#[tokio::test]
async fn an_unreadable_answer_is_repaired_once_then_a_typed_error_that_changes_nothing() {
    let p = ScriptedProvider::new();
    let agent = solo(&p, age_flow());
    agent.respond("a", "hi").await.unwrap();
    // Cut by the token limit, then a good answer to the repair.
    p.extract(Answer::truncated(r#"{"answer": 4"#));
    p.extract(Answer::answering(json!(42)));
    let r = agent.respond("a", "42").await.unwrap();
    assert_eq!(r.message, "42 it is.");
    assert_eq!(r.model_calls, 2);
    let repair = p.requests().into_iter().nth(1).unwrap();
    assert_eq!(repair.kind, CallKind::Extract);
    let last = repair.messages.last().unwrap();
    assert!(
        last.content.contains("cut by the token limit"),
        "{}",
        last.content
    );

    // Unreadable twice: a typed error, and the session still waits on the question.
    agent.respond("b", "hi").await.unwrap();
    let before = agent.session("b").await.unwrap();
    p.extract(Answer::raw("  \t "));
    p.extract(Answer::raw("{\"answer\":"));
    let err = agent.respond("b", "7").await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::MalformedModelOutput {
                kind: CallKind::Extract,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(agent.session("b").await.unwrap(), before);
    p.extract(Answer::answering(json!(7)));
    assert_eq!(agent.respond("b", "7").await.unwrap().message, "7 it is.");
}

#[tokio::test]
async fn tool_failures_come_back_to_the_flow_as_recoverable_results() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("tools", |ctx: FlowCx<Notes, ()>| async move {
        let boom = FnTool::new(
            "boom",
            "Always panics.",
            |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| async move {
                if true {
                    panic!("kaboom");
                }
                Ok(ToolOutput::text("unreachable"))
            },
        );
        let r = ctx.tool(boom, json!({})).await;
        let missing = ctx.tool_named("nope", json!({})).await;
        ctx.say(format!(
            "boom: {}; nope: {}",
            r.unwrap_err().message,
            missing.unwrap_err().message
        ))
        .await;
        ctx.end("checked")
    });
    let agent = solo(&p, flow);
    let r = agent.respond("s", "go").await.unwrap();
    assert!(r.message.contains("kaboom"), "{}", r.message);
    assert!(r.message.contains("unknown tool `nope`"), "{}", r.message);
    assert_eq!(r.tool_calls.len(), 2);
    assert!(r.tool_calls.iter().all(|t| !t.ok));
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "tools".into()
        }
    );
}

/// A tool that counts its calls, takes `delay` (virtual time in paused tests) and
/// answers `out`.
fn counted(
    name: &'static str,
    calls: &Arc<AtomicUsize>,
    delay: std::time::Duration,
    out: &'static str,
) -> FnTool<Notes, ()> {
    let n = calls.clone();
    FnTool::new(
        name,
        "A counted test tool.",
        move |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| {
            let n = n.clone();
            async move {
                n.fetch_add(1, Ordering::SeqCst);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(ToolOutput::text(out))
            }
        },
    )
}

/// RFC §7: a tool timeout is recoverable timeout text; the flow bounds its own
/// retries and moves on. The clock is paused: the limit is virtual time.
#[tokio::test(start_paused = true)]
async fn a_tool_past_its_time_limit_is_a_recoverable_timeout_and_retries_stay_bounded() {
    let p = ScriptedProvider::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let lookup = counted(
        "lookup",
        &calls,
        std::time::Duration::from_secs(600),
        "found",
    )
    .timeout(std::time::Duration::from_secs(2))
    .into_arc();
    let flow = CodeFlow::new("lookup", move |ctx: FlowCx<Notes, ()>| {
        let lookup = lookup.clone();
        async move {
            let reference: String = ctx.ask("reference", "Your booking reference?").await;
            for attempt in 1..=2 {
                match ctx
                    .tool(lookup.clone(), json!({ "reference": reference }))
                    .await
                {
                    Ok(found) => {
                        ctx.say(found).await;
                        return ctx.end("found");
                    }
                    Err(e) => ctx.say(format!("Attempt {attempt}: {}", e.message)).await,
                }
            }
            let ok: bool = ctx.ask("later", "Shall I try again later?").await;
            ctx.end(if ok { "later" } else { "dropped" })
        }
    });
    let agent = solo(&p, flow);
    assert_eq!(
        agent
            .respond("s", "where is my booking")
            .await
            .unwrap()
            .message,
        "Your booking reference?"
    );

    p.extract(Answer::answering(json!("AB12")));
    let started = tokio::time::Instant::now();
    let r = agent.respond("s", "AB12").await.unwrap();
    assert_eq!(
        started.elapsed(),
        std::time::Duration::from_secs(4),
        "two attempts, each cut at its 2 s limit"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(r.tool_calls.iter().all(|t| !t.ok));
    assert!(
        r.message.contains("Attempt 2: timed out after 2000 ms"),
        "{}",
        r.message
    );
    assert!(
        r.message.ends_with("Shall I try again later?"),
        "{}",
        r.message
    );
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    // The recorded timeouts replay without calling the tool (or waiting) again. The
    // flow ends without a word: the agent's own reply answers.
    p.extract(Answer::answering(json!(false)));
    p.respond(Answer::message("Alright."));
    let started = tokio::time::Instant::now();
    let r = agent.respond("s", "no thanks").await.unwrap();
    assert_eq!(
        r.message,
        "Alright. Is there anything else I can help with?"
    );
    assert_eq!(started.elapsed(), std::time::Duration::ZERO);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "lookup".into()
        }
    );
}

#[tokio::test]
async fn duplicate_event_does_not_advance_the_flow_twice() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, metas) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::route("tutor"));
    agent
        .respond_with("s", "English", &TurnOptions::event("e1"))
        .await
        .unwrap();
    p.extract(Answer::answering(json!("Ana")));
    let first = agent
        .respond_with("s", "Ana", &TurnOptions::event("e2"))
        .await
        .unwrap();
    let len = journal_len(&agent, "s").await;
    let again = agent
        .respond_with("s", "Ana", &TurnOptions::event("e2"))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.message, first.message);
    assert_eq!(journal_len(&agent, "s").await, len, "no second advance");
    assert_eq!(p.unused(), 0);
    assert_eq!(p.calls(), 2, "the duplicate made no model call");
    assert_eq!(
        metas.lock().unwrap().len(),
        2,
        "duplicates do not run the hook"
    );

    // Both copies at once: exactly one advances.
    p.extract(Answer::answering(json!("I goed home")));
    let e3 = TurnOptions::event("e3");
    let (a, b) = tokio::join!(
        agent.respond_with("s", "I goed home", &e3),
        agent.respond_with("s", "I goed home", &e3)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.duplicate ^ b.duplicate);
    assert_eq!(a.message, b.message);
    assert_eq!(p.unused(), 0);
    assert_eq!(c.correct.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn restart_resumes_from_the_journal() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let p = ScriptedProvider::new();
    let c = Counters::default();
    {
        let (agent, _) = agent_with(&p, &c, AgentConfig::default(), Some(store.clone()));
        p.route(Answer::route("tutor"));
        agent.respond("s", "English").await.unwrap();
        p.extract(Answer::answering(json!("Ana")));
        agent.respond("s", "Ana").await.unwrap();
    }
    // A new process: nothing in memory but the store.
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), Some(store));
    p.extract(Answer::answering(json!("I goed home")));
    let r = agent.respond("s", "I goed home").await.unwrap();
    assert!(
        r.message.starts_with("Corrected: I went home"),
        "{}",
        r.message
    );
    assert_eq!(r.flow.as_deref(), Some("reminder"));
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn restart_resumes_from_a_sqlite_file() {
    use agent_core::store::sqlite::SqliteStore;
    let dir = std::env::temp_dir().join(format!("codeflow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sessions.db");
    let _ = std::fs::remove_file(&path);
    let p = ScriptedProvider::new();
    let c = Counters::default();
    {
        let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
        let (agent, _) = agent_with(&p, &c, AgentConfig::default(), Some(store));
        p.route(Answer::route("reminder"));
        agent.respond("s", "remind me").await.unwrap();
        p.extract(Answer::answering(json!("water the plants")));
        agent.respond("s", "water the plants").await.unwrap();
    }
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), Some(store));
    p.extract(Answer::answering(json!("tomorrow")));
    let r = agent.respond("s", "tomorrow").await.unwrap();
    assert_eq!(r.message, "Scheduled (R1: water the plants tomorrow).");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow whose text depends on something outside `ctx` (here a counter standing in
/// for the wall clock).
fn sloppy(counter: Arc<AtomicUsize>) -> CodeFlow<Notes, ()> {
    CodeFlow::new("sloppy", move |ctx: Cx| {
        let counter = counter.clone();
        async move {
            let run = counter.fetch_add(1, Ordering::SeqCst);
            ctx.say(format!("run {run}")).await;
            let _name: String = ctx.ask("name", "Name?").await;
            ctx.end("done")
        }
    })
}

/// A broken replay rule is a failed step of the flow, reported with the typed error;
/// it counts toward `max_flow_failures` (2 by default), after which the flow is
/// cleared and the session goes on: no replay error can fail every turn for ever.
#[tokio::test]
async fn replay_that_diverges_is_a_typed_failure_that_cannot_wedge_the_session() {
    let p = ScriptedProvider::new();
    let agent = solo(&p, sloppy(Arc::default()));
    let r = agent.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "run 0\n\nName?");
    let journal = agent
        .session("s")
        .await
        .unwrap()
        .unwrap()
        .code
        .unwrap()
        .journal;

    p.extract(Answer::answering(json!("Ana")));
    let r = agent.respond("s", "Ana").await.unwrap();
    match &r.stopped {
        StoppedReason::FlowFailed {
            flow,
            cleared: false,
            replay:
                Some(CodeFlowError::NonDeterministic {
                    flow: f,
                    position,
                    recorded,
                    called,
                }),
            message,
        } => {
            assert_eq!((flow.as_str(), f.as_str()), ("sloppy", "sloppy"));
            assert_eq!(*position, 0);
            assert_eq!(recorded, "say(\"run 0\")");
            assert_eq!(called, "say(\"run 1\")");
            assert!(message.contains("journal position 0"), "{message}");
        }
        other => panic!("expected a non-determinism failure, got {other:?}"),
    }
    assert_eq!(r.message, AgentConfig::default().flow_error_reply);
    let code = agent.session("s").await.unwrap().unwrap().code.unwrap();
    assert_eq!(code.failures, 1);
    assert_eq!(code.journal, journal, "the failed turn recorded nothing");

    // The second failure in a row clears the flow; the agent's own reply answers.
    p.respond(Answer::message("Sorry about that. How can I help?"));
    let r = agent.respond("s", "Ana").await.unwrap();
    assert!(
        matches!(
            &r.stopped,
            StoppedReason::FlowFailed {
                cleared: true,
                replay: Some(CodeFlowError::NonDeterministic { .. }),
                ..
            }
        ),
        "{:?}",
        r.stopped
    );
    assert_eq!(r.message, "Sorry about that. How can I help?");
    assert!(agent.session("s").await.unwrap().unwrap().code.is_none());

    // The session moves on: the next turn starts the flow afresh.
    let r = agent.respond("s", "hello").await.unwrap();
    assert_eq!(r.message, "run 3\n\nName?");
    assert_eq!(r.stopped, StoppedReason::NeedsInput);
}

#[tokio::test]
async fn always_replay_mode_catches_non_determinism_on_the_first_turn() {
    let p = ScriptedProvider::new();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .code_flow(sloppy(Arc::default()))
        .config(always_replay())
        .build()
        .unwrap();
    let err = agent.respond("s", "hi").await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::CodeFlow(CodeFlowError::NonDeterministic { position: 0, .. })
        ),
        "{err:?}"
    );
    assert!(agent.session("s").await.unwrap().is_none());
}

#[tokio::test]
async fn time_randomness_and_ids_from_ctx_replay_identically() {
    let p = ScriptedProvider::new();
    let seen: Arc<Mutex<Vec<(u64, u64, String)>>> = Arc::default();
    let s2 = seen.clone();
    let flow = CodeFlow::new("ids", move |ctx: Cx| {
        let seen = s2.clone();
        async move {
            let t = ctx.now_ms().await;
            let r = ctx.random_u64().await;
            let id = ctx.new_id().await;
            seen.lock().unwrap().push((t, r, id.clone()));
            ctx.say(format!("ticket {id}")).await;
            let _ok: bool = ctx.ask("confirm", "Confirm?").await;
            ctx.end("done")
        }
    });
    let clock = agent_core::clock::ManualClock::new(1_000);
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .clock(clock.clone())
        .config(always_replay())
        .build()
        .unwrap();
    let r = agent.respond("s", "hi").await.unwrap();
    clock.advance(std::time::Duration::from_secs(60));
    p.extract(Answer::answering(json!(true)));
    // The flow ends without a word: the agent's own reply answers.
    p.respond(Answer::message("Done."));
    agent.respond("s", "yes").await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 3, "replayed several times: {}", seen.len());
    assert!(seen.iter().all(|v| *v == seen[0]), "{seen:?}");
    assert_eq!(seen[0].0, 1_000);
    assert_eq!(seen[0].2.len(), 32);
    assert!(r.message.contains(&seen[0].2));
}

#[tokio::test]
async fn journal_records_outputs_not_prompts() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::route("tutor"));
    agent.respond("s", "English").await.unwrap();
    p.extract(Answer::answering(json!("Ana")));
    agent
        .respond("s", &format!("I'm Ana. {}", "blah ".repeat(400)))
        .await
        .unwrap();
    let s = agent.session("s").await.unwrap().unwrap();
    let code = s.code.unwrap();
    assert_eq!(
        code.journal,
        vec![
            Entry::Ask {
                key: "name".into(),
                answer: Some(json!("Ana"))
            },
            Entry::Say {
                text: "Nice to meet you, Ana.".into()
            },
            Entry::Ask {
                key: "sentence".into(),
                answer: None
            },
        ]
    );
    let bytes = serde_json::to_string(&code).unwrap();
    assert!(bytes.len() < 200, "{bytes}");
    assert!(
        !bytes.contains("blah"),
        "the user's message is history, not journal"
    );
}

fn flaky(fails: Arc<AtomicUsize>) -> CodeFlow<Notes, ()> {
    CodeFlow::new("flaky", move |ctx: Cx| {
        let fails = fails.clone();
        async move {
            let city: String = ctx.ask("city", "Which city?").await;
            if fails.load(Ordering::SeqCst) > 0 {
                fails.fetch_sub(1, Ordering::SeqCst);
                if city == "panic" {
                    panic!("the flow panicked on {city}");
                }
                return Err(FlowError::new(format!("backend down for {city}")));
            }
            ctx.say(format!("{city}, noted.")).await;
            ctx.end("done")
        }
    })
}

use agent_core::codeflow::FlowError;

#[tokio::test]
async fn a_failing_step_keeps_the_flow_and_repeated_failures_clear_it() {
    let p = ScriptedProvider::new();
    let fails = Arc::new(AtomicUsize::new(1));
    let agent = solo(&p, flaky(fails.clone()));
    agent.respond("s", "hi").await.unwrap();
    p.extract(Answer::answering(json!("Oslo")));
    let r = agent.respond("s", "Oslo").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: false, message, .. } if message.contains("backend down"))
    );
    assert_eq!(r.message, AgentConfig::default().flow_error_reply);
    assert_eq!(r.flow.as_deref(), Some("flaky"), "still in the flow");
    assert_eq!(
        r.step.as_deref(),
        Some("city"),
        "the question is still open"
    );
    // Recovered: the same question is answered this time.
    p.extract(Answer::answering(json!("Oslo")));
    let r = agent.respond("s", "Oslo").await.unwrap();
    assert_eq!(r.message, "Oslo, noted.");

    // Panics twice in a row: cleared, the classic reply answers.
    fails.store(2, Ordering::SeqCst);
    let p = ScriptedProvider::new();
    let agent = solo(&p, flaky(fails.clone()));
    agent.respond("t", "hi").await.unwrap();
    p.extract(Answer::answering(json!("panic")));
    let r = agent.respond("t", "panic").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: false, message, .. } if message.contains("panicked"))
    );
    p.extract(Answer::answering(json!("panic")));
    p.respond(Answer::message("Let's start over. How can I help?"));
    let r = agent.respond("t", "panic").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: true, .. }),
        "{:?}",
        r.stopped
    );
    assert_eq!(r.message, "Let's start over. How can I help?");
    assert_eq!(r.flow, None);
    assert!(agent.session("t").await.unwrap().unwrap().code.is_none());
}

#[tokio::test]
async fn unresolved_handoff_ends_the_flow_with_the_classic_reply() {
    let p = ScriptedProvider::new();
    let agent = solo(
        &p,
        CodeFlow::new("lost", |ctx: Cx| async move {
            ctx.say("Moving you on.").await;
            ctx.handoff_to("nowhere")
        }),
    );
    p.respond(Answer::message("How else can I help?"));
    let r = agent.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, "Moving you on.\n\nHow else can I help?");
    assert_eq!(r.stopped, StoppedReason::Responded);
    assert!(agent.session("s").await.unwrap().unwrap().code.is_none());
}

fn hotel() -> Flow<Notes, ()> {
    Flow::builder("hotel")
        .title("Hotel booking")
        .when("the user wants a hotel")
        .required(["city"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm.")
                .end()
                .branch(Branch::to_flow("reminder").when("the user wants a reminder")),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn code_and_declarative_flows_hand_off_both_ways() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .flow(hotel())
        .code_flow(CodeFlow::new("greeter", |ctx: Cx| async move {
            let name: String = ctx.ask("name", "Your name?").await;
            ctx.say(format!("Welcome, {name}.")).await;
            ctx.handoff_to("hotel")
        }))
        .code_flow(reminder(&c))
        .build()
        .unwrap();
    p.route(Answer::route("greeter"));
    assert_eq!(
        agent.respond("s", "hello").await.unwrap().message,
        "Your name?"
    );
    // Code → declarative: the hotel flow's first step speaks in the same turn.
    p.extract(Answer::answering(json!("Ana")));
    p.respond(Answer::message("Which city?"));
    let r = agent.respond("s", "Ana").await.unwrap();
    assert_eq!(r.message, "Welcome, Ana.\n\nWhich city?");
    assert_eq!(r.flow.as_deref(), Some("hotel"));
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(r.meta.source, Source::Classic);
    assert_eq!(r.meta.handoff_from.as_deref(), Some("greeter"));
    // Declarative → code: a branch of the confirm step names the code flow.
    p.respond(Answer::message("Oslo it is. Shall I book?").with_data(json!({"city": "Oslo"})));
    let r = agent.respond("s", "Oslo").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("confirm"));
    p.respond(Answer::message("Sure.").judging("the user wants a reminder", true));
    p.classify(Answer::verdicts([("the user wants a reminder", true)]));
    let r = agent.respond("s", "and remind me to pack").await.unwrap();
    assert_eq!(r.flow.as_deref(), Some("reminder"), "{r:?}");
    assert!(
        r.message.ends_with("What should I remind you about?"),
        "{}",
        r.message
    );
    assert_eq!(r.meta.source, Source::Flow);
}

#[tokio::test]
async fn a_dispatched_go_to_starts_a_code_flow_and_build_checks_ids() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .flow(hotel())
        .code_flow(reminder(&c))
        .build()
        .unwrap();
    agent
        .dispatch("s", Directive::go_to("reminder"))
        .await
        .unwrap();
    let r = agent.respond("s", "hey").await.unwrap();
    assert_eq!(r.message, "What should I remind you about?");
    assert_eq!(p.calls(), 0);

    let dup = Agent::<Notes, ()>::builder()
        .provider(p.clone())
        .flow(hotel())
        .code_flow(CodeFlow::new(
            "hotel",
            |ctx: Cx| async move { ctx.end("x") },
        ))
        .build();
    let err = dup.err().unwrap().to_string();
    assert!(err.contains("duplicate flow id `hotel`"), "{err}");
    let bad = Agent::<Notes, ()>::builder()
        .provider(p)
        .code_flow(reminder(&c))
        .router(Router::SchemaIntent {
            fallback: Fallback::Flow("remindr".into()),
        })
        .build();
    let err = bad.err().unwrap().to_string();
    assert!(err.contains("did you mean `reminder`"), "{err}");
}

/// RFC §4.4: `/flow <id>`, `/flow stop` and `/flow status` are read before routing
/// and the model, when enabled.
#[tokio::test]
async fn flow_commands_start_stop_and_report_flows_without_a_model_call() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .flow(hotel())
        .code_flow(tutor(&c))
        .code_flow(reminder(&c))
        .config(AgentConfig {
            flow_commands: true,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let say = |m: &'static str| {
        let agent = agent.clone();
        async move { agent.respond("s", m).await.unwrap() }
    };

    let r = say("/flow status").await;
    assert_eq!(
        r.message,
        "No flow is active. Flows: hotel, tutor, reminder."
    );
    assert_eq!(r.stopped, StoppedReason::Reply);
    let r = say("/flow tutor").await;
    assert_eq!(r.message, "What's your name?");
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source == agent_core::response::DirectiveSource::Slash("/flow tutor".into())),
        "{:?}",
        r.directive_chain
    );
    assert_eq!(
        r.transitions,
        vec![Transition {
            from: None,
            to: "tutor".into()
        }]
    );
    assert_eq!(
        say("/flow status").await.message,
        "Active flow: `tutor` (waiting on `name`)."
    );
    let r = say("/flow stop").await;
    assert_eq!(r.message, "Left flow `tutor`.");
    assert_eq!(r.flow, None);
    assert!(agent.session("s").await.unwrap().unwrap().code.is_none());
    assert_eq!(
        say("/flow weather").await.message,
        "There is no flow `weather`. Flows: hotel, tutor, reminder."
    );
    assert!(say("/flow").await.message.starts_with("Flow commands:"));
    assert!(p.requests().is_empty(), "no command costs a model call");

    // A declarative flow starts at its entry step, and its step speaks.
    p.respond(Answer::message("Which city?"));
    let r = say("/flow hotel").await;
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("hotel"), Some("ask_city"))
    );
    assert_eq!(r.message, "Which city?");
    assert_eq!(
        p.calls_of(CallKind::Route),
        0,
        "the command chose; no routing"
    );
    assert_eq!(
        say("/flow status").await.message,
        "Active flow: `hotel` (at step `ask_city`)."
    );
    assert_eq!(say("/flow stop").await.message, "Left flow `hotel`.");
    assert_eq!(agent.session("s").await.unwrap().unwrap().flow, None);
}

#[tokio::test]
async fn flow_commands_are_ordinary_text_unless_enabled() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::route("reminder"));
    let r = agent.respond("s", "/flow status").await.unwrap();
    assert_eq!(r.message, "What should I remind you about?");
    assert_eq!(p.calls_of(CallKind::Route), 1);
}

/// A flow bug (a loop that never asks) cannot grow the journal or call a tool without
/// end: the step fails at the per-turn effect budget, and repeated failures clear it.
#[tokio::test]
async fn a_flow_that_loops_without_asking_fails_at_the_effect_budget() {
    let p = ScriptedProvider::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let ping = counted("ping", &calls, std::time::Duration::ZERO, "pong").into_arc();
    let flow = CodeFlow::new("looping", move |ctx: Cx| {
        let ping = ping.clone();
        async move {
            ctx.say("Starting.").await;
            loop {
                ctx.tool(ping.clone(), json!({})).await?;
            }
        }
    });
    let agent: Agent<Notes, ()> = Agent::builder()
        .provider(p.clone())
        .code_flow(flow)
        .config(AgentConfig {
            max_flow_effects_per_turn: 50,
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    let r = agent.respond("s", "hi").await.unwrap();
    match &r.stopped {
        StoppedReason::FlowFailed {
            flow,
            message,
            cleared: false,
            replay: None,
        } => {
            assert_eq!(flow, "looping");
            assert!(message.contains("50 effects"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        49,
        "the say and 49 calls fill the budget; the next call never runs"
    );
    let state = agent.session("s").await.unwrap().unwrap().code.unwrap();
    assert!(state.journal.is_empty(), "the failed step recorded nothing");

    p.respond(Answer::message("How can I help?"));
    let r = agent.respond("s", "hi again").await.unwrap();
    assert!(
        matches!(&r.stopped, StoppedReason::FlowFailed { cleared: true, .. }),
        "{:?}",
        r.stopped
    );
    assert_eq!(r.message, "How can I help?");
    assert!(agent.session("s").await.unwrap().unwrap().code.is_none());
}

/// RFC §3.4 `ctx.endSession()`: the reply goes out, then the session is erased.
#[tokio::test]
async fn end_session_replies_then_erases_the_session() {
    let p = ScriptedProvider::new();
    let agent = solo(
        &p,
        CodeFlow::new("farewell", |ctx: Cx| async move {
            let more: bool = ctx.ask("more", "Anything else?").await;
            if !more {
                ctx.say("Goodbye!").await;
                return ctx.end_session("the user is done");
            }
            ctx.end("more")
        }),
    );
    agent.respond("s", "hi").await.unwrap();
    p.extract(Answer::answering(json!(false)));
    let r = agent.respond("s", "no, thanks").await.unwrap();
    assert_eq!(r.message, "Goodbye!");
    assert_eq!(
        r.stopped,
        StoppedReason::Aborted {
            reason: Some("the user is done".into())
        }
    );
    assert_eq!(r.meta.end_reason.as_deref(), Some("the user is done"));
    let s = agent.session("s").await.unwrap().unwrap();
    assert!(s.code.is_none() && s.history.is_empty() && s.completed_flows.is_empty());

    // The next message starts afresh.
    assert_eq!(
        agent.respond("s", "hello").await.unwrap().message,
        "Anything else?"
    );
}

/// A tool that stores `city` (as a booking lookup would).
fn store_city(city: &'static str) -> FnTool<Notes, ()> {
    FnTool::new(
        "store_city",
        "Remember the city.",
        move |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| async move {
            let patch = json!({ "city": city }).as_object().cloned().unwrap();
            Ok(ToolOutput::text("stored").data(patch))
        },
    )
}

/// Issue 15: a flow that says something built from `ctx.data()`, then calls a tool
/// that changes that data, then asks, used to fail every later turn with
/// `NonDeterministic` (the replay saw the new data). `ctx.data()` shows each part of
/// the fn the data as the turn it first ran in began, on every replay.
#[tokio::test]
async fn ctx_data_replays_as_it_was_when_that_part_first_ran() {
    for config in [AgentConfig::default(), always_replay()] {
        let p = ScriptedProvider::new();
        let flow = CodeFlow::new("count", |ctx: Cx| async move {
            ctx.say(format!("city was {:?}", ctx.data().city)).await;
            ctx.tool(store_city("Porto"), json!({})).await?;
            let _name: String = ctx.ask_text("name", "Name?").await;
            ctx.say(format!("now city is {:?}", ctx.data().city)).await;
            let _more: String = ctx.ask_text("more", "Anything else?").await;
            ctx.say(format!("still {:?}", ctx.data().city)).await;
            ctx.end("done")
        });
        let agent: Agent<Notes, ()> = Agent::builder()
            .provider(p.clone())
            .code_flow(flow)
            .config(config)
            .build()
            .unwrap();
        let r = agent.respond("s", "hi").await.unwrap();
        assert_eq!(r.message, "city was None\n\nName?");
        assert_eq!(r.data.city.as_deref(), Some("Porto"));

        let r = agent.respond("s", "Ana").await.unwrap();
        assert_eq!(r.message, "now city is Some(\"Porto\")\n\nAnything else?");
        let r = agent.respond("s", "no").await.unwrap();
        assert_eq!(r.message, "still Some(\"Porto\")");
        assert_eq!(
            r.stopped,
            StoppedReason::FlowCompleted {
                flow: "count".into()
            }
        );
    }
}

/// What keeps those replays faithful is small: the fields that changed, where they
/// changed; a turn that changed nothing adds nothing.
#[tokio::test]
async fn the_recorded_data_is_only_what_changed() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("count", |ctx: Cx| async move {
        ctx.say(format!("city was {:?}", ctx.data().city)).await;
        ctx.tool(store_city("Porto"), json!({})).await?;
        let _a: String = ctx.ask_text("a", "A?").await;
        let _b: String = ctx.ask_text("b", "B?").await;
        let _c: String = ctx.ask_text("c", "C?").await;
        ctx.end("done")
    });
    let agent = solo(&p, flow);
    agent.respond("s", "hi").await.unwrap();
    agent.respond("s", "1").await.unwrap();
    agent.respond("s", "2").await.unwrap();
    let code = agent.session("s").await.unwrap().unwrap().code.unwrap();
    assert_eq!(
        code.data,
        Some(vec![agent_core::codeflow::DataDelta {
            at: 3,
            fields: json!({ "city": "Porto" }).as_object().cloned().unwrap(),
        }])
    );
}

/// Issue 15: a flow that ends without a word this turn sent an empty reply. The
/// agent's own reply answers instead; the turn still reports how the flow ended.
#[tokio::test]
async fn a_code_flow_that_ends_without_a_word_leaves_the_reply_to_the_agent() {
    let p = ScriptedProvider::new();
    let flow = CodeFlow::new("quiet", |ctx: Cx| async move {
        let _name: String = ctx.ask_text("name", "Name?").await;
        ctx.end("done")
    });
    let agent = solo(&p, flow);
    assert_eq!(agent.respond("s", "hi").await.unwrap().message, "Name?");
    p.respond(Answer::message("Thanks, Ana. Anything else?"));
    let r = agent.respond("s", "Ana").await.unwrap();
    assert_eq!(r.message, "Thanks, Ana. Anything else?");
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "quiet".into()
        }
    );
    assert_eq!(r.meta.end_reason.as_deref(), Some("done"));
    assert_eq!(p.calls_of(CallKind::Respond), 1);
    let s = agent.session("s").await.unwrap().unwrap();
    assert!(s.code.is_none());
    assert_eq!(
        s.history.last().map(|m| m.content.as_str()),
        Some("Thanks, Ana. Anything else?")
    );
}

/// A data write the type refuses fails the tool call (the flow sees why), not the
/// turn: the same call would otherwise fail every turn.
#[tokio::test]
async fn a_code_tool_whose_write_is_refused_fails_the_call_not_the_turn() {
    let p = ScriptedProvider::new();
    let bad = FnTool::new(
        "bad_write",
        "Writes a field the data type does not have.",
        |_cx: ToolCx<Notes, ()>, _a: serde_json::Value| async move {
            let patch = json!({ "colour": "red" }).as_object().cloned().unwrap();
            Ok(ToolOutput::text("written").data(patch))
        },
    );
    let flow = CodeFlow::new("writer", move |ctx: Cx| {
        let bad = bad.clone();
        async move {
            match ctx.tool(bad, json!({})).await {
                Ok(_) => ctx.say("saved").await,
                Err(e) => ctx.say(format!("not saved: {}", e.message)).await,
            }
            ctx.end("done")
        }
    });
    let agent = solo(&p, flow);
    let r = agent.respond("s", "go").await.unwrap();
    assert!(
        r.message
            .starts_with("not saved: the tool's data write was refused: unknown field `colour`"),
        "{}",
        r.message
    );
    assert!(!r.tool_calls[0].ok);
    assert_eq!(r.data, Notes::default());
}

#[tokio::test]
async fn a_plain_cancel_stops_a_code_flow_at_its_question_and_it_can_start_again() {
    let p = ScriptedProvider::new();
    let c = Counters::default();
    let (agent, _) = agent_with(&p, &c, AgentConfig::default(), None);
    p.route(Answer::route("tutor"));
    let r = agent.respond("s", "English practice").await.unwrap();
    assert_eq!(r.message, "What's your name?");
    let calls = p.requests().len();
    let r = agent.respond("s", "never mind").await.unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCancelled {
            flow: "tutor".into()
        }
    );
    assert_eq!(
        r.message,
        "Okay, I've stopped english tutor. Is there anything else I can help with?"
    );
    assert_eq!(r.model_calls, 0, "code reads a plain cancel");
    assert_eq!(p.requests().len(), calls);
    assert!(
        r.commands
            .contains(&agent_core::command::Command::cancel_flow())
    );
    let s = agent.session("s").await.unwrap().unwrap();
    assert!(s.code.is_none() && s.step.is_none());
    // Asked for again, it starts over at its first question.
    p.route(Answer::route("tutor"));
    let r = agent.respond("s", "English practice please").await.unwrap();
    assert_eq!(r.message, "What's your name?");
    assert_eq!(journal_len(&agent, "s").await, 1);
}
