//! Property: whatever a server echoes back, no secret of a client reaches an error or a
//! log. Generated keys and credential headers are echoed, whole or in part and anywhere
//! in up to 1 KB of text, in every place a server can put them (a JSON error body, a body
//! that is not JSON with status 200, 4xx and 5xx bodies, headers, the status line, SSE
//! data, an SSE `event: error` before or after the first chunk), over HTTP in each
//! vendor's wire format, to every provider, called whole, streamed, and through the
//! resilience layer. Checked: each error's `Display` and `Debug`, the resilience layer's
//! errors, and every line traced meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use agent_core::error::ProviderError;
use agent_core::provider::Provider;
use agent_providers::resilience::{ManualClock, Resilient};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use support::server::{FixtureServer, Reply};
use support::vendors::{ALL, Setup, Vendor};
use support::*;

/// A run of this many characters of a secret is an echo of it (the crate's rule).
const MIN_ECHO: usize = 10;
/// Filler around the echoes: words and spaces, so no run of [`MIN_ECHO`] filler
/// characters can be part of a key.
const FILLER: &str = "lorem ipsum dolor sit amet, ";

/// How a secret is echoed.
#[derive(Debug, Clone)]
enum Form {
    Whole,
    Twice,
    /// Without its last characters.
    CutTail(usize),
    /// Only its last characters.
    Tail(usize),
    Bearer,
    Quoted,
}

/// Where the server puts the echo.
#[derive(Debug, Clone)]
enum Place {
    /// A vendor-shaped JSON error body with this status.
    ErrorJson(u16),
    /// A non-JSON body (HTML) with this status.
    ErrorText(u16),
    /// Status 200, a body that is not JSON.
    NotJson200,
    /// Status 200, JSON without the answer.
    JsonWithoutAnswer200,
    /// Status 200, an `error` member.
    ErrorMember200,
    /// The status line's reason phrase, `retry-after` and a request-id header.
    HeadersAndStatusLine(u16),
    /// SSE data that is not JSON.
    SseData,
    /// `event: error` in a stream, after a first text event or not.
    SseErrorEvent { after_text: bool },
}

#[derive(Debug, Clone)]
struct Case {
    key: String,
    token: String,
    form: Form,
    place: Place,
    /// Filler before the echo (bodies are cut at 600 bytes in messages: the cut may
    /// fall inside the key).
    pad: usize,
}

fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{16,72}"
}

fn status() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![
        400u16, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504, 529,
    ])
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(Form::Whole),
        Just(Form::Twice),
        (1usize..=6).prop_map(Form::CutTail),
        (MIN_ECHO..=14).prop_map(Form::Tail),
        Just(Form::Bearer),
        Just(Form::Quoted),
    ]
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![
        status().prop_map(Place::ErrorJson),
        status().prop_map(Place::ErrorText),
        Just(Place::NotJson200),
        Just(Place::JsonWithoutAnswer200),
        Just(Place::ErrorMember200),
        status().prop_map(Place::HeadersAndStatusLine),
        Just(Place::SseData),
        any::<bool>().prop_map(|after_text| Place::SseErrorEvent { after_text }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (secret(), secret(), form(), place(), 0usize..700).prop_map(|(key, token, form, place, pad)| {
        Case {
            key,
            token,
            form,
            place,
            pad,
        }
    })
}

fn filler(n: usize) -> String {
    FILLER.chars().cycle().take(n).collect()
}

fn echo_one(secret: &str, form: &Form) -> String {
    let n = secret.len();
    match form {
        Form::Whole => secret.to_owned(),
        Form::Twice => format!("{secret} (again: {secret})"),
        Form::CutTail(k) => secret[..n - k].to_owned(),
        Form::Tail(k) => secret[n - k..].to_owned(),
        Form::Bearer => format!("Bearer {secret}"),
        Form::Quoted => format!("'{secret}'"),
    }
}

/// The text the server sends back: filler, then both secrets.
fn echo(c: &Case) -> String {
    format!(
        "{}invalid credentials {} and {} rejected",
        filler(c.pad),
        echo_one(&c.key, &c.form),
        echo_one(&c.token, &c.form)
    )
}

/// A first event with text, in the vendor's format.
fn text_event(v: Vendor) -> &'static str {
    match v {
        Vendor::OpenAi | Vendor::Compatible => {
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
        }
        Vendor::Anthropic => {
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"Hi\"}}\n\n"
        }
        Vendor::Gemini => {
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}],\"role\":\"model\"}}]}\n\n"
        }
    }
}

fn reply(v: Vendor, c: &Case) -> Reply {
    let e = echo(c);
    let error = |code: u16| {
        json!({
            "type": "error",
            "error": {"type": "api_error", "status": "INTERNAL", "code": code, "message": e, "param": e}
        })
        .to_string()
    };
    match &c.place {
        Place::ErrorJson(s) => Reply::json(*s, &error(*s)),
        Place::ErrorText(s) => {
            let mut r = Reply::json(*s, &format!("<html><body>{e}</body></html>"));
            r.headers = vec![("content-type".into(), "text/html".into())];
            r
        }
        Place::NotJson200 => Reply::json(200, &format!("upstream says: {e}")),
        Place::JsonWithoutAnswer200 => Reply::json(200, &json!({"id": e, "note": e}).to_string()),
        Place::ErrorMember200 => Reply::json(200, &error(500)),
        Place::HeadersAndStatusLine(s) => {
            let short = echo_one(&c.key, &c.form);
            Reply::json(*s, &error(*s))
                .reason(&short)
                .header("retry-after", &short)
                .header("x-request-id", &echo_one(&c.token, &c.form))
        }
        Place::SseData => Reply::sse(&format!("data: {{\"oops\": {e}\n\n")),
        Place::SseErrorEvent { after_text } => {
            let first = if *after_text { text_event(v) } else { "" };
            Reply::sse(&format!("{first}event: error\ndata: {}\n\n", error(500)))
        }
    }
}

/// Everything traced, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn take(&self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut *self.0.lock().unwrap())).into_owned()
    }
}

fn shown(e: &impl std::fmt::Debug, d: &impl std::fmt::Display) -> String {
    format!("{d}\n{e:?}")
}

/// Every text a client's failure produces on one vendor: the error of a whole call, of
/// a stream, and of the resilience layer around two copies of the client (every model
/// failed), each in `Display` and `Debug`.
async fn failures(p: Arc<dyn Provider>) -> Vec<String> {
    let req = plain_request();
    let mut out = Vec::new();
    let e = p.generate(&req).await.unwrap_err();
    out.push(shown(&e, &e));
    // (A stream may succeed: JSON without the answer is an empty but complete stream.)
    let (_, e) = collect(p.generate_stream(&req)).await;
    if let Some(e) = e {
        out.push(shown(&e, &e));
    }
    let r = Resilient::from_arc(p.clone())
        .fallback_arc(p)
        .clock(ManualClock::auto_advance());
    let e = r.call(&req).await.unwrap_err();
    out.push(shown(&e, &e));
    let e: ProviderError = r.generate(&req).await.unwrap_err();
    out.push(shown(&e, &e));
    let (_, e) = collect(r.generate_stream(&req)).await;
    if let Some(e) = e {
        out.push(shown(&e, &e));
    }
    out
}

/// The secret, or a run of [`MIN_ECHO`] of its characters, in `text`.
fn leak<'a>(secret: &'a str, text: &str) -> Option<&'a str> {
    if text.contains(secret) {
        return Some(secret);
    }
    (0..=secret.len() - MIN_ECHO)
        .map(|i| &secret[i..i + MIN_ECHO])
        .find(|part| text.contains(part))
}

#[test]
fn no_echo_of_a_secret_reaches_an_error_a_debug_or_a_log() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(FixtureServer::start());
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |c| {
        for v in ALL {
            let setup = Setup {
                key: c.key.clone(),
                header: Some(("x-proxy-token".into(), c.token.clone())),
                ..Setup::default()
            };
            let (whole, stream) = v.paths();
            server.always(whole, reply(v, &c));
            server.always(stream, reply(v, &c));
            let texts = rt.block_on(failures(v.client(&server.url(), &setup)));
            let log = captured.take();
            prop_assert!(
                log.contains("model call failed"),
                "the resilience layer logged its failures: {log}"
            );
            for text in texts.iter().chain([&log]) {
                for s in [&c.key, &c.token] {
                    prop_assert!(
                        leak(s, text).is_none(),
                        "{v:?} leaked {:?} in:\n{text}",
                        leak(s, text)
                    );
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn an_echoed_key_is_replaced_not_dropped() {
    // The redaction is visible: the message keeps its shape around `[redacted]`.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = FixtureServer::start().await;
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345";
        for v in ALL {
            let setup = Setup {
                key: key.into(),
                ..Setup::default()
            };
            s.always(v.paths().0, Reply::json(200, &format!("not json: {key}!")));
            let e = v
                .client(&s.url(), &setup)
                .generate(&plain_request())
                .await
                .unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, ProviderError::InvalidResponse(_)),
                "{v:?}: {e:?}"
            );
            assert!(text.contains("not json: [redacted]!"), "{v:?}: {text}");
        }
    });
}
