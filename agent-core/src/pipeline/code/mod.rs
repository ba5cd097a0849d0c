//! Code flows inside a turn: start one (routing, handoff, directive), run the active
//! one by replaying its fn against the journal (`run.rs`), serve its effects (answer
//! extraction, tools: `effects.rs`), and turn its outcome into the turn's message.

mod effects;
mod run;

use run::RunEnd;

use serde_json::Value;

use crate::codeflow::{CodeState, Entry, Outcome};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::pipeline::Turn;
use crate::pipeline::text::join;
use crate::response::{DirectiveSource, StoppedReason};

/// How the code part of a turn ended.
pub(crate) enum CodeExit {
    /// The code flow produced the turn's message.
    Reply(String, StoppedReason),
    /// The classic path continues (a declarative flow was handed the conversation, or
    /// routing fell back); `said` goes in front of its message.
    Classic { said: String },
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Make `id` the active code flow (leaving any declarative flow).
    pub(crate) async fn start_code(
        &mut self,
        id: &str,
        input: Option<Value>,
        via: &DirectiveSource,
    ) -> Result<(), AgentError> {
        let from = match &self.s.code {
            Some(c) => Some(c.flow.clone()),
            None => self.s.flow.clone(),
        };
        if from.as_deref() != Some(id) {
            if from.is_some() {
                if self.hops >= self.a.config.max_transitions_per_turn {
                    tracing::warn!(blocked = id, "transition cap reached");
                    self.stopped = Some(StoppedReason::TransitionCap {
                        blocked: id.to_owned(),
                    });
                    return Ok(());
                }
                self.hops += 1;
            }
            if self.s.flow.is_some() {
                self.leave_flow().await;
            }
            self.note_transition(from.clone(), id, via);
        }
        self.pos_gen += 1;
        self.s.flow = None;
        self.s.step = None;
        self.awaiting = false;
        self.code_fresh = true;
        self.s.code = Some(CodeState::start(id, from, input));
        Ok(())
    }

    /// Run the active code flow for this turn.
    pub(crate) async fn code_turn(&mut self) -> Result<CodeExit, AgentError> {
        if let Some((reply, stopped)) = self.cancel_code_flow() {
            return Ok(CodeExit::Reply(reply, stopped));
        }
        let mut said: Vec<String> = Vec::new();
        loop {
            let Some(mut state) = self.s.code.take() else {
                return Ok(CodeExit::Classic { said: join(&said) });
            };
            let Some(flow) = self.a.code_flow(&state.flow).cloned() else {
                tracing::warn!(flow = %state.flow, "code flow is not registered; falling back");
                return Ok(CodeExit::Classic { said: join(&said) });
            };
            self.meta_flow = Some((state.flow.clone(), state.handoff_from.clone()));
            let before = state.clone();
            let start_len = state.journal.len();
            let message = (!self.code_fresh).then(|| self.msg.to_owned());
            self.code_fresh = false;
            let end = self.run_code(&flow, &mut state, message).await?;
            let new_says = state.journal[start_len.min(state.journal.len())..]
                .iter()
                .filter_map(|e| match e {
                    Entry::Say { text } => Some(text.clone()),
                    _ => None,
                });
            match end {
                RunEnd::Held => {
                    said.extend(new_says);
                    self.s.code = Some(state);
                    return Ok(CodeExit::Reply(join(&said), StoppedReason::NeedsInput));
                }
                RunEnd::Suspended(question) => {
                    said.extend(new_says);
                    said.push(question);
                    state.failures = 0;
                    self.s.step = state.pending_ask().map(str::to_owned);
                    self.s.code = Some(state);
                    return Ok(CodeExit::Reply(join(&said), StoppedReason::NeedsInput));
                }
                RunEnd::Failed { message, replay } => {
                    let mut state = before;
                    state.failures += 1;
                    if replay.is_some() {
                        tracing::error!(flow = %state.flow, failures = state.failures, %message, "code flow broke a replay rule");
                    } else {
                        tracing::warn!(flow = %state.flow, failures = state.failures, %message, "code flow step failed");
                    }
                    if state.failures >= self.a.config.max_flow_failures.max(1) {
                        // Repeated failures: clear the flow, the classic reply answers.
                        self.code_stopped = Some(StoppedReason::FlowFailed {
                            flow: state.flow.clone(),
                            message,
                            cleared: true,
                            replay,
                        });
                        self.s.step = None;
                        return Ok(CodeExit::Classic { said: join(&said) });
                    }
                    self.s.step = state.pending_ask().map(str::to_owned);
                    let flow = state.flow.clone();
                    self.s.code = Some(state);
                    said.push(self.a.config.flow_error_reply.clone());
                    return Ok(CodeExit::Reply(
                        join(&said),
                        StoppedReason::FlowFailed {
                            flow,
                            message,
                            cleared: false,
                            replay,
                        },
                    ));
                }
                RunEnd::Done(outcome) => {
                    said.extend(new_says);
                    let id = state.flow.clone();
                    if !self.s.completed_flows.contains(&id) {
                        self.s.completed_flows.push(id.clone());
                    }
                    self.s.step = None;
                    let ended = match outcome {
                        Outcome::EndSession { reason } => {
                            self.end_reason = reason.clone();
                            self.clear_session = true;
                            StoppedReason::Aborted { reason }
                        }
                        Outcome::End { reason } => {
                            self.end_reason = reason;
                            StoppedReason::FlowCompleted { flow: id }
                        }
                        Outcome::Handoff { to, input } => {
                            if self.a.code_flow(&to).is_some() {
                                self.s.code = Some(state);
                                self.start_code(&to, input, &DirectiveSource::Handoff(id.clone()))
                                    .await?;
                                if self.s.code.is_none() || self.stopped.is_some() {
                                    let st = self
                                        .stopped
                                        .take()
                                        .unwrap_or(StoppedReason::FlowCompleted { flow: id });
                                    self.s.code = None;
                                    return Ok(CodeExit::Reply(join(&said), st));
                                }
                                continue;
                            }
                            if self.a.flow(&to).is_some() {
                                self.s.code = Some(state);
                                self.enter_flow(&to, None, DirectiveSource::Handoff(id.clone()))
                                    .await?;
                                self.s.code = None;
                                self.meta_flow = Some((to, Some(id)));
                                return Ok(CodeExit::Classic { said: join(&said) });
                            }
                            // Unresolved handoff: the flow ends, the classic reply answers.
                            tracing::warn!(flow = %id, target = %to, "handoff to an unknown flow; falling back to the classic reply");
                            self.meta_flow = None;
                            return Ok(CodeExit::Classic { said: join(&said) });
                        }
                    };
                    if said.is_empty() {
                        // Ended without a word this turn: the agent's own reply answers
                        // the message (never an empty one); the turn still reports
                        // how the flow ended.
                        self.code_stopped = Some(ended);
                        return Ok(CodeExit::Classic {
                            said: String::new(),
                        });
                    }
                    return Ok(CodeExit::Reply(join(&said), ended));
                }
            }
        }
    }
}
