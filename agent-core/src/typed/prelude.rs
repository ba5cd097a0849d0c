//! Everything a file with typed flows needs: [`crate::prelude`] with the typed
//! [`Directive`], [`PreDirective`] and [`ToolOutput`] in place of the runtime ones, and
//! the attribute macros.

pub use crate::prelude::*;

pub use super::data::{ContextType, DataPatch, DataType, IntoContextPatch, IntoDataPatch};
pub use super::directive::{
    Directive, IntoDirective, IntoPreDirective, PreDirective, TypedDirective, UntypedDirectiveError,
};
pub use super::flow::{FlowDef, OfData, StepId};
pub use super::tool::ToolOutput;
pub use super::unrequired::Unrequired;
pub use agent_macros::{context, data, flow, step, tool};
