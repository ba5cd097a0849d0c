//! # agent-core
//!
//! The runtime of a framework for conversational agents that stay under the control of
//! code: flows of typed steps, directives, signals, tools, providers and durable
//! sessions. The model understands; the code decides where the conversation goes.
//!
//! - [`directive`]: the one language for control flow, and the one merge function.
//! - [`flow`], [`step`], [`branch`]: the conversation graph, validated at `build()`.
//! - [`pipeline`](crate::agent::Agent::respond): one turn in the spec's fixed order.
//! - [`signal`]: cross-cutting detectors before and after the model.
//! - [`session`], [`store`]: state between turns, compare-and-swap saves.
//! - [`provider`]: the model boundary; [`testing`]: the scripted provider.
//!
//! ```
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Booking { city: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! provider.respond(Answer::message("Which city?"));
//! let agent: Agent<Booking, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! let r = agent.respond("s1", "I need a hotel").await.unwrap();
//! assert_eq!(r.step.as_deref(), Some("ask_city"));
//! assert_eq!(r.model_calls, 1);
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```

#![deny(missing_docs)]

pub mod agent;
pub mod approval;
pub mod backoff;
pub mod branch;
mod claim;
pub mod clock;
pub mod codeflow;
pub mod command;
pub mod config;
pub mod data;
pub mod directive;
pub mod error;
#[cfg(feature = "eval")]
pub mod eval;
pub mod flow;
mod fxhash;
pub mod graph;
mod guard;
pub mod hook;
pub mod instruction;
pub mod journal;
#[cfg(feature = "mcp")]
pub mod mcp;
mod pipeline;
pub mod policy;
pub mod prompt;
pub mod provider;
mod reply;
pub mod response;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod signal;
pub mod step;
pub mod store;
pub mod telemetry;
pub mod template;
pub mod testing;
pub mod tool;
pub mod typed;

pub use agent::{
    Agent, AgentBuilder, AgentConfig, ConflictPolicy, DEFAULT_REPLY_STYLE, FlowVersionChange,
    TurnOptions,
};
pub use backoff::ConflictBackoff;

/// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
/// The guide's chapters (`docs/src`) are compiled and run as doctests too.
#[cfg(doctest)]
mod guide;
pub use agent_macros;

/// Everything a typical agent file needs.
pub mod prelude {
    pub use crate::agent::{Agent, AgentBuilder, AgentConfig, ConflictPolicy, TurnOptions};
    pub use crate::approval::{Decision, PendingCall};
    pub use crate::branch::{Branch, Target};
    pub use crate::codeflow::{
        CodeFlow, Fallback, FlowCx, FlowRef, FlowResult, Outcome, ResponseMeta, Router, Source,
        ToolFailure,
    };
    pub use crate::data::{AgentContext, AgentData, Date, DateTime, Patch, patch_of};
    pub use crate::directive::{Directive, PreDirective};
    pub use crate::error::{AgentError, ConfigErrors, FlowConfigurationError};
    pub use crate::flow::Flow;
    pub use crate::hook::Cx;
    pub use crate::instruction::Instruction;
    pub use crate::journal::{Resolution, UnknownOutcome};
    pub use crate::provider::Provider;
    pub use crate::response::{AgentResponse, Event, StoppedReason};
    pub use crate::signal::{Phase, Signal, SignalDirective};
    pub use crate::step::Step;
    pub use crate::store::{MemoryStore, SessionStore};
    pub use crate::tool::{Effect, FnTool, Tool, ToolCx, ToolError, ToolOutput};
    pub use crate::typed::data::{ContextType, DataType};
    pub use crate::typed::flow::{FlowDef, StepId};
    pub use agent_macros::{context, data, flow, step, tool};
}

/// Re-exports for macro-generated code, so user crates need no direct dependency on
/// these crates. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use async_trait;
    pub use schemars;
    pub use serde;
    pub use serde_json;

    pub use crate::codeflow::{CodeFlow, FlowRef, IntoCodeFlow};
    pub use crate::data::date::CalendarValue;
    pub use crate::typed::rt::*;
    pub use agent_macros::__data_callback as data_callback;
}
