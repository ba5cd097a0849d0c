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
//! has its own [timeouts](crate::timeouts): 60 s per call (300 s for `OpenAiCompatible`),
//! 30 s to a stream's first event).
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

#[cfg(doc)]
use agent_core::error::ProviderError;

pub mod backoff;
pub mod classifier;
pub mod clock;
mod config;
mod error;
mod resilient;
mod run;
mod summary;

pub use backoff::{Backoff, BackoffStrategy};
pub use classifier::{Classifier, is_retryable};
pub use clock::{Clock, ManualClock, TokioClock};
pub use config::{ResilienceConfig, RetryOn};
pub use error::{AttemptFailure, ResilienceError, TimeoutError};
pub use resilient::{JitterSource, Resilient};
