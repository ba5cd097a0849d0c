//! OpenTelemetry export (issue 17, item 2; issue 44, item 7; feature `otel`): a turn's
//! spans and metrics reach a real OTLP/HTTP receiver that decodes them with the official
//! protocol definitions (tests/otel_receiver.py on PyPI's `opentelemetry-proto`), named
//! and attributed by the GenAI semantic conventions, model and tool calls children of
//! the turn; message contents only when capture is on. The `OTEL_*` variables are
//! read (in a child process, where they can be set); a closed port and a collector
//! answering 404 are reported once and make `flush` and `shutdown` fail.
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
use agent_core::provider::{ModelRequest, ModelResponse, Provider};
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
        Self::answering(python, None)
    }

    /// A receiver that answers every request with `status` (and keeps nothing) when
    /// one is given.
    fn answering(python: &str, status: Option<u16>) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let out = std::env::temp_dir().join(format!(
            "agent-otel-{}-{}.jsonl",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_file(&out);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel_receiver.py");
        let mut command = Command::new(python);
        command.arg(script).arg(&out);
        if let Some(status) = status {
            command.arg(status.to_string());
        }
        let mut child = command
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
        lines(&self.out)
    }

    /// The histogram and sum data points received.
    fn metrics(&self) -> Vec<Value> {
        lines(&self.metrics_out())
    }

    fn metrics_out(&self) -> PathBuf {
        let mut path = self.out.clone().into_os_string();
        path.push(".metrics");
        path.into()
    }
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(self.metrics_out());
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
        assert_eq!(attr(chat, "gen_ai.request.stream"), false);
        // The scripted provider has no server, no answer ids and no prompt cache.
        for absent in [
            "server.address",
            "server.port",
            "gen_ai.response.id",
            "gen_ai.usage.cache_read.input_tokens",
        ] {
            assert!(attr(chat, absent).is_null(), "{absent}: {chat:#}");
        }
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

    assert_relative_paths(&spans);

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

/// Every span's `code.file.path` (when there is one) is relative: never the absolute
/// path of the machine that built the crate.
fn assert_relative_paths(spans: &[Value]) {
    for s in spans {
        if let Some(path) = attr(s, "code.file.path").as_str() {
            assert!(
                !path.starts_with('/') && !path.contains(":\\"),
                "absolute code.file.path: {s:#}"
            );
        }
    }
}

/// A provider as a real one looks to the engine: a vendor name, a server, answer ids
/// and cached prompt tokens (the scripted provider has none of these).
struct Served {
    inner: ScriptedProvider,
    answers: AtomicUsize,
}

#[async_trait::async_trait]
impl Provider for Served {
    fn name(&self) -> &str {
        "openai/gpt-test"
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let mut r = self.inner.generate(req).await?;
        r.id = Some(format!(
            "chatcmpl-{}",
            self.answers.fetch_add(1, Ordering::SeqCst)
        ));
        r.usage.cached_input_tokens = 5;
        Ok(r)
    }

    fn server(&self) -> Option<(&str, u16)> {
        Some(("llm.example.test", 8443))
    }
}

/// One turn (a tool call, then the reply) of an agent on [`Served`], answered whole or
/// streamed; the spans and metric points the receiver got.
fn served_turn(python: &str, stream: bool) -> (Vec<Value>, Vec<Value>) {
    let receiver = Receiver::start(python);
    let telemetry = Telemetry::otlp(receiver.endpoint())
        .service_name("otel-served")
        .build()
        .unwrap();
    {
        let _default = tracing::subscriber::set_default(
            tracing_subscriber::registry().with(telemetry.layer()),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let inner = ScriptedProvider::new();
            inner.respond(Answer::tool("pay", json!({ "cents": 500 })));
            inner.tool_round(Answer::message(REPLY));
            let provider = Served {
                inner,
                answers: AtomicUsize::new(0),
            };
            let agent: Agent<Orders, ()> = Agent::builder()
                .name("concierge")
                .provider(provider)
                .tool(pay_tool(false))
                .build()
                .unwrap();
            if stream {
                use futures::StreamExt;
                let events: Vec<_> = agent.respond_stream(SESSION, USER).collect().await;
                assert!(
                    events.iter().any(|e| matches!(e, Event::Done(_))),
                    "the stream ended without its answer"
                );
            } else {
                agent.respond(SESSION, USER).await.unwrap();
            }
        });
    }
    telemetry.shutdown().unwrap();
    (receiver.spans(), receiver.metrics())
}

#[test]
fn model_call_spans_carry_the_response_id_cached_tokens_server_and_stream_flag() {
    let Some(py) = python("served") else {
        return;
    };
    for stream in [false, true] {
        let (spans, _) = served_turn(&py, stream);
        let chats = named(&spans, "chat gpt-test");
        assert_eq!(chats.len(), 2, "{spans:#?}");
        let mut ids = Vec::new();
        for chat in &chats {
            assert_eq!(attr(chat, "gen_ai.provider.name"), "openai");
            assert_eq!(attr(chat, "gen_ai.response.model"), "gpt-test");
            assert_eq!(attr(chat, "gen_ai.request.stream"), stream, "{chat:#}");
            assert_eq!(attr(chat, "server.address"), "llm.example.test");
            assert_eq!(attr(chat, "server.port"), 8443);
            assert_eq!(attr(chat, "gen_ai.usage.cache_read.input_tokens"), 5);
            let id = attr(chat, "gen_ai.response.id").as_str().unwrap();
            assert!(id.starts_with("chatcmpl-"), "{chat:#}");
            ids.push(id.to_owned());
        }
        ids.dedup();
        assert_eq!(ids.len(), 2, "each answer has its own id: {ids:?}");
        let turn = one(&spans, "invoke_agent concierge");
        assert_eq!(attr(turn, "gen_ai.usage.cache_read.input_tokens"), 10);
        assert_relative_paths(&spans);
        assert!(
            spans.iter().any(|s| attr(s, "code.file.path")
                .as_str()
                .is_some_and(|p| p.starts_with("agent-core/src/"))),
            "the engine's spans name their source relative to the workspace: {spans:#?}"
        );
    }
}

fn points<'a>(metrics: &'a [Value], name: &str) -> Vec<&'a Value> {
    metrics.iter().filter(|m| m["metric"] == name).collect()
}

#[test]
fn genai_client_metrics_and_the_turn_duration_reach_the_receiver() {
    let Some(py) = python("metrics") else {
        return;
    };
    let (_, metrics) = served_turn(&py, false);

    let usage = points(&metrics, "gen_ai.client.token.usage");
    assert_eq!(usage.len(), 2, "input and output: {metrics:#?}");
    for p in &usage {
        assert_eq!(p["kind"], "histogram");
        assert_eq!(p["unit"], "{token}");
        assert_eq!(p["service"], "otel-served");
        assert_eq!(p["scope"], "agent-core");
        assert_eq!(p["count"], 2, "two model calls: {p:#}");
        let a = &p["attributes"];
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert_eq!(a["gen_ai.request.model"], "gpt-test");
        assert_eq!(a["gen_ai.response.model"], "gpt-test");
        assert_eq!(a["server.address"], "llm.example.test");
        assert_eq!(a["server.port"], 8443);
    }
    let output = usage
        .iter()
        .find(|p| p["attributes"]["gen_ai.token.type"] == "output")
        .unwrap();
    assert_eq!(output["sum"], 16.0, "8 generated tokens a call: {output:#}");
    let input = usage
        .iter()
        .find(|p| p["attributes"]["gen_ai.token.type"] == "input")
        .unwrap();
    assert!(input["sum"].as_f64() > Some(0.0), "{input:#}");

    let durations = points(&metrics, "gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1, "{metrics:#?}");
    let d = durations[0];
    assert_eq!(d["unit"], "s");
    assert_eq!(d["count"], 2);
    assert!(d["sum"].as_f64() > Some(0.0), "{d:#}");
    assert_eq!(
        d["explicit_bounds"][0], 0.01,
        "the conventions' buckets: {d:#}"
    );
    assert_eq!(d["attributes"]["gen_ai.operation.name"], "chat");
    assert!(d["attributes"]["error.type"].is_null(), "{d:#}");

    let turns = points(&metrics, "agent.turn.duration");
    assert_eq!(turns.len(), 1, "{metrics:#?}");
    assert_eq!(turns[0]["unit"], "s");
    assert_eq!(turns[0]["count"], 1);
    assert_eq!(turns[0]["attributes"]["gen_ai.agent.name"], "concierge");
    assert_eq!(turns[0]["attributes"]["gen_ai.provider.name"], "openai");
}

// ---- Child processes: the environment, and a global subscriber's warnings ----

const CHILD: &str = "AGENT_OTEL_CHILD";
const CHILD_ENDPOINT: &str = "AGENT_OTEL_CHILD_ENDPOINT";
const OTEL_VARS: [&str; 8] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
];

/// What a child printed: its own lines (`flush 1: …`, `shutdown: …`) and its stderr.
struct ChildOutput {
    stdout: String,
    stderr: String,
}

impl ChildOutput {
    /// The child's line that starts with `label: `, without the label.
    fn line(&self, label: &str) -> &str {
        let prefix = format!("{label}: ");
        self.stdout
            .lines()
            // The first follows the test harness's `test child_process ... `.
            .find_map(|l| l.find(&prefix).and_then(|at| l.get(at + prefix.len()..)))
            .unwrap_or_else(|| panic!("no `{label}` line: {}\n{}", self.stdout, self.stderr))
    }

    /// The exporter's warnings on stderr.
    fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.contains("OpenTelemetry export to"))
            .collect()
    }
}

/// This test binary again, running only [`child_process`] in `mode` with `env` (and
/// no other `OTEL_*` variable).
fn child(mode: &str, endpoint: &str, env: &[(&str, &str)]) -> ChildOutput {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([
        "child_process",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for var in OTEL_VARS {
        command.env_remove(var);
    }
    command.env(CHILD, mode).env(CHILD_ENDPOINT, endpoint);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    let output = ChildOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(out.status.success(), "{}\n{}", output.stdout, output.stderr);
    output
}

/// A port of 127.0.0.1 where nothing listens.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// One turn of the `global` agent through the global subscriber.
fn global_turn() {
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
        agent.respond("s-child", USER).await.unwrap();
    });
}

fn outcome(r: Result<(), agent_core::telemetry::TelemetryError>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("error: {e}"),
    }
}

/// Run by the tests below in a child process (it needs the process's environment and
/// global subscriber); does nothing when run otherwise.
#[test]
#[ignore = "run by other tests of this file in a child process"]
fn child_process() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    let endpoint = std::env::var(CHILD_ENDPOINT).unwrap();
    let builder = match mode.as_str() {
        "env" => Telemetry::from_env(),
        "code" => Telemetry::otlp(endpoint)
            .service_name("otel-code")
            .header("x-tenant", "code"),
        "fail" => Telemetry::otlp(endpoint).timeout(std::time::Duration::from_secs(5)),
        other => panic!("unknown child mode {other}"),
    };
    let telemetry = builder.build().unwrap().init().unwrap();
    global_turn();
    println!("flush 1: {}", outcome(telemetry.flush()));
    global_turn();
    println!("flush 2: {}", outcome(telemetry.flush()));
    global_turn();
    println!("shutdown: {}", outcome(telemetry.shutdown()));
}

#[test]
fn otel_environment_variables_are_read_and_settings_in_code_win() {
    let Some(py) = python("environment") else {
        return;
    };
    let closed = format!("http://127.0.0.1:{}", closed_port());

    // The generic endpoint, the service name and the headers.
    let receiver = Receiver::start(&py);
    let out = child(
        "env",
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()),
            ("OTEL_SERVICE_NAME", "otel-env"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme,x-other=1"),
        ],
    );
    assert_eq!(out.line("shutdown"), "ok");
    let spans = receiver.spans();
    let turns = named(&spans, "invoke_agent global");
    assert_eq!(turns.len(), 3, "{spans:#?}");
    assert_eq!(turns[0]["service"], "otel-env");
    assert_eq!(turns[0]["headers"]["x-tenant"], "acme");
    let metrics = receiver.metrics();
    assert!(
        metrics
            .iter()
            .any(|m| m["metric"] == "agent.turn.duration" && m["service"] == "otel-env"),
        "{metrics:#?}"
    );
    drop(receiver);

    // The traces endpoint wins over the generic one, which metrics still use.
    let receiver = Receiver::start(&py);
    let out = child(
        "env",
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &closed),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{}/v1/traces", receiver.endpoint()),
            ),
        ],
    );
    assert_eq!(named(&receiver.spans(), "invoke_agent global").len(), 3);
    assert_eq!(
        receiver.spans()[0]["service"],
        "agent",
        "the default service"
    );
    let failed = out.line("flush 1");
    assert!(
        failed.contains(&format!("{closed}/v1/metrics")) && failed.contains("connection refused"),
        "{failed}"
    );
    drop(receiver);

    // Settings in code win over the environment.
    let receiver = Receiver::start(&py);
    let out = child(
        "code",
        &receiver.endpoint(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &closed),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &closed),
            ("OTEL_SERVICE_NAME", "otel-env"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme"),
        ],
    );
    assert_eq!(out.line("flush 1"), "ok");
    assert_eq!(out.line("shutdown"), "ok");
    let spans = receiver.spans();
    let turn = named(&spans, "invoke_agent global")[0];
    assert_eq!(turn["service"], "otel-code");
    assert_eq!(turn["headers"]["x-tenant"], "code");
    drop(receiver);

    // OTEL_SDK_DISABLED: nothing is sent, nothing fails.
    let receiver = Receiver::start(&py);
    let out = child(
        "env",
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()),
            ("OTEL_SDK_DISABLED", "true"),
        ],
    );
    assert_eq!(out.line("shutdown"), "ok");
    assert!(receiver.spans().is_empty() && receiver.metrics().is_empty());
}

#[test]
fn a_closed_port_is_reported_once_and_fails_flush_and_shutdown() {
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    let out = child("fail", &endpoint, &[]);
    for label in ["flush 1", "flush 2", "shutdown"] {
        let line = out.line(label);
        assert!(
            line.starts_with("error: ")
                && line.contains(&format!("{endpoint}/v1/"))
                && line.contains("connection refused"),
            "{label}: {line}"
        );
    }
    let warnings = out.warnings();
    assert_eq!(
        warnings.len(),
        1,
        "once per kind of failure: {}",
        out.stderr
    );
    assert!(
        warnings[0].contains("WARN")
            && warnings[0].contains(&format!("{endpoint}/v1/"))
            && warnings[0].contains("connection refused"),
        "{}",
        warnings[0]
    );
}

#[test]
fn a_collector_answering_404_is_reported_once_and_fails_flush_and_shutdown() {
    let Some(py) = python("404") else {
        return;
    };
    let receiver = Receiver::answering(&py, Some(404));
    let endpoint = receiver.endpoint();
    let out = child("fail", &endpoint, &[]);
    for label in ["flush 1", "flush 2", "shutdown"] {
        let line = out.line(label);
        assert!(
            line.starts_with("error: ")
                && line.contains(&format!("{endpoint}/v1/"))
                && line.contains("HTTP 404"),
            "{label}: {line}"
        );
    }
    let warnings = out.warnings();
    assert_eq!(
        warnings.len(),
        1,
        "once per kind of failure: {}",
        out.stderr
    );
    assert!(
        warnings[0].contains(&format!("{endpoint}/v1/")) && warnings[0].contains("HTTP 404"),
        "{}",
        warnings[0]
    );
}
