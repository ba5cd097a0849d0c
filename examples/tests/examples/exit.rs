//! How the examples end: exit status 1, and the reason in words on stderr, when the
//! model cannot be reached, when every turn failed, or when the example cannot start;
//! 0 for a scripted demo that succeeds.

#[allow(dead_code)]
#[path = "../../examples/quickstart.rs"]
mod quickstart;

#[allow(dead_code)]
#[path = "../../examples/streaming.rs"]
mod streaming;

#[allow(dead_code)]
#[path = "../../examples/concierge.rs"]
mod concierge;

use std::collections::HashMap;
use std::error::Error;
use std::io::Cursor;
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::AgentConfig;
use agent_core::error::ProviderError;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::exit::{Outcome, status};
use examples::model::{Fallback, ModelError, choose, connect};

const KINDS: [CallKind; 6] = [
    CallKind::Respond,
    CallKind::ToolRound,
    CallKind::Classify,
    CallKind::Route,
    CallKind::Extract,
    CallKind::Summarize,
];

/// A model that answers every call with `answer`.
fn always(answer: Answer) -> ScriptedProvider {
    let p = ScriptedProvider::new();
    for kind in KINDS {
        p.default_answer(kind, answer.clone());
    }
    p
}

/// A model whose server refuses every connection.
fn down() -> ScriptedProvider {
    always(Answer::error(ProviderError::Network(
        "tcp connect error: Connection refused (os error 111)".into(),
    )))
}

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn no_local(_: Option<&str>) -> Result<String, ModelError> {
    panic!("the local model must not be started")
}

/// The exit status and stderr of a run, as `examples::exit::report` gives them.
fn exit<T: Outcome>(result: Result<T, Box<dyn Error>>) -> (ExitCode, String) {
    let mut err = Vec::new();
    let code = status(result, &mut err);
    (code, String::from_utf8(err).unwrap())
}

#[tokio::test]
async fn a_scripted_demo_that_succeeds_exits_0_and_prints_nothing_on_stderr() {
    let (_, t, _) = run_example!(quickstart);
    assert_eq!(exit(Ok(t)), (ExitCode::SUCCESS, String::new()));
}

#[tokio::test]
async fn a_server_that_refuses_connections_exits_1_with_one_grouped_cause() {
    // A port nobody listens on, reached as `AGENT_BASE_URL` reaches it: with retries.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let e = env(&[("AGENT_BASE_URL", &url)]);
    let model = connect(
        choose(&e, Fallback::Scripted),
        &e,
        ScriptedProvider::new,
        no_local,
    )
    .unwrap();
    let mut out = Vec::new();
    let t = quickstart::run(model.provider(), &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();

    assert_eq!(
        t.turns.len(),
        1,
        "stops at the first unreachable turn: {printed}"
    );
    assert!(printed.contains("stopping here"), "{printed}");
    assert!(
        printed.contains("compatible/default, 3 attempts: "),
        "{printed}"
    );
    assert_eq!(
        printed.matches("Connection refused").count(),
        1,
        "{printed}"
    );
    let (code, stderr) = exit(Ok(t));
    assert_eq!(code, ExitCode::FAILURE);
    assert!(
        stderr.starts_with("error: the model could not be reached"),
        "{stderr}"
    );
}

#[tokio::test]
async fn every_turn_failing_exits_1_even_when_the_model_answers() {
    // The model answers, but never in the shape the engine asked for.
    let mut out = Vec::new();
    let t = quickstart::run(Arc::new(always(Answer::raw("not json"))), &mut out)
        .await
        .unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert_eq!(t.failures(), quickstart::MESSAGES.len(), "{printed}");
    let (code, stderr) = exit(Ok(t));
    assert_eq!(code, ExitCode::FAILURE);
    assert!(
        stderr.starts_with("error: every turn failed (3;"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_streaming_example_whose_model_is_down_stops_and_exits_1() {
    let mut out = Vec::new();
    let (turns, tally) = streaming::run(Arc::new(down()), &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert_eq!(turns.len(), 1, "{printed}");
    assert_eq!((tally.failed, tally.unreachable), (1, 1));
    assert_eq!(exit(Ok((turns, tally))).0, ExitCode::FAILURE);
}

#[tokio::test]
async fn a_typed_conversation_whose_every_turn_failed_exits_1_and_one_without_turns_exits_0() {
    let run = |typed: &'static str| async move {
        let mut input = Cursor::new(typed.as_bytes());
        let config = AgentConfig::default();
        concierge::talk(Arc::new(down()), config, &mut input, &mut Vec::new())
            .await
            .unwrap()
    };
    let o = run("hello\nanyone there?\n/quit\n").await;
    assert_eq!((o.tally.turns, o.tally.failed), (2, 2));
    assert_eq!(exit(Ok(o)).0, ExitCode::FAILURE);
    let o = run("/help\n/quit\n").await;
    assert_eq!(exit(Ok(o)), (ExitCode::SUCCESS, String::new()));
}

#[test]
fn a_base_url_without_http_prints_the_fix_in_words_not_debug() {
    let e = env(&[("AGENT_BASE_URL", "127.0.0.1:9")]);
    let err = connect(
        choose(&e, Fallback::Scripted),
        &e,
        ScriptedProvider::new,
        no_local,
    )
    .err()
    .unwrap();
    let (code, stderr) = exit::<()>(Err(Box::new(err)));
    assert_eq!(code, ExitCode::FAILURE);
    assert_eq!(
        stderr,
        "error: cannot configure the model: base URL `127.0.0.1:9` is not an http:// or https:// URL; add http:// in front: http://127.0.0.1:9\n"
    );
}
