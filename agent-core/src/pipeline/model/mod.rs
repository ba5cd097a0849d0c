//! Model calls: the structured respond call (reply + extraction + step claim + flow
//! switch, with the tool loop), extraction-only, classifier, summariser. Malformed
//! structured answers get one repair attempt, then a typed error.
//!
//! One file per part: `call.rs` (one provider call, streamed), `prompt.rs` (the
//! respond request: static sections, then the per-turn state), `respond.rs` (the
//! respond call and reading its answer), `tools.rs` (tool rounds), `live.rs` (whether
//! a streaming reply is final), `classify.rs` and `extract.rs` (the calls that write
//! no reply), `agree.rs` (the check that an answer to a confirmation agrees before a
//! tool with effects runs), with the answer formats in `answer.rs` and `schema.rs` and prompt text
//! helpers in `push.rs`. This file holds only what the rest of the turn exchanges
//! with them.

mod agree;
pub(super) mod answer;
mod call;
pub(super) mod classify;
mod extract;
mod live;
mod prompt;
mod push;
mod respond;
mod schema;
mod tools;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::flow::Flow;
use crate::provider::{ModelResponse, ToolCall};

/// What a rendering call is for.
#[derive(Clone)]
pub(crate) enum Target<D, C> {
    /// Speak for a step.
    Step(Arc<Flow<D, C>>, usize),
    /// Close a finished flow (the step index is the one the user answered).
    Closing(Arc<Flow<D, C>>, usize),
    /// No active flow.
    Classic,
}

/// The parsed answer of a rendering call.
#[derive(Debug, Default)]
pub(crate) struct CallOutcome {
    pub(crate) message: String,
    pub(crate) deltas: Vec<String>,
    pub(crate) data: Option<Map<String, Value>>,
    pub(crate) claimed: Option<String>,
    pub(crate) switch_flow: Option<String>,
    pub(crate) verdicts: Vec<(String, bool)>,
    /// A tool the model asked for in its answer (`tools_in_answer`).
    pub(crate) tool_call: Option<ToolCall>,
    /// The answer judged that the user did not agree (`"agreed": false`).
    pub(crate) declined: bool,
    /// A speculative answer that asked for an action: the raw answer, replayed in the
    /// rendering that runs the action if the walk accepts it (no second model call).
    pub(crate) answer: Option<ModelResponse>,
}
