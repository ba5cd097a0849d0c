//! Model providers for `agent-core`.
//!
//! Every provider implements [`agent_core::provider::Provider`]. The vendor clients
//! (OpenAI, Anthropic, Gemini, OpenAI-compatible endpoints) and the resilience layer
//! are a later milestone; until then `agent_core::testing::ScriptedProvider` is the
//! provider to use.

pub use agent_core::provider::Provider;
