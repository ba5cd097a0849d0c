//! One turn, in the spec's fixed order: pending directive; pre-phase signals together
//! with routing (one classifier call); data extraction and the reply in one structured
//! call where the engine can predict the step; the step walk (auto chain, branches,
//! linear successor, skipping satisfied steps); pre-LLM and post-LLM directive buses;
//! post-phase signals; persistence last. Streaming and non-streaming share this path.

mod apply;
mod approve;
mod code;
mod commands;
mod compose;
mod consent;
mod converse;
mod correct;
pub(crate) mod deadline;
mod judged;
mod model;
mod patterns;
mod persist;
mod predict;
mod propose;
pub(crate) use propose::with_go_ahead;
mod question;
mod reentry;
mod resume;
mod runtime;
mod screen;
mod signals;
mod slash;
mod speculate;
mod stack;
pub(crate) mod stream;
mod switch;
mod tentative;
mod text;
mod walk;

use std::sync::Arc;

use crate::data::{AgentContext, AgentData, FieldSet};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::flow::Flow;
use crate::fxhash::{FxHashMap, FxHashSet};
use crate::hook::{Cx, Dispatcher};
use crate::provider::Usage;
use crate::response::{
    ChainEntry, DirectiveSource, Event, StepRef, StoppedReason, ToolCallRecord, Transition,
};
use crate::session::Session;
use crate::tool::Tool;

use walk::Stop;
// Predicates and hooks run through the guard, defined below the flow definitions that
// use it too.
pub(crate) use crate::guard;
pub(crate) use runtime::{AgentInner, Loaded, Remembered};
pub use runtime::{FlowVersionChange, Migration};

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
    /// The fields whose question the user skipped ([`Session::skipped`]): a step
    /// asking only for them is passed.
    pub(crate) skipped: FieldSet,
    pub(crate) dispatcher: Dispatcher,
    /// `s.step` spoke last turn and this message answers it.
    pub(crate) awaiting: bool,
    /// Bumped on every position change.
    pub(crate) pos_gen: u64,
    /// A correction of a completed flow was handled this turn (read once per turn).
    pub(crate) correction_done: bool,
    /// This turn's message replaced a stored value: what the user agreed to before is
    /// not what an action would now do ([`consent::Gate::unless_changed`]).
    pub(crate) changed_now: bool,
    /// This turn's answer to a confirmation was checked on its own and does not agree
    /// ([`consent::Gate::unless_not_agreed`]).
    pub(crate) not_agreed: bool,
    /// The call summarised in the last reply, waiting for this message's yes
    /// (`propose.rs`); taken when it runs.
    pub(crate) proposal: Option<crate::session::Proposal>,
    /// The user agreed to [`Turn::proposal`] this turn: its call may run.
    pub(crate) agreed: bool,
    pub(crate) chain: Vec<ChainEntry>,
    /// The model's commands handled this turn ([`crate::command`]).
    pub(crate) commands: Vec<crate::command::Command>,
    pub(crate) executed: Vec<StepRef>,
    pub(crate) tool_calls: Vec<ToolCallRecord>,
    pub(crate) transitions: Vec<Transition>,
    pub(crate) signals_fired: Vec<String>,
    pub(crate) calls: u32,
    pub(crate) usage: Usage,
    pub(crate) dropped: Vec<String>,
    pub(crate) rejected: Vec<String>,
    pub(crate) ungrounded: Vec<crate::response::DroppedValue>,
    /// Values read this turn that the user's words do not show: shown back for a
    /// yes, kept in the session at the end of the turn (`tentative.rs`).
    pub(crate) tentative: Vec<crate::response::TentativeValue>,
    pub(crate) inferred: Vec<String>,
    /// Sentences of the reply removed because the state does not hold them.
    pub(crate) withheld: Vec<String>,
    /// Texts code wrote into the model's reply this turn (questions, refusals, the
    /// summary): not checked against the state as the model's words are.
    pub(crate) code_wrote: Vec<String>,
    /// Code's text in the reply (a question, a check, what to do next) before which
    /// the turn says what it stored, on a profile that composes questions.
    pub(crate) ack_before: Option<String>,
    /// What the turn stored, said back by code before its text ([`Turn::what_changed`]):
    /// the user reads it; the history the model reads keeps the reply without it (a
    /// small model copies such lines into later readings, also after the values were
    /// cleared).
    pub(crate) ack: Option<String>,
    /// Values fields held before this turn's corrections changed them: a reply may
    /// not name them for the field.
    pub(crate) unheld: Vec<(String, serde_json::Value)>,
    /// What the next rendering must tell the user: values not stored and why.
    pub(crate) notes: Vec<String>,
    /// A note this turn is news for the user (a value refused with its reason, a
    /// correction refused, an action that did not run), not only about a draft: the
    /// model writes that reply, not code's question.
    pub(crate) to_tell: bool,
    /// What code tells the user this turn before the step's question, on a profile
    /// that composes questions: why a value was refused. Told only where code writes
    /// the question; elsewhere the notes carry it to the model.
    pub(crate) told: Vec<String>,
    /// Verdicts of `when` conditions judged this turn, by condition text.
    pub(crate) judged: FxHashMap<String, bool>,
    /// Conditions of the awaiting step left for the speculative respond call to judge
    /// (when no classifier call is due anyway); predicted as false.
    pub(crate) deferred: Vec<String>,
    pub(crate) hops: u32,
    /// An intermediate message not shown to the user, passed to the next rendering.
    pub(crate) carried: Option<String>,
    /// Code-written text the user reads before the rest of this turn's reply (a
    /// cancel said, then the resumed flow's question).
    pub(crate) lead: Vec<String>,
    /// A flow the dialogue stack resumed this turn (`stack.rs`).
    pub(crate) resumed: Option<String>,
    /// How many transitions the turn made before the conversation read the message
    /// (a pending directive, routing): code's recognition of a plain cancel or a plain
    /// request for a person applies only while no branch, hook or model moved the
    /// turn since (`patterns.rs`).
    pub(crate) read_from: usize,
    /// The reply when a flow the model started was not started (the dialogue stack
    /// is full).
    pub(crate) not_started: Option<String>,
    /// The flow (its index) whose question the digression check sorted this turn's
    /// message for, finding no other flow (`model/digress.rs`): that flow's own call
    /// does not start one.
    pub(crate) sorted: Option<usize>,
    /// The sorting call read this turn's message with no flow under way and found no
    /// flow it asks for (`model/digress.rs`, `sort_opening`): the reply with no flow
    /// names no task to start.
    pub(crate) sorted_none: bool,
    /// What a sorting call read for the flow it started (with no flow under way, or
    /// at a step whose conditions only pick the flow to go to), and that flow's id:
    /// it stands for that flow's own reading of the message unless the message asks
    /// something (`speculate.rs`). `None`: it read nothing, or was not asked to.
    pub(crate) started_read: Option<(Arc<str>, serde_json::Map<String, serde_json::Value>)>,
    /// What the sorting call inside a flow read from a message it sorted as the
    /// answer to the flow's question (`model/digress.rs`): it stands for the flow's
    /// own reading when the message is nothing but that answer
    /// ([`Self::answer_alone`]).
    pub(crate) sort_read: Option<serde_json::Map<String, serde_json::Value>>,
    /// The sorting call kept the message at a step that only picks the flow to go to
    /// (a front desk): the step's question is code's (`model/digress.rs`,
    /// [`Self::step_question`]), the whole reply when the message asks nothing ("hi",
    /// "thanks", with no call of the step's own), else after the model's answer.
    pub(crate) kept_at_routing: bool,
    /// The instructions (system prompt, then state block) of the last respond call:
    /// the reply it wrote must not read them back to the user.
    pub(crate) prompt: String,
    pub(crate) prompt_state: String,
    /// A hand-over answer written for the first step of the flow it handed to, with
    /// the values it read for that flow (its message is `carried`).
    pub(crate) preview: Option<speculate::Preview>,
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
    /// The message as the recognisers of common phrasings read it
    /// ([`crate::data::ground::normalize`]), worked out once: [`Turn::said`].
    said: std::sync::OnceLock<String>,
    /// What this turn saved, for the decoded-session cache.
    pub(crate) saved: Option<(Vec<u8>, crate::session::HistorySpan)>,
    /// When the turn's work must be done (`AgentConfig::turn_timeout`).
    pub(crate) deadline: Option<deadline::Deadline>,
    /// The session lease the turn holds (its saves are fenced by it).
    pub(crate) lease: Option<Arc<crate::store::HeldLease>>,
    /// The turn's identity in tool call keys ([`crate::tool::key::turn_tag`]); kept
    /// across the re-runs of one `respond` call.
    pub(crate) turn_tag: Arc<str>,
    /// Tool calls run so far this turn (model rounds and code flows): the next
    /// call's position in its idempotency key.
    pub(crate) tool_seq: usize,
    /// The once-tool effects of this `respond` call, all attempts (the conflict
    /// after them reports them).
    pub(crate) once_effects: crate::journal::EffectLog,
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
    /// Fields the user has not stated any value of this session (a `pattern` nothing
    /// they said matches): no call is asked to read them
    /// ([`crate::data::spot`]). Empty with grounding off.
    pub(crate) unsaid: FieldSet,
    /// The one day the latest message names, read once per turn (the live-streaming
    /// simulation screens the same answer again as it grows).
    pub(crate) named_day: std::sync::OnceLock<Option<time::Date>>,
}

impl<'a, D: AgentData, C: AgentContext> Turn<'a, D, C> {
    /// Boxed: the turn is large, and a box keeps the futures that own it small (they
    /// are moved when awaited).
    pub(crate) fn new(
        a: &'a AgentInner<D, C>,
        load: Loaded<D, C>,
        msg: &'a str,
        sink: Option<&'a Sink<D>>,
        event_id: Option<String>,
    ) -> Box<Self> {
        let Loaded {
            session: s,
            present,
            prev,
        } = load;
        let present = present.unwrap_or_else(|| a.schema.present(&s.data));
        let mut skipped = FieldSet::default();
        for f in &s.skipped {
            if let Some(i) = a.schema.index_of(f) {
                skipped.insert(i);
            }
        }
        let awaiting = s.step.is_some();
        // A summary counts only for the message right after it.
        let mut s = s;
        let proposal = s.proposal.take().filter(|p| p.turn + 1 == s.turns);
        let turn_tag = crate::tool::key::turn_tag(event_id.as_deref(), s.turns, msg);
        let unsaid = if a.config.grounding {
            let texts = s
                .history
                .iter()
                .filter(|m| m.role == crate::provider::Role::User)
                .map(|m| m.content.as_str())
                .chain(std::iter::once(msg));
            a.schema.unsaid(texts)
        } else {
            FieldSet::default()
        };
        Box::new(Self {
            a,
            expected_version: s.version,
            s,
            msg,
            sink,
            present,
            skipped,
            dispatcher: Dispatcher::default(),
            awaiting,
            pos_gen: 0,
            correction_done: false,
            changed_now: false,
            not_agreed: false,
            proposal,
            agreed: false,
            chain: Vec::new(),
            commands: Vec::new(),
            executed: Vec::new(),
            tool_calls: Vec::new(),
            transitions: Vec::new(),
            signals_fired: Vec::new(),
            calls: 0,
            usage: Usage::default(),
            dropped: Vec::new(),
            rejected: Vec::new(),
            ungrounded: Vec::new(),
            tentative: Vec::new(),
            inferred: Vec::new(),
            withheld: Vec::new(),
            code_wrote: Vec::new(),
            ack_before: None,
            ack: None,
            unheld: Vec::new(),
            notes: Vec::new(),
            to_tell: false,
            told: Vec::new(),
            judged: FxHashMap::default(),
            deferred: Vec::new(),
            hops: 0,
            carried: None,
            lead: Vec::new(),
            resumed: None,
            read_from: 0,
            not_started: None,
            sorted: None,
            sorted_none: false,
            started_read: None,
            sort_read: None,
            kept_at_routing: false,
            prompt: String::new(),
            prompt_state: String::new(),
            preview: None,
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
            said: std::sync::OnceLock::new(),
            saved: None,
            deadline: None,
            lease: None,
            turn_tag,
            tool_seq: 0,
            once_effects: Default::default(),
            paused: None,
            resume: None,
            resume_at: None,
            tools_off: false,
            decided: None,
            said_memo: Default::default(),
            unsaid,
            named_day: std::sync::OnceLock::new(),
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

    /// Whether a call may read field `idx` from the user's words this turn (not a
    /// pattern field nothing they said matches).
    pub(crate) fn is_readable(&self, idx: usize) -> bool {
        !self.unsaid.contains(idx)
    }

    /// The fields of `fields` a call may read this turn ([`Self::is_readable`]).
    pub(crate) fn readable(&self, fields: &[Arc<str>]) -> Vec<Arc<str>> {
        fields
            .iter()
            .filter(|f| {
                self.a
                    .schema
                    .index_of(f)
                    .is_none_or(|i| self.is_readable(i))
            })
            .cloned()
            .collect()
    }

    /// What a once-tool call of this turn needs from it ([`crate::journal::call`]).
    pub(crate) fn journal_cx(&self) -> crate::journal::JournalCx<'_> {
        crate::journal::JournalCx {
            store: self.a.store.as_ref(),
            hook: self.a.on_unknown_outcome.as_ref(),
            merge: self.a.on_stale_once_result.as_ref(),
            turn: &self.dispatcher,
            effects: &self.once_effects,
        }
    }

    /// The message normalised as the recognisers of common phrasings read it, worked
    /// out once per turn.
    pub(crate) fn said(&self) -> &str {
        self.said
            .get_or_init(|| crate::data::ground::normalize(self.msg))
    }

    /// Fail the turn if a callback panicked where its error could not be returned at
    /// once (see [`guard::test`]); checked before every model call and the save.
    pub(crate) fn faulted(&self) -> Result<(), AgentError> {
        self.dispatcher.take_fault().map_or(Ok(()), Err)
    }
}
