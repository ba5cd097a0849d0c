//! A resolution of held tool calls ([`crate::approval`]): once every call is decided,
//! the round runs (or a code flow is replayed up to its held call) and the turn
//! answers from where it paused.

use std::sync::Arc;

use super::Turn;
use super::approve::Gate;
use super::code::CodeExit;
use super::text::{cap_chars, join};
use super::walk::Stop;
use crate::approval::{Decision, PausedAt, PendingApproval};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::provider::{Message, ToolCall};
use crate::response::StoppedReason;
use crate::tool::{Tool, ToolError};

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The stop a resumed turn answers from: where it paused, if the session is still
    /// there (a turn answered in between may have moved it; then the walk decides).
    pub(super) fn resumed_stop(&self, at: Option<&PausedAt>) -> Option<Stop> {
        let at = at?;
        if self.s.flow.as_deref() != Some(at.flow.as_str()) {
            return None;
        }
        let flow = self.a.flow(&at.flow)?;
        let j = flow.steps.iter().position(|s| s.id.as_ref() == at.step)?;
        Some(if at.closing {
            Stop::Closing(flow.id.clone(), j)
        } else {
            Stop::Render(flow.id.clone(), j)
        })
    }

    /// A tool registered anywhere in the agent (the agent, a flow, a step), by name:
    /// a held call is looked up again when it resumes.
    pub(super) fn registered_tool(&self, name: &str) -> Option<Arc<dyn Tool<D, C>>> {
        let a = self.a;
        a.tools
            .iter()
            .chain(a.flows.iter().flat_map(|f| {
                f.tools
                    .iter()
                    .chain(f.steps.iter().flat_map(|s| s.tools.iter()))
            }))
            .find(|t| t.name() == name)
            .cloned()
    }

    /// A resolution: record the decision; once every call is decided, run the round
    /// and answer with its results from where the turn paused.
    pub(super) async fn resume(
        &mut self,
        mut p: PendingApproval,
    ) -> Result<(String, StoppedReason, Vec<String>), AgentError> {
        if !p.decided() {
            let calls = p.waiting().into_iter().map(|c| c.id).collect();
            self.s.approval = Some(p);
            return Ok((
                String::new(),
                StoppedReason::AwaitingApproval { calls },
                Vec::new(),
            ));
        }
        self.s.approval = None;
        self.turn_tag = Arc::from(p.turn.as_str());
        self.awaiting = false;
        let calls: Vec<ToolCall> = p
            .calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.tool.clone(),
                arguments: match &c.decision {
                    Some(Decision::Edit { arguments }) => arguments.clone(),
                    _ => c.arguments.clone(),
                },
            })
            .collect();
        if let Some(flow) = p.code_flow.take() {
            return self.resume_code(&flow, &p).await;
        }
        let gates: Vec<Gate> = p
            .calls
            .iter()
            .map(|c| match &c.decision {
                Some(Decision::Deny { reason }) => Gate::Fail(ToolError::Denied(reason.clone())),
                _ => Gate::Run,
            })
            .collect();
        let keys: Vec<String> = p.calls.iter().map(|c| c.key.clone()).collect();

        let tools: Vec<Arc<dyn Tool<D, C>>> = calls
            .iter()
            .filter_map(|c| self.registered_tool(&c.name))
            .collect();
        self.post_bus.extend(std::mem::take(&mut p.earlier));
        let mut assistant = Message::assistant(String::new());
        assistant.tool_calls = calls.clone();
        self.s.history.push(assistant);
        let results = self.run_round(&tools, &calls, Some((gates, keys))).await;
        for (c, content) in calls.iter().zip(results) {
            self.s.history.push(Message::tool(c.id.clone(), content));
        }
        // The conversation may have left the flow that asked for the calls (the user
        // changed their mind while they waited): their results stand, but where they
        // would move the conversation (complete, go to) was meant for that flow.
        let moved_on =
            p.at.as_ref()
                .is_some_and(|at| self.s.flow.as_deref() != Some(at.flow.as_str()));
        if moved_on {
            for (src, d) in &mut self.post_bus {
                if let Some(pos) = d.position.take() {
                    tracing::warn!(source = %src, position = ?pos, "the flow of a held call is no longer active; its position directive is dropped");
                }
            }
        }
        // The answer after the results offers no tools: a model repeating its call
        // would only ask for the same approval again.
        self.tools_off = true;
        self.resume_at = self.resumed_stop(p.at.as_ref());
        let (mut message, stopped, mut deltas) = self.converse().await?;
        if self.paused.is_some() {
            return Ok(self.held_outcome(message));
        }
        self.show_tentative(&mut message, &mut deltas);
        let max = self.a.config.max_reply_chars;
        Ok((cap_chars(message, max), stopped, deltas))
    }

    /// A code flow's held `ctx.tool` call: the flow is replayed; when it makes the
    /// call again (same tool and arguments, at the position where it paused), the
    /// call runs as decided and its result is recorded in the flow's journal, and
    /// the flow goes on from there.
    async fn resume_code(
        &mut self,
        flow: &str,
        p: &PendingApproval,
    ) -> Result<(String, StoppedReason, Vec<String>), AgentError> {
        if self.s.code.as_ref().is_none_or(|c| c.flow != flow) {
            // The flow ended or was left meanwhile: nothing continues from the call.
            tracing::warn!(
                flow,
                "the code flow of a held call is no longer active; the call was not run"
            );
            return Ok((String::new(), StoppedReason::NeedsInput, Vec::new()));
        }
        self.decided = p.calls.first().cloned();
        // The flow continues past the call; the message that asked for it is not an
        // answer to what it asks next.
        self.code_fresh = true;
        let exit = self.code_turn().await?;
        if let Some(h) = self.decided.take() {
            tracing::warn!(flow, tool = %h.tool, "the code flow did not make its held call again; it was not run");
        }
        match exit {
            CodeExit::Reply(message, stopped) => {
                self.from_code = true;
                if self.paused.is_some() {
                    return Ok(self.held_outcome(message));
                }
                Ok((message, stopped, Vec::new()))
            }
            CodeExit::Classic { said } => {
                self.tools_off = true;
                let (message, stopped, deltas) = self.converse().await?;
                let message = join(&[said, message]);
                Ok((message, stopped, deltas))
            }
        }
    }
}
