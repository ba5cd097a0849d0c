//! Code flows: conversations written as async fns (`ask`, `say`, `tool`, `handoff`,
//! `end`, `end_session`) next to declarative flows in one agent.
//!
//! A Rust future cannot be stored, so a paused flow resumes by **replay**: each turn
//! runs the fn from the start against its [`journal`](journal::Entry) of recorded
//! results; recorded effects return at once, and the first effect past the journal
//! runs for real (a question pauses the flow again). The journal keeps outputs only,
//! so it grows with the flow's steps, never with the history. A replay that calls
//! something else at a recorded position is reported as
//! [`CodeFlowError::NonDeterministic`](crate::error::CodeFlowError), never mis-fed:
//! flows get time, randomness and ids from the context ([`FlowCx::now_ms`],
//! [`FlowCx::random_u64`], [`FlowCx::new_id`]) so that replays agree, and
//! [`FlowCx::data`] shows each part of the fn the data it saw when it first ran.
//!
//! No failure can stop a session for good: an error or panic in the fn, a broken
//! replay rule, a loop past `max_flow_effects_per_turn` or a run still going near
//! `turn_timeout` is a failed step (the user gets `flow_error_reply`), and after
//! `max_flow_failures` failed turns in a row the flow is cleared and the agent answers.
//!
//! ```
//! use agent_core::prelude::*;
//! use agent_core::codeflow::{CodeFlow, FlowCx, FlowResult};
//!
//! async fn tutor(ctx: FlowCx<(), ()>) -> FlowResult {
//!     let name: String = ctx.ask("name", "What's your name?").await;
//!     ctx.say(format!("Nice to meet you, {name}.")).await;
//!     ctx.handoff_to("reminder")
//! }
//! let flow: CodeFlow<(), ()> = CodeFlow::new("tutor", tutor).when("the user wants to practise English");
//! assert_eq!(flow.id(), "tutor");
//! ```

mod cx;
pub(crate) mod data_view;
/// The journal a paused code flow keeps; it is part of the stored session, so it is
/// defined there.
pub use crate::session::code as journal;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use cx::FlowCx;
pub(crate) use cx::{CxInner, Replay, Request};
pub use journal::{CodeState, DataDelta, Entry};

/// How a code flow ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The flow is done.
    End {
        /// Why (the response's `meta.end_reason`, also given to the response hook).
        reason: Option<String>,
    },
    /// The flow is done and the conversation is over: the session is erased after
    /// this turn's reply (as `Directive::abort_and_clear`).
    EndSession {
        /// Why (the response's `meta.end_reason` and its `Aborted` reason).
        reason: Option<String>,
    },
    /// Continue in another flow (code or declarative) in the same turn.
    Handoff {
        /// The target flow's id.
        to: String,
        /// A value for the next code flow ([`FlowCx::input`]).
        input: Option<Value>,
    },
}

/// What a code flow fn returns: `ctx.end(..)`, `ctx.end_session(..)`,
/// `ctx.handoff::<F>()`, or an error (propagated with `?`), which counts as a failed
/// step: the turn's records are dropped, the flow stays at its last good position and
/// replies `AgentConfig::flow_error_reply`, and repeated failures clear it.
pub type FlowResult = Result<Outcome, FlowError>;

/// A code flow's own failure. Any error converts into it with `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowError(String);

impl FlowError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
    /// The error's text, as the flow gave it (what the response and the logs show).
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for FlowError {
    fn from(e: E) -> Self {
        Self(e.to_string())
    }
}

/// A tool call from a code flow that failed (unknown tool, invalid arguments, an
/// error or a panic in the tool). Recoverable: the flow decides what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` failed: {message}")]
pub struct ToolFailure {
    /// The name of the tool the flow called.
    pub tool: String,
    /// Why the call failed, in words (unknown tool, invalid arguments, the tool's error).
    pub message: String,
}

/// A flow named by its type: `#[flow]` types of declarative flows and code flows
/// implement it, so `ctx.handoff::<ReminderFlow>()`, a branch `=> TutorFlow` or
/// `Directive::go_to::<TutorFlow>()` cannot name a flow that does not exist.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a flow",
    label = "not a `#[flow]` type",
    note = "a flow is named by the type `#[flow]` generates: `mod feedback` → `FeedbackFlow`, `async fn tutor` → `TutorFlow`"
)]
pub trait FlowRef: 'static {
    /// The flow id.
    const ID: &'static str;
}

type RunFn<D, C> =
    Arc<dyn Fn(FlowCx<D, C>) -> Pin<Box<dyn Future<Output = FlowResult> + Send>> + Send + Sync>;

/// A code flow: an id, routing descriptions, and the async fn.
pub struct CodeFlow<D, C> {
    pub(crate) id: Arc<str>,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) when: Option<String>,
    pub(crate) run: RunFn<D, C>,
}

impl<D, C> Clone for CodeFlow<D, C> {
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            when: self.when.clone(),
            run: self.run.clone(),
        }
    }
}

impl<D, C> fmt::Debug for CodeFlow<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeFlow")
            .field("id", &self.id)
            .field("when", &self.when)
            .finish_non_exhaustive()
    }
}

impl<D: Send + Sync + 'static, C: Send + Sync + 'static> CodeFlow<D, C> {
    /// A code flow running `f`. The fn may run many times (once per turn, from the
    /// start): everything that varies must come from `ctx`.
    pub fn new<F, Fut>(id: impl Into<String>, f: F) -> Self
    where
        F: Fn(FlowCx<D, C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = FlowResult> + Send + 'static,
    {
        let id: String = id.into();
        Self {
            title: id.clone(),
            id: Arc::from(id),
            description: String::new(),
            when: None,
            run: Arc::new(move |cx| Box::pin(f(cx))),
        }
    }
}

impl<D, C> CodeFlow<D, C> {
    /// The flow's id: what handoffs, `go_to` and the session name.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Title shown to the router.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.title = t.into();
        self
    }
    /// Description shown to the router.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }
    /// When the router should pick this flow ("the user wants to practise English").
    pub fn when(mut self, w: impl Into<String>) -> Self {
        self.when = Some(w.into());
        self
    }
    pub(crate) fn route_description(&self) -> String {
        crate::prompt::route_description(&self.title, self.when.as_deref(), &self.description)
    }
}

/// Anything the agent builder registers as a code flow: a [`CodeFlow`], or the type
/// `#[flow]` generates for an async fn.
pub trait IntoCodeFlow<D, C> {
    /// Turn this into the [`CodeFlow`] the agent registers.
    fn into_code_flow(self) -> CodeFlow<D, C>;
}

impl<D, C> IntoCodeFlow<D, C> for CodeFlow<D, C> {
    fn into_code_flow(self) -> CodeFlow<D, C> {
        self
    }
}

/// How a flow is picked when none is active (the RFC's router modes).
#[derive(Debug, Clone, PartialEq)]
pub enum Router {
    /// A classifier call judges the flows' `when` (batched with any other condition
    /// due). With `min_confidence`, the model also reports its confidence and a pick
    /// below the threshold falls back.
    Detector {
        /// Threshold in 0..=1; `None` accepts any pick.
        min_confidence: Option<f32>,
        /// Extra guidance for the classifier.
        prompt: Option<String>,
        /// Where low-confidence, unknown or missing picks go, and answers that
        /// cannot be read after one repair.
        fallback: Fallback,
    },
    /// No classifier call: the classic reply call carries an `intent` field (the flow
    /// ids, or null); a pick replaces the classic reply with the flow's.
    SchemaIntent {
        /// Where missing or unknown intents go.
        fallback: Fallback,
    },
}

impl Default for Router {
    fn default() -> Self {
        Router::Detector {
            min_confidence: None,
            prompt: None,
            fallback: Fallback::Classic,
        }
    }
}

impl Router {
    pub(crate) fn fallback(&self) -> &Fallback {
        match self {
            Router::Detector { fallback, .. } | Router::SchemaIntent { fallback } => fallback,
        }
    }
}

/// Where routing goes when it picks nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fallback {
    /// The classic agent reply (no flow).
    #[default]
    Classic,
    /// Go to the flow with this id.
    Flow(String),
}

/// Runs once per completed turn, on both paths (not for duplicates answered from
/// the store).
pub type ResponseHook<D> =
    Arc<dyn Fn(&crate::response::AgentResponse<D>, &ResponseMeta) + Send + Sync>;

// What a turn reports; defined with the response, named here where code flows are.
pub use crate::response::{ResponseMeta, Source};
