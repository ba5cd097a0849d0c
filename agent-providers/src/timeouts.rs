//! How long a provider waits for the model API. Every client ([`crate::OpenAi`],
//! [`crate::OpenAiCompatible`], [`crate::Anthropic`], [`crate::Gemini`]) has three limits,
//! each set on its builder:
//!
//! | limit | default | builder | covers |
//! |---|---|---|---|
//! | request | [`DEFAULT_REQUEST_TIMEOUT`] (60 s); [`COMPATIBLE_REQUEST_TIMEOUT`] (300 s) for [`crate::OpenAiCompatible`] | `request_timeout` | a whole non-streamed call: connecting, sending, the status, the whole body |
//! | first byte | [`DEFAULT_FIRST_BYTE_TIMEOUT`] (30 s) | `first_byte_timeout` | a stream, from the call until its first event |
//! | stream idle | [`DEFAULT_STREAM_IDLE_TIMEOUT`] (60 s) | `stream_idle_timeout` | a stream, between two events (a stream may run longer than any of these as long as it keeps sending) |
//!
//! The hosted vendors ([`crate::OpenAi`], [`crate::Anthropic`], [`crate::Gemini`]) answer
//! a call well within 60 s. [`crate::OpenAiCompatible`] mostly talks to a model on the
//! same machine (Ollama, llama.cpp, vLLM), where a call with a long prompt and many
//! tools on a small CPU takes minutes (a 1.5 B model on 2 cores: up to about 300 s), so
//! its whole-call default is [`COMPATIBLE_REQUEST_TIMEOUT`]; set `request_timeout` lower
//! for a hosted compatible API (OpenRouter, …) that should fail fast.
//!
//! Connecting is also limited to 10 s by the shared HTTP client (a client passed to
//! `http_client` keeps its own settings, and these limits still apply on top).
//!
//! A limit that runs out ends the call with `ProviderError::Timeout(limit)`, which the
//! resilience layer treats as transient: retried, then the next model. Pass
//! `Duration::MAX` to wait without limit.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// The default limit on a whole non-streamed call.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The default limit on a whole non-streamed call of [`crate::OpenAiCompatible`]: local
/// servers on a small CPU need minutes for a long prompt (see the [module docs](self)).
pub const COMPATIBLE_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The default limit from a streamed call to its first event.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit between two events of a stream.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A client's limits (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub(crate) request: Duration,
    pub(crate) first_byte: Duration,
    pub(crate) idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            request: DEFAULT_REQUEST_TIMEOUT,
            first_byte: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle: DEFAULT_STREAM_IDLE_TIMEOUT,
        }
    }
}

/// `limit` from `start`; `None` when it is too far away to represent (no limit).
pub(crate) fn deadline(start: Instant, limit: Duration) -> Option<Instant> {
    start.checked_add(limit)
}

/// `f`'s output, or `None` if `deadline` passed first.
pub(crate) async fn within<F: Future>(deadline: Option<Instant>, f: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, f).await.ok(),
        None => Some(f.await),
    }
}
