//! Attribute macros for `agent-core`.
//!
//! The macros (`#[flow]`, `#[step]`, `#[tool]`) expand into the runtime builders of
//! `agent-core`; they are specified in the project's design document and land in a
//! later milestone. This crate is part of the workspace now so that `agent-core` can pin
//! it with `=x.y.z` from the start.
