//! One turn of a code flow's fn: replayed against its journal until it pauses, ends or
//! fails, with its requests (answer extraction, tools, suspension) served as it runs
//! and the turn's time limit enforced.

use std::sync::{Arc, Mutex};

use futures::FutureExt;

use crate::codeflow::data_view::{self, DataViews};
use crate::codeflow::{CodeFlow, CodeState, CxInner, FlowCx, Outcome, Replay, Request};
use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, CodeFlowError};
use crate::pipeline::Turn;
use crate::pipeline::approve::{Gate, decided_call};

/// How one run of the fn ended.
pub(super) enum RunEnd {
    Suspended(String),
    /// A `ctx.tool` call is held for a person's approval (`self.paused`).
    Held,
    Done(Outcome),
    /// A failed step: an error or a panic in the fn, a runaway loop, the time limit,
    /// or a broken replay rule (`replay`). Counts toward `max_flow_failures`.
    Failed {
        message: String,
        replay: Option<CodeFlowError>,
    },
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Replay the fn against the journal until it pauses, ends or fails. In
    /// always-replay mode, every new record starts the fn again from scratch.
    ///
    /// A broken replay rule (`NonDeterministic`, `EndedEarly`, a recorded answer that
    /// no longer fits) is a failed step like an error in the fn: it counts toward
    /// `max_flow_failures`, so a flow that can no longer be replayed is cleared and
    /// the session goes on. In always-replay mode (the test kit's) it fails the turn
    /// instead, so the test sees it at once.
    pub(super) async fn run_code(
        &mut self,
        flow: &Arc<CodeFlow<D, C>>,
        state: &mut CodeState,
        mut message: Option<String>,
    ) -> Result<RunEnd, AgentError> {
        let always = self.a.config.always_replay;
        let budget = self.a.config.max_flow_effects_per_turn.max(1) as usize;
        let effect_limit = state.journal.len() + budget;
        let mut verified = usize::MAX;
        let broke = |e: CodeFlowError| {
            if always {
                Err(AgentError::CodeFlow(e))
            } else {
                Ok(RunEnd::Failed {
                    message: e.to_string(),
                    replay: Some(e),
                })
            }
        };
        // The data as this turn began: what `ctx.data()` shows of the part that runs
        // live, recorded so that replays show the same.
        let turn_data = self.s.data.clone();
        // No Tokio runtime, no timer: the flow runs without its stop (see `deadline`).
        let stop_at = self
            .deadline
            .filter(|_| tokio::runtime::Handle::try_current().is_ok())
            .map(|d| (d.flow_stop(), d.limit()));
        loop {
            let run_len = state.journal.len();
            data_view::start(state, &turn_data);
            let views = DataViews::build(state, &turn_data);
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Request<D, C>>();
            let inner = Arc::new(CxInner {
                state: Mutex::new(Replay {
                    journal: std::mem::take(&mut state.journal),
                    pos: 0,
                    message: message.take(),
                    error: None,
                    runaway: false,
                }),
                tx,
                flow: state.flow.clone(),
                session_id: self.s.id.clone(),
                data: turn_data.clone(),
                views: views.views,
                context: self.s.context.clone(),
                input: state.input.clone(),
                handoff_from: state.handoff_from.clone(),
                clock: self.a.clock.clone(),
                tools: self.a.tools.clone(),
                always_replay: always,
                effect_limit,
            });
            let fut = (flow.run)(FlowCx {
                inner: inner.clone(),
            });
            let mut fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
            enum Stop {
                Returned(Result<crate::codeflow::FlowResult, String>),
                Suspend(String),
                Held,
                Restart,
                Broken,
                OutOfTime,
            }
            // Only a fn that awaits can be stopped: one spinning without an await
            // never yields to this timer (documented on `turn_timeout`).
            let out_of_time = async {
                match stop_at {
                    Some((at, _)) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let mut out_of_time = std::pin::pin!(out_of_time);
            let mut served: Result<(), AgentError> = Ok(());
            let stop = loop {
                tokio::select! {
                    biased;
                    r = &mut fut => {
                        break Stop::Returned(r.map_err(|p| crate::tool::panic_message(p.as_ref())));
                    }
                    () = &mut out_of_time => break Stop::OutOfTime,
                    req = rx.recv() => match req {
                        Some(Request::Extract { key, question, schema, reply }) => {
                            match self.extract_answer(&state.flow, &key, &question, schema).await {
                                Ok(v) => { let _ = reply.send(v); }
                                Err(e) => { served = Err(e); break Stop::Broken; }
                            }
                        }
                        Some(Request::Agree { reply }) => {
                            // A plain yes is read by code; anything else is judged alone.
                            let yes = if super::super::consent::plainly_agrees(self.msg, &[]) {
                                true
                            } else {
                                match self.agrees_with_last_question().await {
                                    Ok(yes) => yes,
                                    Err(e) => { served = Err(e); break Stop::Broken; }
                                }
                            };
                            let _ = reply.send(yes);
                        }
                        Some(Request::Tool { tool, name, args, reply }) => {
                            // The call a person just decided (a resumed turn).
                            if let Some(h) = self.decided.take_if(|h| h.tool == name && h.arguments == args) {
                                let (gate, args) = decided_call(&h);
                                let r = self.code_tool(&state.flow, tool, name, args, Some((gate, h.key))).await;
                                match r {
                                    Ok(r) => { let _ = reply.send(r); }
                                    Err(e) => { served = Err(e); break Stop::Broken; }
                                }
                                continue;
                            }
                            if let Ok(t) = &tool {
                                let call = crate::provider::ToolCall { id: String::new(), name: name.clone(), arguments: args.clone() };
                                let tools = [t.clone()];
                                match self.gate_round(&tools, std::slice::from_ref(&call), Some(&state.flow)) {
                                    None => break Stop::Held,
                                    Some(mut gates) => {
                                        if let Some(Gate::Fail(e)) = gates.pop() {
                                            let _ = reply.send((false, e.to_string()));
                                            continue;
                                        }
                                    }
                                }
                            }
                            let r = self.code_tool(&state.flow, tool, name, args, None).await;
                            match r {
                                Ok(r) => { let _ = reply.send(r); }
                                Err(e) => { served = Err(e); break Stop::Broken; }
                            }
                        }
                        Some(Request::Suspend { question }) => break Stop::Suspend(question),
                        Some(Request::Restart) => break Stop::Restart,
                        Some(Request::Stop) | None => break Stop::Broken,
                    }
                }
            };
            drop(fut);
            let replay = {
                let mut st = inner.state.lock().unwrap_or_else(|e| e.into_inner());
                Replay {
                    journal: std::mem::take(&mut st.journal),
                    pos: st.pos,
                    message: st.message.take(),
                    error: st.error.take(),
                    runaway: st.runaway,
                }
            };
            state.journal = replay.journal;
            views.live.record(state);
            message = replay.message;
            served?;
            if replay.runaway {
                return Ok(RunEnd::Failed {
                    message: format!(
                        "the flow recorded {budget} effects in one turn without asking the user anything (a loop?); see `max_flow_effects_per_turn`"
                    ),
                    replay: None,
                });
            }
            if let Some(e) = replay.error {
                return broke(e);
            }
            match stop {
                Stop::Broken => {
                    return broke(CodeFlowError::NonDeterministic {
                        flow: state.flow.clone(),
                        position: replay.pos,
                        recorded: "the run".into(),
                        called: "an effect after the context was stopped".into(),
                    });
                }
                Stop::OutOfTime => {
                    let limit = stop_at.map(|(_, l)| l).unwrap_or_default();
                    return Ok(RunEnd::Failed {
                        message: format!(
                            "the flow was still running near the turn's time limit ({limit:?}, see `turn_timeout`); a loop that never asks the user?"
                        ),
                        replay: None,
                    });
                }
                Stop::Restart => continue,
                Stop::Held => return Ok(RunEnd::Held),
                Stop::Suspend(q) => {
                    if always && state.journal.len() != run_len && verified != state.journal.len() {
                        // Prove the pause point is reached again from scratch.
                        verified = state.journal.len();
                        continue;
                    }
                    return Ok(RunEnd::Suspended(q));
                }
                Stop::Returned(Err(panic)) => {
                    return Ok(RunEnd::Failed {
                        message: format!("the flow panicked: {panic}"),
                        replay: None,
                    });
                }
                Stop::Returned(Ok(Err(e))) => {
                    return Ok(RunEnd::Failed {
                        message: e.to_string(),
                        replay: None,
                    });
                }
                Stop::Returned(Ok(Ok(outcome))) => {
                    if replay.pos < state.journal.len() {
                        return broke(CodeFlowError::EndedEarly {
                            flow: state.flow.clone(),
                            position: replay.pos,
                            recorded: state.journal.len(),
                        });
                    }
                    return Ok(RunEnd::Done(outcome));
                }
            }
        }
    }
}
