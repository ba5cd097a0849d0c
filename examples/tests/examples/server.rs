//! The web chat server: it picks its model as every example does, and a failed turn
//! is logged as well as sent to the page. (The page itself: `tests/web_chat.rs`.)

#[allow(dead_code)]
#[path = "../../examples/server/main.rs"]
mod server;

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use examples::model::{Choice, Fallback, ModelError, choose, connect};

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

#[test]
fn the_server_chooses_its_model_as_every_example_does() {
    let settings: [&[(&str, &str)]; 5] = [
        &[("OPENAI_API_KEY", "sk-test-0123456789")],
        &[("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")],
        &[("GEMINI_API_KEY", "gm-test-0123456789")],
        &[
            ("AGENT_BASE_URL", "http://127.0.0.1:9/v1"),
            ("AGENT_MODEL", "qwen"),
        ],
        &[],
    ];
    for vars in settings {
        let e = env(vars);
        let served = server::model_from(&e, no_local).unwrap();
        let shared = connect(
            choose(&e, Fallback::Scripted),
            &e,
            ScriptedProvider::new,
            no_local,
        )
        .unwrap();
        assert_eq!(served.choice(), shared.choice(), "{vars:?}");
        assert_eq!(served.description(), shared.description(), "{vars:?}");
        assert_eq!(
            server::served(&served).name(),
            shared.provider().name(),
            "{vars:?}"
        );
    }
    assert_eq!(
        *server::model_from(
            &env(&[("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")]),
            no_local
        )
        .unwrap()
        .choice(),
        Choice::Anthropic
    );

    // The local model, as the other examples start it.
    let asked = Cell::new(None);
    let e = env(&[("LOCAL_MODEL", "gemma-3-270m")]);
    let local = server::model_from(&e, |m| {
        asked.set(Some(m.map(str::to_owned)));
        Ok("OPENAI_BASE_URL=http://127.0.0.1:18080/v1\nOPENAI_MODEL=gemma-3-270m\n".into())
    })
    .unwrap();
    assert_eq!(asked.take(), Some(Some("gemma-3-270m".to_owned())));
    assert!(local.is_local());
    assert_eq!(
        local.config().temperature,
        Some(0.0),
        "the local model's settings"
    );
}

/// A model whose server refuses every connection.
fn down() -> ScriptedProvider {
    let p = ScriptedProvider::new();
    let refused = ProviderError::Network("tcp connect error: Connection refused".into());
    for kind in [
        CallKind::Respond,
        CallKind::ToolRound,
        CallKind::Classify,
        CallKind::Route,
        CallKind::Extract,
        CallKind::Summarize,
    ] {
        p.default_answer(kind, Answer::error(refused.clone()));
    }
    p
}

/// POST one message over plain HTTP/1.1 and read the whole answer.
fn post(port: u16, session: &str, text: &str) -> String {
    let body = serde_json::json!({ "text": text }).to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /api/sessions/{session}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t-user\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_logged_and_sent_to_the_page() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let keep = lines.clone();
    let log: server::Log = Arc::new(move |l: &str| keep.lock().unwrap().push(l.to_owned()));
    let agent = Arc::new(server::booking_agent(Arc::new(down())).unwrap());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let tokens = server::Tokens {
        user: "t-user".into(),
        operator: "t-operator".into(),
    };
    let app = server::app_with(agent, tokens.auth(), &[], log).unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });

    let answer = tokio::task::spawn_blocking(move || post(port, "s1", "a room in Porto"))
        .await
        .unwrap();
    serving.abort();

    assert!(answer.contains("event: error"), "{answer}");
    assert!(answer.contains("Connection refused"), "{answer}");
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("[server] session s1: turn failed: model call (")
            && lines[0].contains("Connection refused")
            && lines[0].ends_with("(the session is unchanged)"),
        "{lines:?}"
    );
}
