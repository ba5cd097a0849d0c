//! Code flows inside a turn: start one (routing, handoff, directive), run the active
//! one by replaying its fn against the journal, serve its effects (answer extraction,
//! tools), and turn its outcome into the turn's message.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use serde_json::{Value, json};

use super::Turn;
use super::model::answer::{CUT_SHORT, ask_for_repair, parse_json_object};
use super::text::join;
use crate::codeflow::data_view::{self, DataViews};
use crate::codeflow::{CodeFlow, CodeState, CxInner, Entry, FlowCx, Outcome, Replay, Request};
use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, CodeFlowError};
use crate::fxhash::FxHasher;
use crate::provider::{CallKind, FinishReason, Message, OutputSchema};
use crate::response::{DirectiveSource, Event, StoppedReason, ToolCallRecord};
use crate::tool::{Tool, ToolCxParts, ToolError};

/// How the code part of a turn ended.
pub(crate) enum CodeExit {
    /// The code flow produced the turn's message.
    Reply(String, StoppedReason),
    /// The classic path continues (a declarative flow was handed the conversation, or
    /// routing fell back); `said` goes in front of its message.
    Classic { said: String },
}

/// How one run of the fn ended.
enum RunEnd {
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

    /// Replay the fn against the journal until it pauses, ends or fails. In
    /// always-replay mode, every new record starts the fn again from scratch.
    ///
    /// A broken replay rule (`NonDeterministic`, `EndedEarly`, a recorded answer that
    /// no longer fits) is a failed step like an error in the fn: it counts toward
    /// `max_flow_failures`, so a flow that can no longer be replayed is cleared and
    /// the session goes on. In always-replay mode (the test kit's) it fails the turn
    /// instead, so the test sees it at once.
    async fn run_code(
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
                        Some(Request::Tool { tool, name, args, reply }) => {
                            // The call a person just decided (a resumed turn).
                            if let Some(h) = self.decided.take_if(|h| h.tool == name && h.arguments == args) {
                                let (gate, args) = super::approve::decided_call(&h);
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
                                        if let Some(super::approve::Gate::Fail(e)) = gates.pop() {
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

    /// One extraction call: the user's answer to an open question, against the
    /// answer type's schema (`None` when the message does not answer it).
    async fn extract_answer(
        &mut self,
        flow: &str,
        key: &str,
        question: &str,
        mut schema: Value,
    ) -> Result<Option<Value>, AgentError> {
        let mut sys = String::with_capacity(256 + question.len());
        sys.push_str(&self.a.section);
        let _ = write!(
            sys,
            "You asked the user: \"{question}\"\nExtract their answer from their latest message into `answer`, following the schema. If the message does not answer the question, set `answer` to null. Answer with JSON only."
        );
        let defs = match &mut schema {
            Value::Object(o) => {
                o.remove("$schema");
                o.remove("title");
                o.remove("$defs")
            }
            _ => None,
        };
        let schema_text = schema.to_string();
        let cache_key = {
            let mut h = FxHasher::default();
            (flow, key, &schema_text).hash(&mut h);
            (h.finish() & !0xf) | 5
        };
        let out_schema = self.a.cached_schema(cache_key, || {
            let mut s = json!({
                "type": "object",
                "properties": { "answer": { "anyOf": [schema, { "type": "null" }] } },
                "required": ["answer"],
                "additionalProperties": false,
            });
            if let (Some(d), Value::Object(o)) = (defs, &mut s) {
                o.insert("$defs".into(), d);
            }
            s
        });
        // The question (in the system prompt) and the user's latest message are what
        // the answer depends on: the call's cost stays flat however long the
        // conversation is, and small local models are not led astray by earlier turns.
        let latest = vec![Message::user(self.msg)];
        let mut req = self.request(CallKind::Extract, sys, latest);
        // An answer is the message's content in the schema's shape, so it is never much
        // longer than both: a bound keeps a model that rambles (small local ones fill
        // their context with whitespace) from spending minutes on it.
        let bound = u32::try_from(self.msg.chars().count() / 2 + schema_text.len() / 4 + 64)
            .unwrap_or(u32::MAX);
        req.max_tokens = Some(req.max_tokens.map_or(bound, |m| m.min(bound)));
        req.output = Some(OutputSchema {
            name: "answer".into(),
            schema: out_schema,
        });
        let mut attempts = 0;
        loop {
            let (resp, _) = self.call(&req, None).await?;
            let parsed = if resp.finish == FinishReason::Length {
                Err(CUT_SHORT.to_owned())
            } else {
                parse_json_object(&resp.content)
            };
            match parsed {
                Ok(mut m) => return Ok(m.remove("answer").filter(|v| !v.is_null())),
                Err(problem) if attempts < self.a.config.repair_attempts => {
                    attempts += 1;
                    tracing::warn!(%problem, flow, key, "malformed answer extraction; asking for a repair");
                    ask_for_repair(&mut req, resp.content, &problem);
                }
                Err(message) => {
                    return Err(AgentError::MalformedModelOutput {
                        kind: CallKind::Extract,
                        message,
                    });
                }
            }
        }
    }

    /// A tool call from a code flow: the same gates as the model's tool calls; errors
    /// and panics come back as failed results; data writes apply.
    pub(super) async fn code_tool(
        &mut self,
        flow: &str,
        tool: Result<Arc<dyn Tool<D, C>>, String>,
        name: String,
        args: Value,
        held: Option<(super::approve::Gate, String)>,
    ) -> Result<(bool, String), AgentError> {
        self.emit(Event::ToolCall {
            name: name.clone(),
            arguments: args.clone(),
        });
        let parts = ToolCxParts {
            turn: self.turn_tag.clone(),
            session_id: Arc::from(self.s.id.as_str()),
            flow: Some(Arc::from(flow)),
            step: None,
            data: Arc::new(self.s.data.clone()),
            context: Arc::new(self.s.context.clone()),
        };
        let r = match (tool, held) {
            (_, Some((super::approve::Gate::Fail(e), _))) => Err(e),
            (Ok(t), held) => {
                let span = crate::telemetry::tool_span(
                    &name,
                    None,
                    Some(t.description()),
                    &args,
                    Some(flow),
                    false,
                );
                // The call's position among the turn's live calls: a replay of the
                // flow does not call recorded tools again, so a retried turn numbers
                // its calls the same way. A call held for approval keeps its key.
                let cx = match held {
                    Some((_, key)) => parts.keyed(key),
                    None => {
                        let cx = parts.cx(self.tool_seq, &name, &args);
                        self.tool_seq += 1;
                        cx
                    }
                };
                let limit = self.a.config.tool_timeout;
                let j = crate::journal::JournalCx {
                    store: self.a.store.as_ref(),
                    hook: self.a.on_unknown_outcome.as_ref(),
                };
                let call = crate::journal::call(j, t.as_ref(), cx, args.clone(), limit);
                let r = tracing::Instrument::instrument(call, span.clone()).await;
                crate::telemetry::record_tool(&span, &r);
                r
            }
            (Err(msg), _) => Err(ToolError::Failed(msg)),
        };
        let (ok, content) = match r {
            Ok(out) => {
                let src = DirectiveSource::Tool(name.clone());
                // A write the data type refuses fails the call (the flow sees why)
                // rather than the turn: the same call would fail every turn.
                let refused = match &out.directive.data {
                    Some(p) => match self.write_data(&src, p).await {
                        Err(AgentError::Data { error, .. }) => Some(error),
                        other => other.map(|()| None)?,
                    },
                    None => None,
                };
                if out.directive.position.is_some() || out.directive.reply.is_some() {
                    tracing::warn!(tool = %name, "directive positions from tools called by code flows are ignored; return a handoff from the flow instead");
                }
                match refused {
                    None => (true, out.content),
                    Some(e) => {
                        tracing::warn!(tool = %name, error = %e, "code flow tool's data write refused");
                        (false, format!("the tool's data write was refused: {e}"))
                    }
                }
            }
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "code flow tool call failed");
                (false, e.to_string())
            }
        };
        let rec = ToolCallRecord {
            name,
            arguments: args,
            output: content.clone(),
            ok,
        };
        self.emit(Event::ToolResult(rec.clone()));
        self.tool_calls.push(rec);
        Ok((ok, content))
    }
}
