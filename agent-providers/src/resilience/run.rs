//! The spec's loop (see the [module docs](super)): one attempt after another on each
//! model in turn, with the limits, the waits and the record of every failure.

use std::future::Future;
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::provider::Provider;
use futures::future::Either;

use super::{AttemptFailure, ResilienceError, Resilient, RetryOn, TimeoutError, is_retryable};

/// What to do before the next attempt on the same model.
enum Wait {
    Sleep(Duration),
    NextModel,
}

/// The limit on one attempt.
#[derive(Clone, Copy)]
pub(super) struct Limit {
    /// How long the attempt may take.
    pub(super) length: Duration,
    /// Whether the total timeout (rather than the request timeout) is the binding one.
    total: bool,
}

impl Resilient {
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
    pub(super) async fn run<'a, T, F, Fut>(
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
}
