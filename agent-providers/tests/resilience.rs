//! The resilience layer, behaviour by behaviour, on an injected clock (no test sleeps):
//! retries and their count, the three backoff strategies, cap, full jitter, the
//! classifier and a custom one, `retry_on: all`, `Retry-After`, ordered fallback,
//! per-request and total timeouts, streams retried only before their first chunk, and
//! typed errors that keep every attempt. The last tests run the same over HTTP against
//! the fixture server.
//!
//! One file over 600 lines: every behaviour of the resilience spec runs on the same injected clock and scripted failing providers, defined here once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, StreamChunk};
use agent_providers::resilience::{
    AttemptFailure, Backoff, ManualClock, ResilienceConfig, ResilienceError, Resilient, RetryOn,
};
use agent_providers::{Anthropic, Gemini, OpenAi, OpenAiCompatible};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use support::server::{FixtureServer, Reply};
use support::*;

// ---- a provider that follows a script ----

enum Step {
    Ok(&'static str),
    Err(ProviderError),
    Hang,
    Stream(Vec<Result<StreamChunk, ProviderError>>),
}

struct Fake {
    name: String,
    steps: Mutex<VecDeque<Step>>,
    calls: AtomicUsize,
}

fn fake(name: &str, steps: Vec<Step>) -> Arc<Fake> {
    Arc::new(Fake {
        name: name.into(),
        steps: Mutex::new(steps.into()),
        calls: AtomicUsize::new(0),
    })
}

impl Fake {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
    fn next(&self) -> Step {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.steps
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Step::Err(ProviderError::Other("script exhausted".into())))
    }
}

fn answer(text: &str) -> ModelResponse {
    ModelResponse {
        content: text.into(),
        ..ModelResponse::default()
    }
}

#[async_trait]
impl Provider for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        match self.next() {
            Step::Ok(t) => Ok(answer(t)),
            Step::Err(e) => Err(e),
            Step::Hang => std::future::pending().await,
            Step::Stream(_) => Err(ProviderError::Other("not a stream".into())),
        }
    }
    fn generate_stream<'a>(
        &'a self,
        _: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        match self.next() {
            Step::Stream(items) => futures::stream::iter(items).boxed(),
            Step::Ok(t) => futures::stream::iter([
                Ok(StreamChunk::Text(t.into())),
                Ok(StreamChunk::Done(answer(t))),
            ])
            .boxed(),
            Step::Err(e) => futures::stream::iter([Err(e)]).boxed(),
            Step::Hang => futures::stream::pending().boxed(),
        }
    }
}

fn http(status: u16) -> ProviderError {
    ProviderError::Http {
        status,
        message: format!("status {status}"),
        retry_after: None,
    }
}

fn http_after(status: u16, secs: u64) -> ProviderError {
    ProviderError::Http {
        status,
        message: "slow down".into(),
        retry_after: Some(Duration::from_secs(secs)),
    }
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn req() -> ModelRequest {
    plain_request()
}

/// A layer on an auto-advancing clock with jitter pinned to 1.0 (the computed delay).
fn layer(p: &Arc<Fake>, clock: &ManualClock) -> Resilient {
    Resilient::new(p.clone())
        .clock(clock.clone())
        .backoff(Backoff::default().jitter(false))
}

fn summary(e: &ResilienceError) -> Vec<(String, u32, ProviderError)> {
    e.attempts()
        .iter()
        .map(|a| (a.model.clone(), a.attempt, a.error.clone()))
        .collect()
}

// ---- retries and backoff ----

#[test]
fn defaults_are_the_documented_ones() {
    let c = ResilienceConfig::default();
    assert_eq!(c.max_attempts, 2);
    assert_eq!(c.retry_on, RetryOn::Transient);
    assert_eq!(c.backoff, Backoff::exponential());
    assert_eq!(c.backoff.base, ms(500));
    assert_eq!(c.backoff.max, Duration::from_secs(30));
    assert!(c.backoff.jitter);
    assert_eq!((c.request_timeout, c.total_timeout), (None, None));
    assert!(c.classifier.is_none());
}

#[tokio::test]
async fn transient_errors_are_retried_twice_then_every_attempt_is_reported() {
    let p = fake(
        "m1",
        vec![
            Step::Err(http(503)),
            Step::Err(http(500)),
            Step::Err(http(529)),
        ],
    );
    let clock = ManualClock::auto_advance();
    let err = layer(&p, &clock).call(&req()).await.unwrap_err();
    assert_eq!(p.calls(), 3, "1 + 2 extra attempts");
    assert_eq!(
        summary(&err),
        [
            ("m1".to_string(), 1, http(503)),
            ("m1".to_string(), 2, http(500)),
            ("m1".to_string(), 3, http(529)),
        ]
    );
    assert!(matches!(err, ResilienceError::Exhausted { .. }));
    assert_eq!(clock.requested(), [ms(500), ms(1000)], "exponential waits");
    let text = err.to_string();
    assert!(text.contains("m1 attempt 3: HTTP 529"), "{text}");
}

#[tokio::test]
async fn a_retry_that_succeeds_returns_the_answer() {
    let p = fake(
        "m1",
        vec![
            Step::Err(ProviderError::Network("connection reset".into())),
            Step::Ok("hi"),
        ],
    );
    let clock = ManualClock::auto_advance();
    let r = layer(&p, &clock).call(&req()).await.unwrap();
    assert_eq!(r.content, "hi");
    assert_eq!(p.calls(), 2);
}

#[tokio::test]
async fn each_backoff_strategy_follows_its_formula() {
    for (backoff, expected) in [
        (Backoff::exponential(), [500, 1000, 2000, 4000]),
        (Backoff::linear(), [500, 1000, 1500, 2000]),
        (Backoff::fixed(), [500, 500, 500, 500]),
        (
            Backoff::exponential().base(Duration::from_secs(10)),
            [10_000, 20_000, 30_000, 30_000],
        ),
    ] {
        let p = fake("m", (0..5).map(|_| Step::Err(http(503))).collect());
        let clock = ManualClock::auto_advance();
        let _ = Resilient::new(p.clone())
            .clock(clock.clone())
            .max_attempts(4)
            .backoff(backoff.jitter(false))
            .call(&req())
            .await;
        let expected: Vec<Duration> = expected.iter().map(|&v| ms(v)).collect();
        assert_eq!(clock.requested(), expected, "{backoff:?}");
        assert_eq!(p.calls(), 5);
    }
}

#[tokio::test]
async fn full_jitter_waits_between_zero_and_the_computed_delay() {
    let p = fake(
        "m",
        vec![Step::Err(http(503)), Step::Err(http(503)), Step::Ok("ok")],
    );
    let clock = ManualClock::auto_advance();
    let units = Arc::new(Mutex::new(VecDeque::from([0.0, 0.25])));
    let u = units.clone();
    Resilient::new(p.clone())
        .clock(clock.clone())
        .jitter_source(move || u.lock().unwrap().pop_front().unwrap_or(0.5))
        .call(&req())
        .await
        .unwrap();
    assert_eq!(
        clock.requested(),
        [ms(250)],
        "0 × 500 ms (no sleep at all), 0.25 × 1 s"
    );
    assert_eq!(p.calls(), 3);

    // With the default random source, every wait stays in [0, delay].
    let p = fake("m", (0..3).map(|_| Step::Err(http(503))).collect());
    let clock = ManualClock::auto_advance();
    let _ = Resilient::new(p).clock(clock.clone()).call(&req()).await;
    let waits = clock.requested();
    assert!(waits[0] <= ms(500) && waits[1] <= ms(1000), "{waits:?}");
}

#[tokio::test]
async fn permanent_errors_are_never_retried_and_go_to_the_next_model() {
    for status in [400, 401, 403, 404] {
        let a = fake("a", vec![Step::Err(http(status))]);
        let b = fake("b", vec![Step::Ok("from b")]);
        let clock = ManualClock::auto_advance();
        let r = layer(&a, &clock)
            .fallback(b.clone())
            .call(&req())
            .await
            .unwrap();
        assert_eq!(r.content, "from b");
        assert_eq!((a.calls(), b.calls()), (1, 1), "{status}");
        assert!(clock.requested().is_empty(), "no backoff before a fallback");
    }
}

#[tokio::test]
async fn models_are_tried_in_order_each_with_its_retries() {
    let a = fake("a", (0..3).map(|_| Step::Err(http(503))).collect());
    let b = fake("b", vec![Step::Err(http(429)), Step::Ok("from b")]);
    let c = fake("c", vec![Step::Ok("from c")]);
    let clock = ManualClock::auto_advance();
    let r = layer(&a, &clock)
        .fallback(b.clone())
        .fallback(c.clone())
        .call(&req())
        .await
        .unwrap();
    assert_eq!(r.content, "from b");
    assert_eq!((a.calls(), b.calls(), c.calls()), (3, 2, 0));
    assert_eq!(
        clock.requested(),
        [ms(500), ms(1000), ms(500)],
        "backoff restarts per model"
    );

    let a = fake("a", vec![Step::Err(http(500))]);
    let b = fake("b", vec![Step::Err(http(401))]);
    let err = Resilient::new(a)
        .fallback(b)
        .no_retry()
        .clock(ManualClock::auto_advance())
        .call(&req())
        .await
        .unwrap_err();
    assert_eq!(
        err.attempts(),
        [
            AttemptFailure {
                model: "a".into(),
                attempt: 1,
                error: http(500)
            },
            AttemptFailure {
                model: "b".into(),
                attempt: 1,
                error: http(401)
            },
        ]
    );
}

#[tokio::test]
async fn retry_on_all_retries_every_error() {
    let p = fake(
        "m",
        vec![Step::Err(http(400)), Step::Err(http(401)), Step::Ok("ok")],
    );
    let clock = ManualClock::auto_advance();
    let r = layer(&p, &clock)
        .retry_on(RetryOn::All)
        .call(&req())
        .await
        .unwrap();
    assert_eq!(r.content, "ok");
    assert_eq!(p.calls(), 3);
}

#[tokio::test]
async fn a_custom_classifier_replaces_the_built_in_one() {
    let only_409 = |e: &ProviderError| matches!(e, ProviderError::Http { status: 409, .. });
    let p = fake("m", vec![Step::Err(http(409)), Step::Err(http(503))]);
    let clock = ManualClock::auto_advance();
    let err = layer(&p, &clock)
        .classifier(only_409)
        .call(&req())
        .await
        .unwrap_err();
    assert_eq!(p.calls(), 2, "409 retried, then 503 not");
    assert_eq!(err.attempts().len(), 2);

    // Ignored under retry_on: all.
    let p = fake("m", vec![Step::Err(http(503)), Step::Ok("ok")]);
    layer(&p, &clock)
        .classifier(only_409)
        .retry_on(RetryOn::All)
        .call(&req())
        .await
        .unwrap();
    assert_eq!(p.calls(), 2);
}

#[tokio::test]
async fn retry_after_is_a_lower_bound_on_the_wait() {
    let p = fake("m", vec![Step::Err(http_after(429, 7)), Step::Ok("ok")]);
    let clock = ManualClock::auto_advance();
    layer(&p, &clock).call(&req()).await.unwrap();
    assert_eq!(clock.requested(), [Duration::from_secs(7)]);

    let p = fake(
        "m",
        vec![
            Step::Err(http(503)),
            Step::Err(http(503)),
            Step::Err(http_after(429, 0)),
            Step::Ok("ok"),
        ],
    );
    let clock = ManualClock::auto_advance();
    layer(&p, &clock)
        .max_attempts(3)
        .call(&req())
        .await
        .unwrap();
    assert_eq!(
        clock.requested(),
        [ms(500), ms(1000), ms(2000)],
        "backoff longer than Retry-After wins"
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_moves_to_the_next_model_at_once() {
    let a = fake("a", vec![Step::Err(http_after(429, 120))]);
    let b = fake("b", vec![Step::Ok("from b")]);
    let clock = ManualClock::auto_advance();
    let r = layer(&a, &clock).fallback(b).call(&req()).await.unwrap();
    assert_eq!(r.content, "from b");
    assert_eq!(a.calls(), 1);
    assert!(clock.requested().is_empty(), "did not wait two minutes");
}

#[tokio::test]
async fn no_retry_tries_each_model_once() {
    let a = fake("a", vec![Step::Err(http(503))]);
    let b = fake("b", vec![Step::Err(http(503))]);
    let err = Resilient::new(a.clone())
        .fallback(b.clone())
        .no_retry()
        .clock(ManualClock::auto_advance())
        .call(&req())
        .await
        .unwrap_err();
    assert_eq!((a.calls(), b.calls()), (1, 1));
    assert_eq!(err.attempts().len(), 2);
}

// ---- timeouts ----

#[tokio::test]
async fn a_call_past_the_request_timeout_is_cancelled_and_the_next_model_answers() {
    let slow = fake("slow", vec![Step::Hang]);
    let fast = fake("fast", vec![Step::Ok("fast answer")]);
    let clock = ManualClock::new();
    let r = Arc::new(
        Resilient::new(slow.clone())
            .fallback(fast.clone())
            .clock(clock.clone())
            .request_timeout(Duration::from_secs(30)),
    );
    let rr = r.clone();
    let h = tokio::spawn(async move { rr.call(&req()).await });
    clock.sleeping(1).await;
    assert_eq!(clock.requested(), [Duration::from_secs(30)]);
    clock.advance(Duration::from_secs(30));
    let out = h.await.unwrap().unwrap();
    assert_eq!(out.content, "fast answer");
    assert_eq!(
        (slow.calls(), fast.calls()),
        (1, 1),
        "a timeout is not retried on the same model"
    );
}

#[tokio::test]
async fn retry_on_all_retries_request_timeouts_too() {
    let p = fake("m", vec![Step::Hang, Step::Ok("second try")]);
    let clock = ManualClock::new();
    let r = Arc::new(
        Resilient::new(p.clone())
            .clock(clock.clone())
            .retry_on(RetryOn::All)
            .backoff(Backoff::fixed().jitter(false))
            .request_timeout(Duration::from_secs(5)),
    );
    let rr = r.clone();
    let h = tokio::spawn(async move { rr.call(&req()).await });
    clock.sleeping(1).await; // the request timer
    clock.advance(Duration::from_secs(5));
    clock.sleeping(1).await; // the backoff
    clock.advance(ms(500));
    let out = h.await.unwrap().unwrap();
    assert_eq!(out.content, "second try");
    assert_eq!(
        clock.requested()[..3],
        [Duration::from_secs(5), ms(500), Duration::from_secs(5)]
    );
}

#[tokio::test]
async fn a_timeout_reported_by_the_provider_is_retried_then_falls_over() {
    // The provider's own limits (no answer, no first event) are transient, unlike this
    // layer's own cancellation above.
    let late = ProviderError::Timeout(Duration::from_secs(60));
    let a = fake("a", vec![Step::Err(late.clone()), Step::Ok("second try")]);
    let clock = ManualClock::auto_advance();
    let r = layer(&a, &clock).call(&req()).await.unwrap();
    assert_eq!((r.content.as_str(), a.calls()), ("second try", 2));

    let a = fake("a", (0..3).map(|_| Step::Err(late.clone())).collect());
    let b = fake("b", vec![Step::Ok("from b")]);
    let r = layer(&a, &clock)
        .fallback(b.clone())
        .call(&req())
        .await
        .unwrap();
    assert_eq!(r.content, "from b");
    assert_eq!((a.calls(), b.calls()), (3, 1));
}

#[tokio::test]
async fn the_total_timeout_cuts_a_hanging_call_with_a_timeout_error() {
    let p = fake("m", vec![Step::Hang]);
    let clock = ManualClock::new();
    let r = Arc::new(
        Resilient::new(p.clone())
            .clock(clock.clone())
            .request_timeout(Duration::from_secs(60))
            .total_timeout(Duration::from_secs(10)),
    );
    let rr = r.clone();
    let h = tokio::spawn(async move { rr.call(&req()).await });
    clock.sleeping(1).await;
    assert_eq!(
        clock.requested(),
        [Duration::from_secs(10)],
        "the tighter limit binds"
    );
    clock.advance(Duration::from_secs(10));
    match h.await.unwrap() {
        Err(ResilienceError::Timeout(t)) => {
            assert_eq!(t.limit, Duration::from_secs(10));
            assert_eq!(t.elapsed, Duration::from_secs(10));
            assert_eq!(t.attempts.len(), 1);
            assert!(matches!(t.attempts[0].error, ProviderError::Timeout(_)));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_backoff_that_would_outlast_the_total_timeout_fails_at_once() {
    let p = fake("m", (0..3).map(|_| Step::Err(http(503))).collect());
    let clock = ManualClock::auto_advance();
    let err = layer(&p, &clock)
        .total_timeout(ms(1200))
        .call(&req())
        .await
        .unwrap_err();
    let ResilienceError::Timeout(t) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        p.calls(),
        2,
        "0 ms: fail, wait 500 ms, fail, 1 s more would pass 1.2 s"
    );
    assert_eq!(t.elapsed, ms(500));
    assert_eq!(t.attempts.len(), 2);
    assert_eq!(
        err.attempts().len(),
        2,
        "a timeout error is a resilience error"
    );
    assert!(err.to_string().contains("total timeout of 1.2s"), "{err}");
}

// ---- streams ----

#[tokio::test]
async fn a_stream_failing_before_its_first_chunk_is_retried() {
    let p = fake(
        "m",
        vec![
            Step::Err(http(503)),
            Step::Stream(vec![Err(http(529))]),
            Step::Stream(vec![
                Ok(StreamChunk::Text("Hel".into())),
                Ok(StreamChunk::Done(answer("Hel"))),
            ]),
        ],
    );
    let clock = ManualClock::auto_advance();
    let r = layer(&p, &clock);
    let request = req();
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert!(err.is_none());
    assert_eq!(
        chunks,
        [
            StreamChunk::Text("Hel".into()),
            StreamChunk::Done(answer("Hel"))
        ]
    );
    assert_eq!(p.calls(), 3);
}

#[tokio::test]
async fn a_stream_failing_after_its_first_chunk_is_not_retried() {
    let a = fake(
        "a",
        vec![Step::Stream(vec![
            Ok(StreamChunk::Text("Hel".into())),
            Err(ProviderError::Network("the stream broke".into())),
        ])],
    );
    let b = fake("b", vec![Step::Ok("never")]);
    let r = layer(&a, &ManualClock::auto_advance()).fallback(b.clone());
    let request = req();
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert_eq!(chunks, [StreamChunk::Text("Hel".into())]);
    assert_eq!(err, Some(ProviderError::Network("the stream broke".into())));
    assert_eq!((a.calls(), b.calls()), (1, 0));
}

#[tokio::test]
async fn a_stream_falls_over_to_the_next_model_before_its_first_chunk() {
    let a = fake("a", vec![Step::Stream(vec![Err(http(401))])]);
    let b = fake("b", vec![Step::Ok("from b")]);
    let r = layer(&a, &ManualClock::auto_advance()).fallback(b.clone());
    let request = req();
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert!(err.is_none());
    assert_eq!(chunks[0], StreamChunk::Text("from b".into()));
    assert_eq!((a.calls(), b.calls()), (1, 1));
}

#[tokio::test]
async fn a_stream_that_stalls_after_its_first_chunk_hits_the_request_timeout() {
    /// Sends one chunk, then nothing.
    struct Stall;
    #[async_trait]
    impl Provider for Stall {
        fn name(&self) -> &str {
            "stall"
        }
        async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ProviderError> {
            std::future::pending().await
        }
        fn generate_stream<'a>(
            &'a self,
            _: &'a ModelRequest,
        ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
            futures::stream::once(async { Ok(StreamChunk::Text("Hel".into())) })
                .chain(futures::stream::pending())
                .boxed()
        }
    }
    let clock = ManualClock::new();
    let r = Arc::new(
        Resilient::new(Stall)
            .clock(clock.clone())
            .request_timeout(Duration::from_secs(20)),
    );
    let rr = r.clone();
    let h = tokio::spawn(async move {
        let request = req();
        collect(rr.generate_stream(&request)).await
    });
    clock.sleeping(1).await;
    clock.advance(Duration::from_secs(5));
    // The first chunk arrived at once; the rest of the stream keeps the attempt's limit.
    clock.sleeping(1).await;
    clock.advance_to_next();
    let (chunks, err) = h.await.unwrap();
    assert_eq!(chunks, [StreamChunk::Text("Hel".into())]);
    assert_eq!(err, Some(ProviderError::Timeout(Duration::from_secs(20))));
}

// ---- the message: identical causes grouped ----

fn refused() -> ProviderError {
    ProviderError::Network("tcp connect error: Connection refused (os error 111)".into())
}

#[tokio::test]
async fn three_identical_failures_read_as_one_cause_with_its_count() {
    let p = fake(
        "compatible/m",
        (0..3).map(|_| Step::Err(refused())).collect(),
    );
    let err = layer(&p, &ManualClock::auto_advance())
        .call(&req())
        .await
        .unwrap_err();
    assert_eq!(
        err.attempts().len(),
        3,
        "the typed error keeps every attempt"
    );
    let text = err.to_string();
    assert!(
        text.contains("compatible/m, 3 attempts: network error"),
        "{text}"
    );
    assert_eq!(text.matches("Connection refused").count(), 1, "{text}");
    assert!(
        !text.contains("errors above"),
        "nothing is printed above: {text}"
    );
    assert!(text.len() < 300, "{} chars: {text}", text.len());
}

#[tokio::test]
async fn different_causes_stay_apart_in_order_and_name_their_attempts() {
    let a = fake(
        "m1",
        vec![
            Step::Err(http(503)),
            Step::Err(refused()),
            Step::Err(http(503)),
        ],
    );
    let b = fake("m2", vec![Step::Err(http(401))]);
    let err = layer(&a, &ManualClock::auto_advance())
        .fallback(b.clone())
        .call(&req())
        .await
        .unwrap_err();
    let text = err.to_string();
    let m1_503 = text.find("m1, 2 attempts (1, 3): HTTP 503").expect(&text);
    let m1_refused = text.find("m1 attempt 2: network error").expect(&text);
    let m2 = text.find("m2 attempt 1: HTTP 401").expect(&text);
    assert!(m1_503 < m1_refused && m1_refused < m2, "{text}");
}

#[tokio::test]
async fn a_total_timeout_groups_its_attempts_too() {
    let p = fake("m", (0..3).map(|_| Step::Err(refused())).collect());
    let err = layer(&p, &ManualClock::auto_advance())
        .total_timeout(ms(1200))
        .call(&req())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ResilienceError::Timeout(_)), "{text}");
    assert!(err.attempts().len() >= 2, "{text}");
    assert_eq!(text.matches("Connection refused").count(), 1, "{text}");
}

// ---- through the Provider trait ----

#[tokio::test]
async fn through_the_provider_trait_errors_keep_their_history() {
    let p = fake("m", (0..3).map(|_| Step::Err(http(503))).collect());
    let r = layer(&p, &ManualClock::auto_advance());
    match r.generate(&req()).await {
        Err(ProviderError::Other(m)) => {
            assert!(m.contains("m, 3 attempts: HTTP 503"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    let p = fake("m", vec![Step::Err(http(503))]);
    let err = layer(&p, &ManualClock::auto_advance())
        .total_timeout(ms(100))
        .generate(&req())
        .await
        .unwrap_err();
    assert_eq!(err, ProviderError::Timeout(ms(100)));
}

#[test]
fn fallback_lists_are_built_from_one_client() {
    let c = OpenAi::new("sk-test-0123456789");
    let r = Resilient::models(&c, ["gpt-4o", "gpt-4o-mini"]);
    assert_eq!(r.name(), "openai/gpt-4o > openai/gpt-4o-mini");
    let dbg = format!("{r:?}");
    assert!(
        dbg.contains("gpt-4o-mini") && !dbg.contains("sk-test"),
        "{dbg}"
    );
}

// ---- over HTTP ----

#[tokio::test]
async fn over_http_a_429_with_retry_after_is_waited_out_and_retried() {
    let s = FixtureServer::start().await;
    let path = "/v1/chat/completions";
    s.enqueue(
        path,
        Reply::json(429, &fixture("openai/error_429.json")).header("retry-after", "20"),
    );
    s.enqueue(path, Reply::json(200, &fixture("openai/chat_plain.json")));
    let p = OpenAi::new("sk-test-0123456789")
        .base_url(&format!("{}/v1", s.url()))
        .unwrap();
    let clock = ManualClock::auto_advance();
    let r = Resilient::new(p)
        .clock(clock.clone())
        .backoff(Backoff::default().jitter(false));
    let out = r.call(&req()).await.unwrap();
    assert!(out.content.starts_with("Hello"));
    assert_eq!(s.count(), 2);
    assert_eq!(clock.requested(), [Duration::from_secs(20)]);
}

#[tokio::test]
async fn over_http_overloaded_and_unavailable_answers_are_retried() {
    let s = FixtureServer::start().await;
    s.enqueue(
        "/v1/messages",
        Reply::json(529, &fixture("anthropic/error_529.json")),
    );
    s.enqueue(
        "/v1/messages",
        Reply::json(200, &fixture("anthropic/message_plain.json")),
    );
    let gpath = "/v1beta/models/gemini-2.5-flash:generateContent";
    s.enqueue(gpath, Reply::json(503, &fixture("gemini/error_503.json")));
    s.enqueue(gpath, Reply::json(429, &fixture("gemini/error_429.json")));
    s.enqueue(
        gpath,
        Reply::json(200, &fixture("gemini/generate_plain.json")),
    );
    let clock = ManualClock::auto_advance();
    let a = Anthropic::new("k-0123456789").base_url(&s.url()).unwrap();
    Resilient::new(a)
        .clock(clock.clone())
        .call(&req())
        .await
        .unwrap();
    let g = Gemini::new("k-0123456789")
        .base_url(&format!("{}/v1beta", s.url()))
        .unwrap();
    let clock = ManualClock::auto_advance();
    Resilient::new(g)
        .clock(clock.clone())
        .backoff(Backoff::default().jitter(false))
        .call(&req())
        .await
        .unwrap();
    assert_eq!(s.count(), 5);
    assert_eq!(
        clock.requested(),
        [ms(500), Duration::from_secs(2)],
        "RetryInfo 2s > 1s backoff"
    );
}

#[tokio::test]
async fn over_http_a_slow_server_times_out_and_the_fallback_server_answers() {
    let s = FixtureServer::start().await;
    s.enqueue("/slow/v1/chat/completions", Reply::hang());
    s.enqueue(
        "/fast/v1/chat/completions",
        Reply::json(200, &fixture("compatible/llamacpp_plain.json")),
    );
    let slow = OpenAiCompatible::new(&format!("{}/slow/v1", s.url()))
        .unwrap()
        .model("big");
    let fast = OpenAiCompatible::new(&format!("{}/fast/v1", s.url()))
        .unwrap()
        .model("small");
    let clock = ManualClock::new();
    let r = Arc::new(
        Resilient::new(slow)
            .fallback(fast)
            .clock(clock.clone())
            .request_timeout(Duration::from_secs(30)),
    );
    let rr = r.clone();
    let h = tokio::spawn(async move { rr.call(&req()).await });
    clock.sleeping(1).await;
    // Let the request reach the server (real I/O; no clock involved).
    while s.count() == 0 {
        tokio::task::yield_now().await;
    }
    clock.advance(Duration::from_secs(30));
    let out = h.await.unwrap().unwrap();
    assert!(!out.content.is_empty());
    let paths: Vec<String> = s.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        ["/slow/v1/chat/completions", "/fast/v1/chat/completions"]
    );
    let e = r.call(&req()).await; // both queues empty now: 404s, not retried
    assert!(matches!(e, Err(ResilienceError::Exhausted { ref attempts }) if attempts.len() == 2));
}

#[tokio::test]
async fn over_http_streams_retry_a_500_but_not_a_cut_after_data() {
    let s = FixtureServer::start().await;
    let path = "/v1/chat/completions";
    s.enqueue(path, Reply::json(500, &fixture("openai/error_500.json")));
    s.enqueue(path, Reply::sse(&fixture("openai/stream_text.sse")));
    let p = OpenAi::new("sk-test-0123456789")
        .base_url(&format!("{}/v1", s.url()))
        .unwrap();
    let r = Resilient::new(p).clock(ManualClock::auto_advance());
    let request = req();
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        matches!(chunks.last(), Some(StreamChunk::Done(d)) if d.content == "Hello! Which city?")
    );
    assert_eq!(s.count(), 2);

    s.enqueue(path, Reply::sse_cut(&fixture("openai/stream_text.sse"), 2));
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert_eq!(chunks, [StreamChunk::Text("Hello".into())]);
    assert!(matches!(err, Some(ProviderError::Network(_))));
    assert_eq!(s.count(), 3, "no retry after the first chunk");
}

// ---- empty answers ----

/// A Chat Completions answer without a choice.
const OPENAI_NO_CHOICE: &str = r#"{"id":"chatcmpl-e1","object":"chat.completion","created":1694268190,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":0,"total_tokens":19}}"#;
/// A Chat Completions answer whose choice has no text and no tool call.
const OPENAI_EMPTY_CHOICE: &str = r#"{"id":"chatcmpl-e2","object":"chat.completion","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":0,"total_tokens":19}}"#;
/// A Messages answer with no content blocks.
const ANTHROPIC_EMPTY: &str = r#"{"id":"msg_e1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":0}}"#;
/// A generateContent answer whose candidate has an empty text part.
const GEMINI_EMPTY: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":0,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash"}"#;
/// A streamed Chat Completions answer that ends without text or tool call.
const OPENAI_EMPTY_STREAM: &str = "data: {\"id\":\"chatcmpl-e3\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"chatcmpl-e3\",\"object\":\"chat.completion.chunk\",\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[tokio::test]
async fn over_http_empty_answers_are_retried_like_a_server_error() {
    let s = FixtureServer::start().await;
    let path = "/v1/chat/completions";
    s.enqueue(path, Reply::json(200, OPENAI_NO_CHOICE));
    s.enqueue(path, Reply::json(200, OPENAI_EMPTY_CHOICE));
    s.enqueue(path, Reply::json(200, &fixture("openai/chat_plain.json")));
    let p = OpenAi::new("sk-test-0123456789")
        .base_url(&format!("{}/v1", s.url()))
        .unwrap();
    let clock = ManualClock::auto_advance();
    let r = Resilient::new(p).clock(clock.clone());
    let out = r.call(&req()).await.unwrap();
    assert!(out.content.starts_with("Hello"), "{out:?}");
    assert_eq!(s.count(), 3);
    assert_eq!(clock.requested().len(), 2, "two backoffs, as for a 5xx");
}

#[tokio::test]
async fn over_http_an_answer_that_stays_empty_is_a_typed_error_on_every_vendor() {
    let s = FixtureServer::start().await;
    s.always(
        "/v1/chat/completions",
        Reply::json(200, OPENAI_EMPTY_CHOICE),
    );
    s.always("/v1/messages", Reply::json(200, ANTHROPIC_EMPTY));
    s.always(
        "/v1beta/models/gemini-2.5-flash:generateContent",
        Reply::json(200, GEMINI_EMPTY),
    );
    let openai = OpenAi::new("sk-test-0123456789")
        .base_url(&format!("{}/v1", s.url()))
        .unwrap();
    let anthropic = Anthropic::new("k-0123456789").base_url(&s.url()).unwrap();
    let gemini = Gemini::new("g-0123456789")
        .base_url(&format!("{}/v1beta", s.url()))
        .unwrap();
    let providers: Vec<(&str, Arc<dyn Provider>)> = vec![
        ("openai", Arc::new(openai)),
        ("anthropic", Arc::new(anthropic)),
        ("gemini", Arc::new(gemini)),
    ];
    for (name, p) in providers {
        // Alone: never `Ok("")`.
        let e = p.generate(&req()).await.unwrap_err();
        assert!(matches!(e, ProviderError::EmptyAnswer(_)), "{name}: {e:?}");
        let before = s.count();
        let r = Resilient::new(p.clone()).clock(ManualClock::auto_advance());
        match r.call(&req()).await {
            Err(ResilienceError::Exhausted { attempts }) => {
                assert_eq!(attempts.len(), 3, "{name}: retried twice");
                assert!(
                    attempts
                        .iter()
                        .all(|a| matches!(a.error, ProviderError::EmptyAnswer(_))),
                    "{name}: {attempts:?}"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(s.count() - before, 3, "{name}");
        // Through the engine's `Provider` trait: still the typed error.
        let e = r.generate(&req()).await.unwrap_err();
        assert!(matches!(e, ProviderError::EmptyAnswer(_)), "{name}: {e:?}");
        assert!(e.to_string().contains("without an answer"), "{e}");
    }
}

#[tokio::test]
async fn over_http_an_empty_stream_is_retried_before_its_first_chunk() {
    let s = FixtureServer::start().await;
    let path = "/v1/chat/completions";
    s.enqueue(path, Reply::sse(OPENAI_EMPTY_STREAM));
    let p = OpenAi::new("sk-test-0123456789")
        .base_url(&format!("{}/v1", s.url()))
        .unwrap();
    let request = req();
    let (chunks, err) = collect(p.generate_stream(&request)).await;
    assert!(chunks.is_empty(), "{chunks:?}");
    assert!(
        matches!(err, Some(ProviderError::EmptyAnswer(_))),
        "{err:?}"
    );
    s.enqueue(path, Reply::sse(OPENAI_EMPTY_STREAM));
    s.enqueue(path, Reply::sse(&fixture("openai/stream_text.sse")));
    let r = Resilient::new(p).clock(ManualClock::auto_advance());
    let (chunks, err) = collect(r.generate_stream(&request)).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        matches!(chunks.last(), Some(StreamChunk::Done(d)) if d.content == "Hello! Which city?")
    );
    assert_eq!(s.count(), 3);
}
