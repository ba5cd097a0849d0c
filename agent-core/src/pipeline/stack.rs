//! The dialogue stack and the cancel pattern.
//!
//! - A flow the model starts while another is under way (a `start_flow` command)
//!   interrupts it: the active flow and its step go on [`Session::stack`]
//!   ([`crate::session::Interrupted`]). When the interrupting flow completes, or is
//!   cancelled, the flow on top resumes at its step, in the same turn, and asks its
//!   question again. Past [`crate::AgentConfig::max_interruptions`] flows on the
//!   stack, a new flow is not started and the reply says so.
//! - A cancel the model read ([`Command::CancelFlow`]) stops the active flow when the
//!   message plainly asks for it; otherwise the code asks "Do you want to stop ...?"
//!   and the user's next message settles it ([`Session::cancelling`]). A cancelled
//!   flow is left without completing: the values only it collected are cleared (not
//!   those a flow on the stack or a completed flow collected), and nothing of it
//!   stays (tentative values, a pending directive, a pending approval); it can be
//!   started again. A tool that already ran is not undone.
//!
//! [`Session::stack`]: crate::session::Session::stack
//! [`Session::cancelling`]: crate::session::Session::cancelling

use serde_json::{Map, Value};

use super::consent::plainly_agrees;
use super::model::CallOutcome;
use super::patterns::PatternRead;
use super::{Phase, Turn};
use crate::command::Command;
use crate::data::{AgentContext, AgentData, apply_unchecked};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::flow::Interruption;
use crate::response::{DirectiveSource, StoppedReason};
use crate::session::Interrupted;

/// Words that may stand beside a stop word in a message that only asks to stop
/// ("cancel it please", "forget the whole thing"), normalised. The active flow's own
/// name may stand there too ("cancel the booking" in a flow titled "Hotel booking").
const STOP: &[&str] = &[
    "cancel",
    "stop",
    "quit",
    "abort",
    "nevermind",
    "never",
    "mind",
    "forget",
    "it",
    "that",
    "please",
    "the",
    "this",
    "my",
    "everything",
    "all",
    "whole",
    "thing",
];

/// The words that ask to stop, normalised ("never mind" is also one).
const STOP_WORDS: &[&str] = &["cancel", "stop", "quit", "abort", "nevermind", "forget"];

/// Whether `message` only asks to stop: it names a stop word and nothing but
/// [`STOP`] words, words of `names` (the active flow's title and id, asked for only
/// when a word is none of the others) and agreement filler.
#[cfg(test)]
pub(super) fn plainly_cancels(message: &str, names: impl FnOnce() -> Vec<String>) -> bool {
    said_cancels(&crate::data::ground::normalize(message), names)
}

/// [`plainly_cancels`] of a message already normalised
/// ([`Turn::said`](crate::pipeline::Turn::said)).
fn said_cancels(said: &str, names: impl FnOnce() -> Vec<String>) -> bool {
    if !said_stopping(said) {
        return false;
    }
    let mut names = Some(names);
    let mut known: Vec<String> = Vec::new();
    for w in said.split_whitespace() {
        if STOP.contains(&w) || plainly_agrees(w, &[]) {
            continue;
        }
        if let Some(f) = names.take() {
            known = f();
        }
        if !known.iter().any(|n| n == w) {
            return false;
        }
    }
    true
}

/// Whether the message names stopping at all ("Actually, forget that. My app
/// crashes."): a cancel the model read beside a flow to start leaves the active flow
/// for good only then; otherwise that flow waits on the stack, and the user can
/// still stop it when it asks again.
///
/// `said` is the message normalised ([`Turn::said`](crate::pipeline::Turn::said)): a
/// stop word, or "never mind".
pub(super) fn said_stopping(said: &str) -> bool {
    let mut before = "";
    for w in said.split_whitespace() {
        if STOP_WORDS.contains(&w) || (before == "never" && w == "mind") {
            return true;
        }
        before = w;
    }
    false
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// A cancel in the answer `out`, handled: `None` when there is none, or when the
    /// answer also judged one of the step's own conditions true (the agent's branch
    /// decides the turn, not the built-in pattern).
    pub(super) async fn on_cancel(
        &mut self,
        out: &mut CallOutcome,
    ) -> Result<Option<PatternRead>, AgentError> {
        // The model's reading, or a message that only asks to stop ("cancel", "never
        // mind") and gives nothing else: code recognises those common phrasings too.
        let read = out.take_cancel();
        let gives = |c: &Command| c.field().is_some() || matches!(c, Command::StartFlow { .. });
        let plain = !read
            && self.transitions.len() == self.read_from
            && self.plainly_cancels()
            && !out.commands.iter().any(gives)
            && !self.commands.iter().any(gives);
        // One cancel per turn: the flow resumed after it reads the same message.
        let done = self.commands.contains(&Command::CancelFlow);
        if !(read || plain) || done || self.s.flow.is_none() {
            return Ok(None);
        }
        // A message cannot both start a flow and stop it unless it says so: a cancel
        // the model read in the message that started the active flow (measured on
        // Qwen2.5 1.5B: "I need a hotel in Lisbon" right after "cancel" read as a
        // cancel again, 2 of 3 runs) is not followed.
        if read && !plain && self.entered_now() && !said_stopping(self.said()) {
            tracing::info!("cancel read in the message that started the flow: not followed");
            return Ok(None);
        }
        // Nor can it give the flow a value and stop it, unless it says so: a message
        // that gave a value (stored, held for a yes, or refused with its reason) is
        // about the flow's content (measured on Qwen2.5 1.5B: "0 guests", "last
        // Friday" and "just me and two friends" each read as a cancel beside the value).
        if read && !plain && self.gave_value(out) && !said_stopping(self.said()) {
            tracing::info!("cancel read in a message that gave a value: not followed");
            return Ok(None);
        }
        if out.verdicts.iter().any(|(_, holds)| *holds) || self.branch_decides().await? {
            tracing::info!("cancel read, but a condition of the step holds: the branch decides");
            return Ok(None);
        }
        let Some(reply) = self.read_cancel().await? else {
            return Ok(None);
        };
        Ok(Some(self.after_cancel(reply)))
    }

    /// Whether this turn's message gave a value: one stored or held for a yes this
    /// turn, one refused by its field's constraints or the data type, or one in the
    /// answer `out` not yet applied.
    fn gave_value(&self, out: &CallOutcome) -> bool {
        self.commands.iter().any(|c| c.field().is_some())
            || out.commands.iter().any(|c| c.field().is_some())
            || !self.rejected.is_empty()
            || !self.tentative.is_empty()
    }

    /// Whether the active flow was entered this turn (from no flow or from another).
    fn entered_now(&self) -> bool {
        let Some(fid) = self.s.flow.as_deref() else {
            return false;
        };
        self.transitions.iter().any(|t| t.to == fid)
    }

    /// Whether a model-judged branch of the active step holds for this message
    /// (judged now if this turn has not judged it yet): the agent's own way of
    /// handling the message then decides, not the built-in cancel.
    pub(super) async fn branch_decides(&mut self) -> Result<bool, AgentError> {
        let Some(flow) = self.flow() else {
            return Ok(false);
        };
        let idx = self.step_idx(&flow);
        let step = &flow.steps[idx];
        // The step's branch table, and steps after it entered on a condition.
        let mut whens: Vec<String> = step
            .branch_table()
            .iter()
            .flat_map(|b| b.when.iter().cloned())
            .collect();
        whens.extend(
            flow.successors(idx)
                .iter()
                .filter_map(|&j| flow.steps[j].when.clone()),
        );
        let mut unjudged = self.due_branch_conditions(step, 0);
        let more: Vec<String> = whens
            .iter()
            .filter(|w| !self.judged.contains_key(w.as_str()) && !unjudged.contains(w))
            .cloned()
            .collect();
        unjudged.extend(more);
        if !unjudged.is_empty() {
            self.judge(unjudged).await?;
        }
        Ok(whens
            .iter()
            .any(|w| self.judged.get(w.as_str()) == Some(&true)))
    }

    /// What the turn does with a cancel's `reply`.
    pub(super) fn after_cancel(&mut self, reply: String) -> PatternRead {
        if self.resumed.take().is_some() {
            self.lead.push(reply);
            return PatternRead::Moved;
        }
        let stopped = self.stopped.clone().unwrap_or(StoppedReason::NeedsInput);
        PatternRead::Reply(reply, stopped)
    }

    /// Before a `start_flow` command moves from the active flow to `target`: put the
    /// active flow on the stack (a flow already on it is resumed instead, dropping
    /// what interrupted it). `false` when the stack is full: the flow is not started.
    pub(super) fn interrupt_for(&mut self, target: &str) -> bool {
        if let Some(i) = self.s.stack.iter().position(|f| f.flow == target) {
            self.s.stack.truncate(i);
            return true;
        }
        let Some(active) = self.s.flow.clone() else {
            return true;
        };
        if active == target {
            return true;
        }
        let policy = self.a.flow(&active).map(|f| {
            let at = self
                .s
                .step
                .as_deref()
                .and_then(|s| f.step_index.get(s))
                .and_then(|&i| f.steps[i].interrupted);
            at.unwrap_or(f.interrupted)
        });
        if policy == Some(Interruption::End) {
            return true;
        }
        if self.s.stack.len() >= self.a.config.max_interruptions {
            tracing::info!(
                target,
                depth = self.s.stack.len(),
                "not started: the dialogue stack is full"
            );
            return false;
        }
        let mut frame = Interrupted::new(active, self.s.step.clone(), target);
        if policy == Some(Interruption::Restart) {
            frame.step = None;
            frame.restart = true;
        }
        self.s.stack.push(frame);
        true
    }

    /// The stack frame of the flow `target` interrupted, if it is on the stack: where
    /// a `start_flow` back to it resumes.
    pub(super) fn resume_point(&self, target: &str) -> Option<String> {
        self.s
            .stack
            .iter()
            .find(|f| f.flow == target)
            .and_then(|f| f.step.clone())
    }

    /// After `fid` completed or was cancelled with no position of its own to go to:
    /// the flow it interrupted resumes at its step (its question is asked again, in
    /// this turn). Frames `fid` left behind are dropped. Returns the resumed flow.
    pub(super) fn resume_interrupted(&mut self, fid: &str, moves: bool) -> Option<String> {
        let top = self.s.stack.last()?;
        if top.by != fid {
            return None;
        }
        let frame = self.s.stack.pop()?;
        if moves || self.s.flow.is_some() || self.a.flow(&frame.flow).is_none() {
            return None;
        }
        tracing::info!(flow = %frame.flow, step = ?frame.step, restart = frame.restart, "interrupted flow resumes");
        if frame.restart {
            let owned = self.owned_fields(&frame.flow);
            let src = DirectiveSource::Command(format!("restart {}", frame.flow));
            if let Err(e) = self.clear_fields(&frame.flow, &owned, &src) {
                // Writing a new session's values back cannot fail on a valid type;
                // if it did, the flow resumes with its values kept.
                tracing::warn!(flow = %frame.flow, error = %e, "restart: values not cleared");
            }
        }
        let d =
            Directive::go_to_step_in(frame.flow.clone(), frame.step.clone().unwrap_or_default());
        self.record(
            &DirectiveSource::Command(format!("resume {}", frame.flow)),
            &d,
            &[],
            &[],
            false,
        );
        self.pos_gen += 1;
        self.s.flow = Some(frame.flow.clone());
        self.s.step = frame.step;
        if self.s.step.is_none()
            && let Some(f) = self.a.flow(&frame.flow)
        {
            self.s.step = Some(f.steps[f.entry()].id.to_string());
        }
        self.awaiting = false;
        self.resumed = Some(frame.flow.clone());
        Some(frame.flow)
    }

    /// A cancel the model read: the flow stops now when the message plainly asks
    /// for it; otherwise the user is asked. Returns the reply (written by code), or
    /// `None` when an earlier decision of this turn took precedence.
    pub(super) async fn read_cancel(&mut self) -> Result<Option<String>, AgentError> {
        let Some(fid) = self.s.flow.clone() else {
            return Ok(None);
        };
        if self.plainly_cancels() {
            return self.cancel_flow(&fid).await.map(Some);
        }
        let title = self.flow_title(&fid);
        self.s.cancelling = Some(fid);
        Ok(Some(format!("Do you want to stop {title}?")))
    }

    /// Settle the question whether to stop a flow, on the user's next message: a yes
    /// stops it; anything else is read as usual (the flow goes on).
    pub(super) async fn settle_cancel(&mut self) -> Result<Option<String>, AgentError> {
        let Some(fid) = self.s.cancelling.take() else {
            return Ok(None);
        };
        if self.s.flow.as_deref() != Some(fid.as_str()) {
            return Ok(None);
        }
        let agreed = plainly_agrees(self.msg, &[])
            || self.plainly_cancels()
            || self.agrees_with_last_question().await?;
        if !agreed {
            self.handled(Command::Decline);
            return Ok(None);
        }
        self.handled(Command::Agree);
        self.cancel_flow(&fid).await.map(Some)
    }

    /// Whether the message only asks to stop the active flow (declarative or code),
    /// which it may name by its title or id.
    fn plainly_cancels(&self) -> bool {
        let fid = match (&self.s.flow, &self.s.code) {
            (Some(f), _) => f.as_str(),
            (None, Some(c)) => c.flow.as_str(),
            (None, None) => "",
        };
        said_cancels(self.said(), || {
            crate::data::ground::normalize(&format!("{} {fid}", self.flow_title(fid)))
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        })
    }

    /// The flow's title as a reply names it.
    pub(super) fn flow_title(&self, fid: &str) -> String {
        let title = match (self.a.flow(fid), self.a.code_flow(fid)) {
            (Some(f), _) => f.title.as_str(),
            (None, Some(c)) => c.title.as_str(),
            _ => "",
        };
        if title.is_empty() {
            fid.replace('_', " ")
        } else {
            title.to_lowercase()
        }
    }

    /// A code flow waiting for the answer to its question, stopped by a message that
    /// only asks to stop ("cancel", "never mind"): nothing of it stays (its journal
    /// goes), values it wrote are kept, and it can be started again. `None` when the
    /// message does not plainly cancel.
    pub(super) fn cancel_code_flow(&mut self) -> Option<(String, StoppedReason)> {
        let state = self.s.code.as_ref()?;
        if self.code_fresh || state.pending_ask().is_none() || !self.plainly_cancels() {
            return None;
        }
        let fid = state.flow.clone();
        self.handled_in_chain(Command::CancelFlow);
        tracing::info!(flow = %fid, "code flow cancelled");
        self.s.code = None;
        self.s.step = None;
        let title = self.flow_title(&fid);
        let reply = format!(
            "Okay, I've stopped {title}. {}",
            super::compose::ANYTHING_ELSE
        );
        Some((reply, StoppedReason::FlowCancelled { flow: fid }))
    }

    /// Stop the active flow `fid` without completing it: clear what it owns, leave
    /// nothing of it pending, and resume the flow it interrupted. The reply says so.
    pub(super) async fn cancel_flow(&mut self, fid: &str) -> Result<String, AgentError> {
        let c = Command::CancelFlow;
        let src = DirectiveSource::Command(c.to_string());
        self.handled(c);
        let title = self.flow_title(fid);
        let mut clears = self.owned_fields(fid);
        let mut reply = format!("Okay, I've stopped {title}.");
        if let Some(f) = self.a.flow(fid) {
            for c in &f.cancel_clears {
                if !clears.iter().any(|o| o == c.as_ref()) {
                    clears.push(c.to_string());
                }
            }
            if let Some(text) = &f.cancel_after_tool
                && self.once_tool_ran(fid)
            {
                reply.clone_from(text);
            }
        }
        self.forget_skipped(fid);
        self.leave_flow().await;
        self.clear_fields(fid, &clears, &src)?;
        self.s.tentative.retain(|t| t.flow != fid);
        self.s.pending = None;
        self.next_pending = None;
        if self
            .s
            .approval
            .as_ref()
            .is_some_and(|a| a.at.as_ref().is_some_and(|at| at.flow == fid))
        {
            self.s.approval = None;
        }
        self.pos_gen += 1;
        self.s.flow = None;
        self.s.step = None;
        self.awaiting = false;
        self.stopped = Some(StoppedReason::FlowCancelled {
            flow: fid.to_owned(),
        });
        match self.resume_interrupted(fid, false) {
            Some(_) => {
                self.stopped = None;
            }
            None => {
                // Frames it left behind go with it.
                self.s.stack.retain(|f| f.by != fid);
                reply.push(' ');
                reply.push_str(super::compose::ANYTHING_ELSE);
            }
        }
        Ok(reply)
    }

    /// Write back the values a new session has for `fields` of `fid` (a cancel, a
    /// restart), recorded in the directive chain under `src`.
    fn clear_fields(
        &mut self,
        fid: &str,
        fields: &[String],
        src: &DirectiveSource,
    ) -> Result<(), AgentError> {
        let fresh = serde_json::to_value(D::default()).unwrap_or_default();
        let reset: Map<String, Value> = fields
            .iter()
            .map(|f| (f.clone(), fresh.get(f).cloned().unwrap_or(Value::Null)))
            .collect();
        // In the chain: the command, with the values it clears.
        let cleared = Directive {
            data: (!reset.is_empty()).then(|| reset.clone()),
            ..Directive::default()
        };
        self.record(src, &cleared, &[], &[], false);
        if !fields.is_empty() {
            tracing::debug!(flow = fid, ?fields, "fields cleared");
            self.s.data =
                apply_unchecked(&self.s.data, &reset).map_err(|e| AgentError::data(src, e))?;
            self.refresh_present();
        }
        Ok(())
    }

    /// Whether one of `fid`'s once-tools ran since the flow last completed: a
    /// cancel then says the flow's `cancel_after_tool`.
    fn once_tool_ran(&self, fid: &str) -> bool {
        let Some(f) = self.a.flow(fid) else {
            return false;
        };
        // The turn of its last completion, when that is known: tools that ran after it.
        let since = self
            .s
            .last_completed
            .as_ref()
            .filter(|c| c.flow == fid)
            .map(|c| c.turn);
        f.tools
            .iter()
            .chain(f.steps.iter().flat_map(|s| s.tools.iter()))
            .filter(|t| t.effect() == crate::tool::Effect::Once)
            .filter_map(|t| self.s.acted.get(t.name()))
            .any(|&turn| since.is_none_or(|s| turn > s))
    }

    /// The fields `fid` owns: those it collects that no flow on the stack and no
    /// completed flow collects.
    fn owned_fields(&self, fid: &str) -> Vec<String> {
        let Some(flow) = self.a.flow(fid) else {
            return Vec::new();
        };
        let others: Vec<&str> = self
            .s
            .stack
            .iter()
            .map(|f| f.flow.as_str())
            .chain(self.s.completed_flows.iter().map(String::as_str))
            .filter(|f| *f != fid)
            .collect();
        flow.collectable
            .iter()
            .filter(|field| {
                !others.iter().any(|o| {
                    self.a
                        .flow(o)
                        .is_some_and(|of| of.collectable.iter().any(|c| c == *field))
                })
            })
            .map(ToString::to_string)
            .collect()
    }

    /// Apply a start of `target` resuming it where it was interrupted.
    pub(super) async fn resume_at(
        &mut self,
        target: &str,
        step: String,
        src: DirectiveSource,
    ) -> Result<(), AgentError> {
        let d = Directive::go_to_step_in(target, step);
        self.record(&src, &d, &[], &[], false);
        self.apply(src, d, Phase::Pre).await
    }
}

#[cfg(test)]
mod tests {
    use super::plainly_cancels;

    #[test]
    fn a_plain_stop_is_read_by_code_and_anything_else_is_not() {
        let names = ["hotel".to_owned(), "booking".to_owned()];
        for m in [
            "cancel",
            "Cancel please",
            "stop",
            "never mind",
            "forget it",
            "cancel the booking",
            "forget the whole thing",
        ] {
            assert!(plainly_cancels(m, || names.to_vec()), "{m}");
        }
        for m in [
            "I don't need the room anymore",
            "no",
            "stop at 5pm",
            "cancel my other order at 5",
            "cancel the order",
        ] {
            assert!(!plainly_cancels(m, || names.to_vec()), "{m}");
        }
    }
}
