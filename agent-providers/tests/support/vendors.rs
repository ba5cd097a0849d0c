//! The four clients side by side, each on its own path of one fixture server: for tests
//! that check a behaviour on every provider.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::provider::Provider;
use agent_providers::{Anthropic, Gemini, OpenAi, OpenAiCompatible};

/// A provider family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    OpenAi,
    Compatible,
    Anthropic,
    Gemini,
}

/// Every provider.
pub const ALL: [Vendor; 4] = [
    Vendor::OpenAi,
    Vendor::Compatible,
    Vendor::Anthropic,
    Vendor::Gemini,
];

/// How a test client is set up.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// The API key (the compatible client sends it as a bearer token).
    pub key: String,
    /// One more header on every request.
    pub header: Option<(String, String)>,
    /// `request_timeout`, `first_byte_timeout`, `stream_idle_timeout` when set.
    pub request: Option<Duration>,
    pub first_byte: Option<Duration>,
    pub idle: Option<Duration>,
}

macro_rules! configure {
    ($p:expr, $s:expr) => {{
        let mut p = $p;
        if let Some((n, v)) = &$s.header {
            p = p.header(n, v);
        }
        if let Some(d) = $s.request {
            p = p.request_timeout(d);
        }
        if let Some(d) = $s.first_byte {
            p = p.first_byte_timeout(d);
        }
        if let Some(d) = $s.idle {
            p = p.stream_idle_timeout(d);
        }
        p
    }};
}

impl Vendor {
    /// The path of a whole call and of a streamed call on the fixture server.
    pub fn paths(self) -> (&'static str, &'static str) {
        match self {
            Vendor::OpenAi => ("/openai/v1/chat/completions", "/openai/v1/chat/completions"),
            Vendor::Compatible => (
                "/compatible/v1/chat/completions",
                "/compatible/v1/chat/completions",
            ),
            Vendor::Anthropic => ("/anthropic/v1/messages", "/anthropic/v1/messages"),
            Vendor::Gemini => (
                "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
                "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            ),
        }
    }

    /// A recorded text stream in the vendor's format.
    pub fn text_stream(self) -> &'static str {
        match self {
            Vendor::OpenAi => "openai/stream_text.sse",
            Vendor::Compatible => "compatible/llamacpp_stream_text.sse",
            Vendor::Anthropic => "anthropic/stream_text.sse",
            Vendor::Gemini => "gemini/stream_text.sse",
        }
    }

    /// A client of the server at `url` (`http://127.0.0.1:PORT`).
    pub fn client(self, url: &str, s: &Setup) -> Arc<dyn Provider> {
        match self {
            Vendor::OpenAi => {
                let p = OpenAi::new(s.key.as_str())
                    .base_url(&format!("{url}/openai/v1"))
                    .unwrap();
                Arc::new(configure!(p, s))
            }
            Vendor::Compatible => {
                let p = OpenAiCompatible::new(&format!("{url}/compatible/v1"))
                    .unwrap()
                    .api_key(s.key.as_str());
                Arc::new(configure!(p, s))
            }
            Vendor::Anthropic => {
                let p = Anthropic::new(s.key.as_str())
                    .base_url(&format!("{url}/anthropic"))
                    .unwrap();
                Arc::new(configure!(p, s))
            }
            Vendor::Gemini => {
                let p = Gemini::new(s.key.as_str())
                    .base_url(&format!("{url}/gemini/v1beta"))
                    .unwrap();
                Arc::new(configure!(p, s))
            }
        }
    }
}
