//! The provider seen by an eval run: sets the run's temperature and seed, and records
//! each call's kind, latency, tokens and how much of its body repeats the previous one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::error::ProviderError;
use crate::provider::{
    CallKind, FinishReason, Message, ModelRequest, ModelResponse, OutputSchema, Provider,
    StreamChunk, ToolSpec,
};

/// One model call of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallStats {
    /// Why the engine called.
    pub kind: CallKind,
    /// Wall time of the call.
    pub latency_ms: f64,
    /// Prompt tokens (the provider's usage).
    pub prompt_tokens: u64,
    /// The part of `prompt_tokens` the provider says it read from its prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Tokens the model generated (the provider's usage).
    pub completion_tokens: u64,
    /// Why generation stopped (`None` when the call failed).
    pub finish: Option<FinishReason>,
    /// Length of the request body.
    pub body_bytes: usize,
    /// Leading bytes equal to the previous call's body in the same run (0 for the
    /// first call): what a provider's prompt cache can reuse.
    pub prefix_bytes: usize,
    /// Whether this was the run's first call (it has no previous body).
    pub first: bool,
    /// The provider's error, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Default)]
struct Log {
    calls: Vec<CallStats>,
    /// What the engine told the model in each call, in call order (for the leak score).
    instructions: Vec<String>,
    previous: Option<Vec<u8>>,
}

/// Wraps the provider under evaluation for one run.
#[derive(Clone)]
pub(crate) struct Recorder {
    inner: Arc<dyn Provider>,
    temperature: Option<f32>,
    seed: Option<u64>,
    log: Arc<Mutex<Log>>,
    in_flight: Arc<AtomicUsize>,
}

/// Counts a call as in flight until dropped, also when the turn is cancelled.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Recorder {
    pub(crate) fn new(
        inner: Arc<dyn Provider>,
        temperature: Option<f32>,
        seed: Option<u64>,
    ) -> Self {
        Self {
            inner,
            temperature,
            seed,
            log: Arc::default(),
            in_flight: Arc::default(),
        }
    }

    /// Calls recorded so far.
    pub(crate) fn calls(&self) -> Vec<CallStats> {
        self.lock().calls.clone()
    }

    pub(crate) fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Calls begun so far (answered or not).
    pub(crate) fn begun(&self) -> usize {
        self.lock().instructions.len()
    }

    /// The instructions of the calls begun since the `from`-th.
    pub(crate) fn instructions_since(&self, from: usize) -> Vec<String> {
        self.lock()
            .instructions
            .get(from..)
            .map(<[String]>::to_vec)
            .unwrap_or_default()
    }

    /// Whether a model call is waiting for its answer now.
    pub(crate) fn waiting_on_model(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn adjust(&self, request: &ModelRequest) -> ModelRequest {
        let mut r = request.clone();
        if self.temperature.is_some() {
            r.temperature = self.temperature;
        }
        if self.seed.is_some() {
            r.seed = self.seed;
        }
        r
    }

    /// Start a call: its body's shared prefix with the previous one, and the timer.
    fn begin(&self, request: &ModelRequest) -> Pending {
        let body = self
            .inner
            .wire_body(request)
            .unwrap_or_else(|| canonical_body(request));
        let mut log = self.lock();
        let prefix = log.previous.as_ref().map_or(0, |p| {
            p.iter().zip(&body).take_while(|(a, b)| a == b).count()
        });
        let first = log.previous.is_none();
        let body_bytes = body.len();
        log.previous = Some(body);
        log.instructions.push(request.instructions());
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Pending {
            kind: request.kind,
            started: Instant::now(),
            body_bytes,
            prefix_bytes: prefix,
            first,
            _guard: InFlight(self.in_flight.clone()),
        }
    }

    fn end(&self, p: Pending, outcome: Result<&ModelResponse, &ProviderError>) {
        let stats = CallStats {
            kind: p.kind,
            latency_ms: p.started.elapsed().as_secs_f64() * 1000.0,
            prompt_tokens: outcome.map_or(0, |r| r.usage.input_tokens),
            cached_tokens: outcome.map_or(0, |r| r.usage.cached_input_tokens),
            completion_tokens: outcome.map_or(0, |r| r.usage.output_tokens),
            finish: outcome.ok().map(|r| r.finish),
            body_bytes: p.body_bytes,
            prefix_bytes: p.prefix_bytes,
            first: p.first,
            error: outcome.err().map(ToString::to_string),
        };
        self.lock().calls.push(stats);
    }
}

struct Pending {
    kind: CallKind,
    started: Instant,
    body_bytes: usize,
    prefix_bytes: usize,
    first: bool,
    _guard: InFlight,
}

/// A stand-in body for providers without a wire format, in the order the HTTP
/// providers send theirs (instructions and history first).
fn canonical_body(r: &ModelRequest) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<'a> {
        system: &'a str,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
        output: Option<&'a OutputSchema>,
    }
    serde_json::to_vec(&Body {
        system: &r.system,
        messages: &r.messages,
        tools: &r.tools,
        output: r.output.as_ref(),
    })
    .unwrap_or_default()
}

#[async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> crate::policy::ModelProfile {
        self.inner.profile()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let request = self.adjust(request);
        let pending = self.begin(&request);
        let result = self.inner.generate(&request).await;
        self.end(pending, result.as_ref());
        result
    }

    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        Box::pin(
            futures::stream::once(async move {
                let request = self.adjust(request);
                let pending = self.begin(&request);
                let mut chunks = Vec::new();
                let mut stream = self.inner.generate_stream(&request);
                let mut pending = Some(pending);
                while let Some(item) = stream.next().await {
                    match &item {
                        Ok(StreamChunk::Done(r)) => {
                            if let Some(p) = pending.take() {
                                self.end(p, Ok(r));
                            }
                        }
                        Err(e) => {
                            if let Some(p) = pending.take() {
                                self.end(p, Err(e));
                            }
                        }
                        Ok(StreamChunk::Text(_)) => {}
                    }
                    chunks.push(item);
                }
                futures::stream::iter(chunks)
            })
            .flatten(),
        )
    }

    fn wire_body(&self, request: &ModelRequest) -> Option<Vec<u8>> {
        self.inner.wire_body(request)
    }

    fn server(&self) -> Option<(&str, u16)> {
        self.inner.server()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ModelProfile;
    use crate::testing::ScriptedProvider;

    #[test]
    fn the_recorder_and_shared_providers_report_the_models_profile() {
        let small: Arc<dyn Provider> =
            Arc::new(ScriptedProvider::new().with_profile(ModelProfile::Small));
        assert_eq!(small.profile(), ModelProfile::Small);
        assert_eq!(Arc::new(small.clone()).profile(), ModelProfile::Small);
        let r = Recorder::new(small, Some(0.0), None);
        assert_eq!(r.profile(), ModelProfile::Small);
        let shared: Arc<dyn Provider> = Arc::new(r);
        assert_eq!(shared.profile(), ModelProfile::Small);
    }
}
