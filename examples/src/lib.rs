//! Shared helpers for the examples (`cargo run -p examples --example NAME`).
//!
//! - [`model`]: which model an example talks to, from the environment (a vendor key,
//!   an OpenAI-compatible base URL, the local model, or the example's scripted model).
//! - [`show`]: printing what a turn did (reply, step, data, model calls, directives).
//! - [`repl`]: the interactive terminal for any agent (the concierge's conversation).
//! - [`exit`]: how an example ends: exit status 1 and the reason in words when it could
//!   not start, the model could not be reached, or every turn failed.
//! - [`init_logging`]: the engine's `tracing` events on stderr when `AGENT_LOG` is set
//!   (`AGENT_LOG=debug` says, for instance, why a turn rendered its reply twice).
//! - [`Recorder`]: a provider wrapper that keeps the instructions (system prompt and per-turn state) it forwarded, to
//!   show what the model was told.

pub mod exit;
pub mod model;
pub mod repl;
pub mod show;

use std::sync::{Arc, Mutex};

use agent_core::error::ProviderError;
use agent_core::provider::{ModelRequest, ModelResponse, Provider, StreamChunk};
use async_trait::async_trait;
use futures::stream::BoxStream;

/// Print the engine's `tracing` events on stderr at the level `AGENT_LOG` names
/// (`error`, `warn`, `info`, `debug`, `trace`); nothing when it is unset or unknown.
pub fn init_logging() {
    let level = std::env::var("AGENT_LOG")
        .ok()
        .and_then(|v| v.parse::<tracing::Level>().ok());
    if let Some(level) = level {
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Wraps a provider and keeps the instructions (system prompt and per-turn state) of every call it forwards.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<dyn Provider>,
    prompts: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("inner", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Record the calls made to `inner`.
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        Self {
            inner,
            prompts: Arc::default(),
        }
    }
    fn keep(&self, request: &ModelRequest) {
        let mut p = self.prompts.lock().unwrap_or_else(|e| e.into_inner());
        p.push(request.instructions());
    }
    /// Take the system prompts recorded since the last call.
    pub fn take(&self) -> Vec<String> {
        let mut p = self.prompts.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *p)
    }
}

#[async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> agent_core::policy::ModelProfile {
        self.inner.profile()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.keep(request);
        self.inner.generate(request).await
    }
    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        self.keep(request);
        self.inner.generate_stream(request)
    }
}
