//! Typed tool results: [`ToolOutput`] accepts typed patches and post-LLM directives only.

use serde_json::Value;

use crate::error::DirectiveError;
use crate::tool as rt;

use super::data::{ContextArg, DataArg};
use super::directive::ToolDirectiveArg;

/// What a `#[tool]` returns: text for the model, and optional data/context writes and a
/// post-LLM directive.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct ToolOutput {
    inner: rt::ToolOutput,
    /// A second position field given by a later `.directive(..)` (the runtime output
    /// keeps one), reported when the `#[tool]` converts its result.
    conflict: Option<DirectiveError>,
}

impl ToolOutput {
    /// A text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            inner: rt::ToolOutput::text(content),
            conflict: None,
        }
    }
    /// A JSON result.
    pub fn json(value: &Value) -> Self {
        Self {
            inner: rt::ToolOutput::json(value),
            conflict: None,
        }
    }
    // The argument bounds sit on the receiver and on the line of the `fn`
    // (`rustfmt::skip`), so that rustc reports a wrong argument in one short error.

    /// Write session data (`Booking::patch().booking_id(id)`).
    #[rustfmt::skip]
    pub fn data<T>(mut self, patch: T) -> Self where Self: DataArg<T> {
        self.inner = self.inner.data(<Self as DataArg<T>>::data_arg(patch));
        self
    }
    /// Write session context (`Concierge::patch().tier("gold")`).
    #[rustfmt::skip]
    pub fn context<T>(mut self, patch: T) -> Self where Self: ContextArg<T> {
        let d = crate::directive::Directive::new().context(<Self as ContextArg<T>>::context_arg(patch));
        self.inner = self.inner.directive(d);
        self
    }
    /// Add a post-LLM directive (merged with any already set). A directive holds one
    /// position: a second one (`.directive(complete()).directive(go_to::<F>())`) makes
    /// the `#[tool]` fail with [`rt::ToolError::InvalidDirective`].
    #[rustfmt::skip]
    pub fn directive<T>(mut self, d: T) -> Self where Self: ToolDirectiveArg<T> {
        let d = <Self as ToolDirectiveArg<T>>::tool_directive(d);
        if let (Some(a), Some(b)) = (&self.inner.directive.position, &d.position)
            && self.conflict.is_none()
        {
            self.conflict = Some(DirectiveError::MultiplePositions {
                fields: vec![a.field_name().to_owned(), b.field_name().to_owned()],
            });
        }
        self.inner = self.inner.directive(d);
        self
    }
    /// The runtime output, or why its directive breaks the rules (two positions, `reply`
    /// with `abort`).
    pub fn try_into_runtime(self) -> Result<rt::ToolOutput, DirectiveError> {
        if let Some(e) = self.conflict {
            return Err(e);
        }
        self.inner.directive.validate()?;
        Ok(self.inner)
    }
    /// The runtime output (unchecked: see [`Self::try_into_runtime`]).
    pub fn into_runtime(self) -> rt::ToolOutput {
        self.inner
    }
}

impl From<ToolOutput> for rt::ToolOutput {
    fn from(o: ToolOutput) -> Self {
        o.inner
    }
}
