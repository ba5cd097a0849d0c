//! Who emitted a directive: every entry of a turn's directive chain names its source.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who emitted a directive. New sources are added as the engine grows, so matches
/// need a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DirectiveSource {
    /// The session's pending directive.
    Pending,
    /// A signal that fired before the model call (its id).
    PreSignal(String),
    /// A signal that fired after the model call (its id).
    PostSignal(String),
    /// The agent's `on_enter` hook.
    AgentOnEnter,
    /// A flow's `on_enter` hook.
    FlowOnEnter(String),
    /// A step's `on_enter` hook.
    StepOnEnter(String),
    /// A step's `prepare` hook.
    Prepare(String),
    /// A `dispatch` from inside a hook.
    HookDispatch(String),
    /// A tool's result (the tool's name).
    Tool(String),
    /// A `dispatch` from inside a tool.
    ToolDispatch(String),
    /// A step's `finalize` hook.
    Finalize(String),
    /// A flow's `on_complete` (hook or directive).
    OnComplete(String),
    /// A matched branch entry (`step` or `step:label`).
    Branch(String),
    /// The router, choosing a flow for the user's message (the flow's id).
    Routing(String),
    /// The model switched flows through the respond call. No longer emitted: a
    /// switch the model reads is a [`crate::command::Command::StartFlow`], listed with
    /// the source [`DirectiveSource::Command`]; kept so stored responses still load.
    #[deprecated(
        since = "0.1.0",
        note = "a model's flow switch is now `DirectiveSource::Command(\"start_flow <id>\")`"
    )]
    ModelSwitch(String),
    /// A code flow handed off.
    Handoff(String),
    /// A command the model read in the user's message ([`crate::command::Command`]),
    /// by its display form: `set_value city`, `start_flow billing`.
    Command(String),
    /// A slash command the user typed (`/flow <id>`, `/flow stop`;
    /// [`crate::agent::AgentConfig::flow_commands`]).
    Slash(String),
    /// The summary of a call waiting for the user's yes (the tool's name;
    /// [`crate::tool::Tool::needs_agreement`]).
    Summary(String),
}

impl fmt::Display for DirectiveSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectiveSource::Pending => write!(f, "pending directive"),
            DirectiveSource::PreSignal(s) => write!(f, "pre-phase signal `{s}`"),
            DirectiveSource::PostSignal(s) => write!(f, "post-phase signal `{s}`"),
            DirectiveSource::AgentOnEnter => write!(f, "agent on_enter"),
            DirectiveSource::FlowOnEnter(s) => write!(f, "flow `{s}` on_enter"),
            DirectiveSource::StepOnEnter(s) => write!(f, "step `{s}` on_enter"),
            DirectiveSource::Prepare(s) => write!(f, "step `{s}` prepare"),
            DirectiveSource::HookDispatch(s) => write!(f, "dispatch from {s}"),
            DirectiveSource::Tool(s) => write!(f, "tool `{s}`"),
            DirectiveSource::ToolDispatch(s) => write!(f, "dispatch from tool `{s}`"),
            DirectiveSource::Finalize(s) => write!(f, "step `{s}` finalize"),
            DirectiveSource::OnComplete(s) => write!(f, "flow `{s}` on_complete"),
            DirectiveSource::Branch(s) => write!(f, "branch of `{s}`"),
            DirectiveSource::Routing(s) => write!(f, "routing to `{s}`"),
            #[allow(deprecated)]
            DirectiveSource::ModelSwitch(s) => write!(f, "model switch to `{s}`"),
            DirectiveSource::Handoff(s) => write!(f, "handoff from code flow `{s}`"),
            DirectiveSource::Command(s) => write!(f, "command `{s}`"),
            DirectiveSource::Slash(s) => write!(f, "slash command `{s}`"),
            DirectiveSource::Summary(s) => write!(f, "summary of a `{s}` call"),
        }
    }
}
