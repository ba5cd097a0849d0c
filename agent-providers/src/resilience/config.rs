//! What a [`Resilient`](super::Resilient) may do: how many attempts, which errors are
//! retried, the waits and the limits. Kept apart from the loop that applies it.

use std::fmt;
use std::time::Duration;

use super::{Backoff, Classifier};

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
    /// How long to wait between retries (exponential, linear or fixed, with jitter).
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
