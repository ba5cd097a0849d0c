//! What a paused code flow keeps between turns: the results its effects produced, in
//! order. Replaying the flow's fn against them brings it back to where it paused.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One recorded effect. Only outputs are kept (answers, tool results, said texts),
/// never prompts, so a journal grows with the flow's steps, not with the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum Entry {
    /// `ctx.ask(key, ..)`: the extracted answer, `None` while the question is open.
    Ask {
        /// The ask's key.
        key: String,
        /// The answer, once the user gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<Value>,
    },
    /// `ctx.say(text)`.
    Say {
        /// The text said.
        text: String,
    },
    /// `ctx.tool(..)`: the tool, a hash of its arguments and its result.
    Tool {
        /// Tool name.
        name: String,
        /// Hash of the JSON arguments (detects a replay calling it differently).
        args: u64,
        /// Whether the call succeeded.
        ok: bool,
        /// The tool's output (or the failure message).
        out: String,
    },
    /// `ctx.now_ms()`.
    Now {
        /// Milliseconds since the Unix epoch.
        ms: u64,
    },
    /// `ctx.random_u64()`.
    Random {
        /// The value.
        v: u64,
    },
    /// `ctx.new_id()`.
    Id {
        /// The id.
        id: String,
    },
}

impl Entry {
    /// How the entry reads in a non-determinism report.
    pub(crate) fn describe(&self) -> String {
        match self {
            Entry::Ask { key, .. } => format!("ask(\"{key}\")"),
            Entry::Say { text } => format!("say({})", short(text)),
            Entry::Tool { name, .. } => format!("tool(\"{name}\")"),
            Entry::Now { .. } => "now_ms()".into(),
            Entry::Random { .. } => "random_u64()".into(),
            Entry::Id { .. } => "new_id()".into(),
        }
    }
}

pub(crate) fn short(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    format!("{s:?}")
}

/// The active code flow of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeState {
    /// The code flow's id.
    pub flow: String,
    /// Recorded effects, in call order.
    #[serde(default)]
    pub journal: Vec<Entry>,
    /// Consecutive failed turns (errors or panics of the flow fn).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
    /// The flow that handed off to this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_from: Option<String>,
    /// The value passed with the handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// What `ctx.data()` showed on each of the flow's turns, as changes (see
    /// [`DataDelta`]), so a replay shows every part of the fn the data it saw when it
    /// first ran. `None` in sessions saved before this was recorded: their flows see
    /// the data as the turn begins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<DataDelta>>,
}

/// A change of the data `ctx.data()` shows, from a journal position on: the fields
/// that differ from the view before it (from the data type's default for the first).
/// The view changes only where a turn's run goes live (the flow's start, an answered
/// question), so a flow whose turns see the same data records nothing, and the
/// journal itself keeps outputs only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataDelta {
    /// The journal position from which the view applies.
    pub at: usize,
    /// The changed fields (`null` for a field that was removed).
    pub fields: Map<String, Value>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CodeState {
    /// A fresh run of `flow`.
    pub(crate) fn start(flow: &str, from: Option<String>, input: Option<Value>) -> Self {
        Self {
            flow: flow.to_owned(),
            journal: Vec::new(),
            failures: 0,
            handoff_from: from,
            input,
            data: Some(Vec::new()),
        }
    }

    /// The key of the question the flow waits on, if any.
    pub fn pending_ask(&self) -> Option<&str> {
        match self.journal.last() {
            Some(Entry::Ask { key, answer: None }) => Some(key),
            _ => None,
        }
    }
}
