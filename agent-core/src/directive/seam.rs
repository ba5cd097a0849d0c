//! The seam through which a directive carries tools without knowing what a tool is.
//!
//! A [`PreDirective`](super::PreDirective) may inject tools for one turn, but tools are
//! defined a layer above directives (`crate::tool`), and their results carry directives.
//! Rather than import that layer, the directive names the tool type through
//! [`ToolSeam`], which the tool layer implements for [`Tools`]: the field's type is
//! still `Arc<dyn Tool<D, C>>` for every user, and the dependency points one way.

use std::sync::Arc;

/// What the directive layer needs of a carried tool: its type, and its name to merge by.
/// Implemented once, by the tool layer, for [`Tools`].
pub trait ToolSeam<D, C> {
    /// The tool object a directive carries (`dyn Tool<D, C>`).
    type Tool: ?Sized + Send + Sync;
    /// The name injected tools are deduplicated by.
    fn name(tool: &Self::Tool) -> &str;
}

/// The marker the tool layer implements [`ToolSeam`] for.
#[derive(Debug, Clone, Copy)]
pub struct Tools;

/// A tool carried by a pre-directive: `Arc<dyn Tool<D, C>>`.
pub type CarriedTool<D, C> = Arc<<Tools as ToolSeam<D, C>>::Tool>;

/// The name of a carried tool.
pub(crate) fn carried_name<D, C>(tool: &CarriedTool<D, C>) -> &str {
    <Tools as ToolSeam<D, C>>::name(&**tool)
}
