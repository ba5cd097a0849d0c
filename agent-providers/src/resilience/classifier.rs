//! The documented error classifier: which failures are transient (retry the same
//! model) and which are permanent (go on to the next model).

use std::sync::Arc;

use agent_core::error::ProviderError;

/// A custom classifier: `true` = retry. Replaces the built-in one entirely; ignored with
/// [`RetryOn::All`](super::RetryOn::All).
pub type Classifier = Arc<dyn Fn(&ProviderError) -> bool + Send + Sync>;

/// Network error codes that mean "try again".
const NETWORK_CODES: [&str; 7] = [
    "econnreset",
    "econnrefused",
    "econnaborted",
    "etimedout",
    "enetunreach",
    "epipe",
    "ehostunreach",
];

/// Message fragments of throttling and timeouts.
const TRANSIENT_MESSAGES: [&str; 7] = [
    "throttl",
    "rate limit",
    "too many requests",
    "request limit",
    "quota",
    "timeout",
    "timed out",
];

/// The built-in classifier.
///
/// Retryable (transient):
/// - network errors ([`ProviderError::Network`]: the request did not reach the API or the
///   connection broke), and messages naming `ECONNRESET`, `ECONNREFUSED`, `ECONNABORTED`,
///   `ETIMEDOUT`, `ENETUNREACH`, `EPIPE`, `EHOSTUNREACH`;
/// - throttling: messages containing `throttl`, `rate limit`, `too many requests`,
///   `request limit`, `quota`;
/// - timeouts reported by the API or the transport: messages containing `timeout` or
///   `timed out`, and [`ProviderError::Timeout`] returned by a provider (the server did
///   not answer within the provider's own [timeouts](crate::timeouts));
/// - HTTP 408, 429 and every 5xx (including 529 Overloaded);
/// - an empty answer ([`ProviderError::EmptyAnswer`]: a 200 without a choice, or with
///   one that has neither text nor a tool call), like a 5xx.
///
/// Not retryable:
/// - HTTP 400, 401, 403 and 404, whatever their message says;
/// - a cancellation by the resilience layer's own per-request timeout (recorded as
///   [`ProviderError::Timeout`]; the layer itself does not retry it with this
///   classifier, the next model is tried; `RetryOn::All` retries it);
/// - anything else.
pub fn is_retryable(error: &ProviderError) -> bool {
    match error {
        ProviderError::Http {
            status, message, ..
        } => match status {
            400 | 401 | 403 | 404 => false,
            408 | 429 => true,
            s if *s >= 500 => true,
            _ => transient_message(message),
        },
        ProviderError::Network(_) => true,
        ProviderError::Timeout(_) => true,
        ProviderError::EmptyAnswer(_) => true,
        ProviderError::InvalidResponse(m) | ProviderError::Other(m) => transient_message(m),
    }
}

fn transient_message(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    TRANSIENT_MESSAGES.iter().any(|p| m.contains(p)) || NETWORK_CODES.iter().any(|c| m.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn http(status: u16, message: &str) -> ProviderError {
        ProviderError::Http {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    #[test]
    fn transient_statuses_retry() {
        for s in [408, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable(&http(s, "x")), "{s}");
        }
    }

    #[test]
    fn client_errors_never_retry_even_with_throttling_words() {
        for s in [400, 401, 403, 404] {
            assert!(!is_retryable(&http(s, "rate limit exceeded")), "{s}");
        }
        assert!(!is_retryable(&http(422, "unprocessable")));
        assert!(is_retryable(&http(409, "Request throttled, try later")));
    }

    #[test]
    fn network_errors_and_transient_messages_retry() {
        assert!(is_retryable(&ProviderError::Network(
            "connection reset".into()
        )));
        assert!(is_retryable(&ProviderError::Other("read ETIMEDOUT".into())));
        assert!(is_retryable(&ProviderError::Other(
            "ECONNRESET by peer".into()
        )));
        assert!(is_retryable(&ProviderError::Other(
            "Too Many Requests".into()
        )));
        assert!(is_retryable(&ProviderError::Other(
            "monthly quota used up".into()
        )));
        assert!(is_retryable(&ProviderError::InvalidResponse(
            "upstream timed out".into()
        )));
        assert!(!is_retryable(&ProviderError::InvalidResponse(
            "not JSON".into()
        )));
        assert!(!is_retryable(&ProviderError::Other("bad schema".into())));
    }

    #[test]
    fn an_empty_answer_is_transient_like_a_5xx() {
        assert!(is_retryable(&ProviderError::EmptyAnswer(
            "no text and no tool call".into()
        )));
    }

    #[test]
    fn a_provider_timeout_is_transient() {
        assert!(is_retryable(&ProviderError::Timeout(Duration::from_secs(
            1
        ))));
    }
}
