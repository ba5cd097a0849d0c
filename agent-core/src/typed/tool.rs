//! Typed tool results: [`ToolOutput`] accepts typed patches and post-LLM directives only.

use serde_json::Value;

use crate::tool as rt;

use super::data::{IntoContextPatch, IntoDataPatch};
use super::directive::IntoDirective;

/// What a `#[tool]` returns: text for the model, and optional data/context writes and a
/// post-LLM directive.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct ToolOutput {
    inner: rt::ToolOutput,
}

impl ToolOutput {
    /// A text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            inner: rt::ToolOutput::text(content),
        }
    }
    /// A JSON result.
    pub fn json(value: &Value) -> Self {
        Self {
            inner: rt::ToolOutput::json(value),
        }
    }
    /// Write session data (`Booking::patch().booking_id(id)`).
    pub fn data(mut self, patch: impl IntoDataPatch) -> Self {
        self.inner = self.inner.data(patch.into_data_patch());
        self
    }
    /// Write session context (`Concierge::patch().tier("gold")`).
    pub fn context(mut self, patch: impl IntoContextPatch) -> Self {
        let d = crate::directive::Directive::new().context(patch.into_context_patch());
        self.inner = self.inner.directive(d);
        self
    }
    /// Add a post-LLM directive (merged with any already set).
    pub fn directive(mut self, d: impl IntoDirective) -> Self {
        self.inner = self.inner.directive(d.into_directive());
        self
    }
    /// The runtime output.
    pub fn into_runtime(self) -> rt::ToolOutput {
        self.inner
    }
}

impl From<ToolOutput> for rt::ToolOutput {
    fn from(o: ToolOutput) -> Self {
        o.inner
    }
}
