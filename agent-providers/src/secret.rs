//! API keys that never print.

use std::fmt;
use std::sync::Arc;

/// An API key. `Debug` and `Display` print `ApiKey(****)`; the key is only ever written
/// into a request header. Errors and logs built by this crate have the key redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(Arc::from(key.into()))
    }

    /// The key itself, for a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]` (keys shorter
    /// than 8 characters are placeholders, not secrets, and are left alone).
    pub(crate) fn redact(&self, text: String) -> String {
        if self.0.len() >= 8 && text.contains(&*self.0) {
            text.replace(&*self.0, "[redacted]")
        } else {
            text
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

impl From<String> for ApiKey {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

impl From<&str> for ApiKey {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_key() {
        let k = ApiKey::new("sk-very-secret-123");
        assert_eq!(format!("{k:?}"), "ApiKey(****)");
        assert_eq!(format!("{k}"), "****");
    }

    #[test]
    fn redact_removes_every_occurrence() {
        let k = ApiKey::new("sk-very-secret-123");
        let s = k.redact("bad key sk-very-secret-123 (sk-very-secret-123)".into());
        assert_eq!(s, "bad key [redacted] ([redacted])");
    }
}
