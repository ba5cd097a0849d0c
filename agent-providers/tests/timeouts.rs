//! No call waits forever: a server that accepts the connection and never answers, one
//! that sends its headers and then nothing, and one that stops in the middle of a stream
//! each end the call with `ProviderError::Timeout` after the configured limit, on every
//! provider; the resilience layer retries such a timeout, then falls over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use agent_core::error::ProviderError;
use agent_core::provider::StreamChunk;
use agent_providers::resilience::{ManualClock, Resilient};
use agent_providers::{
    Anthropic, COMPATIBLE_REQUEST_TIMEOUT, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT, Gemini, OpenAi, OpenAiCompatible,
};
use futures::StreamExt;
use support::server::{FixtureServer, Reply};
use support::vendors::{ALL, Setup, Vendor};
use support::*;

const KEY: &str = "sk-test-0123456789abcdef";
/// A limit the tests set.
const SHORT: Duration = Duration::from_millis(200);
/// A limit that must not be the one that fires.
const LONG: Duration = Duration::from_secs(30);
/// How soon the error must arrive (a loaded 2-core machine included).
const QUICKLY: Duration = Duration::from_secs(5);

fn setup(request: Duration, first_byte: Duration, idle: Duration) -> Setup {
    Setup {
        key: KEY.into(),
        request: Some(request),
        first_byte: Some(first_byte),
        idle: Some(idle),
        ..Setup::default()
    }
}

#[test]
fn the_defaults_are_the_documented_ones() {
    assert_eq!(DEFAULT_REQUEST_TIMEOUT, Duration::from_secs(60));
    assert_eq!(DEFAULT_FIRST_BYTE_TIMEOUT, Duration::from_secs(30));
    assert_eq!(DEFAULT_STREAM_IDLE_TIMEOUT, Duration::from_secs(60));
    assert_eq!(COMPATIBLE_REQUEST_TIMEOUT, Duration::from_secs(300));
    // OpenAI-compatible servers are mostly local models on a CPU: 300 s for a whole call.
    let compatible = format!(
        "{:?}",
        OpenAiCompatible::new("http://127.0.0.1:9/v1").unwrap()
    );
    assert!(
        compatible.contains("Timeouts { request: 300s, first_byte: 30s, idle: 60s }"),
        "{compatible}"
    );
    let shown = [
        format!("{:?}", OpenAi::new(KEY)),
        format!("{:?}", Anthropic::new(KEY)),
        format!("{:?}", Gemini::new(KEY)),
    ];
    for s in shown {
        assert!(
            s.contains("Timeouts { request: 60s, first_byte: 30s, idle: 60s }"),
            "{s}"
        );
    }
    let p = OpenAi::new(KEY)
        .request_timeout(Duration::from_secs(120))
        .first_byte_timeout(Duration::from_secs(5))
        .stream_idle_timeout(Duration::from_secs(7));
    assert!(format!("{p:?}").contains("Timeouts { request: 120s, first_byte: 5s, idle: 7s }"));
}

#[tokio::test]
async fn a_server_that_never_answers_fails_a_call_at_the_request_timeout() {
    let s = FixtureServer::start().await;
    for v in ALL {
        s.always(v.paths().0, Reply::hang());
        let p = v.client(&s.url(), &setup(SHORT, LONG, LONG));
        let t = Instant::now();
        let err = p.generate(&plain_request()).await.unwrap_err();
        assert_eq!(err, ProviderError::Timeout(SHORT), "{v:?}");
        assert!(t.elapsed() < QUICKLY, "{v:?} took {:?}", t.elapsed());
        assert!(err.to_string().contains("timed out after 200ms"), "{err}");
    }
}

#[tokio::test]
async fn a_stream_whose_server_never_answers_fails_at_the_first_byte_timeout() {
    let s = FixtureServer::start().await;
    for v in ALL {
        s.always(v.paths().1, Reply::hang());
        let p = v.client(&s.url(), &setup(LONG, SHORT, LONG));
        let req = plain_request();
        let t = Instant::now();
        let (chunks, err) = collect(p.generate_stream(&req)).await;
        assert!(chunks.is_empty(), "{v:?}");
        assert_eq!(err, Some(ProviderError::Timeout(SHORT)), "{v:?}");
        assert!(t.elapsed() < QUICKLY, "{v:?} took {:?}", t.elapsed());
    }
}

#[tokio::test]
async fn a_stream_that_sends_its_headers_then_nothing_fails_at_the_first_byte_timeout() {
    let s = FixtureServer::start().await;
    for v in ALL {
        s.always(v.paths().1, Reply::sse_stall(&fixture(v.text_stream()), 0));
        let p = v.client(&s.url(), &setup(LONG, SHORT, LONG));
        let req = plain_request();
        let t = Instant::now();
        let (chunks, err) = collect(p.generate_stream(&req)).await;
        assert!(chunks.is_empty(), "{v:?}");
        assert_eq!(err, Some(ProviderError::Timeout(SHORT)), "{v:?}");
        assert!(t.elapsed() < QUICKLY, "{v:?} took {:?}", t.elapsed());
    }
}

#[tokio::test]
async fn a_stream_that_stops_between_events_fails_at_the_idle_timeout() {
    let s = FixtureServer::start().await;
    for v in ALL {
        s.always(v.paths().1, Reply::sse_stall(&fixture(v.text_stream()), 2));
        let p = v.client(&s.url(), &setup(LONG, LONG, SHORT));
        let req = plain_request();
        let t = Instant::now();
        let (_, err) = collect(p.generate_stream(&req)).await;
        assert_eq!(err, Some(ProviderError::Timeout(SHORT)), "{v:?}");
        assert!(t.elapsed() < QUICKLY, "{v:?} took {:?}", t.elapsed());
    }
}

#[tokio::test]
async fn a_stream_that_keeps_sending_outlasts_the_request_and_first_byte_limits() {
    // Seven events 150 ms apart: 1 s in all, past the request limit (200 ms, for whole
    // calls only) and the first-byte limit (400 ms, up to the first event only).
    let s = FixtureServer::start().await;
    let v = Vendor::OpenAi;
    s.enqueue(
        v.paths().1,
        Reply::sse(&fixture(v.text_stream())).paced(Duration::from_millis(150)),
    );
    let limit = Duration::from_millis(400);
    let p = v.client(&s.url(), &setup(SHORT, limit, limit));
    let req = plain_request();
    let t = Instant::now();
    let (chunks, err) = collect(p.generate_stream(&req)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(chunks.last(), Some(StreamChunk::Done(_))));
    assert!(t.elapsed() > limit, "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_provider_timeout_is_retried_then_the_fallback_answers() {
    let s = FixtureServer::start().await;
    s.always("/slow/v1/chat/completions", Reply::hang());
    s.enqueue(
        "/fast/v1/chat/completions",
        Reply::json(200, &fixture("compatible/llamacpp_plain.json")),
    );
    let slow = OpenAiCompatible::new(&format!("{}/slow/v1", s.url()))
        .unwrap()
        .request_timeout(SHORT);
    let fast = OpenAiCompatible::new(&format!("{}/fast/v1", s.url())).unwrap();
    let clock = ManualClock::auto_advance();
    let r = Resilient::new(slow).fallback(fast).clock(clock.clone());
    let t = Instant::now();
    let out = r.call(&plain_request()).await.unwrap();
    assert!(!out.content.is_empty());
    assert!(t.elapsed() < QUICKLY * 2, "took {:?}", t.elapsed());
    let paths: Vec<String> = s.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/slow/v1/chat/completions",
            "/slow/v1/chat/completions",
            "/slow/v1/chat/completions",
            "/fast/v1/chat/completions"
        ],
        "three attempts on the slow model (retried), then the fallback"
    );
    assert_eq!(clock.requested().len(), 2, "a backoff before each retry");

    // Streams too, before their first chunk.
    let s = FixtureServer::start().await;
    s.always("/slow/v1/chat/completions", Reply::hang());
    s.enqueue(
        "/fast/v1/chat/completions",
        Reply::sse(&fixture("compatible/llamacpp_stream_text.sse")),
    );
    let slow = OpenAiCompatible::new(&format!("{}/slow/v1", s.url()))
        .unwrap()
        .first_byte_timeout(SHORT);
    let fast = OpenAiCompatible::new(&format!("{}/fast/v1", s.url())).unwrap();
    let r = Resilient::new(slow)
        .no_retry()
        .fallback(fast)
        .clock(ManualClock::auto_advance());
    let req = plain_request();
    let mut stream = r.open_stream(&req).await.unwrap();
    let mut done = false;
    while let Some(c) = stream.next().await {
        done |= matches!(c.unwrap(), StreamChunk::Done(_));
    }
    assert!(done);
    assert_eq!(s.count(), 2);
}
