//! [`Resilient`]: the provider that wraps others, its builder, and its `Provider`
//! face. The retry and fallback loop itself lives in `run`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, StreamChunk};
use async_trait::async_trait;
use futures::future::Either;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};

use super::{Backoff, Clock, ResilienceConfig, ResilienceError, RetryOn, TokioClock};
use crate::WithModel;

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
    pub(super) models: Vec<Arc<dyn Provider>>,
    pub(super) config: ResilienceConfig,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) jitter: JitterSource,
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

impl Resilient {
    /// Wrap one provider with the default resilience (2 retries on transient errors,
    /// exponential backoff from 500 ms capped at 30 s, full jitter); add models with
    /// [`Self::fallback`].
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

    /// [`Self::fallback`] for a provider already behind an `Arc`.
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

    /// Give up on a single call after `d` (that attempt fails and the retry rules decide
    /// what follows), so one hung request cannot stall the turn.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = Some(d);
        self
    }

    /// Give up after `d` in all, retries, waits and fallbacks included; the error then keeps
    /// every attempt made.
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

    /// Use this clock for waits and timeouts (tests: [`ManualClock`](super::ManualClock)).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Use this source of jitter (uniform in [0, 1)).
    pub fn jitter_source(mut self, f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.jitter = Arc::new(f);
        self
    }

    /// The retry, backoff, timeout and classifier settings in effect.
    pub fn settings(&self) -> &ResilienceConfig {
        &self.config
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

    /// The primary model's profile. A fallback of another profile answers under the
    /// primary's: chain models of one profile, or wrap a small model's chain on its
    /// own.
    fn profile(&self) -> agent_core::policy::ModelProfile {
        self.models.first().map(|m| m.profile()).unwrap_or_default()
    }

    /// The server of the one model; none for a chain of several (any may answer).
    fn server(&self) -> Option<(&str, u16)> {
        match self.models.as_slice() {
            [one] => one.server(),
            _ => None,
        }
    }
}
