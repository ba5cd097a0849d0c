//! Who emitted a directive: every entry of a turn's directive chain names its source.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who emitted a directive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum DirectiveSource {
    /// The session's pending directive.
    Pending,
    /// A pre-phase signal.
    PreSignal(String),
    /// A post-phase signal.
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
    /// A tool result.
    Tool(String),
    /// A `dispatch` from inside a tool.
    ToolDispatch(String),
    /// A step's `finalize` hook.
    Finalize(String),
    /// A flow's `on_complete` (hook or directive).
    OnComplete(String),
    /// A matched branch entry (`step` or `step:label`).
    Branch(String),
    /// The router.
    Routing(String),
    /// The model switched flows through the respond call.
    ModelSwitch(String),
    /// A code flow handed off.
    Handoff(String),
    /// A `/flow` command of the user ([`crate::agent::AgentConfig::flow_commands`]).
    Command(String),
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
            DirectiveSource::ModelSwitch(s) => write!(f, "model switch to `{s}`"),
            DirectiveSource::Handoff(s) => write!(f, "handoff from code flow `{s}`"),
            DirectiveSource::Command(s) => write!(f, "command `{s}`"),
        }
    }
}
