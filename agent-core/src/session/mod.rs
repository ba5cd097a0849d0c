//! Session state: everything that survives between turns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod code;

use code::CodeState;

use crate::approval::PendingApproval;
use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::StoreError;
use crate::provider::{Message, Text};
use crate::signal::SignalState;
use crate::store::StoredSession;

/// Where the encoded history sits in a session's bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HistorySpan {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) count: usize,
}

/// The previous save of a session as a turn took it from the cache: its bytes, where
/// its history sits in them, and the first and last history texts (compared by
/// pointer to prove the new history extends it).
pub(crate) struct PreviousSave {
    pub(crate) bytes: Vec<u8>,
    pub(crate) span: HistorySpan,
    pub(crate) first: Option<Text>,
    pub(crate) last: Option<Text>,
}

impl PreviousSave {
    pub(crate) fn view(&self) -> Previous<'_> {
        Previous {
            bytes: &self.bytes,
            span: self.span,
            first: self.first.as_ref(),
            last: self.last.as_ref(),
        }
    }
}

/// The previous save of a session, for incremental encoding.
#[derive(Clone, Copy)]
pub(crate) struct Previous<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) span: HistorySpan,
    pub(crate) first: Option<&'a Text>,
    pub(crate) last: Option<&'a Text>,
}

/// Every field of [`Session`] but the history, by reference (the history is written
/// after it, possibly from the previous encoding). Kept in sync with `Session` by the
/// round-trip tests below.
#[derive(Serialize)]
#[serde(bound(serialize = "D: Serialize, C: Serialize"))]
struct Header<'a, D, C> {
    id: &'a str,
    version: u64,
    data: &'a D,
    context: &'a C,
    #[serde(skip_serializing_if = "is_none")]
    flow: &'a Option<String>,
    #[serde(skip_serializing_if = "is_none")]
    step: &'a Option<String>,
    #[serde(skip_serializing_if = "is_empty")]
    completed_flows: &'a Vec<String>,
    #[serde(skip_serializing_if = "is_none")]
    last_completed: &'a Option<CompletedFlow>,
    #[serde(skip_serializing_if = "is_none")]
    summary: &'a Option<String>,
    #[serde(skip_serializing_if = "is_none")]
    pending: &'a Option<Directive>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    signals: &'a BTreeMap<String, SignalState>,
    turns: u64,
    #[serde(skip_serializing_if = "is_none")]
    flow_version: &'a Option<String>,
    #[serde(skip_serializing_if = "is_empty")]
    events: &'a Vec<ProcessedEvent>,
    #[serde(skip_serializing_if = "is_none")]
    code: &'a Option<CodeState>,
    #[serde(skip_serializing_if = "is_none")]
    approval: &'a Option<PendingApproval>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    acted: &'a BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "is_none")]
    proposal: &'a Option<Proposal>,
    #[serde(skip_serializing_if = "is_empty")]
    tentative: &'a Vec<crate::response::TentativeValue>,
    #[serde(skip_serializing_if = "is_empty")]
    stack: &'a Vec<Interrupted>,
    #[serde(skip_serializing_if = "is_none")]
    cancelling: &'a Option<String>,
    #[serde(skip_serializing_if = "is_none")]
    handed_off: &'a Option<HandedOff>,
    #[serde(skip_serializing_if = "is_false")]
    asking_handoff: &'a bool,
    #[serde(skip_serializing_if = "is_empty")]
    skipped: &'a Vec<String>,
    created_ms: u64,
    updated_ms: u64,
}

impl<'a, D, C> Header<'a, D, C> {
    fn of(s: &'a Session<D, C>) -> Self {
        Header {
            id: &s.id,
            version: s.version,
            data: &s.data,
            context: &s.context,
            flow: &s.flow,
            step: &s.step,
            completed_flows: &s.completed_flows,
            last_completed: &s.last_completed,
            summary: &s.summary,
            pending: &s.pending,
            signals: &s.signals,
            turns: s.turns,
            flow_version: &s.flow_version,
            events: &s.events,
            code: &s.code,
            approval: &s.approval,
            acted: &s.acted,
            proposal: &s.proposal,
            tentative: &s.tentative,
            stack: &s.stack,
            cancelling: &s.cancelling,
            handed_off: &s.handed_off,
            asking_handoff: &s.asking_handoff,
            skipped: &s.skipped,
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes `&&bool` for a reference field
fn is_false(b: &&bool) -> bool {
    !**b
}

#[allow(clippy::ref_option)] // serde passes `&&Option<T>` for a reference field
fn is_none<T>(o: &&Option<T>) -> bool {
    o.is_none()
}

#[allow(clippy::ptr_arg)] // serde passes `&&Vec<T>` for a reference field
fn is_empty<T>(v: &&Vec<T>) -> bool {
    v.is_empty()
}

/// A processed inbound event and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessedEvent {
    /// The inbound event id the turn carried; a repeat of it gets the stored response.
    pub id: String,
    /// The response, as JSON.
    pub response: serde_json::Value,
}

/// A flow on the dialogue stack ([`Session::stack`]): interrupted at `step` by the
/// flow `by`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interrupted {
    /// The id of the flow that was interrupted.
    pub flow: String,
    /// The step it resumes at (its question is asked again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The flow that interrupted it.
    pub by: String,
    /// It starts over when it resumes ([`crate::flow::Interruption::Restart`]): the
    /// values it owns are cleared and its first step asks again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
}

impl Interrupted {
    /// `flow`, interrupted at `step` by `by`.
    pub fn new(flow: impl Into<String>, step: Option<String>, by: impl Into<String>) -> Self {
        Self {
            flow: flow.into(),
            step,
            by: by.into(),
            restart: false,
        }
    }
}

/// A conversation handed over to a person ([`Session::handed_off`]): the user asked
/// for one, and the agent makes no model call in this session until the host ends
/// the handoff ([`crate::Agent::end_human_handoff`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandedOff {
    /// When the session was handed over (ms since the Unix epoch, agent clock).
    pub at_ms: u64,
    /// The flow that was active (it goes on from its step after the handoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The step it waited at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl HandedOff {
    /// Handed over at `at_ms`, with `flow` active at `step`.
    pub fn new(at_ms: u64, flow: Option<String>, step: Option<String>) -> Self {
        Self { at_ms, flow, step }
    }
}

/// A tool call summarised to the user and waiting for their yes
/// ([`crate::tool::Tool::needs_agreement`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Proposal {
    /// The tool's name.
    pub tool: String,
    /// The arguments the call runs with on a yes.
    pub arguments: serde_json::Value,
    /// The summary the user read (code's text, with its question).
    pub summary: String,
    /// The session's turn count in the turn that showed it: a yes counts only in the
    /// turn after.
    pub turn: u64,
    /// The flow and step it was shown at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The data the summary was written from: a yes after any value changed runs
    /// nothing.
    #[serde(default)]
    pub data: serde_json::Value,
}

/// A flow that completed, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedFlow {
    /// The id of the flow that completed.
    pub flow: String,
    /// The session's turn count when it completed (the turn that completed it is
    /// `turn + 1`).
    pub turn: u64,
}

/// The persisted state of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "D: Serialize, C: Serialize",
    deserialize = "D: AgentData, C: AgentContext"
))]
pub struct Session<D, C> {
    /// The session's id, chosen by the application (a user or conversation id).
    pub id: String,
    /// Store version (compare-and-swap); 0 = never saved.
    pub version: u64,
    /// The data collected so far (with a `#[data]` type, the fields not given yet are
    /// `None`).
    pub data: D,
    /// The application-owned context (set by code, never by the model).
    pub context: C,
    /// The id of the flow the conversation is in, `None` outside any flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The step that spoke last and awaits the user's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Flows that completed in this session (order of completion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_flows: Vec<String>,
    /// The flow that completed last and the turn it completed in: its fields may still
    /// be corrected for [`crate::AgentConfig::correction_window`] turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<CompletedFlow>,
    /// Conversation history as the model reads it (after compaction: the recent
    /// part). A reply keeps its text here, except the line code says first about what
    /// the turn stored on a small model's profile ("Noted: Lisbon."), which only the
    /// user reads ([`crate::response::AgentResponse::message`] has it).
    #[serde(default)]
    pub history: Vec<Message>,
    /// Summary of compacted history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Directive applied at the start of the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Directive>,
    /// When each signal last fired, for `once` and `cooldown` frequencies.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub signals: BTreeMap<String, SignalState>,
    /// How many turns completed on this session.
    #[serde(default)]
    pub turns: u64,
    /// Version (structural hash) of the active flow's definition when last saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_version: Option<String>,
    /// Recent turns that carried an inbound event id, with their responses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ProcessedEvent>,
    /// The active code flow and its journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeState>,
    /// A tool round held for a person's approval ([`crate::approval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<PendingApproval>,
    /// Tools with effects that ran successfully, each with the turn (counted from 0)
    /// it last ran in: a cancel of a flow after one of its `once` tools ran says the
    /// flow's `cancel_after_tool`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub acted: BTreeMap<String, u64>,
    /// A call of a tool that waits for the user's yes ([`crate::tool::Tool::needs_agreement`]),
    /// summarised in the last reply: it runs, with exactly these arguments, on a yes in
    /// the next message, and is dropped by anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
    /// Values shown back to the user for a yes, settled by their next message
    /// ([`crate::response::TentativeValue`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tentative: Vec<crate::response::TentativeValue>,
    /// The dialogue stack: flows another flow interrupted, the latest last. When the
    /// interrupting flow completes or is cancelled, the flow on top resumes at its
    /// step and asks its question again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<Interrupted>,
    /// The flow the last reply asked the user whether to stop (a cancel the model
    /// read): stopped on a yes to that question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelling: Option<String>,
    /// Handed over to a person (the human handoff pattern): every message is answered
    /// with the agent's handoff reply, with no model call, until the host ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_off: Option<HandedOff>,
    /// The last reply asked the user whether they want a person (a request for one
    /// the model read in other words than a plain one): handed over on a yes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asking_handoff: bool,
    /// Fields whose question the user skipped ([`crate::command::Command::SkipQuestion`]):
    /// the steps asking for them are passed without a value until the flow that asked
    /// completes or is cancelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Creation time (ms since the Unix epoch, agent clock).
    #[serde(default)]
    pub created_ms: u64,
    /// Last save time (ms since the Unix epoch, agent clock).
    #[serde(default)]
    pub updated_ms: u64,
}

impl<D: AgentData, C: AgentContext> Session<D, C> {
    /// A new session with id `id`, the given context and no data, history or flow, created
    /// at `now_ms`; normally the engine creates sessions on their first message.
    pub fn new(id: impl Into<String>, context: C, now_ms: u64) -> Self {
        Self {
            id: id.into(),
            version: 0,
            data: D::default(),
            context,
            flow: None,
            step: None,
            completed_flows: Vec::new(),
            last_completed: None,
            history: Vec::new(),
            summary: None,
            pending: None,
            signals: BTreeMap::new(),
            turns: 0,
            flow_version: None,
            events: Vec::new(),
            code: None,
            approval: None,
            acted: BTreeMap::new(),
            proposal: None,
            tentative: Vec::new(),
            stack: Vec::new(),
            cancelling: None,
            handed_off: None,
            asking_handoff: false,
            skipped: Vec::new(),
            created_ms: now_ms,
            updated_ms: now_ms,
        }
    }

    /// The stored response of an inbound event already processed.
    pub fn processed_event(&self, id: &str) -> Option<&serde_json::Value> {
        self.events.iter().find(|e| e.id == id).map(|e| &e.response)
    }

    /// Encode the session as stores keep it (JSON bytes in a [`StoredSession`]); what a
    /// custom store receives in `save`.
    pub fn encode(&self) -> Result<StoredSession, StoreError> {
        self.encode_after(None).map(|(s, _)| s)
    }

    /// Encode, reusing the already-encoded history of the previous save when this
    /// session's history extends it (history is append-only between compactions), so a
    /// save costs what changed, not the length of the conversation.
    pub(crate) fn encode_after(
        &self,
        prev: Option<Previous<'_>>,
    ) -> Result<(StoredSession, HistorySpan), StoreError> {
        let corrupt = |e: serde_json::Error| StoreError::Corrupt {
            session_id: self.id.clone(),
            message: e.to_string(),
        };
        let reuse = prev.filter(|p| {
            let n = p.span.count;
            n > 0
                && n <= self.history.len()
                && p.first.is_some_and(|f| f.same(&self.history[0].content))
                && p.last.is_some_and(|l| l.same(&self.history[n - 1].content))
        });
        let fresh_from = reuse.as_ref().map_or(0, |p| p.span.count);
        let hint = 256
            + reuse.as_ref().map_or(0, |p| p.span.end - p.span.start)
            + self.history[fresh_from..]
                .iter()
                .map(|m| m.content.len() + 48)
                .sum::<usize>();
        let mut bytes = Vec::with_capacity(hint);
        serde_json::to_writer(&mut bytes, &Header::of(self)).map_err(corrupt)?;
        bytes.pop(); // the closing brace: history goes last
        bytes.extend_from_slice(b",\"history\":[");
        let start = bytes.len();
        if let Some(p) = &reuse {
            bytes.extend_from_slice(&p.bytes[p.span.start..p.span.end]);
        }
        for (i, m) in self.history.iter().enumerate().skip(fresh_from) {
            if i > 0 {
                bytes.push(b',');
            }
            serde_json::to_writer(&mut bytes, m).map_err(corrupt)?;
        }
        let end = bytes.len();
        bytes.extend_from_slice(b"]}");
        Ok((
            StoredSession {
                id: self.id.clone(),
                version: self.version,
                updated_ms: self.updated_ms,
                bytes,
            },
            HistorySpan {
                start,
                end,
                count: self.history.len(),
            },
        ))
    }

    /// Decode a session a store returned; a record that does not parse is
    /// [`StoreError::Corrupt`].
    pub fn decode(stored: &StoredSession) -> Result<Self, StoreError> {
        let mut s: Self =
            serde_json::from_slice(&stored.bytes).map_err(|e| StoreError::Corrupt {
                session_id: stored.id.clone(),
                message: e.to_string(),
            })?;
        s.version = stored.version;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    struct D {
        city: Option<String>,
    }

    fn decoded(s: &StoredSession) -> Session<D, ()> {
        Session::decode(s).unwrap()
    }

    #[test]
    fn incremental_encoding_decodes_to_the_same_session_as_a_full_encoding() {
        let mut s: Session<D, ()> = Session::new("s", (), 1);
        s.pending = Some(Directive::go_to("x"));
        s.signals.insert(
            "sig".into(),
            SignalState {
                fired: 2,
                last_fired_ms: 9,
            },
        );
        s.events.push(ProcessedEvent {
            id: "e".into(),
            response: serde_json::json!({"a": 1}),
        });
        s.last_completed = Some(CompletedFlow {
            flow: "booking".into(),
            turn: 3,
        });
        s.approval = Some(PendingApproval {
            calls: vec![crate::approval::HeldCall {
                id: "c1".into(),
                tool: "pay".into(),
                arguments: serde_json::json!({"amount": 5}),
                key: "k".into(),
                approval: true,
                decision: None,
            }],
            message: "pay it".into(),
            turn: "turn:1:0".into(),
            at: None,
            code_flow: None,
            earlier: Vec::new(),
            requested_ms: 7,
        });
        s.stack
            .push(Interrupted::new("booking", Some("ask_date".into()), "faq"));
        s.cancelling = Some("faq".into());
        s.handed_off = Some(HandedOff::new(5, Some("faq".into()), None));
        s.asking_handoff = true;
        s.skipped.push("feedback".into());
        s.history.push(Message::user("hi \"there\""));
        s.history.push(Message::assistant("Which city?"));
        let (first, span) = s.encode_after(None).unwrap();
        assert_eq!(decoded(&first), s);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&first.bytes).unwrap(),
            serde_json::to_value(&s).unwrap(),
            "same JSON as the derived Serialize"
        );

        // The next turn's session is a clone (shares the history text) plus new messages.
        let mut next = s.clone();
        next.turns += 1;
        next.history.push(Message::user("Lisbon"));
        next.history.push(Message::assistant("When?"));
        let prev = Previous {
            bytes: &first.bytes,
            span,
            first: s.history.first().map(|m| &m.content),
            last: s.history.last().map(|m| &m.content),
        };
        let (second, span2) = next.encode_after(Some(prev)).unwrap();
        assert_eq!(decoded(&second), next);
        assert_eq!(
            second.bytes,
            next.encode().unwrap().bytes,
            "identical bytes either way"
        );
        assert_eq!(span2.count, 4);

        // After compaction the previous encoding no longer applies: full encode.
        let mut compacted = next.clone();
        compacted.history.drain(..3);
        compacted.summary = Some("earlier: hi".into());
        let prev = Previous {
            bytes: &second.bytes,
            span: span2,
            first: next.history.first().map(|m| &m.content),
            last: next.history.last().map(|m| &m.content),
        };
        let (third, _) = compacted.encode_after(Some(prev)).unwrap();
        assert_eq!(decoded(&third), compacted);
    }
}
