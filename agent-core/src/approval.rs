//! Human approval of tool calls: a call a person must approve pauses the turn, the
//! session keeps it durably, and the turn resumes when the application decides.
//!
//! A tool asks for approval with `#[tool(approval)]` (every call),
//! `#[tool(approval = predicate)]` (calls whose arguments the predicate picks), or
//! [`FnTool::needs_approval`](crate::tool::FnTool::needs_approval) /
//! [`FnTool::needs_approval_if`](crate::tool::FnTool::needs_approval_if).
//!
//! What happens:
//!
//! 1. The model (or a code flow's `ctx.tool`) calls such a tool. No call of that tool
//!    round runs: the round is held as a [`PendingApproval`] in the session, the turn
//!    ends with [`StoppedReason::AwaitingApproval`](crate::response::StoppedReason)
//!    and the response lists the calls in
//!    [`AgentResponse::awaiting_approval`](crate::response::AgentResponse) (one
//!    [`Event::ApprovalRequested`](crate::response::Event) each when streaming). The
//!    reply is [`AgentConfig::approval_reply`](crate::agent::AgentConfig), written by
//!    code: the model never announces an outcome that has not happened. The session's
//!    lease is released: the pause may last days and survives a restart.
//! 2. The application decides each call with
//!    [`Agent::resolve_approval`](crate::agent::Agent::resolve_approval):
//!    [`Decision::Approve`], [`Decision::Deny`] with a reason, or [`Decision::Edit`]
//!    with new arguments. Once every call of the round is decided, the turn resumes:
//!    approved and edited calls run (with the idempotency key the call got when it was
//!    first asked for, so `effect = once` tools keep their exactly-once guarantee),
//!    a denied call is a failed tool result the model reads ("denied: reason"), the
//!    calls of the round that needed no approval run as well, and the model answers
//!    with the results, as it would have without the pause. While some calls of the
//!    round are still undecided, a decision is recorded and the response says what
//!    still waits.
//! 3. A user message that arrives while a call is pending is answered as usual; the
//!    call stays pending until the application decides it. A second call needing
//!    approval in that time fails (the model reads that an earlier call awaits a
//!    decision) instead of stacking approvals.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::directive::DirectiveSource;

/// A tool call that waits for a person's decision, as the application sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's id: what [`Agent::resolve_approval`](crate::agent::Agent::resolve_approval)
    /// takes.
    pub id: String,
    /// The name of the tool that waits for a decision.
    pub tool: String,
    /// The arguments the model (or the code flow) gave.
    pub arguments: Value,
    /// The call's idempotency key, kept from the moment it was asked for.
    pub key: String,
}

/// A person's decision on a pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call as asked.
    Approve,
    /// Do not run it; the model reads "denied" with the reason.
    Deny {
        /// Why (shown to the model).
        reason: String,
    },
    /// Run it with these arguments instead (same idempotency key).
    Edit {
        /// The arguments to run the call with.
        arguments: Value,
    },
}

/// One call of a held tool round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldCall {
    /// The call id (the model's tool call id, or one the engine made).
    pub id: String,
    /// The name of the tool called.
    pub tool: String,
    /// The arguments as asked.
    pub arguments: Value,
    /// The idempotency key, fixed when the call was asked for.
    pub key: String,
    /// Whether this call needs a decision (the round's other calls run when it
    /// resumes, without one).
    pub approval: bool,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// Where the paused turn was, so the resumed turn answers from the same place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedAt {
    /// The id of the flow that was active when the turn paused.
    pub flow: String,
    /// The step that was rendering.
    pub step: String,
    /// The step was closing its flow (its answer completes the flow).
    #[serde(default)]
    pub closing: bool,
}

/// A held tool round, stored in the session until every call needing approval is
/// decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The round's calls, in the order they were asked for.
    pub calls: Vec<HeldCall>,
    /// The user message of the paused turn.
    pub message: String,
    /// The paused turn's identity in call keys.
    pub turn: String,
    /// The position that was rendering (declarative flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<PausedAt>,
    /// The round was asked for by a code flow's `ctx.tool` (its journal gets the
    /// result and the flow continues by replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_flow: Option<String>,
    /// Directives of tools that ran earlier in the paused turn; applied when it
    /// resumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<(DirectiveSource, crate::directive::Directive)>,
    /// When the round was held (ms since the Unix epoch, agent clock).
    pub requested_ms: u64,
}

impl PendingApproval {
    /// The calls still waiting for a decision.
    pub fn waiting(&self) -> Vec<PendingCall> {
        self.calls
            .iter()
            .filter(|c| c.approval && c.decision.is_none())
            .map(|c| PendingCall {
                id: c.id.clone(),
                tool: c.tool.clone(),
                arguments: c.arguments.clone(),
                key: c.key.clone(),
            })
            .collect()
    }

    /// Record a decision on call `id`: `Err` with the ids still waiting when `id` is
    /// not one of them.
    pub(crate) fn decide(&mut self, id: &str, decision: Decision) -> Result<(), Vec<String>> {
        match self
            .calls
            .iter_mut()
            .find(|c| c.id == id && c.approval && c.decision.is_none())
        {
            Some(c) => {
                c.decision = Some(decision);
                Ok(())
            }
            None => Err(self.waiting().into_iter().map(|c| c.id).collect()),
        }
    }

    /// Whether every call needing approval is decided (the round can run).
    pub fn decided(&self) -> bool {
        self.calls
            .iter()
            .all(|c| !c.approval || c.decision.is_some())
    }
}

/// What a resolution asks of the turn machinery.
#[derive(Debug, Clone)]
pub(crate) struct Resolve {
    pub(crate) call_id: String,
    pub(crate) decision: Decision,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn held(id: &str, approval: bool) -> HeldCall {
        HeldCall {
            id: id.into(),
            tool: "pay".into(),
            arguments: json!({"amount": 5}),
            key: format!("k-{id}"),
            approval,
            decision: None,
        }
    }

    #[test]
    fn a_round_runs_once_every_call_needing_approval_is_decided() {
        let mut p = PendingApproval {
            calls: vec![held("a", true), held("b", false), held("c", true)],
            message: "pay".into(),
            turn: "t".into(),
            at: None,
            code_flow: None,
            earlier: Vec::new(),
            requested_ms: 0,
        };
        assert_eq!(p.waiting().len(), 2);
        assert!(!p.decided());
        assert_eq!(
            p.decide("b", Decision::Approve),
            Err(vec!["a".to_owned(), "c".to_owned()]),
            "a call that needs no approval is not decided"
        );
        p.decide("a", Decision::Approve).unwrap();
        assert_eq!(
            p.decide("a", Decision::Approve),
            Err(vec!["c".to_owned()]),
            "decided once"
        );
        assert!(!p.decided());
        p.decide(
            "c",
            Decision::Deny {
                reason: "no".into(),
            },
        )
        .unwrap();
        assert!(p.decided());
        assert!(p.waiting().is_empty());
        let back: PendingApproval =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn decisions_have_a_flat_json_shape() {
        assert_eq!(
            serde_json::to_value(Decision::Deny { reason: "r".into() }).unwrap(),
            json!({"decision": "deny", "reason": "r"})
        );
        let d: Decision = serde_json::from_value(json!({"decision": "approve"})).unwrap();
        assert_eq!(d, Decision::Approve);
    }
}
