//! The turn driver: a resolution of held calls, or the message through the pending
//! directive or the pre-phase, the code flow, the conversation and the post-phase
//! signals, in the fixed order; the message capped, then persisted under the deadline.

use super::code::CodeExit;
use super::patterns::PatternRead;
use super::text::{cap_chars, join};
use super::{Phase, Turn, deadline, guard, slash};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::provider::Message;
use crate::response::{AgentResponse, DirectiveSource, StoppedReason};

/// What the completed pattern asks (and a cancel with nothing to resume says).
pub(super) const ANYTHING_ELSE: &str = "Is there anything else I can help with?";

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Run the turn; on success the session is saved and the response returned.
    pub(crate) async fn run(mut self: Box<Self>) -> Result<AgentResponse<D>, AgentError> {
        let deadline = self.deadline;
        let (message, stopped, deltas) = {
            // Pinned in place: moving the large future into the deadline's would copy it.
            let compose = std::pin::pin!(self.compose());
            deadline::within(deadline, compose).await?
        };
        self.finish(message, stopped, deltas).await
    }

    /// Everything up to the save: the message, why the turn stopped, and the text
    /// deltas to stream.
    async fn compose(&mut self) -> Result<(String, StoppedReason, Vec<String>), AgentError> {
        if let Some(p) = self.resume.take() {
            return self.resume(p).await;
        }
        self.s.history.push(Message::user(self.msg));
        if let Some(waiting) = self.while_handed_off() {
            // A person has the conversation: no model call until the host ends it.
            return Ok((waiting, StoppedReason::HumanHandoff, Vec::new()));
        }

        if self.s.turns == 0
            && let Some(h) = self.a.on_enter.clone()
        {
            let d = {
                let cx = self.cx();
                guard::hook(h.call(&cx), || "on_enter hook of the agent".into()).await?
            };
            self.emit_pre(DirectiveSource::AgentOnEnter, d).await?;
        }

        let slash = if self.a.config.flow_commands {
            slash::parse(self.msg)
        } else {
            None
        };
        if let Some(cmd) = slash {
            if let Some(reply) = self.slash(cmd).await? {
                return Ok((reply, StoppedReason::Reply, Vec::new()));
            }
        } else if let Some(p) = self.s.pending.take() {
            // A pending directive decides where the turn goes only when it carries a
            // position (or a reply); one that only writes state leaves routing and
            // the pre-phase signals to run as usual.
            let decides = p.position.is_some() || p.reply.is_some();
            self.record(&DirectiveSource::Pending, &p, &[], &[], false);
            self.apply(DirectiveSource::Pending, p, Phase::Pre).await?;
            if !decides && !self.turn_over() {
                self.pre_phase().await?;
            }
        } else {
            self.pre_phase().await?;
        }
        self.enter_default_flow().await?;

        let mut said = String::new();
        if self.s.code.is_some() && !self.turn_over() {
            match self.code_turn().await? {
                CodeExit::Reply(message, _) if self.paused.is_some() => {
                    self.from_code = true;
                    return Ok(self.held_outcome(message));
                }
                CodeExit::Reply(message, stopped) => {
                    self.from_code = true;
                    return Ok((message, stopped, Vec::new()));
                }
                CodeExit::Classic { said: s } => said = s,
            }
        }

        if !self.turn_over()
            && let Some(reply) = self.settle_cancel().await?
        {
            // Asked whether to stop the flow, the user said yes.
            if let PatternRead::Reply(m, st) = self.after_cancel(reply) {
                return Ok((m, st, Vec::new()));
            }
        }
        if !self.turn_over()
            && let Some(reply) = self.settle_handoff().await?
        {
            // Asked whether they want a person, the user said yes.
            return Ok((reply, StoppedReason::HumanHandoff, Vec::new()));
        }
        if !self.turn_over() {
            self.settle_proposal().await?;
            if self.paused.is_some() {
                // The call agreed to is held for a person's approval.
                return Ok(self.held_outcome(String::new()));
            }
        }
        if !self.turn_over() {
            self.settle_tentative().await?;
        }
        self.run_certain_auto_hooks().await?;
        let (mut message, mut stopped, mut deltas) = self.converse().await?;
        if !self.lead.is_empty() {
            // What the code said first (a flow stopped), then the rest of the reply.
            let mut parts = std::mem::take(&mut self.lead);
            parts.push(message);
            message = join(&parts);
            deltas.clear();
        }
        if self.paused.is_some() {
            return Ok(self.held_outcome(join(&[said, message])));
        }
        self.show_tentative(&mut message, &mut deltas);
        if self.s.code.is_some() && !matches!(stopped, StoppedReason::Aborted { .. }) {
            // A declarative flow handed the conversation to a code flow this turn.
            match self.code_turn().await? {
                CodeExit::Reply(m, st) => {
                    self.from_code = true;
                    message = join(&[std::mem::take(&mut message), m]);
                    stopped = st;
                    deltas.clear();
                }
                CodeExit::Classic { said: s } => {
                    message = join(&[std::mem::take(&mut message), s]);
                    deltas.clear();
                }
            }
        }
        if !said.is_empty() {
            message = join(&[said, message]);
            deltas.clear();
        }
        if self.paused.is_some() {
            return Ok(self.held_outcome(message));
        }
        if let Some(f) = self.code_stopped.take() {
            stopped = f;
        }
        if matches!(stopped, StoppedReason::AutoStepCap { .. }) && message.is_empty() {
            // A cycle of auto steps in the definition: the user still gets an answer.
            message = self.a.config.flow_error_reply.clone();
        }

        self.post_signals(&mut message, &mut stopped).await?;
        if let Some(r) = self.post_reply.take() {
            message = r;
            stopped = StoppedReason::Reply;
        }
        self.offer_more(&mut message, &stopped, &mut deltas);
        self.acknowledge(&mut message, &mut deltas);
        let max = self.a.config.max_reply_chars;
        if message.chars().nth(max).is_some() {
            tracing::warn!(max, "reply longer than max_reply_chars; cut");
        }
        let message = cap_chars(message, max);
        self.propose_by_ask(&message);
        if self.proposed_now() && stopped == StoppedReason::Reply {
            // Code's summary of a call asks for the user's yes: the turn waits for it.
            stopped = StoppedReason::NeedsInput;
        }
        Ok((message, stopped, deltas))
    }

    /// What the turn stored, said before code's text in the reply
    /// ([`Turn::ack_before`]), unless the reply names it already or was streamed.
    fn acknowledge(&mut self, message: &mut String, deltas: &mut Vec<String>) {
        let Some(before) = self.ack_before.take() else {
            return;
        };
        if self.streamed || before.is_empty() {
            return;
        }
        let Some(at) = message.rfind(before.as_str()) else {
            return;
        };
        let Some(ack) = self.what_changed(message) else {
            return;
        };
        message.insert_str(at, &format!("{ack} "));
        deltas.clear();
        self.ack = Some(ack);
    }

    /// The completed pattern: a turn that completed a flow and left the conversation
    /// with nothing under way asks whether the user needs anything else, unless its
    /// reply is verbatim (the stop is then [`StoppedReason::Reply`]) or already ends
    /// on a question.
    fn offer_more(&self, message: &mut String, stopped: &StoppedReason, deltas: &mut Vec<String>) {
        if !matches!(stopped, StoppedReason::FlowCompleted { .. })
            || self.from_code
            || self.s.flow.is_some()
            || self.s.code.is_some()
            || message.trim_end().ends_with('?')
        {
            return;
        }
        let sep = if message.is_empty() || message.ends_with(char::is_whitespace) {
            ""
        } else {
            " "
        };
        let more = format!("{sep}{ANYTHING_ELSE}");
        message.push_str(&more);
        // Deltas still to stream get it as one more; a reply streamed live gets it
        // once the turn is saved (`persist.rs`).
        if !self.streamed && !deltas.is_empty() {
            deltas.push(more);
        }
    }

    /// Whether the classifier picks a flow this turn: no flow is active, there is a
    /// choice, and the router is a detector.
    pub(crate) fn routing_due(&self) -> bool {
        self.s.flow.is_none()
            && self.s.code.is_none()
            && self.a.flow_count() > 1
            && matches!(self.a.router, crate::codeflow::Router::Detector { .. })
    }

    /// Enter the only flow of a single-flow agent when none is active (no routing call).
    async fn enter_default_flow(&mut self) -> Result<(), AgentError> {
        if self.s.flow.is_some()
            || self.s.code.is_some()
            || self.stopped.is_some()
            || self.a.flow_count() != 1
        {
            return Ok(());
        }
        if self.aug.halt || self.reply.is_some() {
            return Ok(());
        }
        if let Some(code) = self.a.code_flows.first() {
            let id = code.id.clone();
            if !self
                .s
                .completed_flows
                .iter()
                .any(|f| f.as_str() == id.as_ref())
            {
                self.start_code(&id, None, &DirectiveSource::Routing(id.to_string()))
                    .await?;
            }
            return Ok(());
        }
        let flow = self.a.flows[0].clone();
        let eligible = {
            let cx = self.cx();
            flow.is_eligible(&cx)
        };
        let done_before = self
            .s
            .completed_flows
            .iter()
            .any(|f| f.as_str() == flow.id.as_ref());
        if eligible
            && (!done_before || flow.reentrant)
            && !self
                .completed
                .iter()
                .any(|f| f.as_str() == flow.id.as_ref())
        {
            self.enter_flow(
                flow.id.as_ref(),
                None,
                DirectiveSource::Routing(flow.id.as_ref().to_owned()),
            )
            .await?;
        }
        Ok(())
    }
}
