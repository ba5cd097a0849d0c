//! One turn, in the spec's fixed order: pending directive; pre-phase signals together
//! with routing (one classifier call); data extraction and the reply in one structured
//! call where the engine can predict the step; the step walk (auto chain, branches,
//! linear successor, skipping satisfied steps); pre-LLM and post-LLM directive buses;
//! post-phase signals; persistence last. Streaming and non-streaming share this path.

mod apply;
mod approve;
mod code;
mod command;
mod consent;
mod converse;
mod correct;
pub(crate) mod deadline;
pub(crate) mod guard;
mod judged;
mod model;
mod reentry;
mod resume;
mod screen;
mod signals;
mod speculate;
pub(crate) mod stream;
mod switch;
mod text;
mod walk;

use std::sync::Arc;

use text::{cap_chars, join};

use crate::agent::AgentInner;
use crate::data::{AgentContext, AgentData, FieldSet};
use crate::directive::{Directive, PreDirective};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::fxhash::{FxHashMap, FxHashSet};
use crate::hook::{Cx, Dispatcher};
use crate::provider::{Message, Usage};
use crate::response::{
    AgentResponse, ChainEntry, DirectiveSource, Event, StepRef, StoppedReason, ToolCallRecord,
    Transition,
};
use crate::session::Session;
use crate::tool::Tool;

pub(crate) use walk::Stop;

/// Where streamed events go.
pub(crate) struct Sink<D> {
    tx: tokio::sync::mpsc::UnboundedSender<Event<D>>,
    text_sent: std::sync::atomic::AtomicBool,
}

impl<D> Sink<D> {
    pub(crate) fn new(tx: tokio::sync::mpsc::UnboundedSender<Event<D>>) -> Self {
        Self {
            tx,
            text_sent: std::sync::atomic::AtomicBool::new(false),
        }
    }
    pub(crate) fn send(&self, e: Event<D>) {
        if matches!(e, Event::TextDelta(_)) {
            self.text_sent
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let _ = self.tx.send(e);
    }
    /// Whether reply text already reached the consumer (a re-run would repeat it).
    pub(crate) fn text_sent(&self) -> bool {
        self.text_sent.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Pre-LLM augmentation accumulated for this turn's model call.
pub(crate) struct Augment<D, C> {
    pub(crate) append: Vec<String>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) halt: bool,
    /// Bumped whenever something is added (a speculative call made before is stale).
    pub(crate) generation: u32,
}

/// Bus phase of an emission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before this turn's message exists: positions redirect now.
    Pre,
    /// After the message exists: completion chains arm the next turn.
    Post,
}

/// The working state of one turn. Works on a copy of the session; nothing is stored
/// unless the whole turn succeeds.
pub(crate) struct Turn<'a, D, C> {
    pub(crate) a: &'a AgentInner<D, C>,
    pub(crate) s: Session<D, C>,
    pub(crate) expected_version: u64,
    pub(crate) msg: &'a str,
    pub(crate) sink: Option<&'a Sink<D>>,
    pub(crate) present: FieldSet,
    pub(crate) dispatcher: Dispatcher,
    /// `s.step` spoke last turn and this message answers it.
    pub(crate) awaiting: bool,
    /// Bumped on every position change.
    pub(crate) pos_gen: u64,
    /// A correction of a completed flow was handled this turn (read once per turn).
    pub(crate) correction_done: bool,
    pub(crate) chain: Vec<ChainEntry>,
    pub(crate) executed: Vec<StepRef>,
    pub(crate) tool_calls: Vec<ToolCallRecord>,
    pub(crate) transitions: Vec<Transition>,
    pub(crate) signals_fired: Vec<String>,
    pub(crate) calls: u32,
    pub(crate) usage: Usage,
    pub(crate) dropped: Vec<String>,
    pub(crate) rejected: Vec<String>,
    pub(crate) ungrounded: Vec<crate::response::DroppedValue>,
    pub(crate) inferred: Vec<String>,
    /// Sentences of the reply removed by claim guards.
    pub(crate) withheld: Vec<String>,
    /// What the next rendering must tell the user: values not stored and why.
    pub(crate) notes: Vec<String>,
    /// Verdicts of `when` conditions judged this turn, by condition text.
    pub(crate) judged: FxHashMap<String, bool>,
    /// Conditions of the awaiting step left for the speculative respond call to judge
    /// (when no classifier call is due anyway); predicted as false.
    pub(crate) deferred: Vec<String>,
    pub(crate) hops: u32,
    /// An intermediate message not shown to the user, passed to the next rendering.
    pub(crate) carried: Option<String>,
    pub(crate) aug: Augment<D, C>,
    /// A verbatim reply emitted before the message existed.
    pub(crate) reply: Option<String>,
    /// A verbatim reply emitted after it (replaces the message).
    pub(crate) post_reply: Option<String>,
    /// A terminal outcome (abort, caps).
    pub(crate) stopped: Option<StoppedReason>,
    pub(crate) clear_session: bool,
    pub(crate) completed: Vec<String>,
    /// Post-LLM bus of the current rendering.
    pub(crate) post_bus: Vec<(DirectiveSource, Directive)>,
    /// What becomes `s.pending` at the end.
    pub(crate) next_pending: Option<Directive>,
    pub(crate) entered: FxHashSet<(Arc<str>, Arc<str>)>,
    /// A step an explicit jump (`go_to_step`, branch target) landed on: it speaks even
    /// when its fields are already collected.
    pub(crate) landed: Option<(String, String)>,
    pub(crate) prepared: FxHashSet<(Arc<str>, Arc<str>)>,
    /// The inbound event this turn answers (exactly-once).
    pub(crate) event_id: Option<String>,
    /// A speculative rendering call is under way (made before the walk).
    pub(crate) speculating: bool,
    /// An accepted speculative answer that asked for an action: the next respond call
    /// returns it instead of asking the model again, so the action runs (and its tool
    /// round follows) without a second rendering.
    pub(crate) replay: Option<crate::provider::ModelResponse>,
    /// Reply text already reached the consumer (live streaming).
    pub(crate) streamed: bool,
    /// Characters of reply text streamed live so far (capped at `max_reply_chars`).
    pub(crate) live_chars: usize,
    /// The active code flow started this turn (the message started it; it does not
    /// answer its first question).
    pub(crate) code_fresh: bool,
    /// The flow that produced the reply and the one that handed off to it.
    pub(crate) meta_flow: Option<(String, Option<String>)>,
    /// How a code flow that left the reply to the classic path ended this turn (it
    /// failed repeatedly and was cleared, or ended without saying anything): the
    /// turn's stopped reason.
    pub(crate) code_stopped: Option<StoppedReason>,
    /// The reply came from a code flow.
    pub(crate) from_code: bool,
    /// The reason a code flow gave to `ctx.end` this turn.
    pub(crate) end_reason: Option<String>,
    /// The cached previous save, reused by the incremental encoding.
    pub(crate) prev: Option<crate::session::PreviousSave>,
    /// What this turn saved, for the decoded-session cache.
    pub(crate) saved: Option<(Vec<u8>, crate::session::HistorySpan)>,
    /// When the turn's work must be done (`AgentConfig::turn_timeout`).
    pub(crate) deadline: Option<deadline::Deadline>,
    /// The session lease the turn holds (its saves are fenced by it).
    pub(crate) lease: Option<Arc<crate::store::HeldLease>>,
    /// The turn's identity in tool call keys ([`crate::journal::turn_tag`]); kept
    /// across the re-runs of one `respond` call.
    pub(crate) turn_tag: Arc<str>,
    /// Tool calls run so far this turn (model rounds and code flows): the next
    /// call's position in its idempotency key.
    pub(crate) tool_seq: usize,
    /// A tool round held for approval this turn (the turn ends with it).
    pub(crate) paused: Option<crate::approval::PendingApproval>,
    /// This turn resolves a held round instead of answering a message.
    pub(crate) resume: Option<crate::approval::PendingApproval>,
    /// Where a resumed turn answers from (instead of the walk, once).
    pub(crate) resume_at: Option<Stop>,
    /// The renderings of this turn offer no tools (a resumed round's answer).
    pub(crate) tools_off: bool,
    /// A code flow's held call, decided: it runs when the replay makes it again.
    pub(crate) decided: Option<crate::approval::HeldCall>,
    /// The user's messages normalised for grounding, made once per turn.
    pub(crate) said_memo: std::sync::Mutex<screen::SaidMemo>,
}

impl<'a, D: AgentData, C: AgentContext> Turn<'a, D, C> {
    /// Boxed: the turn is large, and a box keeps the futures that own it small (they
    /// are moved when awaited).
    pub(crate) fn new(
        a: &'a AgentInner<D, C>,
        load: crate::agent::Loaded<D, C>,
        msg: &'a str,
        sink: Option<&'a Sink<D>>,
        event_id: Option<String>,
    ) -> Box<Self> {
        let crate::agent::Loaded {
            session: s,
            present,
            prev,
        } = load;
        let present = present.unwrap_or_else(|| a.schema.present(&s.data));
        let awaiting = s.step.is_some();
        let turn_tag = crate::journal::turn_tag(event_id.as_deref(), s.turns, msg);
        Box::new(Self {
            a,
            expected_version: s.version,
            s,
            msg,
            sink,
            present,
            dispatcher: Dispatcher::default(),
            awaiting,
            pos_gen: 0,
            correction_done: false,
            chain: Vec::new(),
            executed: Vec::new(),
            tool_calls: Vec::new(),
            transitions: Vec::new(),
            signals_fired: Vec::new(),
            calls: 0,
            usage: Usage::default(),
            dropped: Vec::new(),
            rejected: Vec::new(),
            ungrounded: Vec::new(),
            inferred: Vec::new(),
            withheld: Vec::new(),
            notes: Vec::new(),
            judged: FxHashMap::default(),
            deferred: Vec::new(),
            hops: 0,
            carried: None,
            aug: Augment {
                append: Vec::new(),
                tools: Vec::new(),
                halt: false,
                generation: 0,
            },
            reply: None,
            post_reply: None,
            stopped: None,
            clear_session: false,
            completed: Vec::new(),
            post_bus: Vec::new(),
            next_pending: None,
            entered: FxHashSet::default(),
            landed: None,
            event_id,
            speculating: false,
            replay: None,
            streamed: false,
            live_chars: 0,
            prepared: FxHashSet::default(),
            code_fresh: false,
            meta_flow: None,
            code_stopped: None,
            from_code: false,
            end_reason: None,
            prev,
            saved: None,
            deadline: None,
            lease: None,
            turn_tag,
            tool_seq: 0,
            paused: None,
            resume: None,
            resume_at: None,
            tools_off: false,
            decided: None,
            said_memo: Default::default(),
        })
    }

    /// The read-only view hooks and predicates get.
    pub(crate) fn cx(&self) -> Cx<'_, D, C> {
        Cx {
            session_id: &self.s.id,
            data: &self.s.data,
            context: &self.s.context,
            flow: self.s.flow.as_deref(),
            step: self.s.step.as_deref(),
            history: &self.s.history,
            message: self.msg,
            present: &self.present,
            schema: &self.a.schema,
            dispatcher: &self.dispatcher,
        }
    }

    /// Report a hop to another flow (stream event, response, trace): the one place
    /// routing picks, handoffs and switches become visible.
    pub(crate) fn note_transition(
        &mut self,
        from: Option<String>,
        to: &str,
        via: &DirectiveSource,
    ) {
        tracing::info!(from = from.as_deref().unwrap_or("none"), to, via = %via, "transition");
        let t = Transition {
            from,
            to: to.to_owned(),
        };
        self.emit(Event::Transition(t.clone()));
        self.transitions.push(t);
    }

    pub(crate) fn emit(&self, e: Event<D>) {
        if let Some(s) = self.sink {
            s.send(e);
        }
    }

    pub(crate) fn flow(&self) -> Option<Arc<Flow<D, C>>> {
        self.s.flow.as_deref().and_then(|f| self.a.flow(f)).cloned()
    }

    pub(crate) fn refresh_present(&mut self) {
        self.present = self.a.schema.present(&self.s.data);
    }

    pub(crate) fn is_present(&self, idx: usize) -> bool {
        self.present.contains(idx)
    }

    /// Fail the turn if a callback panicked where its error could not be returned at
    /// once (see [`guard::test`]); checked before every model call and the save.
    pub(crate) fn faulted(&self) -> Result<(), AgentError> {
        self.dispatcher.take_fault().map_or(Ok(()), Err)
    }

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

        if self.s.turns == 0
            && let Some(h) = self.a.on_enter.clone()
        {
            let d = {
                let cx = self.cx();
                guard::hook(h.call(&cx), || "on_enter hook of the agent".into()).await?
            };
            self.emit_pre(DirectiveSource::AgentOnEnter, d).await?;
        }

        let command = if self.a.config.flow_commands {
            command::parse(self.msg)
        } else {
            None
        };
        if let Some(cmd) = command {
            if let Some(reply) = self.command(cmd).await? {
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
                code::CodeExit::Reply(message, _) if self.paused.is_some() => {
                    self.from_code = true;
                    return Ok(self.held_outcome(message));
                }
                code::CodeExit::Reply(message, stopped) => {
                    self.from_code = true;
                    return Ok((message, stopped, Vec::new()));
                }
                code::CodeExit::Classic { said: s } => said = s,
            }
        }

        self.run_certain_auto_hooks().await?;
        let (mut message, mut stopped, mut deltas) = self.converse().await?;
        if self.paused.is_some() {
            return Ok(self.held_outcome(join(&[said, message])));
        }
        if self.s.code.is_some() && !matches!(stopped, StoppedReason::Aborted { .. }) {
            // A declarative flow handed the conversation to a code flow this turn.
            match self.code_turn().await? {
                code::CodeExit::Reply(m, st) => {
                    self.from_code = true;
                    message = join(&[std::mem::take(&mut message), m]);
                    stopped = st;
                    deltas.clear();
                }
                code::CodeExit::Classic { said: s } => {
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
        let max = self.a.config.max_reply_chars;
        if message.chars().nth(max).is_some() {
            tracing::warn!(max, "reply longer than max_reply_chars; cut");
        }
        let message = cap_chars(message, max);
        Ok((message, stopped, deltas))
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

    /// Record a pre-LLM emission and apply it.
    pub(crate) async fn emit_pre(
        &mut self,
        source: DirectiveSource,
        d: PreDirective<D, C>,
    ) -> Result<(), AgentError> {
        self.record(&source, &d.base, &d.append_prompt, &d.inject_tools, d.halt);
        self.absorb_pre(source, d).await
    }

    /// Apply a pre-LLM emission (already recorded): augmentation, then the directive,
    /// then anything hooks dispatched.
    pub(crate) async fn absorb_pre(
        &mut self,
        source: DirectiveSource,
        d: PreDirective<D, C>,
    ) -> Result<(), AgentError> {
        d.base
            .validate()
            .map_err(|e| AgentError::directive(&source, e))?;
        if !d.append_prompt.is_empty() || !d.inject_tools.is_empty() || d.halt {
            self.aug.generation += 1;
        }
        self.aug.append.extend(d.append_prompt);
        for t in d.inject_tools {
            crate::directive::add_tool(&mut self.aug.tools, t);
        }
        self.aug.halt |= d.halt;
        Box::pin(self.apply(source.clone(), d.base, Phase::Pre)).await?;
        for queued in self.dispatcher.drain() {
            let src = DirectiveSource::HookDispatch(source.to_string());
            self.record(&src, &queued, &[], &[], false);
            Box::pin(self.apply(src, queued, Phase::Pre)).await?;
        }
        Ok(())
    }

    pub(crate) fn record(
        &mut self,
        source: &DirectiveSource,
        d: &Directive,
        append: &[String],
        tools: &[Arc<dyn Tool<D, C>>],
        halt: bool,
    ) {
        if d.is_empty() && append.is_empty() && tools.is_empty() && !halt {
            return;
        }
        self.chain.push(ChainEntry {
            source: source.clone(),
            directive: d.clone(),
            append_prompt: append.to_vec(),
            inject_tools: tools.iter().map(|t| t.name().to_owned()).collect(),
            halt,
        });
    }

    /// Which path produced the reply, for the response and the response hook.
    fn response_meta(&mut self) -> crate::codeflow::ResponseMeta {
        use crate::codeflow::{ResponseMeta, Source};
        let (flow, handoff_from) = match &self.meta_flow {
            Some((f, from)) if self.from_code => (Some(f.clone()), from.clone()),
            Some((f, from)) if self.s.flow.as_deref() == Some(f.as_str()) => {
                (Some(f.clone()), from.clone())
            }
            _ => (self.s.flow.clone(), None),
        };
        ResponseMeta {
            source: if self.from_code {
                Source::Flow
            } else {
                Source::Classic
            },
            flow,
            handoff_from,
            end_reason: self.end_reason.take(),
        }
    }

    /// Persist, build the response, and keep the saved session in the cache.
    async fn finish(
        mut self: Box<Self>,
        message: String,
        stopped: StoppedReason,
        deltas: Vec<String>,
    ) -> Result<AgentResponse<D>, AgentError> {
        let response = self.persist(message, stopped, deltas).await?;
        let meta = &response.meta;
        let span = tracing::Span::current();
        span.record("source", meta.source.as_str());
        if let Some(f) = &meta.flow {
            span.record("flow", f.as_str());
        }
        tracing::info!(
            source = meta.source.as_str(),
            flow = meta.flow.as_deref(),
            handoff_from = meta.handoff_from.as_deref(),
            model_calls = response.model_calls,
            "turn completed"
        );
        if let Some((bytes, span)) = self.saved.take() {
            let t = *self;
            t.a.remember(crate::agent::Remembered {
                bytes,
                session: t.s,
                present: t.present,
                span,
            });
        }
        Ok(response)
    }

    /// Persist and build the response.
    async fn persist(
        &mut self,
        message: String,
        stopped: StoppedReason,
        deltas: Vec<String>,
    ) -> Result<AgentResponse<D>, AgentError> {
        self.faulted()?;
        if !message.is_empty() {
            self.s.history.push(Message::assistant(message.as_str()));
        }
        // A summary call may still run here, before the save: it stays within the
        // deadline; the save itself is never cut.
        let deadline = self.deadline;
        deadline::within(deadline, self.compact_history()).await?;
        self.s.pending = self.next_pending.take();
        self.s.turns += 1;
        let version = self
            .s
            .flow
            .as_deref()
            .and_then(|f| self.a.flow(f))
            .map(|f| f.version.as_str());
        if self.s.flow_version.as_deref() != version {
            self.s.flow_version = version.map(str::to_owned);
        }
        self.s.updated_ms = self.a.clock.now_ms();
        self.s.version = self.expected_version + 1;
        let mut response = AgentResponse {
            session_id: self.s.id.clone(),
            message,
            stopped,
            executed_steps: std::mem::take(&mut self.executed),
            directive_chain: std::mem::take(&mut self.chain),
            data: self.s.data.clone(),
            flow: self
                .s
                .flow
                .clone()
                .or_else(|| self.s.code.as_ref().map(|c| c.flow.clone())),
            step: self.s.step.clone(),
            signals: std::mem::take(&mut self.signals_fired),
            tool_calls: std::mem::take(&mut self.tool_calls),
            awaiting_approval: self
                .s
                .approval
                .as_ref()
                .map(crate::approval::PendingApproval::waiting)
                .unwrap_or_default(),
            transitions: std::mem::take(&mut self.transitions),
            model_calls: self.calls,
            usage: self.usage,
            dropped_fields: std::mem::take(&mut self.dropped),
            rejected_data: std::mem::take(&mut self.rejected),
            ungrounded: std::mem::take(&mut self.ungrounded),
            inferred: std::mem::take(&mut self.inferred),
            withheld_claims: std::mem::take(&mut self.withheld),
            version: self.s.version,
            duplicate: false,
            meta: self.response_meta(),
            hook_failures: Vec::new(),
        };
        if let Some(id) = self.event_id.take() {
            // The response is stored with the session, atomically: a duplicate of this
            // event gets it back instead of advancing the conversation again.
            let keep = self.a.config.remembered_events.max(1);
            if self.s.events.len() >= keep {
                let excess = self.s.events.len() + 1 - keep;
                self.s.events.drain(..excess);
            }
            // A clearing turn keeps no trace of the conversation, not even in the
            // stored answer to its event.
            let redacted;
            let kept = if self.clear_session {
                redacted = AgentResponse {
                    session_id: response.session_id.clone(),
                    message: response.message.clone(),
                    stopped: response.stopped.clone(),
                    executed_steps: Vec::new(),
                    directive_chain: Vec::new(),
                    data: D::default(),
                    flow: None,
                    step: None,
                    signals: Vec::new(),
                    tool_calls: Vec::new(),
                    awaiting_approval: Vec::new(),
                    transitions: Vec::new(),
                    model_calls: response.model_calls,
                    usage: response.usage,
                    dropped_fields: Vec::new(),
                    rejected_data: Vec::new(),
                    ungrounded: Vec::new(),
                    inferred: Vec::new(),
                    withheld_claims: Vec::new(),
                    version: response.version,
                    duplicate: false,
                    meta: response.meta.clone(),
                    hook_failures: Vec::new(),
                };
                &redacted
            } else {
                &response
            };
            let stored = serde_json::to_value(kept).map_err(|e| {
                AgentError::Store(crate::error::StoreError::Corrupt {
                    session_id: self.s.id.clone(),
                    message: e.to_string(),
                })
            })?;
            self.s.events.push(crate::session::ProcessedEvent {
                id,
                response: stored,
            });
        }
        if self.clear_session {
            // Erase by saving an empty session under compare-and-swap (a plain delete
            // would let this turn silently win over a concurrent writer, and would let
            // a redelivered event run again): only the version and the processed event
            // ids survive; `prune` removes the record later.
            self.a.forget(&self.s.id);
            let mut erased =
                Session::<D, C>::new(self.s.id.clone(), self.a.context.clone(), self.s.updated_ms);
            erased.version = self.s.version;
            erased.events = std::mem::take(&mut self.s.events);
            let lease = self.lease.as_deref().map(crate::store::HeldLease::lease);
            let (store, expected) = (self.a.store.as_ref(), self.expected_version);
            crate::store::save_fenced(store, erased.encode()?, expected, lease).await?;
        } else {
            let prev = self.prev.take();
            let (stored, span) = self.s.encode_after(prev.as_ref().map(|p| p.view()))?;
            drop(prev);
            let bytes = (self.a.config.session_cache > 0).then(|| (stored.bytes.clone(), span));
            let lease = self.lease.as_deref().map(crate::store::HeldLease::lease);
            let (store, expected) = (self.a.store.as_ref(), self.expected_version);
            crate::store::save_fenced(store, stored, expected, lease).await?;
            self.saved = bytes;
        }
        // Text reaches the consumer only once the turn is durable: deltas concatenate to
        // the final message, and a failed save streams no text.
        let message = &response.message;
        if self.streamed {
            if deltas.concat() != *message {
                // Unreachable by construction (live text is only released when nothing
                // can replace it); never send a second copy.
                tracing::error!("streamed text differs from the final message");
            }
        } else if self.sink.is_some() && !message.is_empty() {
            if deltas.concat() == *message {
                for d in deltas {
                    self.emit(Event::TextDelta(d));
                }
            } else {
                self.emit(Event::TextDelta(message.clone()));
            }
        }
        response.version = self.s.version;
        if let Some(h) = &self.a.on_response {
            // The turn is saved: a panic here cannot undo it, so the caller gets the
            // response with the failure listed.
            let meta = response.meta.clone();
            if let Err(e) = guard::call(|| "on_response hook".into(), || h(&response, &meta)) {
                tracing::error!(error = %e, "on_response hook failed (the turn was saved)");
                response.hook_failures.push(e.to_string());
            }
        }
        Ok(response)
    }
}
