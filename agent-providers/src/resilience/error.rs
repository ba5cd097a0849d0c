//! The typed errors of the resilience layer: every failed attempt is kept, and the
//! message groups identical causes (see `summary`).

use std::fmt;
use std::time::Duration;

use agent_core::error::ProviderError;

use super::summary;

/// One call that failed: which model, which attempt, and the provider's error. Kept in
/// order by [`ResilienceError`] and [`TimeoutError`], so a failure shows every attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFailure {
    /// The model (its provider's name, e.g. `openai/gpt-4o`).
    pub model: String,
    /// 1-based attempt number within that model's retries.
    pub attempt: u32,
    /// The provider's error for this attempt.
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
    /// How long the calls ran before the timeout ended them.
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
    /// [`ProviderError::Timeout`]; exhaustion where every attempt came back empty is
    /// [`ProviderError::EmptyAnswer`], any other exhaustion [`ProviderError::Other`],
    /// each listing every attempt. Use [`Resilient::call`](super::Resilient::call) for
    /// the typed error.
    fn from(e: ResilienceError) -> Self {
        match e {
            ResilienceError::Timeout(t) => ProviderError::Timeout(t.limit),
            ResilienceError::Exhausted { attempts }
                if !attempts.is_empty()
                    && attempts
                        .iter()
                        .all(|a| matches!(a.error, ProviderError::EmptyAnswer(_))) =>
            {
                ProviderError::EmptyAnswer(format!(
                    "every attempt: {}",
                    summary::grouped(&attempts)
                ))
            }
            other => ProviderError::Other(other.to_string()),
        }
    }
}
