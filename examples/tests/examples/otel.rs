//! `otel` against a real OTLP/HTTP receiver (agent-core/tests/otel_receiver.py, which
//! decodes with PyPI's `opentelemetry-proto`; `scripts/otel.sh` sets
//! `AGENT_OTEL_PYTHON`): the spans of the example's two turns arrive, named as the
//! example says it sent them. Without the receiver the test says "skipped" and passes,
//! except under `CI=true`. A collector that cannot be reached is the library's export
//! error, naming the URL (no receiver needed).

#[allow(dead_code)]
#[path = "../../examples/otel.rs"]
mod otel;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use agent_core::telemetry::Telemetry;
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;

fn python() -> Option<String> {
    match std::env::var("AGENT_OTEL_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "AGENT_OTEL_PYTHON is unset under CI: run `eval \"$(bash scripts/otel.sh)\"` first"
        ),
        _ => {
            eprintln!("skipped: run scripts/otel.sh (eval \"$(bash scripts/otel.sh)\")");
            None
        }
    }
}

/// The receiver on a free port, writing the spans it decoded to a JSON-lines file.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(python: &str) -> Self {
        let out = std::env::temp_dir().join(format!("examples-otel-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&out);
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../agent-core/tests/otel_receiver.py"
        );
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
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.out);
        let mut metrics = self.out.clone().into_os_string();
        metrics.push(".metrics");
        let _ = std::fs::remove_file(metrics);
    }
}

/// The example's conversation on its scripted model with `telemetry`'s layer as this
/// thread's subscriber (the tests of this binary run side by side), then `finish`.
fn traced_run(
    telemetry: &Telemetry,
    to: &str,
) -> (Vec<(String, usize)>, String, Result<(), String>) {
    let mut out = Vec::new();
    let transcript = {
        let _default = tracing::subscriber::set_default(
            tracing_subscriber::registry().with(telemetry.layer()),
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(otel::run(Arc::new(otel::scripted()), &mut out))
            .unwrap()
    };
    assert_eq!(transcript.failures(), 0);
    let sent = otel::spans(&transcript, otel::span_model("scripted"));
    let finished = otel::finish(telemetry, &sent, to, &mut out).map_err(|e| e.to_string());
    (sent, String::from_utf8(out).unwrap(), finished)
}

#[test]
fn the_examples_spans_arrive_at_the_receiver_as_it_says() {
    let Some(py) = python() else { return };
    let receiver = Receiver::start(&py);
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let telemetry = Telemetry::otlp(&endpoint)
        .service_name(otel::SERVICE)
        .build()
        .unwrap();
    let env = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| endpoint.clone());
    let to = otel::traces_url(&env);
    assert_eq!(to, format!("{endpoint}/v1/traces"));
    let (sent, printed, finished) = traced_run(&telemetry, &to);
    finished.unwrap();

    assert_eq!(
        sent,
        [
            ("invoke_agent otel-desk".to_owned(), 2),
            ("chat scripted".to_owned(), 3),
            ("execute_tool weather".to_owned(), 1),
        ]
    );
    let spans = receiver.spans();
    for (name, n) in &sent {
        let got = spans.iter().filter(|s| s["name"] == name.as_str()).count();
        assert_eq!(got, *n, "`{name}` spans received: {spans:#?}");
    }
    assert_eq!(spans.len(), 6, "{spans:#?}");
    assert!(
        spans.iter().all(|s| s["service"] == otel::SERVICE),
        "{spans:#?}"
    );
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool weather")
        .unwrap();
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "weather");
    assert!(
        printed.contains(&format!(
            "exported to {to}: spans 2 x `invoke_agent otel-desk`"
        )),
        "{printed}"
    );
}

#[test]
fn an_unreachable_collector_is_the_librarys_export_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: nothing listens there
    let endpoint = format!("http://127.0.0.1:{port}");
    let telemetry = Telemetry::otlp(&endpoint).build().unwrap();
    let (_, printed, finished) = traced_run(&telemetry, &format!("{endpoint}/v1/traces"));
    let e = finished.unwrap_err();
    assert!(e.contains(&format!("{endpoint}/v1/traces")), "{e}");
    assert!(e.contains("failed"), "{e}");
    assert!(!printed.contains("exported to"), "{printed}");
}

#[test]
fn the_traces_url_follows_the_otel_variables() {
    let none = |_: &str| None;
    assert_eq!(otel::traces_url(&none), "http://localhost:4318/v1/traces");
    let base = |k: &str| (k == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://c:4318/".to_owned());
    assert_eq!(otel::traces_url(&base), "http://c:4318/v1/traces");
    let full = |k: &str| match k {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some("http://t:1/x".to_owned()),
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://c:4318".to_owned()),
        _ => None,
    };
    assert_eq!(otel::traces_url(&full), "http://t:1/x");
    assert_eq!(
        otel::span_model("openai/gpt-4o-mini > anthropic/claude"),
        "gpt-4o-mini"
    );
    assert_eq!(otel::span_model("scripted"), "scripted");
}
