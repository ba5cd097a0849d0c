//! What a turn returns: the response, why it stopped, and the streamed events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::directive::Directive;
pub use crate::directive::DirectiveSource;
use crate::error::AgentError;
use crate::provider::Usage;

/// Why the turn ended. Produced only by typed outcomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StoppedReason {
    /// A step asked something and waits for the user.
    NeedsInput,
    /// A flow completed this turn.
    FlowCompleted {
        /// The flow.
        flow: String,
    },
    /// The user cancelled a flow this turn ([`crate::command::Command::CancelFlow`]):
    /// it was left without completing.
    FlowCancelled {
        /// The flow.
        flow: String,
    },
    /// The session is handed over to a person (the user asked for one,
    /// [`crate::command::Command::AskForHuman`]): this turn and every later one until
    /// the host ends the handoff ([`crate::Agent::end_human_handoff`]) answer with the
    /// agent's handoff reply and make no model call.
    HumanHandoff,
    /// A verbatim reply (directive `reply`, reply step, signal `reply_with`) was delivered.
    Reply,
    /// A pre-LLM `halt` without a reply stopped the turn.
    Halt,
    /// The conversation was aborted.
    Aborted {
        /// Why.
        reason: Option<String>,
    },
    /// The auto-step chain hit `max_auto_steps_per_turn`.
    AutoStepCap {
        /// The step where the chain stopped.
        step: String,
    },
    /// Flow hops hit `max_transitions_per_turn`.
    TransitionCap {
        /// The flow that was not entered.
        blocked: String,
    },
    /// The agent replied with no active flow.
    Responded,
    /// A code flow's step failed (an error or a panic in its fn, a broken replay
    /// rule, a loop past its limits); the flow stays at its last good position, or is
    /// cleared after `max_flow_failures` failed turns in a row.
    FlowFailed {
        /// The flow.
        flow: String,
        /// What failed.
        message: String,
        /// Whether the flow was cleared.
        cleared: bool,
        /// The replay rule the flow broke, when that is what failed (a bug in the
        /// flow's code, e.g. `NonDeterministic`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<crate::error::CodeFlowError>,
    },
    /// A tool call waits for a person's decision ([`crate::approval`]); the calls are
    /// in [`AgentResponse::awaiting_approval`].
    AwaitingApproval {
        /// The ids of the calls waiting (what `Agent::resolve_approval` takes).
        calls: Vec<String>,
    },
}

/// A step, qualified by its flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRef {
    /// The id of the flow the step belongs to.
    pub flow: String,
    /// The step's id within that flow.
    pub step: String,
}

/// One emission on a directive bus, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainEntry {
    /// Who emitted the directive (a hook, a tool, a branch, a signal, a pending
    /// directive, …).
    pub source: DirectiveSource,
    /// What it said (the base directive; pre-LLM extras are summarised below).
    pub directive: Directive,
    /// Sentences it appended to the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append_prompt: Vec<String>,
    /// The ids of the tools it added to this turn's model call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject_tools: Vec<String>,
    /// Whether it stopped the turn before the model call.
    #[serde(default)]
    pub halt: bool,
}

/// One tool call of the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The name of the tool the model called.
    pub name: String,
    /// Arguments the model sent.
    pub arguments: Value,
    /// The result the model saw.
    pub output: String,
    /// Whether the call succeeded.
    pub ok: bool,
}

/// A value the model wrote that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedValue {
    /// The name of the data field the value was meant for.
    pub field: String,
    /// The value the model wrote.
    pub value: Value,
    /// Why it was not stored.
    pub reason: String,
}

/// A value the model read that the user's words do not show (no literal mention,
/// nothing the field's resolvers read as it): not stored, shown back to the user
/// and stored when they agree ([`crate::command`] explains when a value is
/// tentative). Kept in the session until the user's next message settles it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TentativeValue {
    /// The name of the data field the value is for.
    pub field: String,
    /// The value the model read.
    pub value: Value,
    /// The user's words the model cited for it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
    /// The value stored in the field when it was read (the user is asked whether it
    /// replaces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Value>,
    /// The flow that collects the field.
    pub flow: String,
}

/// A flow hop inside the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// Flow left (None when entering from no flow).
    pub from: Option<String>,
    /// The id of the flow entered.
    pub to: String,
}

/// What one turn did: the reply to show, why the turn stopped, where the conversation is
/// now (flow and step), the data collected so far, and the record of what happened (steps
/// run, tool calls, directives, dropped values, model calls and tokens). Returned by
/// `Agent::respond`; tests assert on it rather than on the reply's wording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentResponse<D> {
    /// The id of the session the turn ran on.
    pub session_id: String,
    /// The reply to show the user, whoever wrote it (code, a step's template or the
    /// model).
    pub message: String,
    /// Why the turn ended (waiting for the user, a flow completed, a verbatim reply, halted,
    /// aborted, a cap reached, …): branch on this, not on the reply's text.
    pub stopped: StoppedReason,
    /// Steps entered this turn, in order (including satisfied and auto steps); one
    /// `StepEntered` event each. The step that was waiting for this message is not
    /// listed again: it was entered on the turn that asked.
    pub executed_steps: Vec<StepRef>,
    /// Every directive emitted this turn with its source.
    pub directive_chain: Vec<ChainEntry>,
    /// What the model read in the user's message that took effect this turn
    /// ([`crate::command`]), in order: `set_value` for each value stored,
    /// `correct_value` for one that replaced another stored value, `start_flow` for a
    /// flow the conversation moved to, `agree` when an action ran on the user's yes,
    /// `decline` when a confirmation stayed on the user's no. Values read but not
    /// stored are in `ungrounded`, `rejected_data` and `dropped_fields`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<crate::command::Command>,
    /// The session's data after the turn, as validated and stored.
    pub data: D,
    /// The id of the flow the conversation is in after the turn, `None` outside any flow.
    pub flow: Option<String>,
    /// The id of the step that waits for the user's next message, `None` outside any flow.
    pub step: Option<String>,
    /// The names of the signals that fired this turn, in the order they ran.
    pub signals: Vec<String>,
    /// Every tool call the turn made, in order, with its arguments and result.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Tool calls of this session that wait for a person's decision
    /// ([`crate::approval`]), also when this turn was answered while they wait.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub awaiting_approval: Vec<crate::approval::PendingCall>,
    /// The flow hops inside the turn, in order (empty when the turn stayed in one flow).
    pub transitions: Vec<Transition>,
    /// How many model calls the turn made (the measure of its cost and latency).
    pub model_calls: u32,
    /// The profile of the model that answered the turn's calls ([`crate::policy`]).
    #[serde(default)]
    pub profile: crate::policy::ModelProfile,
    /// Tokens read and generated by the turn's model calls, summed.
    pub usage: Usage,
    /// Fields the model wrote that the active flow does not collect (not written).
    pub dropped_fields: Vec<String>,
    /// Model data writes rejected by the data type or a field's constraints (not
    /// written), with the reason.
    pub rejected_data: Vec<String>,
    /// Values the model wrote that nothing the user said supports (not written):
    /// tentative values the user did not confirm.
    #[serde(default)]
    pub ungrounded: Vec<DroppedValue>,
    /// Values waiting for the user's yes after this turn: read by the model, not
    /// supported by the user's words, shown back in the reply, not in `data`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tentative: Vec<TentativeValue>,
    /// Fields stored from the model without grounding (marked `inferred`).
    #[serde(default)]
    pub inferred: Vec<String>,
    /// Sentences removed from the model's reply because they claimed what the state
    /// does not hold: an outcome stated in a turn its tool did not succeed
    /// ([`crate::tool::Tool::outcome_words`]), a value a field does not hold.
    #[serde(default)]
    pub withheld_claims: Vec<String>,
    /// Session version after the save.
    pub version: u64,
    /// True when this is the stored answer to an inbound event already processed.
    #[serde(default)]
    pub duplicate: bool,
    /// Which path produced the reply (classic or a code flow), as the response hook
    /// sees it.
    #[serde(default)]
    pub meta: ResponseMeta,
    /// Callbacks that failed after the turn was saved (a panicking `on_response`
    /// hook), as `HookPanicked` messages: the turn stands, and each failure is also
    /// logged at error level.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_failures: Vec<String>,
}

/// A streamed event. Text deltas concatenate to the final message; the stream ends with
/// exactly one `Done` or `Error`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<D> {
    /// The conversation moved to another flow.
    Transition(Transition),
    /// A step was entered.
    StepEntered(StepRef),
    /// A tool is being called.
    ToolCall {
        /// Tool name.
        name: String,
        /// Arguments.
        arguments: Value,
    },
    /// A tool call finished, with its result and whether it succeeded.
    ToolResult(ToolCallRecord),
    /// A tool call waits for a person's decision; the turn ends after it.
    ApprovalRequested(crate::approval::PendingCall),
    /// More of the assistant message.
    TextDelta(String),
    /// A value the model wrote was not stored (unsupported by what the user said, or
    /// refused by the field's constraints).
    DataDropped(DroppedValue),
    /// The turn finished: the full response, always the last event of a successful turn.
    Done(Box<AgentResponse<D>>),
    /// The turn failed (the session is unchanged).
    Error(AgentError),
}

/// Which path produced a turn's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The classic path: the agent reply or a declarative flow.
    #[default]
    Classic,
    /// A code flow.
    Flow,
}

impl Source {
    /// `classic` or `flow`, as traces and logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Classic => "classic",
            Source::Flow => "flow",
        }
    }
}

/// What the response hook is told about a turn.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResponseMeta {
    /// Which path produced the reply: the declarative engine or a code flow.
    pub source: Source,
    /// The flow that produced the reply (code or declarative), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The flow that handed off to it in this turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_from: Option<String>,
    /// The reason a code flow gave to `ctx.end(..)`, on the turn it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}
