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
pub(super) mod digress;
mod extract;
mod live;
mod prompt;
mod push;
mod respond;
mod schema;
mod tools;
mod understand;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::command::Command;
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
    /// What the answer read in the user's message ([`crate::command`]): values, a
    /// flow to start (one the active flow may hand over to), agree or decline.
    pub(crate) commands: Vec<Command>,
    /// The answer had a `data` object (every value in it may be null): it read the
    /// message for values.
    pub(crate) read_values: bool,
    pub(crate) claimed: Option<String>,
    pub(crate) verdicts: Vec<(String, bool)>,
    /// A tool the model asked for in its answer (`tools_in_answer`).
    pub(crate) tool_call: Option<ToolCall>,
    /// The tools were held from this answer (its consent is not to be relied on):
    /// treated as not agreed, whatever it says.
    pub(crate) held: bool,
    /// A speculative answer that asked for an action: the raw answer, replayed in the
    /// rendering that runs the action if the walk accepts it (no second model call).
    pub(crate) answer: Option<ModelResponse>,
}

impl CallOutcome {
    /// Take out the value commands, as the `data` object screening reads (`None`
    /// when the answer did not read the message for values; empty when it read none).
    pub(crate) fn take_values(&mut self) -> Option<Map<String, Value>> {
        let mut data: Option<Map<String, Value>> = self.read_values.then(Map::new);
        self.commands.retain(|c| !answer::put_value(&mut data, c));
        data
    }

    /// Take out the flow the answer starts.
    pub(crate) fn take_start(&mut self) -> Option<String> {
        let i = self
            .commands
            .iter()
            .position(|c| matches!(c, Command::StartFlow { .. }))?;
        match self.commands.remove(i) {
            Command::StartFlow { flow } => Some(flow),
            _ => None,
        }
    }

    /// Take out a cancel the answer read (`true` when there was one).
    pub(crate) fn take_cancel(&mut self) -> bool {
        self.take(&Command::CancelFlow)
    }

    /// Take out the command `c` (one without fields): whether the answer had it.
    pub(crate) fn take(&mut self, c: &Command) -> bool {
        let before = self.commands.len();
        self.commands.retain(|x| x != c);
        self.commands.len() != before
    }

    /// Whether the answer did not agree to the question just asked: it declined, or
    /// its tools were held.
    pub(crate) fn declined(&self) -> bool {
        self.held || self.commands.contains(&Command::Decline)
    }
}
