//! Typed flows: the attribute macros (`#[data]`, `#[context]`, `#[flow]`, `#[step]`,
//! `#[tool]`) and the types their generated code builds on.
//!
//! Files with typed flows import [`prelude`] (`use agent_core::typed::prelude::*;`): it is
//! the crate prelude with the typed [`Directive`](directive::Directive),
//! [`PreDirective`](directive::PreDirective) and [`ToolOutput`](tool::ToolOutput), whose
//! misuse (two position fields, `reply` with `abort`, pre-LLM fields after the model
//! call, a patch or target over another data type) fails to compile wherever the value
//! comes from. The untyped runtime directive enters a typed flow only through
//! [`TypedDirective::try_from_untyped`](directive::TypedDirective::try_from_untyped).
//! The full macro reference is in [`reference`](mod@reference).

pub mod data;
pub mod directive;
pub mod flow;
pub mod prelude;
#[doc(hidden)]
pub mod rt;
pub mod tool;
mod unrequired;

pub use unrequired::{StepRequires, Unrequired};

#[doc = include_str!("reference.md")]
pub mod reference {}
