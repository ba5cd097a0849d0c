//! One file over 600 lines: every test starts the same example server (`start`), and the
//! client runner and HTTP helpers here serve both the real-client tests and the plain-HTTP
//! ones.
//!
//! The server example's serving protocols, each checked against a real client the
//! project did not write:
//!
//! - `POST /v1/chat/completions` with the official `openai` Python package
//!   (`tests/protocols/openai_client.py`): a completion, the session continued through
//!   the `x-session-id` header, a streamed completion, a session named by `user`, a 400,
//!   and the `agent` field all along;
//! - `POST /v1/responses` with the OpenAI Agents SDK (`openai-agents`,
//!   `tests/protocols/agents_sdk_client.py`): an `Agent` on `OpenAIResponsesModel`, a
//!   conversation carried by `previous_response_id` (two runs and a streamed one) and one
//!   by the re-sent history (`to_input_list()`), a wrong key (401) and another user's
//!   response id (403);
//! - `POST /agui` with `HttpAgent` of `@ag-ui/client` (`tests/protocols/agui_client.cjs`),
//!   which validates the event stream and applies it to its own state: three runs of a
//!   booking, the second ending in an interrupt (the booking waits for approval) and the
//!   third resuming it.
//!
//! The clients come from `scripts/protocols.sh` (`eval "$(bash scripts/protocols.sh)"`
//! sets `AGENT_OPENAI_PYTHON` and `AGENT_AGUI_NODE_PATH`). Without them those three tests
//! are skipped, except under `CI=true`, where they fail. The other tests check the
//! routes over plain HTTP (errors, headers, failed turns) and need nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "../examples/server/main.rs"]
mod server;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::prelude::AgentConfig;
use serde_json::{Value, json};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
const MODEL: &str = "concierge";
/// The bearer tokens the server under test knows: the chat user's and the operator's.
const USER: &str = "user-token-under-test";
const OPERATOR: &str = "operator-token-under-test";
/// Another user's token.
const OTHER: &str = "other-token-under-test";

fn tokens() -> server::Tokens {
    server::Tokens {
        user: USER.into(),
        operator: OPERATOR.into(),
    }
}

/// The path an env var names, or `None` after saying how to get it (a failure under
/// `CI=true`).
fn installed(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            let why = format!(
                "{var} is not set ({what}): run `eval \"$(bash scripts/protocols.sh)\"` first"
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why}");
            }
            println!("skipped: run scripts/protocols.sh ({why})");
            None
        }
    }
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("protocols")
        .join(name)
}

/// The server (scripted concierge, bookings wait for approval) on a free port.
async fn start(provider: Arc<dyn agent_core::provider::Provider>) -> (String, u16) {
    let (base, port, _) = start_logged(provider, Auth::Tokens).await;
    (base, port)
}

/// How the server under test authenticates.
enum Auth {
    /// The example's tokens, and another user's ([`OTHER`]).
    Tokens,
    /// Nobody ([`agent_core::serve::Anonymous`]).
    Anonymous,
}

/// [`start`] with the lines the server logs.
async fn start_logged(
    provider: Arc<dyn agent_core::provider::Provider>,
    auth: Auth,
) -> (String, u16, Arc<std::sync::Mutex<Vec<String>>>) {
    let agent = Arc::new(
        server::booking_agent_approving(
            provider,
            AgentConfig::default(),
            server::Approvals::Bookings,
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = lines.clone();
    let log: server::Log = Arc::new(move |l: &str| {
        eprintln!("{l}");
        keep.lock().unwrap().push(l.to_owned());
    });
    let app = match auth {
        Auth::Tokens => server::app_with(agent, tokens().auth().user(OTHER, "other"), &[], log),
        Auth::Anonymous => server::app_with(agent, agent_core::serve::Anonymous, &[], log),
    }
    .unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}"), port, lines)
}

async fn start_scripted() -> (String, u16) {
    start(Arc::new(server::Typewriter::new(
        server::scripted_model(),
        4,
        Duration::from_millis(2),
    )))
    .await
}

/// Run a client to its end (killed after [`CLIENT_TIMEOUT`]) and parse the JSON it
/// prints.
async fn run_client(mut cmd: Command) -> Value {
    let shown = format!("{cmd:?}");
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {shown}: {e}"));
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            stdout.read_to_string(&mut s).map(|_| s)
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            stderr.read_to_string(&mut s).map(|_| s)
        });
        let deadline = Instant::now() + CLIENT_TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = out.join().unwrap().unwrap_or_default();
        let err = err.join().unwrap().unwrap_or_default();
        (shown, status, out, err)
    })
    .await
    .unwrap();
    let (shown, status, stdout, stderr) = out;
    match status {
        None => panic!("{shown} did not finish within {CLIENT_TIMEOUT:?}; stderr:\n{stderr}"),
        Some(s) if !s.success() => {
            panic!("{shown} failed ({s}); stderr:\n{stderr}\nstdout:\n{stdout}")
        }
        Some(_) => {}
    }
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{shown} printed no JSON ({e}):\n{stdout}\nstderr:\n{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_client_talks_to_the_chat_completions_endpoint() {
    let Some(python) = installed("AGENT_OPENAI_PYTHON", "a python3 with the openai package") else {
        return;
    };
    let (base, _) = start_scripted().await;
    let mut cmd = Command::new(&python);
    cmd.arg(script("openai_client.py"))
        .arg(&base)
        .arg(USER)
        .arg(OTHER)
        .arg(OPERATOR);
    let r = run_client(cmd).await;
    println!("openai {}", r["openai_version"]);

    // A new session: the server names it in the x-session-id header.
    let first = &r["first"];
    let session = first["session"].as_str().unwrap().to_owned();
    assert!(session.starts_with("oai-"), "{first}");
    assert_eq!(first["object"], "chat.completion");
    assert_eq!(first["model"], MODEL);
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["finish_reason"], "stop");
    assert!(
        first["content"].as_str().unwrap().contains("Which city"),
        "{first}"
    );
    assert!(first["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let usage = &first["usage"];
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
    let agent = &first["agent"];
    assert_eq!(agent["session_id"], session.as_str());
    assert_eq!(agent["flow"], "booking");
    assert_eq!(agent["step"], "ask_city");
    assert_eq!(agent["stopped"], json!({ "kind": "needs_input" }));

    // The header sent back continues the session: only the last user message counts.
    let second = &r["second"];
    assert_eq!(second["session"], session.as_str());
    assert_eq!(second["agent"]["step"], "ask_date", "{second}");
    assert_eq!(second["agent"]["data"]["city"], "Lisbon");
    assert!(
        second["content"].as_str().unwrap().contains("check in"),
        "{second}"
    );

    // Streamed, on the same session.
    let s = &r["streamed"];
    assert_eq!(s["session"], session.as_str());
    assert!(
        s["content_type"]
            .as_str()
            .unwrap()
            .starts_with("text/event-stream"),
        "{s}"
    );
    assert_eq!(s["objects"], json!(["chat.completion.chunk"]));
    assert_eq!(s["models"], json!([MODEL]));
    assert_eq!(s["roles"], json!(["assistant"]));
    assert!(
        s["deltas"].as_array().unwrap().len() >= 2,
        "not streamed: {s}"
    );
    assert!(
        s["content"]
            .as_str()
            .unwrap()
            .contains("a room in Lisbon from 2026-07-01 for 2 guest(s). Shall I book it?"),
        "{s}"
    );
    assert_eq!(s["finish_reason"], "stop");
    assert_eq!(s["agent"]["step"], "confirm", "{s}");
    assert_eq!(
        s["agent"]["data"],
        json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": null })
    );
    assert!(s["usage"]["completion_tokens"].as_u64().unwrap() > 0, "{s}");

    // The history re-sent without a session id (with `user`): the same conversation.
    let h = &r["history"];
    let (porto, yes, again, new) = (&h["porto"], &h["yes"], &h["again"], &h["new"]);
    let derived = porto["session"].as_str().unwrap();
    assert!(derived.starts_with("oai-"), "{porto}");
    assert_ne!(
        derived, session,
        "another identity (`user`), another session"
    );
    assert_eq!(yes["session"], derived, "{yes}");
    assert_eq!(porto["agent"]["step"], "confirm", "{porto}");
    assert_eq!(porto["agent"]["data"]["city"], "Porto");
    assert_eq!(
        yes["agent"]["data"]["city"], "Porto",
        "the earlier turns are kept"
    );
    // The booking waits for approval: a tool call, as OpenAI clients expect one.
    assert_eq!(yes["finish_reason"], "tool_calls", "{yes}");
    assert_eq!(yes["content"], server::APPROVAL_REPLY, "{yes}");
    assert_eq!(
        yes["tool_calls"],
        json!([{ "id": "call_book", "type": "function", "name": "book_room",
                 "arguments": "{\"hotel\":\"Grand Hotel Porto\"}" }])
    );
    assert_eq!(
        yes["agent"]["stopped"],
        json!({ "kind": "awaiting_approval", "calls": ["call_book"] })
    );
    // A second "yes" decides nothing, runs no turn, and says the booking may still happen.
    assert_eq!(again["session"], derived, "{again}");
    assert_eq!(again["finish_reason"], "tool_calls", "{again}");
    assert_eq!(again["agent"]["model_calls"], 0, "{again}");
    let said = again["content"].as_str().unwrap();
    assert!(
        said.contains("book_room") && said.contains("will run once approved"),
        "{again}"
    );
    assert!(!said.contains("not booked"), "{again}");
    // The history goes on after that message (which ran no turn): the same session.
    let later = &h["later"];
    assert_eq!(later["session"], derived, "{later}");
    assert_eq!(later["finish_reason"], "tool_calls", "{later}");
    // The same first message again is a new conversation.
    assert!(
        new["session"].as_str().unwrap().starts_with(derived),
        "{new}"
    );
    assert_ne!(new["session"], derived, "{new}");
    assert_eq!(new["agent"]["data"]["booking_id"], Value::Null, "{new}");

    // A tool message decides the call: not with the chat user's key...
    let by_user = &r["decided_by_user"];
    assert_eq!(by_user["status"], 403, "{by_user}");
    assert_eq!(by_user["class"], "PermissionDeniedError", "{by_user}");
    assert_eq!(by_user["code"], "operator_required", "{by_user}");
    // ...with the operator's: the turn resumes and the room is booked.
    let decided = &r["decided_by_operator"];
    assert_eq!(decided["session"], derived, "{decided}");
    assert_eq!(decided["finish_reason"], "stop", "{decided}");
    assert_eq!(
        decided["agent"]["data"]["booking_id"], "POR-0803-3",
        "{decided}"
    );
    assert!(
        decided["content"].as_str().unwrap().contains("POR-0803-3"),
        "{decided}"
    );

    // Another user cannot reach the first user's conversation.
    let other = &r["other_user"];
    assert_eq!(other["status"], 403, "{other}");
    assert_eq!(other["class"], "PermissionDeniedError", "{other}");

    // Refusals the client does not retry, each naming what is wrong.
    let f = &r["refusals"];
    for (name, status, code, param) in [
        (
            "no_user_message",
            400,
            Value::from("missing_required_parameter"),
            "messages",
        ),
        (
            "unknown_model",
            404,
            Value::from("model_not_found"),
            "model",
        ),
        ("tools", 400, Value::from("unsupported_parameter"), "tools"),
        ("n", 400, Value::from("unsupported_value"), "n"),
        (
            "long_message",
            400,
            Value::from("string_above_max_length"),
            "messages",
        ),
        ("huge_body", 413, Value::from("request_too_large"), ""),
    ] {
        let e = &f[name];
        assert_eq!(e["status"], status, "{name}: {e}");
        assert_eq!(e["code"], code, "{name}: {e}");
        if !param.is_empty() {
            assert_eq!(e["param"], param, "{name}: {e}");
        }
        assert_eq!(e["requests"], 1, "{name} was retried: {e}");
    }
    assert!(
        !f["long_message"]["message"]
            .as_str()
            .unwrap()
            .contains("max_message_bytes"),
        "the caller is not told to change a server setting: {}",
        f["long_message"]
    );
    assert_eq!(f["unknown_model"]["class"], "NotFoundError");
    assert_eq!(r["models"], json!(["concierge"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_agents_sdk_runs_on_the_responses_endpoint() {
    let Some(python) = installed(
        "AGENT_OPENAI_PYTHON",
        "a python3 with the openai and openai-agents packages",
    ) else {
        return;
    };
    let (base, _) = start_scripted().await;
    let mut cmd = Command::new(&python);
    cmd.arg(script("agents_sdk_client.py"))
        .arg(&base)
        .arg(USER)
        .arg(OTHER);
    let r = run_client(cmd).await;
    println!(
        "openai {}, openai-agents {}",
        r["openai_version"], r["agents_version"]
    );
    assert_eq!(r["paths"], json!(["/v1/responses"]), "{r}");

    // previous_response_id carries the conversation: each turn builds on the last.
    let (first, second, streamed) = (&r["first"], &r["second"], &r["streamed"]);
    let session = first["session"].as_str().unwrap();
    assert!(session.starts_with("oai-"), "{first}");
    assert!(
        first["output"].as_str().unwrap().contains("Which city"),
        "{first}"
    );
    assert!(
        first["response_id"].as_str().unwrap().starts_with("resp_"),
        "{first}"
    );
    assert!(first["output_tokens"].as_u64().unwrap() > 0, "{first}");
    assert_eq!(
        first["total_tokens"].as_u64(),
        Some(first["input_tokens"].as_u64().unwrap() + first["output_tokens"].as_u64().unwrap())
    );
    assert_eq!(second["session"], session, "{second}");
    assert!(
        second["output"].as_str().unwrap().contains("check in"),
        "{second}"
    );
    assert_ne!(second["response_id"], first["response_id"]);
    assert_eq!(streamed["session"], session, "{streamed}");
    assert!(
        streamed["output"]
            .as_str()
            .unwrap()
            .contains("a room in Lisbon from 2026-07-01 for 2 guest(s). Shall I book it?"),
        "the earlier turns are kept: {streamed}"
    );
    let deltas = streamed["deltas"].as_array().unwrap();
    assert!(deltas.len() >= 2, "not streamed: {streamed}");
    let joined: String = deltas.iter().map(|d| d.as_str().unwrap()).collect();
    assert_eq!(joined, streamed["output"].as_str().unwrap());
    let kinds = streamed["kinds"].as_array().unwrap();
    assert_eq!(kinds.first().unwrap(), "response.created", "{streamed}");
    assert_eq!(kinds.last().unwrap(), "response.completed", "{streamed}");
    let numbers: Vec<u64> = streamed["sequence_numbers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());

    // The history re-sent (`to_input_list()`): the derived session goes on.
    let (porto, resent) = (&r["porto"], &r["resent"]);
    assert!(r["resent_items"].as_u64().unwrap() >= 3, "{r}");
    assert_ne!(porto["session"], session, "another conversation");
    assert_eq!(resent["session"], porto["session"], "{resent}");
    let said = resent["output"].as_str().unwrap();
    assert!(
        said.contains("Porto") && said.contains("3 guest(s)"),
        "the earlier turn is kept: {resent}"
    );

    // A wrong API key; another user's previous_response_id.
    let wrong = &r["wrong_token"];
    assert_eq!(wrong["status"], 401, "{wrong}");
    assert_eq!(wrong["class"], "AuthenticationError", "{wrong}");
    let other = &r["other_user"];
    assert_eq!(other["status"], 403, "{other}");
    assert_eq!(other["class"], "PermissionDeniedError", "{other}");
}

/// The events of one run, with consecutive `TEXT_MESSAGE_CONTENT`s as one.
fn kinds(events: &[Value]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for e in events {
        let t = e["type"].as_str().unwrap();
        if !(t == "TEXT_MESSAGE_CONTENT" && out.last() == Some(&t)) {
            out.push(t);
        }
    }
    out
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agui_client_runs_a_booking_over_agui_events() {
    let Some(node_path) = installed("AGENT_AGUI_NODE_PATH", "node_modules with @ag-ui/client")
    else {
        return;
    };
    let (base, _, logged) = start_logged(
        Arc::new(server::Typewriter::new(
            server::scripted_model(),
            4,
            Duration::from_millis(2),
        )),
        Auth::Tokens,
    )
    .await;
    let thread = format!("agui-{}", std::process::id());
    let mut cmd = Command::new(std::env::var("NODE").unwrap_or_else(|_| "node".into()));
    cmd.arg(script("agui_client.cjs"))
        .arg(&base)
        .arg(&thread)
        .arg(USER)
        .arg(OPERATOR)
        .env("NODE_PATH", &node_path);
    let r = run_client(cmd).await;
    // The frontend's state, tools and context: the data is written to the session, the
    // rest is logged as ignored.
    let f = &r["frontend"];
    assert_eq!(f["failed"], Value::Null, "{f}");
    assert_eq!(f["state"]["data"]["city"], "Vienna", "{f}");
    let lines = logged.lock().unwrap().clone();
    for ignored in [
        "ignored 1 frontend tool(s) (show_map)",
        "ignored 1 context item(s) (the user's time zone)",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(ignored)),
            "{ignored}: {lines:?}"
        );
    }
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{r}");
    // The chat user's resume is refused: only the operator decides.
    let refused = &r["refused"];
    assert!(
        refused["failed"]
            .as_str()
            .unwrap_or_default()
            .contains("403"),
        "{refused}"
    );
    assert_eq!(refused["events"], json!([]), "{refused}");
    for run in runs {
        assert_eq!(run["failed"], Value::Null, "the client refused run {run}");
        let events = run["events"].as_array().unwrap();
        assert_eq!(
            events[0],
            json!({ "type": "RUN_STARTED", "threadId": thread, "runId": run["runId"] })
        );
        let last = events.last().unwrap();
        assert_eq!(last["type"], "RUN_FINISHED", "{run}");
        assert_eq!(last["threadId"], thread.as_str());
        assert_eq!(last["runId"], run["runId"]);
        // The text streamed is the reply the client assembled.
        let text: String = of_type(events, "TEXT_MESSAGE_CONTENT")
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(run["reply"], text.as_str(), "{run}");
        // The client's state is the last snapshot.
        let snapshots = of_type(events, "STATE_SNAPSHOT");
        assert_eq!(snapshots.len(), 2, "{run}");
        assert_eq!(run["state"], snapshots[1]["snapshot"], "{run}");
    }

    // Run 1: every step up to the confirmation, the reply streamed.
    let run = &runs[0];
    let events = run["events"].as_array().unwrap();
    let steps: Vec<&Value> = of_type(events, "STEP_STARTED")
        .iter()
        .map(|e| &e["stepName"])
        .collect();
    assert_eq!(
        steps,
        [
            &json!("ask_city"),
            &json!("ask_date"),
            &json!("ask_guests"),
            &json!("route"),
            &json!("confirm")
        ]
    );
    assert_eq!(of_type(events, "STEP_FINISHED").len(), 5);
    let k = kinds(events);
    assert_eq!(&k[..2], ["RUN_STARTED", "STATE_SNAPSHOT"], "{k:?}");
    assert_eq!(
        &k[k.len() - 6..],
        [
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ],
        "{k:?}"
    );
    assert!(
        of_type(events, "TEXT_MESSAGE_CONTENT").len() >= 2,
        "not streamed"
    );
    assert_eq!(
        of_type(events, "STATE_SNAPSHOT")[0]["snapshot"],
        json!({ "flow": null, "step": null, "awaiting_approval": [],
                "data": { "city": null, "check_in": null, "guests": null, "booking_id": null } })
    );
    let deltas = of_type(events, "STATE_DELTA");
    assert_eq!(
        deltas.last().unwrap()["delta"],
        json!([{ "op": "add", "path": "/flow", "value": "booking" },
               { "op": "add", "path": "/step", "value": "confirm" }])
    );
    assert_eq!(
        run["state"],
        json!({
            "flow": "booking",
            "step": "confirm",
            "data": { "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": null },
            "stopped": { "kind": "needs_input" },
            "awaiting_approval": [],
        })
    );
    assert!(run["reply"].as_str().unwrap().ends_with("Shall I book it?"));
    assert_eq!(run["finished"]["outcome"], "success");

    // Run 2: "yes": the book_room call, then an interrupt: it waits for approval.
    let run = &runs[1];
    let events = run["events"].as_array().unwrap();
    assert_eq!(
        kinds(events),
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]
    );
    let start = of_type(events, "TOOL_CALL_START")[0];
    assert_eq!(start["toolCallId"], "call_book");
    assert_eq!(start["toolCallName"], "book_room");
    let args: Value = serde_json::from_str(
        of_type(events, "TOOL_CALL_ARGS")[0]["delta"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({ "hotel": "Grand Hotel Lisbon" }));
    assert_eq!(run["reply"], server::APPROVAL_REPLY);
    assert_eq!(run["finished"]["outcome"], "interrupt", "{run}");
    let interrupt = &run["finished"]["interrupts"][0];
    assert_eq!(interrupt["id"], "call_book");
    assert_eq!(interrupt["toolCallId"], "call_book");
    assert_eq!(interrupt["reason"], "tool_approval");
    assert_eq!(run["pendingInterrupts"][0]["id"], "call_book");
    assert_eq!(run["state"]["awaiting_approval"][0]["id"], "call_book");
    assert_eq!(run["state"]["data"]["booking_id"], Value::Null);

    // Run 3: the interrupt resumed as resolved: the room is booked.
    let run = &runs[2];
    let events = run["events"].as_array().unwrap();
    let result = of_type(events, "TOOL_CALL_RESULT");
    assert_eq!(result.len(), 1, "{run}");
    assert_eq!(result[0]["toolCallId"], "call_book");
    assert!(
        result[0]["content"]
            .as_str()
            .unwrap()
            .contains("LIS-0701-2")
    );
    assert!(
        run["reply"]
            .as_str()
            .unwrap()
            .contains("Your confirmation number is LIS-0701-2"),
        "{run}"
    );
    assert_eq!(run["finished"]["outcome"], "success");
    assert_eq!(run["pendingInterrupts"], json!([]));
    assert_eq!(
        run["state"],
        json!({
            "flow": null,
            "step": null,
            "data": { "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": "LIS-0701-2" },
            "stopped": { "kind": "flow_completed", "flow": "booking" },
            "awaiting_approval": [],
        })
    );
}

// ---------------------------------------------------------------------------------------
// Plain HTTP: no client needed
// ---------------------------------------------------------------------------------------

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `data:` payloads of a server-sent event body.
    fn data(&self) -> Vec<String> {
        self.body
            .split("\n\n")
            .filter_map(|block| {
                let lines: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: ").or(l.strip_prefix("data:")))
                    .collect();
                (!lines.is_empty()).then(|| lines.join("\n"))
            })
            .collect()
    }
}

/// One HTTP/1.0 exchange (the answer ends when the server closes), with the chat
/// user's token unless `headers` has an `authorization`.
async fn http(port: u16, path: &'static str, headers: &[(&str, &str)], body: String) -> Answer {
    let bearer = format!("Bearer {USER}");
    let mut headers = headers.to_vec();
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        headers.push(("authorization", &bearer));
    }
    let headers: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let method = if body.is_empty() { "GET" } else { "POST" };
        write!(
            s,
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        Answer {
            status,
            headers,
            body: body.to_owned(),
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_completions_route_over_plain_http() {
    let (_, port) = start_scripted().await;
    let chat = |messages: Value, extra: Value| {
        let mut body = json!({ "model": "concierge", "messages": messages });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body.to_string()
    };

    // The header names the session; only the last user message is the input.
    let a = http(
        port,
        "/v1/chat/completions",
        &[("x-session-id", "plain-1")],
        chat(
            json!([
                { "role": "user", "content": "Hello there" },
                { "role": "assistant", "content": "Which city?" },
                { "role": "user", "content": [{ "type": "text", "text": "A room in Lisbon on July 1st for 2 guests" }] },
            ]),
            json!({}),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("x-session-id"), Some("plain-1"));
    let c = a.json();
    assert_eq!(c["model"], "concierge");
    assert_eq!(c["agent"]["step"], "confirm", "{c}");
    assert_eq!(c["agent"]["session_id"], "plain-1");

    // Streamed: chunks, the agent in the last one, then [DONE].
    let a = http(
        port,
        "/v1/chat/completions",
        &[("x-session-id", "plain-1")],
        chat(
            json!([{ "role": "user", "content": "Yes, book it please" }]),
            json!({ "stream": true }),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("x-session-id"), Some("plain-1"));
    let data = a.data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let last = chunks.last().unwrap();
    // The booking waits for approval: a tool call, streamed as OpenAI streams one.
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(last["agent"]["awaiting_approval"][0]["tool"], "book_room");
    let call = &chunks[chunks.len() - 2]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(
        *call,
        json!({ "index": 0, "id": "call_book", "type": "function",
                "function": { "name": "book_room", "arguments": "{\"hotel\":\"Grand Hotel Lisbon\"}" } })
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, server::APPROVAL_REPLY);
    // No usage chunk unless asked for.
    assert!(chunks.iter().all(|c| c["usage"].is_null()));

    // Refusals: OpenAI-style errors with a 400.
    for (headers, body, says) in [
        (vec![], "{not json".to_owned(), "JSON"),
        (vec![], json!({ "messages": [] }).to_string(), "model"),
        (
            vec![],
            chat(json!([{ "role": "system", "content": "hi" }]), json!({})),
            "user",
        ),
        (
            vec![],
            chat(json!([{ "role": "user", "content": "  " }]), json!({})),
            "empty",
        ),
        (
            vec![("x-session-id", "no spaces allowed")],
            chat(json!([{ "role": "user", "content": "hi" }]), json!({})),
            "session id",
        ),
    ] {
        let a = http(port, "/v1/chat/completions", &headers, body.clone()).await;
        assert_eq!(a.status, 400, "{body}: {}", a.body);
        let e = a.json();
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(says),
            "{body}: {e}"
        );
    }

    // A new session when nothing names one.
    let a = http(
        port,
        "/v1/chat/completions",
        &[],
        chat(json!([{ "role": "user", "content": "hi" }]), json!({})),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let id = a.header("x-session-id").unwrap().to_owned();
    assert_eq!(a.json()["agent"]["session_id"], id.as_str());

    let m = http(port, "/v1/models", &[], String::new()).await;
    assert_eq!(m.json()["data"][0]["id"], "concierge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_gives_protocol_errors_and_changes_nothing() {
    // No answers scripted: every model call fails.
    let (_, port) = start(Arc::new(agent_core::testing::ScriptedProvider::new())).await;
    let body = json!({ "model": "concierge", "messages": [{ "role": "user", "content": "hi" }] });

    let a = http(
        port,
        "/v1/chat/completions",
        &[("x-session-id", "f1")],
        body.to_string(),
    )
    .await;
    assert_eq!(a.status, 500, "{}", a.body);
    assert_eq!(a.json()["error"]["type"], "server_error");

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let a = http(
        port,
        "/v1/chat/completions",
        &[("x-session-id", "f1")],
        streamed.to_string(),
    )
    .await;
    assert_eq!(a.status, 200);
    let data = a.data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let error: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(error["error"]["type"], "server_error", "{data:?}");

    let a = http(
        port,
        "/agui",
        &[],
        json!({ "threadId": "f1", "runId": "r1",
                "messages": [{ "id": "m1", "role": "user", "content": "hi" }] })
        .to_string(),
    )
    .await;
    assert_eq!(a.status, 200);
    let events: Vec<Value> = a
        .data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "RUN_STARTED");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    assert!(last["message"].is_string());
    assert!(!events.iter().any(|e| e["type"] == "RUN_FINISHED"));

    let s = http(port, "/api/sessions/f1", &[], String::new()).await;
    assert_eq!(s.json()["turns"], 0, "a failed turn changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agui_route_refuses_what_is_not_a_run() {
    let (_, port) = start_scripted().await;
    for (body, status, says) in [
        ("{".to_owned(), 400, "RunAgentInput"),
        (
            json!({ "runId": "r", "messages": [] }).to_string(),
            400,
            "threadId",
        ),
        (
            json!({ "threadId": "t 1", "runId": "r", "messages": [] }).to_string(),
            400,
            "threadId",
        ),
        (
            json!({ "threadId": "t1", "messages": [] }).to_string(),
            400,
            "runId",
        ),
        (
            json!({ "threadId": "t1", "runId": "r", "messages": [] }).to_string(),
            400,
            "no user message",
        ),
        (
            json!({ "threadId": "t1", "runId": "r", "messages": [],
                    "resume": [{ "interruptId": "call_book", "status": "maybe" }] })
            .to_string(),
            400,
            "resolved",
        ),
        (
            json!({ "threadId": "t1", "runId": "r", "messages": [],
                    "resume": [{ "interruptId": "call_book", "status": "resolved" }] })
            .to_string(),
            403,
            "operator",
        ),
    ] {
        let a = http(port, "/agui", &[], body.clone()).await;
        assert_eq!(a.status, status, "{body}: {}", a.body);
        let e = a.json();
        assert!(e["error"].as_str().unwrap().contains(says), "{body}: {e}");
    }

    // A cancelled interrupt is a denial: nothing is booked.
    let run = |run: &str, extra: Value| {
        let mut body = json!({ "threadId": "t2", "runId": run, "messages": [] });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body.to_string()
    };
    for (id, text) in [
        ("r1", "A room in Porto on August 3rd for 3 guests"),
        ("r2", "Yes, book it please"),
    ] {
        let a = http(
            port,
            "/agui",
            &[],
            run(
                id,
                json!({ "messages": [{ "id": id, "role": "user", "content": text }] }),
            ),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    // Another user cannot run on the thread, nor resume it.
    let other = format!("Bearer {OTHER}");
    let a = http(
        port,
        "/agui",
        &[("authorization", &other)],
        run(
            "r-other",
            json!({ "messages": [{ "id": "o1", "role": "user", "content": "Yes" }] }),
        ),
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(
        a.json()["error"]
            .as_str()
            .unwrap()
            .contains("another principal")
    );
    let a = http(
        port,
        "/agui",
        &[("authorization", "Bearer not-a-token")],
        run(
            "r-none",
            json!({ "messages": [{ "id": "o1", "role": "user", "content": "Yes" }] }),
        ),
    )
    .await;
    assert_eq!(a.status, 401, "{}", a.body);
    let operator = format!("Bearer {OPERATOR}");
    let a = http(
        port,
        "/agui",
        &[("authorization", &operator)],
        json!({ "threadId": "t1", "runId": "r", "messages": [],
                "resume": [{ "interruptId": "call_book", "status": "resolved" }] })
        .to_string(),
    )
    .await;
    assert_eq!(a.status, 409, "{}", a.body);
    assert!(a.json()["error"].as_str().unwrap().contains("no call"));
    let a = http(
        port,
        "/agui",
        &[("authorization", &operator)],
        run(
            "r3",
            json!({ "resume": [{ "interruptId": "call_book", "status": "cancelled",
                                 "payload": { "reason": "the hotel is full" } }] }),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let events: Vec<Value> = a
        .data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let snapshot = &events[events.len() - 2];
    assert_eq!(snapshot["type"], "STATE_SNAPSHOT");
    assert_eq!(snapshot["snapshot"]["data"]["booking_id"], Value::Null);
    assert_eq!(snapshot["snapshot"]["awaiting_approval"], json!([]));
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(text.contains("the hotel is full"), "{text}");
    assert_eq!(events.last().unwrap()["outcome"]["type"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mermaid_is_served_when_configured() {
    let (_, port) = start_scripted().await;
    let a = http(port, "/vendor/mermaid.min.js", &[], String::new()).await;
    match std::env::var("AGENT_MERMAID_JS") {
        Ok(path) if !path.is_empty() => {
            assert_eq!(
                a.status,
                200,
                "{path}: {}",
                &a.body[..a.body.len().min(300)]
            );
            assert!(
                a.header("content-type")
                    .unwrap()
                    .starts_with("text/javascript")
            );
            assert_eq!(a.body.len() as u64, std::fs::metadata(&path).unwrap().len());
        }
        _ => {
            assert_eq!(a.status, 404, "{}", a.body);
            assert!(a.body.contains("scripts/protocols.sh"), "{}", a.body);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_history_continues_its_session_or_is_refused() {
    // A server that authenticates nobody: the API key (if any) and `user` are the
    // caller's identity.
    let (_, port, _) = start_logged(
        Arc::new(server::Typewriter::new(
            server::scripted_model(),
            4,
            Duration::from_millis(1),
        )),
        Auth::Anonymous,
    )
    .await;
    let no_key = [("authorization", "")];
    let chat = |messages: Value| json!({ "model": "concierge", "messages": messages }).to_string();
    let porto = json!({ "role": "user", "content": "A room in Porto on August 3rd for 3 guests" });
    let yes = json!({ "role": "user", "content": "Yes, book it please" });
    let reply = json!({ "role": "assistant", "content": "Shall I book it?" });

    // No identity: a first message starts a new session, a history is refused with a
    // 400 that says how to carry the session.
    let a = http(port, "/v1/chat/completions", &no_key, chat(json!([porto]))).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = http(
        port,
        "/v1/chat/completions",
        &no_key,
        chat(json!([porto, reply, yes])),
    )
    .await;
    assert_eq!(a.status, 400, "{}", a.body);
    let e = a.json();
    assert_eq!(e["error"]["code"], "session_required", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-session-id"),
        "{e}"
    );

    // An API key is an identity: the history re-sent continues the conversation.
    let key = [("authorization", "Bearer sk-anything")];
    let a = http(port, "/v1/chat/completions", &key, chat(json!([porto]))).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let session = a.header("x-session-id").unwrap().to_owned();
    let b = http(
        port,
        "/v1/chat/completions",
        &key,
        chat(json!([porto, reply, yes])),
    )
    .await;
    assert_eq!(b.status, 200, "{}", b.body);
    assert_eq!(b.header("x-session-id"), Some(session.as_str()));
    let c = b.json();
    assert_eq!(c["agent"]["data"]["city"], "Porto", "{c}");
    assert_eq!(c["choices"][0]["finish_reason"], "tool_calls", "{c}");

    // Another key, the same history: not that conversation, and not a silent new one.
    let other = [("authorization", "Bearer sk-other")];
    let a = http(
        port,
        "/v1/chat/completions",
        &other,
        chat(json!([porto, reply, yes])),
    )
    .await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["error"]["code"], "session_not_found");

    // Without an operator, nobody decides the waiting call over HTTP.
    let a = http(
        port,
        "/v1/chat/completions",
        &key,
        chat(json!([porto, reply, yes,
            { "role": "assistant", "content": "", "tool_calls": [{ "id": "call_book",
              "type": "function", "function": { "name": "book_room", "arguments": "{}" } }] },
            { "role": "tool", "tool_call_id": "call_book", "content": "approve" }])),
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(a.json()["error"]["code"], "operator_required");
}
