//! Resilience, as the A3 spec documents it: retries with backoff, per-request and total
//! timeouts, ordered model fallback, typed errors that keep every attempt.
//!
//! ```text
//! for each model (in priority order):
//!   for each attempt (1 … 1 + max_attempts):
//!     1. total timeout exceeded?            → TimeoutError
//!     2. call, limited by min(request timeout, time left of the total timeout)
//!     3. success                            → the answer
//!     4. failure: record (model, attempt, error);
//!        retryable and attempts left        → wait (backoff, Retry-After), same model
//!        otherwise                          → next model
//! every model failed                        → ResilienceError::Exhausted
//! ```
//!
//! Defaults (`ResilienceConfig::default()`): 2 extra attempts per model, retry on
//! transient errors ([`classifier::is_retryable`]), exponential backoff from 500 ms capped
//! at 30 s with full jitter, no request timeout, no total timeout (each client still
//! has its own [timeouts](crate::timeouts): 60 s per call, 30 s to a stream's first event).
//!
//! Decisions the spec leaves open, pinned here:
//! - `Retry-After` (header, `retry-after-ms`, Gemini's `RetryInfo`) is a lower bound on
//!   the wait; a server that asks for more than the backoff cap (`max`) is not waited
//!   for: the next model is tried instead.
//! - A wait that would end past the total timeout fails with [`TimeoutError`] at once
//!   instead of sleeping into it.
//! - Streams: a stream is retried or failed over only until its first chunk arrives;
//!   after that, errors reach the caller as they are. The request timeout covers the whole
//!   stream of that attempt.
//! - The per-request timeout cancels the call and records [`ProviderError::Timeout`],
//!   which is not retried with the built-in classifier (the spec's "intentional
//!   cancellation"); the next model is tried. `RetryOn::All` retries it; a custom
//!   classifier decides.
//! - A [`ProviderError::Timeout`] returned by a provider itself (the server did not
//!   answer within the provider's own [timeouts](crate::timeouts)) is transient, like a
//!   transport timeout: retried, then the next model.

pub mod backoff;
pub mod classifier;
pub mod clock;
mod summary;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, StreamChunk};
use async_trait::async_trait;
use futures::future::Either;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};

pub use backoff::{Backoff, BackoffStrategy};
pub use classifier::{Classifier, is_retryable};
pub use clock::{Clock, ManualClock, TokioClock};

use crate::WithModel;

/// Which errors are retried on the same model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RetryOn {
    /// Errors the classifier calls transient (the default).
    #[default]
    Transient,
    /// Every error (the classifier is not consulted).
    All,
}

/// Everything configurable; `Default` is the spec's `DEFAULT_RESILIENCE_CONFIG`.
#[derive(Clone)]
pub struct ResilienceConfig {
    /// Extra attempts per model after the first (default 2: three calls per model; 0 =
    /// no retries, fallback still applies).
    pub max_attempts: u32,
    /// Which errors are retried.
    pub retry_on: RetryOn,
    /// Waits between retries.
    pub backoff: Backoff,
    /// Limit on each call (default none).
    pub request_timeout: Option<Duration>,
    /// Limit on everything, retries and fallbacks included (default none).
    pub total_timeout: Option<Duration>,
    /// Replaces the built-in classifier (ignored with [`RetryOn::All`]).
    pub classifier: Option<Classifier>,
}

impl Default for ResilienceConfig {
    fn default() -> Self {
        Self {
            max_attempts: 2,
            retry_on: RetryOn::Transient,
            backoff: Backoff::default(),
            request_timeout: None,
            total_timeout: None,
            classifier: None,
        }
    }
}

impl fmt::Debug for ResilienceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilienceConfig")
            .field("max_attempts", &self.max_attempts)
            .field("retry_on", &self.retry_on)
            .field("backoff", &self.backoff)
            .field("request_timeout", &self.request_timeout)
            .field("total_timeout", &self.total_timeout)
            .field(
                "classifier",
                &if self.classifier.is_some() {
                    "custom"
                } else {
                    "built-in"
                },
            )
            .finish()
    }
}

/// One failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFailure {
    /// The model (its provider's name, e.g. `openai/gpt-4o`).
    pub model: String,
    /// 1-based attempt number within that model's retries.
    pub attempt: u32,
    /// What went wrong.
    pub error: ProviderError,
}

impl fmt::Display for AttemptFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} attempt {}: {}", self.model, self.attempt, self.error)
    }
}

/// The total timeout ran out. Keeps every failed attempt (the one cut by the timeout
/// included).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the total timeout of {limit:?} was exceeded after {elapsed:?} ({} failed attempt(s){}{}); raise `total_timeout` or lower the retries",
    attempts.len(),
    if attempts.is_empty() { "" } else { ": " },
    summary::grouped(attempts)
)]
pub struct TimeoutError {
    /// The configured total timeout.
    pub limit: Duration,
    /// Time spent.
    pub elapsed: Duration,
    /// Every failed attempt, in order.
    pub attempts: Vec<AttemptFailure>,
}

/// Every model failed, or the total timeout ran out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResilienceError {
    /// Every attempt on every model failed. The message groups identical causes
    /// ("m, 3 attempts: connection refused"); [`ResilienceError::attempts`] keeps each.
    #[error(
        "every model failed: {}; check that the model's server is up and its address, key, model name and quota, or add a fallback model",
        summary::grouped(attempts)
    )]
    Exhausted {
        /// Every failed attempt, in order.
        attempts: Vec<AttemptFailure>,
    },
    /// The total timeout ran out.
    #[error(transparent)]
    Timeout(#[from] TimeoutError),
}

impl ResilienceError {
    /// Every failed attempt, in order.
    pub fn attempts(&self) -> &[AttemptFailure] {
        match self {
            ResilienceError::Exhausted { attempts } => attempts,
            ResilienceError::Timeout(t) => &t.attempts,
        }
    }
}

impl From<ResilienceError> for ProviderError {
    /// Through the engine's `Provider` trait: a total timeout is
    /// [`ProviderError::Timeout`]; exhaustion is [`ProviderError::Other`] listing every
    /// attempt. Use [`Resilient::call`] for the typed error.
    fn from(e: ResilienceError) -> Self {
        match e {
            ResilienceError::Timeout(t) => ProviderError::Timeout(t.limit),
            other => ProviderError::Other(other.to_string()),
        }
    }
}

/// The source of jitter: uniform in [0, 1).
pub type JitterSource = Arc<dyn Fn() -> f64 + Send + Sync>;

/// Providers in priority order, wrapped in retries, backoff, timeouts and fallback.
/// Itself a [`Provider`].
///
/// ```
/// use std::time::Duration;
/// use agent_providers::resilience::{Backoff, Resilient, RetryOn};
/// use agent_core::testing::ScriptedProvider;
///
/// let primary = ScriptedProvider::new();
/// let fallback = ScriptedProvider::new();
/// let p = Resilient::new(primary)
///     .fallback(fallback)
///     .max_attempts(3)
///     .retry_on(RetryOn::Transient)
///     .backoff(Backoff::linear().base(Duration::from_secs(1)))
///     .request_timeout(Duration::from_secs(30))
///     .total_timeout(Duration::from_secs(90));
/// # let _ = p;
/// ```
#[derive(Clone)]
pub struct Resilient {
    models: Vec<Arc<dyn Provider>>,
    config: ResilienceConfig,
    clock: Arc<dyn Clock>,
    jitter: JitterSource,
    name: String,
}

impl fmt::Debug for Resilient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resilient")
            .field(
                "models",
                &self.models.iter().map(|m| m.name()).collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What to do before the next attempt on the same model.
enum Wait {
    Sleep(Duration),
    NextModel,
}

/// The limit on one attempt.
#[derive(Clone, Copy)]
struct Limit {
    /// How long the attempt may take.
    length: Duration,
    /// Whether the total timeout (rather than the request timeout) is the binding one.
    total: bool,
}

impl Resilient {
    /// One model, default configuration.
    pub fn new(primary: impl Provider + 'static) -> Self {
        Self::from_arc(Arc::new(primary))
    }

    /// One shared model, default configuration.
    pub fn from_arc(primary: Arc<dyn Provider>) -> Self {
        let mut s = Self {
            models: vec![primary],
            config: ResilienceConfig::default(),
            clock: Arc::new(TokioClock::default()),
            jitter: Arc::new(fastrand::f64),
            name: String::new(),
        };
        s.rename();
        s
    }

    /// The same client for each model, in priority order.
    ///
    /// An empty list keeps the client's own model.
    pub fn models<P, I, S>(client: &P, models: I) -> Self
    where
        P: WithModel,
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list: Vec<Arc<dyn Provider>> = models
            .into_iter()
            .map(|m| Arc::new(client.with_model(m.as_ref())) as Arc<dyn Provider>)
            .collect();
        if list.is_empty() {
            list.push(Arc::new(client.with_model(client.model_id())));
        }
        let mut s = Self::from_arc(list.remove(0));
        s.models.extend(list);
        s.rename();
        s
    }

    fn rename(&mut self) {
        self.name = self
            .models
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(" > ");
    }

    /// Another model, tried after the ones before it failed.
    pub fn fallback(mut self, provider: impl Provider + 'static) -> Self {
        self.models.push(Arc::new(provider));
        self.rename();
        self
    }

    /// Another shared model.
    pub fn fallback_arc(mut self, provider: Arc<dyn Provider>) -> Self {
        self.models.push(provider);
        self.rename();
        self
    }

    /// Replace the whole configuration.
    pub fn config(mut self, config: ResilienceConfig) -> Self {
        self.config = config;
        self
    }

    /// Extra attempts per model after the first.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.config.max_attempts = n;
        self
    }

    /// No retries: each model once (the spec's `retry: false`).
    pub fn no_retry(self) -> Self {
        self.max_attempts(0)
    }

    /// Which errors are retried.
    pub fn retry_on(mut self, r: RetryOn) -> Self {
        self.config.retry_on = r;
        self
    }

    /// The waits between retries.
    pub fn backoff(mut self, b: Backoff) -> Self {
        self.config.backoff = b;
        self
    }

    /// Limit each call.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = Some(d);
        self
    }

    /// Limit everything.
    pub fn total_timeout(mut self, d: Duration) -> Self {
        self.config.total_timeout = Some(d);
        self
    }

    /// Replace the built-in classifier (`true` = retry the same model).
    pub fn classifier(
        mut self,
        f: impl Fn(&ProviderError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.classifier = Some(Arc::new(f));
        self
    }

    /// Use this clock for waits and timeouts (tests: [`ManualClock`]).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Use this source of jitter (uniform in [0, 1)).
    pub fn jitter_source(mut self, f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.jitter = Arc::new(f);
        self
    }

    /// The configuration.
    pub fn settings(&self) -> &ResilienceConfig {
        &self.config
    }

    /// Whether to retry the same model; `cancelled` when this layer's own request
    /// timeout cut the call (an intentional cancellation for the built-in classifier).
    fn retryable(&self, e: &ProviderError, cancelled: bool) -> bool {
        match self.config.retry_on {
            RetryOn::All => true,
            RetryOn::Transient => match &self.config.classifier {
                Some(c) => c(e),
                None => !cancelled && is_retryable(e),
            },
        }
    }

    fn wait_before(&self, retry: u32, e: &ProviderError) -> Wait {
        let backoff = self.config.backoff;
        let computed = backoff.wait(retry, (self.jitter)());
        match e {
            ProviderError::Http {
                retry_after: Some(ra),
                ..
            } => {
                if *ra > backoff.max {
                    Wait::NextModel
                } else {
                    Wait::Sleep(computed.max(*ra))
                }
            }
            _ => Wait::Sleep(computed),
        }
    }

    fn timeout_error(
        &self,
        start: Duration,
        limit: Duration,
        attempts: Vec<AttemptFailure>,
    ) -> ResilienceError {
        let elapsed = self.clock.now().saturating_sub(start);
        tracing::warn!(?limit, ?elapsed, "total timeout exceeded");
        ResilienceError::Timeout(TimeoutError {
            limit,
            elapsed,
            attempts,
        })
    }

    /// The spec's loop, around any attempt (a whole call, or a stream up to its first
    /// chunk). Returns the result and the attempt's limit, with when it started.
    async fn run<'a, T, F, Fut>(
        &'a self,
        mut attempt_fn: F,
    ) -> Result<(T, Option<(Duration, Limit)>), ResilienceError>
    where
        F: FnMut(&'a dyn Provider) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>> + 'a,
    {
        let start = self.clock.now();
        let total = self.config.total_timeout;
        let mut failures: Vec<AttemptFailure> = Vec::new();
        for provider in &self.models {
            let model = provider.name();
            let tries = 1 + self.config.max_attempts;
            let mut attempt = 1;
            loop {
                // 1. The total timeout.
                let now = self.clock.now();
                let left = match total {
                    Some(t) => {
                        let left = t.saturating_sub(now.saturating_sub(start));
                        if left.is_zero() {
                            return Err(self.timeout_error(start, t, failures));
                        }
                        Some(left)
                    }
                    None => None,
                };
                // 2. This attempt's limit.
                let limit = match (self.config.request_timeout, left) {
                    (Some(r), Some(l)) if l <= r => Some(Limit {
                        length: l,
                        total: true,
                    }),
                    (Some(r), _) => Some(Limit {
                        length: r,
                        total: false,
                    }),
                    (None, Some(l)) => Some(Limit {
                        length: l,
                        total: true,
                    }),
                    (None, None) => None,
                };
                // 3. The call.
                let call = attempt_fn(&**provider);
                let outcome = match limit {
                    None => Some(call.await),
                    Some(lim) => {
                        let call = std::pin::pin!(call);
                        match futures::future::select(call, self.clock.sleep(lim.length)).await {
                            Either::Left((r, _)) => Some(r),
                            Either::Right(_) => None,
                        }
                    }
                };
                let cancelled = outcome.is_none();
                let error = match outcome {
                    Some(Ok(v)) => {
                        if attempt > 1 || !failures.is_empty() {
                            tracing::info!(model, attempt, "model call succeeded after failures");
                        }
                        return Ok((v, limit.map(|l| (now, l))));
                    }
                    Some(Err(e)) => e,
                    None => {
                        let lim = limit.map_or(Duration::ZERO, |l| l.length);
                        let e = ProviderError::Timeout(lim);
                        if let (Some(t), true) = (total, limit.is_some_and(|l| l.total)) {
                            failures.push(AttemptFailure {
                                model: model.to_owned(),
                                attempt,
                                error: e,
                            });
                            return Err(self.timeout_error(start, t, failures));
                        }
                        e
                    }
                };
                // 4. Record, then retry, fall over, or give up.
                tracing::warn!(model, attempt, error = %error, "model call failed");
                let retry = attempt < tries && self.retryable(&error, cancelled);
                let wait = retry.then(|| self.wait_before(attempt - 1, &error));
                failures.push(AttemptFailure {
                    model: model.to_owned(),
                    attempt,
                    error,
                });
                match wait {
                    Some(Wait::Sleep(d)) => {
                        if let Some(t) = total
                            && self.clock.now().saturating_sub(start) + d >= t
                        {
                            return Err(self.timeout_error(start, t, failures));
                        }
                        if !d.is_zero() {
                            self.clock.sleep(d).await;
                        }
                        attempt += 1;
                    }
                    Some(Wait::NextModel) => {
                        tracing::info!(model, "Retry-After exceeds the backoff cap; next model");
                        break;
                    }
                    None => break,
                }
            }
        }
        Err(ResilienceError::Exhausted { attempts: failures })
    }

    /// One call with retries and fallback; the typed error keeps every attempt.
    pub async fn call(&self, req: &ModelRequest) -> Result<ModelResponse, ResilienceError> {
        self.run(|p| p.generate(req)).await.map(|(r, _)| r)
    }

    /// Open a stream with retries and fallback: resolves once the first chunk is in hand
    /// (nothing is retried after it); the returned stream starts with that chunk.
    pub async fn open_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> Result<BoxStream<'a, Result<StreamChunk, ProviderError>>, ResilienceError> {
        let ((first, rest), limit) = self
            .run(|p: &'a dyn Provider| async move {
                let mut s = p.generate_stream(req);
                match s.next().await {
                    Some(Ok(first)) => Ok((first, s)),
                    Some(Err(e)) => Err(e),
                    None => Err(ProviderError::InvalidResponse(
                        "the stream ended before its first chunk".into(),
                    )),
                }
            })
            .await?;
        let head = futures::stream::once(futures::future::ready(Ok(first)));
        let Some((started, lim)) = limit else {
            return Ok(head.chain(rest).boxed());
        };
        // The attempt's limit still applies to the rest of the stream.
        let left = lim
            .length
            .saturating_sub(self.clock.now().saturating_sub(started));
        let timer = self.clock.sleep(left);
        let rest = futures::stream::unfold(Some((rest, timer)), move |st| async move {
            let (mut rest, mut timer) = st?;
            match futures::future::select(rest.next(), &mut timer).await {
                Either::Left((Some(item), _)) => Some((item, Some((rest, timer)))),
                Either::Left((None, _)) => None,
                Either::Right(_) => Some((Err(ProviderError::Timeout(lim.length)), None)),
            }
        });
        Ok(head.chain(rest).boxed())
    }
}

#[async_trait]
impl Provider for Resilient {
    fn name(&self) -> &str {
        &self.name
    }

    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.call(req).await.map_err(ProviderError::from)
    }

    fn generate_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        self.open_stream(req)
            .map(|r| match r {
                Ok(s) => s,
                Err(e) => futures::stream::once(futures::future::ready(Err(e.into()))).boxed(),
            })
            .flatten_stream()
            .boxed()
    }

    /// The first model's body: what a call sends when nothing fails.
    fn wire_body(&self, req: &ModelRequest) -> Option<Vec<u8>> {
        self.models.first()?.wire_body(req)
    }
}
