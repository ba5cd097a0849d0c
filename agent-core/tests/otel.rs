//! OpenTelemetry export (issue 17, item 2; feature `otel`): a turn's spans reach a real
//! OTLP/HTTP receiver that decodes them with the official protocol definitions
//! (tests/otel_receiver.py on PyPI's `opentelemetry-proto`), named and attributed by
//! the GenAI semantic conventions, model and tool calls children of the turn; message
//! contents only when capture is on.
//!
//!   eval "$(bash scripts/otel.sh)"      # exports AGENT_OTEL_PYTHON
//!   cargo test -p agent-core --features otel --test otel
//!
//! Without `AGENT_OTEL_PYTHON` each test says it is skipped and passes, except under
//! `CI=true`, where it fails.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::error::ProviderError;
use agent_core::prelude::*;
use agent_core::telemetry::Telemetry;
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Orders {
    /// The last receipt
    receipt: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    /// Amount in cents
    cents: u64,
}

const SESSION: &str = "s-otel";
const USER: &str = "Please pay 500 cents for order 77";
const REPLY: &str = "Paid: receipt R-500 is yours";

/// The receiver's Python, or `None` (skipped) outside CI when scripts/otel.sh has not
/// been run.
fn python(test: &str) -> Option<String> {
    match std::env::var("AGENT_OTEL_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "AGENT_OTEL_PYTHON is unset under CI: run `eval \"$(bash scripts/otel.sh)\"` first"
            )
        }
        _ => {
            eprintln!("{test}: skipped: run scripts/otel.sh (eval \"$(bash scripts/otel.sh)\")");
            None
        }
    }
}

/// tests/otel_receiver.py on a free port of 127.0.0.1, writing spans to a JSON-lines file.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(python: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let out = std::env::temp_dir().join(format!(
            "agent-otel-{}-{}.jsonl",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_file(&out);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel_receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {script}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver did not print its port: {line:?}"));
        Self { child, port, out }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.out);
    }
}

fn pay_tool(fail: bool) -> FnTool<Orders, ()> {
    FnTool::new(
        "pay",
        "Charge the card.",
        move |_cx: ToolCx<Orders, ()>, p: Payment| async move {
            if fail {
                return Err(ToolError::Failed("the card was declined".into()));
            }
            Ok(ToolOutput::text(format!(
                "charged {} cents, receipt R-{}",
                p.cents, p.cents
            )))
        },
    )
}

/// One turn of the `concierge` agent (the model calls `pay`, then answers) exported to
/// a fresh receiver; the spans it got.
fn traced_turn(python: &str, capture: bool, failing: bool) -> Vec<Value> {
    let receiver = Receiver::start(python);
    let telemetry = Telemetry::otlp(receiver.endpoint())
        .service_name("otel-test")
        .capture_content(capture)
        .build()
        .unwrap();
    {
        // This thread's subscriber only: the tests of this binary run side by side.
        let _default = tracing::subscriber::set_default(
            tracing_subscriber::registry().with(telemetry.layer()),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let p = ScriptedProvider::new();
            p.respond(Answer::tool("pay", json!({ "cents": 500 })));
            if failing {
                p.tool_round(Answer::error(ProviderError::Http {
                    status: 503,
                    message: "overloaded".into(),
                    retry_after: None,
                }));
            } else {
                p.tool_round(Answer::message(REPLY));
            }
            let agent: Agent<Orders, ()> = Agent::builder()
                .name("concierge")
                .provider(p.clone())
                .tool(pay_tool(failing))
                .build()
                .unwrap();
            let r = agent.respond(SESSION, USER).await;
            assert_eq!(r.is_err(), failing, "{r:?}");
        });
    }
    telemetry.shutdown().unwrap();
    receiver.spans()
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span expected: {spans:#?}");
    found[0]
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

const CONTENT_KEYS: [&str; 5] = [
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
];

// OTLP span kinds and status codes.
const INTERNAL: i64 = 1;
const CLIENT: i64 = 3;
const STATUS_ERROR: i64 = 2;

#[test]
fn turn_model_and_tool_spans_follow_the_genai_conventions_and_nest_under_the_turn() {
    let Some(py) = python("conventions") else {
        return;
    };
    let spans = traced_turn(&py, false, false);

    let turn = one(&spans, "invoke_agent concierge");
    assert_eq!(turn["kind"], INTERNAL);
    assert_eq!(turn["parent_span_id"], "", "the turn is the root: {turn:#}");
    assert_eq!(turn["service"], "otel-test");
    assert_eq!(turn["scope"], "agent-core");
    assert_eq!(attr(turn, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(turn, "gen_ai.agent.name"), "concierge");
    assert_eq!(attr(turn, "gen_ai.conversation.id"), SESSION);
    assert_eq!(attr(turn, "gen_ai.provider.name"), "scripted");
    assert_eq!(attr(turn, "gen_ai.usage.output_tokens"), 16);

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2, "a tool call and the reply: {spans:#?}");
    for chat in &chats {
        assert_eq!(chat["kind"], CLIENT);
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(chat, "gen_ai.provider.name"), "scripted");
        assert_eq!(attr(chat, "gen_ai.request.model"), "scripted");
        assert_eq!(attr(chat, "gen_ai.response.model"), "scripted");
        assert_eq!(attr(chat, "gen_ai.conversation.id"), SESSION);
        assert_eq!(attr(chat, "gen_ai.output.type"), "text");
        assert!(attr(chat, "gen_ai.request.max_tokens").is_i64(), "{chat:#}");
        assert!(
            attr(chat, "gen_ai.usage.input_tokens").as_i64() > Some(0),
            "{chat:#}"
        );
        assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), 8);
        assert!(attr(chat, "error.type").is_null(), "{chat:#}");
    }
    let reasons: Vec<&Value> = chats
        .iter()
        .map(|c| attr(c, "gen_ai.response.finish_reasons"))
        .collect();
    assert!(
        reasons.contains(&&json!(["tool_calls"])) && reasons.contains(&&json!(["stop"])),
        "finish reasons are string arrays: {reasons:?}"
    );

    let tool = one(&spans, "execute_tool pay");
    assert_eq!(tool["kind"], INTERNAL);
    assert_eq!(attr(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr(tool, "gen_ai.tool.name"), "pay");
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "call_0");
    assert_eq!(attr(tool, "gen_ai.tool.type"), "function");
    assert_eq!(attr(tool, "gen_ai.tool.description"), "Charge the card.");
    assert!(attr(tool, "error.type").is_null(), "{tool:#}");

    // Model and tool calls are children of the turn, in its trace.
    for child in chats.iter().copied().chain([tool]) {
        assert_eq!(child["trace_id"], turn["trace_id"], "{child:#}");
        assert_eq!(child["parent_span_id"], turn["span_id"], "{child:#}");
    }

    // Contents are off by default: not in any attribute or event.
    for s in &spans {
        for key in CONTENT_KEYS {
            assert!(
                attr(s, key).is_null(),
                "{key} recorded without capture: {s:#}"
            );
        }
        let text = s.to_string();
        assert!(
            !text.contains("order 77"),
            "the user's message leaked: {s:#}"
        );
        assert!(
            !text.contains("R-500"),
            "the reply or tool result leaked: {s:#}"
        );
    }
}

#[test]
fn message_contents_are_recorded_when_capture_is_on() {
    let Some(py) = python("capture") else {
        return;
    };
    let spans = traced_turn(&py, true, false);
    let parse = |v: &Value| -> Value {
        serde_json::from_str(v.as_str().unwrap_or_else(|| panic!("a JSON string: {v}"))).unwrap()
    };

    let turn = one(&spans, "invoke_agent concierge");
    let input = parse(attr(turn, "gen_ai.input.messages"));
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["content"], USER);
    let output = parse(attr(turn, "gen_ai.output.messages"));
    assert_eq!(output[0]["parts"][0]["content"], REPLY);

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        let system = parse(attr(chat, "gen_ai.system_instructions"));
        assert_eq!(system[0]["type"], "text");
        let input = parse(attr(chat, "gen_ai.input.messages"));
        assert!(
            input.as_array().unwrap().iter().any(|m| m["role"] == "user"
                && m["parts"][0]["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(USER))),
            "{input:#}"
        );
    }
    let outputs: Vec<Value> = chats
        .iter()
        .map(|c| parse(attr(c, "gen_ai.output.messages")))
        .collect();
    assert!(
        outputs.iter().any(|o| o[0]["finish_reason"] == "tool_calls"
            && o[0]["parts"][0]["type"] == "tool_call"
            && o[0]["parts"][0]["name"] == "pay"
            && o[0]["parts"][0]["arguments"] == json!({ "cents": 500 })),
        "{outputs:#?}"
    );
    assert!(
        outputs
            .iter()
            .any(|o| o[0]["finish_reason"] == "stop" && o[0]["parts"][0]["content"] == REPLY),
        "{outputs:#?}"
    );
    // The reply's call saw the tool's result.
    assert!(
        chats.iter().any(|c| {
            let input = parse(attr(c, "gen_ai.input.messages"));
            input.as_array().unwrap().iter().any(|m| {
                m["role"] == "tool"
                    && m["parts"][0]["type"] == "tool_call_response"
                    && m["parts"][0]["id"] == "call_0"
            })
        }),
        "{chats:#?}"
    );

    let tool = one(&spans, "execute_tool pay");
    assert_eq!(
        parse(attr(tool, "gen_ai.tool.call.arguments")),
        json!({ "cents": 500 })
    );
    assert_eq!(
        attr(tool, "gen_ai.tool.call.result"),
        "charged 500 cents, receipt R-500"
    );
}

#[test]
fn failed_tool_and_model_calls_carry_error_type_and_error_status() {
    let Some(py) = python("errors") else {
        return;
    };
    let spans = traced_turn(&py, false, true);

    let tool = one(&spans, "execute_tool pay");
    assert_eq!(attr(tool, "error.type"), "failed");
    assert_eq!(tool["status"]["code"], STATUS_ERROR);
    assert!(
        tool["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("declined")),
        "{tool:#}"
    );

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let failed: Vec<_> = chats
        .iter()
        .filter(|c| attr(c, "error.type") == "503")
        .collect();
    assert_eq!(failed.len(), 1, "{chats:#?}");
    assert_eq!(failed[0]["status"]["code"], STATUS_ERROR);

    let turn = one(&spans, "invoke_agent concierge");
    assert_eq!(attr(turn, "error.type"), "503");
    assert_eq!(turn["status"]["code"], STATUS_ERROR);
}

#[test]
fn init_otlp_exports_from_every_thread_and_refuses_a_second_global_subscriber() {
    let Some(py) = python("init") else {
        return;
    };
    let receiver = Receiver::start(&py);
    let telemetry = agent_core::telemetry::init_otlp(receiver.endpoint(), "otel-global").unwrap();
    // A thread of its own: no test's thread-local subscriber is in the way.
    std::thread::spawn(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let p = ScriptedProvider::new();
            p.respond(Answer::message(REPLY));
            let agent: Agent<Orders, ()> = Agent::builder()
                .name("global")
                .provider(p.clone())
                .build()
                .unwrap();
            agent.respond("s-global", USER).await.unwrap();
        });
    })
    .join()
    .unwrap();
    telemetry.shutdown().unwrap();
    telemetry.shutdown().unwrap(); // a second shutdown does nothing

    let spans = receiver.spans();
    let turn = one(&spans, "invoke_agent global");
    assert_eq!(turn["service"], "otel-global");
    let chat = one(&spans, "chat scripted");
    assert_eq!(chat["parent_span_id"], turn["span_id"]);
    for s in &spans {
        assert!(!s.to_string().contains("order 77"), "{s:#}");
    }

    let again = Telemetry::otlp(receiver.endpoint()).build().unwrap().init();
    assert!(
        matches!(
            again,
            Err(agent_core::telemetry::TelemetryError::SubscriberAlreadySet)
        ),
        "{again:?}"
    );
}
