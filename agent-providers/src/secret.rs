//! API keys that never print, and the rule that keeps them out of every error: each
//! provider knows its [`Secrets`] (the key, the credential headers it sends, credential
//! query parameters of its URL) and scrubs every error it returns of them.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use agent_core::error::ProviderError;
use reqwest::header::HeaderMap;

/// An API key. `Debug` and `Display` print `ApiKey(****)`; the key is only ever written
/// into a request header. Errors and logs built by this crate have the key redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wrap a key so that `Debug` and error texts never show it.
    pub fn new(key: impl Into<String>) -> Self {
        Self(Arc::from(key.into()))
    }

    /// The key itself, for a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
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

/// Secrets shorter than this are placeholders (`"k"`, `"none"`), not secrets: left alone.
const MIN_SECRET: usize = 8;
/// A run of this many bytes of a secret counts as an echo of it (a key cut short, its
/// tail, its middle); shorter secrets must appear whole.
const MIN_ECHO: usize = 10;
/// The start of a secret right before a cut (`…`, where long bodies are shortened) is
/// redacted from this length on.
const MIN_CUT_PREFIX: usize = 4;
/// What replaces a secret.
const MARK: &str = "[redacted]";
/// Where [`crate::http::snippet`] cut a body.
const CUT: &str = "…";
/// Header and query parameter names that carry credentials (lowercase, matched
/// anywhere in the name: `x-api-key`, `api_key`, `x-auth-token`…).
const CREDENTIAL_NAMES: [&str; 6] = ["key", "token", "secret", "auth", "password", "signature"];

/// Whether a header or query parameter name (lowercase) carries a credential.
pub(crate) fn is_credential_name(name: &str) -> bool {
    matches!(name, "authorization" | "proxy-authorization" | "cookie")
        || CREDENTIAL_NAMES.iter().any(|p| name.contains(p))
}

/// Everything a provider must never print: scrubbed from every error it returns.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<[Box<str>]>);

impl Secrets {
    /// The key, every sensitive header value (its credential, without a `Bearer `/`Basic `
    /// scheme), and credential query parameters of `url`.
    pub(crate) fn collect(key: Option<&ApiKey>, headers: &HeaderMap, url: &str) -> Self {
        let mut all: Vec<&str> = key.map(ApiKey::expose).into_iter().collect();
        for v in headers.values().filter(|v| v.is_sensitive()) {
            if let Ok(s) = v.to_str() {
                // `Bearer KEY` echoed becomes `Bearer [redacted]`.
                all.push(s.trim().split_once(' ').map_or(s, |(_, cred)| cred.trim()));
            }
        }
        let query = url.split_once('?').map_or("", |(_, q)| q);
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && is_credential_name(&name.to_ascii_lowercase())
            {
                all.push(value);
            }
        }
        let mut seen = HashSet::new();
        let list: Vec<Box<str>> = all
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET && seen.insert(*s))
            .map(Box::from)
            .collect();
        Self(list.into())
    }

    /// `e` with every secret, and every echo of a part of one, replaced by `[redacted]`.
    pub(crate) fn scrub(&self, e: ProviderError) -> ProviderError {
        if self.0.is_empty() {
            return e;
        }
        match e {
            ProviderError::Http {
                status,
                message,
                retry_after,
            } => ProviderError::Http {
                status,
                message: self.redact(message),
                retry_after,
            },
            ProviderError::Network(m) => ProviderError::Network(self.redact(m)),
            ProviderError::InvalidResponse(m) => ProviderError::InvalidResponse(self.redact(m)),
            ProviderError::Other(m) => ProviderError::Other(self.redact(m)),
            ProviderError::EmptyAnswer(m) => ProviderError::EmptyAnswer(self.redact(m)),
            t @ ProviderError::Timeout(_) => t,
        }
    }

    /// `text` without the secrets: whole, in runs of [`MIN_ECHO`] bytes or more, and
    /// their starts cut short by a snippet.
    pub(crate) fn redact(&self, text: String) -> String {
        let bytes = text.as_bytes();
        let mut hit = vec![false; bytes.len()];
        for secret in self.0.iter().map(|s| s.as_bytes()) {
            let w = secret.len().min(MIN_ECHO);
            let parts: HashSet<&[u8]> = secret.windows(w).collect();
            for (i, window) in bytes.windows(w).enumerate() {
                if parts.contains(window) {
                    hit[i..i + w].fill(true);
                }
            }
            for (cut, _) in text.match_indices(CUT) {
                let before = &bytes[..cut];
                let longest = (MIN_CUT_PREFIX..secret.len().min(before.len() + 1))
                    .rev()
                    .find(|&n| before.ends_with(&secret[..n]));
                if let Some(n) = longest {
                    hit[cut - n..cut].fill(true);
                }
            }
        }
        if !hit.contains(&true) {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < bytes.len() {
            if !hit[i] {
                let end = hit[i..]
                    .iter()
                    .position(|h| *h)
                    .map_or(bytes.len(), |p| i + p);
                let end = ceil_boundary(&text, end);
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
            let end = hit[i..]
                .iter()
                .position(|h| !*h)
                .map_or(bytes.len(), |p| i + p);
            out.push_str(MARK);
            i = ceil_boundary(&text, end);
        }
        out
    }
}

/// The first character boundary at or after `i`.
fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn secrets(key: &str) -> Secrets {
        Secrets::collect(Some(&ApiKey::new(key)), &HeaderMap::new(), "")
    }

    #[test]
    fn debug_and_display_hide_the_key() {
        let k = ApiKey::new("sk-very-secret-123");
        assert_eq!(format!("{k:?}"), "ApiKey(****)");
        assert_eq!(format!("{k}"), "****");
    }

    #[test]
    fn redact_removes_every_occurrence() {
        let s = secrets("sk-very-secret-123")
            .redact("bad key sk-very-secret-123 (sk-very-secret-123)".into());
        assert_eq!(s, "bad key [redacted] ([redacted])");
    }

    #[test]
    fn partial_echoes_and_cut_starts_are_redacted_too() {
        let s = secrets("sk-proj-abcdefghijklmnop");
        assert_eq!(
            s.redact("key sk-proj-abcdefghij...".into()),
            "key [redacted]..."
        );
        assert_eq!(
            s.redact("ends with ghijklmnop.".into()),
            "ends with [redacted]."
        );
        assert_eq!(s.redact("body: sk-pr…".into()), "body: [redacted]…");
        assert_eq!(
            s.redact("sk-proj-**mnop".into()),
            "sk-proj-**mnop",
            "a masked key is no echo"
        );
        assert_eq!(
            s.redact("é sk-proj-abcdefghijklmnop é".into()),
            "é [redacted] é"
        );
    }

    #[test]
    fn placeholders_are_not_secrets() {
        let s = secrets("k");
        assert_eq!(s.redact("k is fine".into()), "k is fine");
    }

    #[test]
    fn sensitive_headers_their_credentials_and_query_keys_are_collected() {
        let mut h = HeaderMap::new();
        let mut v = HeaderValue::from_static("Bearer tok-0123456789");
        v.set_sensitive(true);
        h.insert("authorization", v);
        h.insert("x-trace", HeaderValue::from_static("public-abcdefghij"));
        let s = Secrets::collect(None, &h, "http://x/v1?key=qk-0123456789&alt=sse");
        let out = s.redact("tok-0123456789 qk-0123456789 public-abcdefghij".into());
        assert_eq!(out, "[redacted] [redacted] public-abcdefghij");
    }

    #[test]
    fn every_error_variant_is_scrubbed() {
        let s = secrets("sk-very-secret-123");
        let e = s.scrub(ProviderError::Http {
            status: 401,
            message: "sk-very-secret-123".into(),
            retry_after: None,
        });
        assert!(!format!("{e:?}").contains("secret-123"));
        for e in [
            ProviderError::Network("sk-very-secret-123".into()),
            ProviderError::InvalidResponse("sk-very-secret-123".into()),
            ProviderError::Other("sk-very-secret-123".into()),
        ] {
            assert!(!s.scrub(e).to_string().contains("secret-123"));
        }
    }
}
