//! Tool calls held for a person's approval ([`crate::approval`]): each call's gate
//! before a round runs, and holding a round, which ends the turn. The resolution that
//! runs the round and resumes the turn is in `resume.rs`.

use std::sync::Arc;

use serde_json::Value;

use super::Turn;
use super::text::join;
use super::walk::Stop;
use crate::approval::{Decision, HeldCall, PausedAt, PendingApproval};
use crate::data::{AgentContext, AgentData};
use crate::provider::ToolCall;
use crate::response::{Event, StoppedReason};
use crate::tool::{Tool, ToolError};

/// What a round's calls get before they run: nothing (run), or a failure.
pub(super) enum Gate {
    /// Run the call.
    Run,
    /// Do not run it: it fails with this error.
    Fail(ToolError),
}

/// A held call's gate and arguments as its decision says.
pub(super) fn decided_call(h: &HeldCall) -> (Gate, Value) {
    match &h.decision {
        Some(Decision::Deny { reason }) => (
            Gate::Fail(ToolError::Denied(reason.clone())),
            h.arguments.clone(),
        ),
        Some(Decision::Edit { arguments }) => (Gate::Run, arguments.clone()),
        _ => (Gate::Run, h.arguments.clone()),
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether `tool` wants a person's decision for these arguments (a rule that
    /// panics counts as yes: holding a call is the safe side).
    fn wants_approval(tool: &dyn Tool<D, C>, args: &Value) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.needs_approval(args)))
            .unwrap_or(true)
    }

    /// Before a round runs: hold it for approval when a call needs one (then `None`:
    /// nothing runs, the turn ends), else each call's gate. A call needing approval
    /// while an earlier one of the session still waits fails instead of stacking.
    pub(super) fn gate_round(
        &mut self,
        tools: &[Arc<dyn Tool<D, C>>],
        calls: &[ToolCall],
        code_flow: Option<&str>,
    ) -> Option<Vec<Gate>> {
        let find = |name: &str| tools.iter().find(|t| t.name() == name);
        let wants: Vec<bool> = calls
            .iter()
            .map(|c| find(&c.name).is_some_and(|t| Self::wants_approval(t.as_ref(), &c.arguments)))
            .collect();
        if !wants.contains(&true) {
            return Some(calls.iter().map(|_| Gate::Run).collect());
        }
        if let Some(earlier) = self.s.approval.as_ref().or(self.paused.as_ref()) {
            let what = earlier
                .calls
                .iter()
                .find(|c| c.approval && c.decision.is_none())
                .map_or_else(String::new, |c| c.tool.clone());
            return Some(
                wants
                    .iter()
                    .map(|w| {
                        if *w {
                            Gate::Fail(ToolError::ApprovalPending(what.clone()))
                        } else {
                            Gate::Run
                        }
                    })
                    .collect(),
            );
        }
        let parts_key = |i: usize, c: &ToolCall| {
            crate::tool::key::call_key(&self.s.id, &self.turn_tag, i, &c.name, &c.arguments)
        };
        let seq = self.tool_seq;
        self.tool_seq += calls.len();
        let held: Vec<HeldCall> = calls
            .iter()
            .zip(&wants)
            .enumerate()
            .map(|(i, (c, w))| HeldCall {
                id: if c.id.is_empty() {
                    format!("call-{}", seq + i)
                } else {
                    c.id.clone()
                },
                tool: c.name.clone(),
                arguments: c.arguments.clone(),
                key: parts_key(seq + i, c),
                approval: *w,
                decision: None,
            })
            .collect();
        let pending = PendingApproval {
            calls: held,
            message: self.msg.to_owned(),
            turn: self.turn_tag.to_string(),
            at: None,
            code_flow: code_flow.map(str::to_owned),
            earlier: std::mem::take(&mut self.post_bus),
            requested_ms: self.a.clock.now_ms(),
        };
        for c in pending.waiting() {
            tracing::info!(tool = %c.tool, call = %c.id, "tool call held for approval");
            self.emit(Event::ApprovalRequested(c));
        }
        self.paused = Some(pending);
        None
    }

    /// Record where the turn paused (the step that was rendering), so the resumed
    /// turn answers from there.
    pub(super) fn note_paused_at(&mut self, stop: &Stop) {
        let at = match stop {
            Stop::Render(f, j) | Stop::Closing(f, j) => self.a.flow(f).map(|flow| PausedAt {
                flow: f.to_string(),
                step: flow.steps[*j].id.to_string(),
                closing: matches!(stop, Stop::Closing(..)),
            }),
            _ => None,
        };
        if let Some(p) = self.paused.as_mut() {
            p.at = at;
        }
    }

    /// The turn's outcome once a round was held: the code's notice (or text the
    /// model already streamed), and the calls waiting.
    pub(super) fn held_outcome(&mut self, said: String) -> (String, StoppedReason, Vec<String>) {
        let Some(p) = self.paused.take() else {
            return (said, StoppedReason::NeedsInput, Vec::new());
        };
        let calls = p.waiting().into_iter().map(|c| c.id).collect();
        self.s.approval = Some(p);
        let message = if self.streamed {
            said
        } else {
            join(&[said, self.a.config.approval_reply.clone()])
        };
        let deltas = if self.streamed {
            vec![message.clone()]
        } else {
            Vec::new()
        };
        (message, StoppedReason::AwaitingApproval { calls }, deltas)
    }
}
