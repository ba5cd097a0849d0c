//! The agent: a registry of flows, tools and signals over a provider and a store, and
//! the entry points `respond`, `respond_stream` and `dispatch`.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::{FutureExt, Stream};
use serde_json::Value;
use tracing::Instrument;

use crate::backoff::ConflictBackoff;
use crate::clock::{Clock, SystemClock};
use crate::codeflow::{CodeFlow, Fallback, IntoCodeFlow, ResponseHook, ResponseMeta, Router};
use crate::data::{AgentContext, AgentData, DataSchema, FieldSet};
use crate::directive::{Directive, Position};
use crate::error::{AgentError, ConfigErrors, DirectiveError, FlowConfigurationError, StoreError};
use crate::flow::IntoFlow;
use crate::flow::{Flow, suggest};
use crate::fxhash::FxHashMap;
use crate::hook::PreHook;
use crate::instruction::Instruction;
use crate::pipeline::deadline::{Deadline, within};
use crate::pipeline::{Sink, Turn, guard};
use crate::provider::Provider;
use crate::response::{AgentResponse, Event};
use crate::session::Session;
use crate::signal::Signal;
use crate::store::{MemoryStore, SessionStore};
use crate::tool::{IntoTool, Tool, valid_tool_name};

/// Options of one turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOptions {
    /// The inbound event's id (a webhook delivery id, a message id). A repeated id
    /// returns the stored response and does not advance the session.
    pub event_id: Option<String>,
}

impl TurnOptions {
    /// Options carrying an inbound event id.
    pub fn event(id: impl Into<String>) -> Self {
        Self {
            event_id: Some(id.into()),
        }
    }
}

/// What a turn answers: a user message, or a person's decision on a held tool call.
#[derive(Clone, Copy)]
enum Input<'a> {
    Message(&'a str),
    Resolve(&'a crate::approval::Resolve),
}

/// [`Input`] owned, for a stream's task.
enum Owned {
    Message(String),
    Resolve(crate::approval::Resolve),
}

/// A flow whose definition changed under a stored session, as the migration hook
/// sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowVersionChange {
    /// The session's active flow.
    pub flow: String,
    /// Version recorded in the session.
    pub stored: Option<String>,
    /// Version of the registered flow (`None` if it is gone).
    pub current: Option<String>,
    /// Why the session cannot continue as is.
    pub problem: String,
}

/// Upgrades a session whose flow changed incompatibly (move it to an existing step,
/// another flow, or clear the position).
pub type Migration<D, C> =
    Arc<dyn Fn(&mut Session<D, C>, &FlowVersionChange) -> Result<(), String> + Send + Sync>;

/// The stored answer to an event already processed.
fn replayed<D: AgentData>(
    done: &serde_json::Value,
    sink: Option<&Sink<D>>,
) -> Result<AgentResponse<D>, AgentError> {
    let mut r: AgentResponse<D> =
        serde_json::from_value(done.clone()).map_err(|e| StoreError::Corrupt {
            session_id: String::new(),
            message: format!("stored response of a processed event: {e}"),
        })?;
    r.duplicate = true;
    if let Some(s) = sink
        && !r.message.is_empty()
    {
        s.send(Event::TextDelta(r.message.clone()));
    }
    Ok(r)
}

/// What to do when another writer saved the session during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictPolicy {
    /// Return [`StoreError::Conflict`]; the caller decides.
    Fail,
    /// Re-run the turn on the fresh state up to this many times, then fail.
    Retry(u32),
}

/// Engine limits and knobs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Auto steps walked per turn before stopping with `AutoStepCap`.
    pub max_auto_steps_per_turn: u32,
    /// Hops to a different flow per turn before stopping with `TransitionCap`.
    pub max_transitions_per_turn: u32,
    /// Tool rounds per model call.
    pub max_tool_rounds: u32,
    /// Offer a flow's tools as an `action` field of the structured answer instead of
    /// the provider's native tools, for servers and models that cannot call a tool
    /// while a JSON schema constrains the answer. Off by default. Measured on
    /// Qwen2.5-Coder 1.5B under llama.cpp: natively it never called `book_room`; with
    /// actions it did, but also before the guest had confirmed, so the examples keep
    /// native tools until a step can hold its tools back until it is answered.
    pub tools_in_answer: bool,
    /// Time limit of one tool call (a tool's own [`Tool::timeout`] wins). A call past
    /// it is cancelled and becomes a failed result the model (or the code flow) sees;
    /// `None` lets tools run as long as they take.
    ///
    /// [`Tool::timeout`]: crate::tool::Tool::timeout
    pub tool_timeout: Option<Duration>,
    /// Time limit of a whole turn (default 180 s): past it the turn ends with
    /// [`AgentError::TurnTimeout`] and the session is unchanged; a code flow still
    /// running a tenth of the limit before it is stopped as a failed step instead (see
    /// `max_flow_failures`). It counts from the moment the session is held (waiting
    /// for it does not count) to the save. `None` lets turns run as long as they take.
    /// Only code that awaits can be stopped: a hook, tool or code flow that loops
    /// without ever awaiting holds its thread past any deadline. The deadline uses
    /// Tokio's timer: on another executor turns run without it (a warning is logged);
    /// in a Tokio runtime built without timers a turn fails with a configuration error.
    pub turn_timeout: Option<Duration>,
    /// Estimated history tokens (chars / 4) above which old turns are summarised.
    pub history_token_budget: usize,
    /// Messages kept verbatim when compacting.
    pub keep_last_messages: usize,
    /// Largest accepted user message, in bytes.
    pub max_message_bytes: usize,
    /// Upper bound on the assistant message length in structured answers (characters).
    pub max_reply_chars: usize,
    /// How replies should read, told to the model in every call that writes one
    /// (`None` says nothing). The default asks for short replies: measured on
    /// Qwen2.5-Coder 1.5B, replies without it ran on, repeating themselves, to the
    /// `max_reply_chars` limit (a cut sentence the user reads) and were where it
    /// promised what had not happened ("I will now proceed to refund").
    pub reply_style: Option<String>,
    /// Extra attempts when the model's structured answer is malformed.
    pub repair_attempts: u32,
    /// Most conditions judged in one classifier call (at least 1; `build()` rejects 0).
    pub classifier_batch_size: usize,
    /// Concurrent-save behaviour.
    pub conflict: ConflictPolicy,
    /// Pause before each re-run of a conflicting turn (jittered exponential; 20 ms
    /// doubling up to 500 ms by default; [`ConflictBackoff::NONE`] re-runs at once).
    pub conflict_backoff: ConflictBackoff,
    /// The session lease: a turn (or [`Agent::dispatch`]) first takes its session's
    /// lease in the store, so turns on one session from several agents or processes
    /// run one at a time instead of racing and re-running; a turn on a busy session
    /// waits up to [`LeaseConfig::max_wait`](crate::store::LeaseConfig), then fails
    /// with [`AgentError::SessionBusy`]. Default on (30 s ttl, 60 s wait). `None`, or a
    /// store without leases, leaves only the compare-and-swap (and `conflict`).
    pub lease: Option<crate::store::LeaseConfig>,
    /// Recently saved sessions kept decoded, so the next turn skips decoding when the
    /// stored bytes are unchanged (0 disables).
    pub session_cache: usize,
    /// Responses kept per session for turns that carried an event id (duplicates within
    /// this window are answered from the store).
    pub remembered_events: usize,
    /// Sampling temperature sent with every call.
    pub temperature: Option<f32>,
    /// Token limit sent with every call; `None` uses [`AgentConfig::token_limits`]
    /// per call kind.
    pub max_tokens: Option<u32>,
    /// Default token limit of each call kind, so no call can run unbounded.
    pub token_limits: TokenLimits,
    /// Largest serialized value one data field may hold (bytes); larger writes are
    /// rejected like any other invalid value.
    pub max_value_bytes: usize,
    /// Longest string the model may write for one field (and for its quote) in a
    /// structured answer, sent as the schema's `maxLength` (a field's own
    /// `max_length`, `enum`, `format` or `pattern` wins). Values are short; a small
    /// model that rambles inside one (seen: Gemma 270M repeating `{city: ..}` in
    /// `check_in` until the token limit) is stopped by the decoder. Default 256.
    pub max_model_string_chars: usize,
    /// Store a value the model extracted only when what the user said supports it
    /// (see [`crate::data`]'s grounding rules); fields marked `inferred` are exempt.
    pub grounding: bool,
    /// Ask the model to cite, per value, the user's words it took it from
    /// (`{"quote", "value"}`), checked by grounding. Off by default: measured on
    /// Qwen2.5-Coder 1.5B, asking for quotes made it write `null` for every field;
    /// without them grounding checks each value against the user's messages.
    pub cite_quotes: bool,
    /// The time zone of the agent's clock, in which dates are read and shown.
    pub time_zone: crate::clock::TimeZone,
    /// Tell the model today's date, weekday and time zone in every call that replies
    /// or extracts, so relative dates ("next Friday") resolve.
    pub date_in_prompt: bool,
    /// Sampling seed sent with every call (vendors without one ignore it).
    pub seed: Option<u64>,
    /// Test-kit mode for code flows: after every recorded effect, run the flow again
    /// from scratch against its journal, which must reach the same point (proves the
    /// flow deterministic; costs a replay per effect).
    pub always_replay: bool,
    /// Consecutive failed turns (error or panic in its fn) after which a code flow is
    /// cleared and the classic reply takes over.
    pub max_flow_failures: u32,
    /// For how many turns after a flow completes the user's messages are read for
    /// corrections of its fields ("actually, make it Porto"); each flow's
    /// [`crate::flow::Corrections`] says what happens then: refused with a clear reply
    /// (the default) or the flow reopens. 0 turns it off. Default 3.
    pub correction_window: u32,
    /// The reply of a turn that went wrong on the agent's side: a code flow step
    /// failed (below the limit), or a cycle of auto steps hit
    /// `max_auto_steps_per_turn` (the user is never left with an empty message).
    pub flow_error_reply: String,
    /// The reply of a turn whose tool call waits for a person's approval
    /// ([`crate::approval`]): written by code, so the model never announces what has
    /// not happened.
    pub approval_reply: String,
    /// New effects (`say`, `tool`, `now_ms`, …) a code flow may record in one turn;
    /// past it the run stops as a failed step, so a loop that never asks cannot grow
    /// the journal (or call a tool) without end.
    pub max_flow_effects_per_turn: u32,
    /// Read `/flow <id>`, `/flow stop` and `/flow status` messages as commands (the
    /// RFC's experimental command helpers), before signals, routing and the model.
    /// Off by default: the messages are then ordinary text.
    pub flow_commands: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_auto_steps_per_turn: 10,
            max_transitions_per_turn: 10,
            max_tool_rounds: 5,
            tools_in_answer: false,
            tool_timeout: Some(Duration::from_secs(60)),
            turn_timeout: Some(Duration::from_secs(180)),
            history_token_budget: 6000,
            keep_last_messages: 12,
            max_message_bytes: 32 * 1024,
            max_reply_chars: 1200,
            reply_style: Some(DEFAULT_REPLY_STYLE.into()),
            repair_attempts: 1,
            classifier_batch_size: 32,
            conflict: ConflictPolicy::Retry(3),
            conflict_backoff: ConflictBackoff::default(),
            lease: Some(crate::store::LeaseConfig::default()),
            session_cache: 256,
            remembered_events: 32,
            temperature: None,
            max_tokens: None,
            token_limits: TokenLimits::default(),
            max_value_bytes: crate::data::DEFAULT_MAX_VALUE_BYTES,
            max_model_string_chars: crate::data::DEFAULT_MODEL_STRING_CHARS,
            grounding: true,
            cite_quotes: false,
            time_zone: crate::clock::TimeZone::utc(),
            date_in_prompt: true,
            seed: None,
            always_replay: false,
            max_flow_failures: 2,
            correction_window: 3,
            flow_error_reply: "Sorry, something went wrong on my side. Could you say that again?"
                .into(),
            approval_reply: "That needs a person's approval before I can go ahead. I will continue as soon as it is decided."
                .into(),
            flow_commands: false,
            max_flow_effects_per_turn: 1000,
        }
    }
}

/// [`AgentConfig::reply_style`]'s default.
pub const DEFAULT_REPLY_STYLE: &str = "Keep your reply short: one or two sentences, said once. Never say an action (a booking, a refund, a change) was made unless a tool made it.";

/// Default `max_tokens` of each call kind: generous for what each call writes, never
/// unbounded. A structured answer cut by the limit is repaired or fails with a typed
/// error; it is never read as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLimits {
    /// The reply of a flow step (message, data, step claim).
    pub respond: u32,
    /// A reply outside any flow.
    pub classic: u32,
    /// The call after tool results.
    pub tool_round: u32,
    /// Extraction, classification and routing calls.
    pub judge: u32,
    /// History summaries.
    pub summarize: u32,
}

impl Default for TokenLimits {
    fn default() -> Self {
        Self {
            respond: 1024,
            classic: 1024,
            tool_round: 1024,
            judge: 512,
            summarize: 512,
        }
    }
}

impl TokenLimits {
    /// The limit of a call of `kind`; `classic` for a respond call outside a flow.
    pub fn of(&self, kind: crate::provider::CallKind, in_flow: bool) -> u32 {
        use crate::provider::CallKind as K;
        match kind {
            K::Respond if in_flow => self.respond,
            K::Respond => self.classic,
            K::ToolRound => self.tool_round,
            K::Extract | K::Classify | K::Route => self.judge,
            K::Summarize => self.summarize,
        }
    }
}

/// A session as this process saved it: its bytes, its value, its present fields, and
/// where its history sits in the bytes.
pub(crate) struct Remembered<D, C> {
    pub(crate) bytes: Vec<u8>,
    pub(crate) session: Session<D, C>,
    pub(crate) present: FieldSet,
    pub(crate) span: crate::session::HistorySpan,
}

/// A session loaded for a turn; from the cache, it comes with its presence set and
/// its previous encoding.
pub(crate) struct Loaded<D, C> {
    pub(crate) session: Session<D, C>,
    pub(crate) present: Option<FieldSet>,
    pub(crate) prev: Option<crate::session::PreviousSave>,
}

pub(crate) struct AgentInner<D, C> {
    pub(crate) name: String,
    pub(crate) flows: Vec<Arc<Flow<D, C>>>,
    pub(crate) code_flows: Vec<Arc<CodeFlow<D, C>>>,
    pub(crate) router: Router,
    pub(crate) on_response: Option<ResponseHook<D>>,
    /// Decides once-tool calls whose outcome is unknown.
    pub(crate) on_unknown_outcome: Option<crate::journal::UnknownOutcomeHook>,
    pub(crate) flow_index: HashMap<String, usize>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) signals: Vec<Signal<D, C>>,
    pub(crate) instructions: Vec<Instruction<D, C>>,
    pub(crate) on_enter: Option<Arc<dyn PreHook<D, C>>>,
    pub(crate) migrate: Option<Migration<D, C>>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) context: C,
    pub(crate) config: AgentConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) schema: Arc<DataSchema>,
    /// What a model-written reply may claim only with the state behind it.
    pub(crate) claim_guards: Vec<crate::claim::ClaimGuard>,
    /// How the classifier sees each flow and each code flow (built once).
    pub(crate) route_descs: Vec<String>,
    pub(crate) code_route_descs: Vec<String>,
    /// The longest system prompt built so far.
    prompt_len: std::sync::atomic::AtomicUsize,
    /// The present fields of a new session's data.
    pub(crate) fresh_present: FieldSet,
    /// Rendered once at build: persona, goal, agent instructions, glossary, knowledge.
    pub(crate) section: String,
    /// This agent's name in session leases (name, process id, a random part).
    pub(crate) lease_holder: String,
    /// One lock per session id; idle locks are dropped once there are many.
    locks: Mutex<FxHashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Output schemas are the same for every turn at the same place: built once.
    schema_cache: Mutex<FxHashMap<u64, Arc<Value>>>,
    /// Per flow: the prompt lines offering a switch to the other flows, and their ids.
    pub(crate) switch_sections: Vec<String>,
    pub(crate) switch_ids: Vec<Vec<String>>,
    /// Sessions as last saved by this process, with their bytes.
    decoded: Mutex<FxHashMap<String, Remembered<D, C>>>,
}

impl<D, C> AgentInner<D, C> {
    pub(crate) fn flow(&self, id: &str) -> Option<&Arc<Flow<D, C>>> {
        if self.flows.len() <= 8 {
            // A few string compares beat hashing the id.
            return self.flows.iter().find(|f| f.id.as_ref() == id);
        }
        self.flow_index.get(id).map(|&i| &self.flows[i])
    }
    pub(crate) fn flow_ids(&self) -> Vec<String> {
        self.flows
            .iter()
            .map(|f| f.id.to_string())
            .chain(self.code_flows.iter().map(|f| f.id.to_string()))
            .collect()
    }
    pub(crate) fn code_flow(&self, id: &str) -> Option<&Arc<CodeFlow<D, C>>> {
        self.code_flows.iter().find(|f| f.id.as_ref() == id)
    }
    /// Declarative and code flows together.
    pub(crate) fn flow_count(&self) -> usize {
        self.flows.len() + self.code_flows.len()
    }

    /// Room for a system prompt: the longest built so far (prompts of one agent are
    /// alike), so building one does not reallocate.
    pub(crate) fn prompt_capacity(&self) -> usize {
        self.prompt_len
            .load(std::sync::atomic::Ordering::Relaxed)
            .max(512)
    }

    pub(crate) fn note_prompt_len(&self, len: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        // Read first: a write on every turn would bounce the cache line between cores.
        if len > self.prompt_len.load(Relaxed) {
            self.prompt_len.fetch_max(len, Relaxed);
        }
    }

    /// The cached schema for `key`, built by `make` on first use.
    pub(crate) fn cached_schema(&self, key: u64, make: impl FnOnce() -> Value) -> Arc<Value> {
        let mut cache = self.schema_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = cache.get(&key) {
            return s.clone();
        }
        if cache.len() > 4096 {
            cache.clear();
        }
        let s = Arc::new(make());
        cache.insert(key, s.clone());
        s
    }

    /// Remember a session just saved (bytes and value).
    pub(crate) fn remember(&self, entry: Remembered<D, C>) {
        let cap = self.config.session_cache;
        if cap == 0 {
            return;
        }
        let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= cap && !map.contains_key(&entry.session.id) {
            // Evict an arbitrary entry: the cache is a shortcut, never the truth.
            if let Some(k) = map.keys().next().cloned() {
                map.remove(&k);
            }
        }
        map.insert(entry.session.id.clone(), entry);
    }

    pub(crate) fn forget(&self, id: &str) {
        let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(id);
    }

    /// The remembered session if the store still holds exactly the bytes we saved,
    /// taken out of the cache: the turn owns it (no copy), and a turn that fails puts
    /// nothing back, so the next one decodes what the store holds.
    fn recall(&self, stored: &crate::store::StoredSession) -> Option<Loaded<D, C>> {
        let hit = {
            let mut map = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
            map.remove(&stored.id)
        }?;
        if hit.bytes != stored.bytes {
            return None;
        }
        let Remembered {
            bytes,
            mut session,
            present,
            span,
        } = hit;
        session.version = stored.version;
        let prev = crate::session::PreviousSave {
            first: session.history.first().map(|m| m.content.clone()),
            last: session.history.last().map(|m| m.content.clone()),
            bytes,
            span,
        };
        Some(Loaded {
            session,
            present: Some(present),
            prev: Some(prev),
        })
    }

    fn session_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = map.get(id) {
            return l.clone();
        }
        if map.len() >= 1024 {
            // Only the map holds an idle lock.
            map.retain(|_, l| Arc::strong_count(l) > 1);
        }
        let l = Arc::new(tokio::sync::Mutex::new(()));
        map.insert(id.to_owned(), l.clone());
        l
    }

    /// Check that a directive's targets exist (the structural rules are checked by
    /// `Directive::validate`).
    pub(crate) fn check_targets(
        &self,
        d: &Directive,
        current_flow: Option<&str>,
    ) -> Result<(), DirectiveError> {
        d.validate()?;
        let unknown_flow = |f: &str| DirectiveError::UnknownFlow {
            flow: f.to_owned(),
            known: self.flow_ids(),
        };
        match &d.position {
            Some(Position::GoTo(g)) if self.code_flow(&g.flow).is_none() => {
                self.flow(&g.flow).ok_or_else(|| unknown_flow(&g.flow))?;
            }
            Some(Position::GoToStep(g)) => {
                let fid = match (&g.flow, current_flow) {
                    (Some(f), _) => f.as_str(),
                    (None, Some(f)) => f,
                    (None, None) => return Err(DirectiveError::NoActiveFlow { field: "goToStep" }),
                };
                let flow = self.flow(fid).ok_or_else(|| unknown_flow(fid))?;
                if flow.step(&g.step).is_none() {
                    return Err(DirectiveError::UnknownStep {
                        flow: fid.to_owned(),
                        step: g.step.clone(),
                        known: flow.step_ids(),
                    });
                }
            }
            Some(Position::Complete(c)) => {
                if let Some(n) = &c.next {
                    self.check_targets(n, None)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A conversational agent. Cheap to clone (shared).
pub struct Agent<D, C> {
    pub(crate) inner: Arc<AgentInner<D, C>>,
}

impl<D, C> Clone for Agent<D, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<D: AgentData, C: AgentContext> Agent<D, C> {
    /// Start an agent definition.
    pub fn builder() -> AgentBuilder<D, C> {
        AgentBuilder {
            name: "Assistant".into(),
            persona: None,
            goal: None,
            instructions: Vec::new(),
            glossary: Vec::new(),
            knowledge: Vec::new(),
            flows: Vec::new(),
            code_flows: Vec::new(),
            router: Router::default(),
            on_response: None,
            on_unknown_outcome: None,
            flow_errors: Vec::new(),
            tools: Vec::new(),
            signals: Vec::new(),
            on_enter: None,
            migrate: None,
            provider: None,
            store: None,
            context: None,
            config: AgentConfig::default(),
            clock: None,
            constraints: Vec::new(),
            checks: Vec::new(),
            claims: Vec::new(),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The registered flows.
    pub fn flows(&self) -> impl Iterator<Item = &Flow<D, C>> {
        self.inner.flows.iter().map(|f| f.as_ref())
    }

    /// Answer one user message in a session (created on first use).
    pub async fn respond(
        &self,
        session_id: &str,
        message: &str,
    ) -> Result<AgentResponse<D>, AgentError> {
        self.run_turn(
            session_id,
            Input::Message(message),
            &TurnOptions::default(),
            None,
        )
        .await
    }

    /// [`Agent::respond`] with options, e.g. the inbound event id that makes the turn
    /// exactly-once: a repeated id returns the stored response (with `duplicate` set)
    /// and does not advance the session, even when both copies arrive at once.
    pub async fn respond_with(
        &self,
        session_id: &str,
        message: &str,
        options: &TurnOptions,
    ) -> Result<AgentResponse<D>, AgentError> {
        self.run_turn(session_id, Input::Message(message), options, None)
            .await
    }

    /// Decide a tool call that waits for a person's approval
    /// ([`AgentResponse::awaiting_approval`], [`crate::approval`]): approve it, deny
    /// it with a reason, or run it with edited arguments. Once every waiting call of
    /// its round is decided, the round runs and the turn resumes where it paused: the
    /// response is that turn's answer (its message written with the tools' results).
    /// While other calls of the round still wait, the decision is recorded and the
    /// response says which calls still wait. A call that does not wait (unknown,
    /// already decided) is [`AgentError::NoPendingApproval`] and changes nothing.
    ///
    /// Works after a restart (the round is stored with the session) and from another
    /// process; takes the session's lease like a turn.
    pub async fn resolve_approval(
        &self,
        session_id: &str,
        call_id: &str,
        decision: crate::approval::Decision,
    ) -> Result<AgentResponse<D>, AgentError> {
        self.resolve_approval_with(session_id, call_id, decision, &TurnOptions::default())
            .await
    }

    /// [`Agent::resolve_approval`] with options (an inbound event id makes the
    /// decision exactly-once, like a message's).
    pub async fn resolve_approval_with(
        &self,
        session_id: &str,
        call_id: &str,
        decision: crate::approval::Decision,
        options: &TurnOptions,
    ) -> Result<AgentResponse<D>, AgentError> {
        let r = crate::approval::Resolve {
            call_id: call_id.to_owned(),
            decision,
        };
        self.run_turn(session_id, Input::Resolve(&r), options, None)
            .await
    }

    /// [`Agent::resolve_approval`] as a stream of events, like
    /// [`Agent::respond_stream`].
    pub fn resolve_approval_stream(
        &self,
        session_id: &str,
        call_id: &str,
        decision: crate::approval::Decision,
    ) -> Pin<Box<dyn Stream<Item = Event<D>> + Send>> {
        let r = crate::approval::Resolve {
            call_id: call_id.to_owned(),
            decision,
        };
        self.stream_turn(session_id, Owned::Resolve(r), TurnOptions::default())
    }

    /// The tool calls of a session that wait for a person's decision (empty when
    /// none does, or the session does not exist).
    pub async fn pending_approvals(
        &self,
        session_id: &str,
    ) -> Result<Vec<crate::approval::PendingCall>, AgentError> {
        Ok(self
            .session(session_id)
            .await?
            .and_then(|s| s.approval)
            .map(|p| p.waiting())
            .unwrap_or_default())
    }

    /// Answer one user message as a stream of events: tool, step and transition events
    /// as they happen, the text deltas, then exactly one `Done` or `Error`. The deltas
    /// always concatenate to the final message: they go out as the model writes them
    /// when the reply is known to be final (the step that speaks is settled and nothing
    /// can replace the text), otherwise once the turn is saved.
    pub fn respond_stream(
        &self,
        session_id: &str,
        message: &str,
    ) -> Pin<Box<dyn Stream<Item = Event<D>> + Send>> {
        self.respond_stream_with(session_id, message, TurnOptions::default())
    }

    /// [`Agent::respond_stream`] with options.
    pub fn respond_stream_with(
        &self,
        session_id: &str,
        message: &str,
        options: TurnOptions,
    ) -> Pin<Box<dyn Stream<Item = Event<D>> + Send>> {
        self.stream_turn(session_id, Owned::Message(message.to_owned()), options)
    }

    fn stream_turn(
        &self,
        session_id: &str,
        input: Owned,
        options: TurnOptions,
    ) -> Pin<Box<dyn Stream<Item = Event<D>> + Send>> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event<D>>();
        let agent = self.clone();
        let session_id = session_id.to_owned();
        let mut fut = Some(Box::pin(async move {
            let sink = Sink::new(tx.clone());
            let input = match &input {
                Owned::Message(m) => Input::Message(m),
                Owned::Resolve(r) => Input::Resolve(r),
            };
            let event = match agent
                .run_turn(&session_id, input, &options, Some(&sink))
                .await
            {
                Ok(r) => Event::Done(Box::new(r)),
                Err(e) => Event::Error(e),
            };
            let _ = tx.send(event);
        }));
        Box::pin(futures::stream::poll_fn(move |cx| {
            // Queued events go out before the turn runs further.
            if let Poll::Ready(Some(e)) = rx.poll_recv(cx) {
                return Poll::Ready(Some(e));
            }
            if let Some(f) = fut.as_mut()
                && f.as_mut().poll(cx).is_ready()
            {
                fut = None;
            }
            rx.poll_recv(cx)
        }))
    }

    async fn run_turn(
        &self,
        session_id: &str,
        message: Input<'_>,
        options: &TurnOptions,
        sink: Option<&Sink<D>>,
    ) -> Result<AgentResponse<D>, AgentError> {
        let inner = &self.inner;
        if let Input::Message(message) = message
            && message.len() > inner.config.max_message_bytes
        {
            return Err(AgentError::MessageTooLarge {
                len: message.len(),
                limit: inner.config.max_message_bytes,
            });
        }
        let lock = inner.session_lock(session_id);
        let _guard = lock.lock().await;
        let lease = self.take_lease(session_id).await?;
        // The deadline starts once the session is held: waiting for it and for its
        // lease (and for an approval, when that exists) is not the turn's work.
        let deadline = Deadline::start(inner.config.turn_timeout);
        // Pinned in place: the turn's future is large, and moving it into `hold` costs.
        let work = std::pin::pin!(self.attempts(
            session_id,
            message,
            options,
            sink,
            deadline,
            lease.as_ref()
        ));
        let Some(held) = lease.as_deref() else {
            return work.await;
        };
        let result = held.hold(work).await.unwrap_or_else(|e| Err(e.into()));
        release(held).await;
        result
    }

    /// The turn, re-run on fresh state after a save conflict (as `conflict` says).
    async fn attempts(
        &self,
        session_id: &str,
        input: Input<'_>,
        options: &TurnOptions,
        sink: Option<&Sink<D>>,
        deadline: Option<Deadline>,
        lease: Option<&Arc<crate::store::HeldLease>>,
    ) -> Result<AgentResponse<D>, AgentError> {
        let inner = &self.inner;
        let mut attempt = 0;
        // The turn's identity in tool call keys, fixed by its first attempt: a re-run
        // after a conflict is the same turn, and its once-tool calls are not repeated.
        let mut turn_tag: Option<Arc<str>> = None;
        loop {
            let mut load = within(deadline, self.load_for_turn(session_id)).await?;
            let loaded = load.session.version;
            if let Some(id) = options.event_id.as_deref()
                && let Some(done) = load.session.processed_event(id)
            {
                return replayed(done, sink);
            }
            self.check_flow_version(&mut load.session)?;
            // A resolution answers the held round's message, with its decision.
            let resumed: Option<crate::approval::PendingApproval>;
            let held_message: String;
            let message = match input {
                Input::Message(m) => {
                    resumed = None;
                    m
                }
                Input::Resolve(r) => {
                    let mut p = load.session.approval.clone().ok_or_else(|| {
                        AgentError::NoPendingApproval {
                            session_id: session_id.to_owned(),
                            call_id: r.call_id.clone(),
                            waiting: Vec::new(),
                        }
                    })?;
                    p.decide(&r.call_id, r.decision.clone())
                        .map_err(|waiting| AgentError::NoPendingApproval {
                            session_id: session_id.to_owned(),
                            call_id: r.call_id.clone(),
                            waiting,
                        })?;
                    held_message = p.message.clone();
                    resumed = Some(p);
                    &held_message
                }
            };
            let mut turn = Turn::new(inner, load, message, sink, options.event_id.clone());
            turn.resume = resumed;
            turn.deadline = deadline;
            turn.lease = lease.cloned();
            turn.turn_tag = turn_tag
                .get_or_insert_with(|| turn.turn_tag.clone())
                .clone();
            let span = crate::telemetry::turn_span(session_id, &inner.name, inner.provider.name());
            crate::telemetry::record_turn_input(&span, message);
            // Callbacks are caught where they are called (naming them); this catches
            // whatever else panics, so no panic unwinds out of `respond`.
            // Pinned in place: the turn's future is large, and moving it into the
            // wrappers (span, unwind guard) would copy it.
            let work = std::pin::pin!(turn.run());
            let run = AssertUnwindSafe(work.instrument(span.clone())).catch_unwind();
            let result = run.await.unwrap_or_else(|p| {
                Err(AgentError::HookPanicked {
                    what: "code called during the turn (a provider, store or data type)".into(),
                    message: crate::tool::panic_message(p.as_ref()),
                })
            });
            crate::telemetry::record_turn(&span, &result);
            match result {
                Err(AgentError::Store(StoreError::Conflict { .. }))
                    if options.event_id.is_some()
                        && attempt == 0
                        && sink.is_none_or(|s| !s.text_sent()) =>
                {
                    // A concurrent writer may have processed this very event: reload and
                    // answer from the store if so, otherwise apply the policy.
                    attempt += 1;
                    let fresh = self.load_for_turn(session_id).await?.session;
                    if let Some(done) = options
                        .event_id
                        .as_deref()
                        .and_then(|id| fresh.processed_event(id))
                    {
                        return replayed(done, sink);
                    }
                    if !matches!(inner.config.conflict, ConflictPolicy::Retry(n) if n > 0) {
                        return Err(AgentError::Store(StoreError::Conflict {
                            session_id: session_id.to_owned(),
                            expected: loaded,
                            found: fresh.version,
                        }));
                    }
                    let backoff = inner.config.conflict_backoff;
                    backoff.pause(session_id, attempt).await;
                    continue;
                }
                Err(AgentError::Store(StoreError::Conflict { .. }))
                    if matches!(inner.config.conflict, ConflictPolicy::Retry(n) if attempt < n)
                        && sink.is_none_or(|s| !s.text_sent()) =>
                {
                    attempt += 1;
                    tracing::debug!(
                        session = session_id,
                        attempt,
                        "save conflict; re-running the turn on fresh state"
                    );
                    let backoff = inner.config.conflict_backoff;
                    backoff.pause(session_id, attempt).await;
                    continue;
                }
                other => return other,
            }
        }
    }

    /// The session's lease for a turn, waiting while another holder has it; `None`
    /// when leases are off or the store keeps none.
    async fn take_lease(
        &self,
        session_id: &str,
    ) -> Result<Option<Arc<crate::store::HeldLease>>, AgentError> {
        use crate::store::AcquireFailure;
        let inner = &self.inner;
        let Some(config) = inner.config.lease.as_ref() else {
            return Ok(None);
        };
        if !inner.store.supports_leases() {
            return Ok(None);
        }
        let store = inner.store.as_ref();
        match crate::store::acquire_lease(store, session_id, &inner.lease_holder, config).await {
            Ok(l) => Ok(Some(Arc::new(crate::store::HeldLease::new(
                inner.store.clone(),
                l,
            )))),
            Err(AcquireFailure::Busy { waited, holder }) => Err(AgentError::SessionBusy {
                session_id: session_id.to_owned(),
                waited,
                holder,
            }),
            Err(AcquireFailure::Store(e)) => Err(e.into()),
            Err(AcquireFailure::NoTimer) => Err(AgentError::Config(ConfigErrors(vec![
                FlowConfigurationError {
                    flow: String::new(),
                    step: None,
                    problem: "waiting for a busy session's lease needs a Tokio runtime with timers"
                        .into(),
                    help: "build the runtime with `enable_time()` or `enable_all()`, or set `AgentConfig::lease` to `None`".into(),
                },
            ]))),
        }
    }

    /// Detect a session whose active flow changed incompatibly since it was saved; let
    /// the migration hook upgrade it, or report it.
    fn check_flow_version(&self, session: &mut Session<D, C>) -> Result<(), AgentError> {
        let Some(fid) = session.flow.as_deref() else {
            return Ok(());
        };
        let registered = self.inner.flow(fid);
        if registered.is_some_and(|f| session.flow_version.as_deref() == Some(f.version.as_str())) {
            return Ok(());
        }
        let fid = fid.to_owned();
        let current = registered.map(|f| f.version.clone());
        let problem = match self.inner.flow(&fid) {
            None => Some(format!("flow `{fid}` is no longer registered")),
            Some(f) => session
                .step
                .as_deref()
                .filter(|s| f.step(s).is_none())
                .map(|s| format!("step `{s}` no longer exists in flow `{fid}`")),
        };
        let Some(problem) = problem else {
            // Changed, but the session's position still exists: carry on.
            session.flow_version = current;
            return Ok(());
        };
        let change = FlowVersionChange {
            flow: fid.clone(),
            stored: session.flow_version.clone(),
            current: current.clone(),
            problem: problem.clone(),
        };
        if let Some(m) = &self.inner.migrate {
            let migrated = guard::call(|| "migration hook".into(), || m(session, &change))?;
            migrated.map_err(|reason| AgentError::IncompatibleSession {
                session_id: session.id.clone(),
                problem: format!("{problem}; migration failed: {reason}"),
            })?;
            let still_broken = match session.flow.as_deref() {
                None => false,
                Some(f) => match self.inner.flow(f) {
                    None => true,
                    Some(flow) => session
                        .step
                        .as_deref()
                        .is_some_and(|s| flow.step(s).is_none()),
                },
            };
            if !still_broken {
                session.flow_version = session
                    .flow
                    .as_deref()
                    .and_then(|f| self.inner.flow(f))
                    .map(|f| f.version.clone());
                return Ok(());
            }
        }
        Err(AgentError::IncompatibleSession {
            session_id: session.id.clone(),
            problem,
        })
    }

    /// Load for a turn: from the decoded cache when the stored bytes are the ones this
    /// process saved last (with the presence set), else decoded.
    async fn load_for_turn(&self, id: &str) -> Result<Loaded<D, C>, AgentError> {
        let session = match self.inner.store.load(id).await? {
            Some(stored) => match self.inner.recall(&stored) {
                Some(hit) => return Ok(hit),
                None => Session::decode(&stored)?,
            },
            None => {
                return Ok(Loaded {
                    session: Session::new(
                        id,
                        self.inner.context.clone(),
                        self.inner.clock.now_ms(),
                    ),
                    present: Some(self.inner.fresh_present.clone()),
                    prev: None,
                });
            }
        };
        Ok(Loaded {
            session,
            present: None,
            prev: None,
        })
    }

    async fn load_or_new(&self, id: &str) -> Result<Session<D, C>, AgentError> {
        match self.inner.store.load(id).await? {
            Some(stored) => Ok(Session::decode(&stored)?),
            None => Ok(Session::new(
                id,
                self.inner.context.clone(),
                self.inner.clock.now_ms(),
            )),
        }
    }

    /// The stored session, if any.
    pub async fn session(&self, id: &str) -> Result<Option<Session<D, C>>, AgentError> {
        match self.inner.store.load(id).await? {
            Some(stored) => Ok(Some(Session::decode(&stored)?)),
            None => Ok(None),
        }
    }

    /// Delete a session.
    pub async fn delete_session(&self, id: &str) -> Result<bool, AgentError> {
        self.inner.forget(id);
        Ok(self.inner.store.delete(id).await?)
    }

    /// Queue a directive for a session from outside any turn (a webhook, a queue). It is
    /// validated now (shape and targets) and applied first thing next turn; it merges
    /// with a directive already pending. One with a position (or a reply) decides the
    /// turn and skips routing; one that only writes data or context leaves routing and
    /// signals to run as usual.
    pub async fn dispatch(&self, session_id: &str, directive: Directive) -> Result<(), AgentError> {
        let lock = self.inner.session_lock(session_id);
        let _guard = lock.lock().await;
        let held = self.take_lease(session_id).await?;
        let out = self
            .dispatch_held(session_id, directive, held.as_deref())
            .await;
        if let Some(h) = &held {
            release(h).await;
        }
        out
    }

    async fn dispatch_held(
        &self,
        session_id: &str,
        directive: Directive,
        held: Option<&crate::store::HeldLease>,
    ) -> Result<(), AgentError> {
        let mut attempt = 0;
        loop {
            let mut session = self.load_or_new(session_id).await?;
            self.inner
                .check_targets(&directive, session.flow.as_deref())
                .map_err(|e| AgentError::directive("dispatch", e))?;
            let expected = session.version;
            session.pending = Some(match session.pending.take() {
                Some(p) => crate::directive::merge(p, directive.clone()),
                None => directive.clone(),
            });
            session.version += 1;
            session.updated_ms = self.inner.clock.now_ms();
            let lease = held.map(crate::store::HeldLease::lease);
            let store = self.inner.store.as_ref();
            match crate::store::save_fenced(store, session.encode()?, expected, lease).await {
                Err(StoreError::Conflict { .. }) if matches!(self.inner.config.conflict, ConflictPolicy::Retry(n) if attempt < n) =>
                {
                    attempt += 1;
                    let backoff = self.inner.config.conflict_backoff;
                    backoff.pause(session_id, attempt).await;
                }
                other => return Ok(other?),
            }
        }
    }

    /// [`Agent::dispatch`] for a directive that arrived as JSON (the spec's flat shape).
    pub async fn dispatch_json(&self, session_id: &str, value: Value) -> Result<(), AgentError> {
        let d = Directive::from_json(value).map_err(|e| AgentError::directive("dispatch", e))?;
        self.dispatch(session_id, d).await
    }
}

/// Builder for [`Agent`]; `build()` validates the whole registry.
pub struct AgentBuilder<D, C> {
    name: String,
    persona: Option<String>,
    goal: Option<String>,
    instructions: Vec<Instruction<D, C>>,
    glossary: Vec<(String, String)>,
    knowledge: Vec<String>,
    flows: Vec<Flow<D, C>>,
    code_flows: Vec<CodeFlow<D, C>>,
    router: Router,
    on_response: Option<ResponseHook<D>>,
    on_unknown_outcome: Option<crate::journal::UnknownOutcomeHook>,
    flow_errors: Vec<FlowConfigurationError>,
    tools: Vec<Arc<dyn Tool<D, C>>>,
    signals: Vec<Signal<D, C>>,
    on_enter: Option<Arc<dyn PreHook<D, C>>>,
    migrate: Option<Migration<D, C>>,
    provider: Option<Arc<dyn Provider>>,
    store: Option<Arc<dyn SessionStore>>,
    context: Option<C>,
    config: AgentConfig,
    clock: Option<Arc<dyn Clock>>,
    constraints: Vec<(String, serde_json::Value)>,
    checks: Vec<crate::data::custom::FieldCheck>,
    claims: Vec<(String, Vec<String>)>,
}

impl<D: AgentData, C: AgentContext> AgentBuilder<D, C> {
    /// The agent's name (used in the prompt).
    pub fn name(mut self, n: impl Into<String>) -> Self {
        self.name = n.into();
        self
    }
    /// Who the agent is.
    pub fn persona(mut self, p: impl Into<String>) -> Self {
        self.persona = Some(p.into());
        self
    }
    /// What the agent is for.
    pub fn goal(mut self, g: impl Into<String>) -> Self {
        self.goal = Some(g.into());
        self
    }
    /// An agent-wide instruction.
    pub fn instruction(mut self, i: Instruction<D, C>) -> Self {
        self.instructions.push(i);
        self
    }
    /// A glossary term.
    pub fn term(mut self, term: impl Into<String>, definition: impl Into<String>) -> Self {
        self.glossary.push((term.into(), definition.into()));
        self
    }
    /// A knowledge-base entry.
    pub fn knowledge(mut self, text: impl Into<String>) -> Self {
        self.knowledge.push(text.into());
        self
    }
    /// Register a flow.
    pub fn flow(mut self, f: impl IntoFlow<D, C>) -> Self {
        // A flow that failed its own checks is reported by `build()`, with the rest.
        match f.into_flow() {
            Ok(f) => self.flows.push(f),
            Err(e) => self.flow_errors.extend(e.0),
        }
        self
    }
    /// Register a code flow (an async fn; see [`crate::codeflow`]).
    pub fn code_flow(mut self, f: impl IntoCodeFlow<D, C>) -> Self {
        self.code_flows.push(f.into_code_flow());
        self
    }
    /// How a flow is picked when none is active (default: a detector without
    /// threshold, falling back to the classic reply).
    pub fn router(mut self, r: Router) -> Self {
        self.router = r;
        self
    }
    /// Run `f` once per completed turn, on both paths (classic and code flow), with
    /// the path, the flow and the handoff source. Duplicates answered from the store
    /// do not run it.
    pub fn on_response(
        mut self,
        f: impl Fn(&AgentResponse<D>, &ResponseMeta) + Send + Sync + 'static,
    ) -> Self {
        self.on_response = Some(Arc::new(f));
        self
    }
    /// Offer a tool everywhere.
    pub fn tool(mut self, t: impl IntoTool<D, C>) -> Self {
        self.tools.push(t.into_tool());
        self
    }
    /// Decide a once-tool call ([`crate::tool::Effect::Once`]) whose earlier attempt
    /// journaled its intent but no result, so whether its effect happened is unknown
    /// (the process stopped between the two). Such a call is never run again
    /// silently: without this hook it fails with a message saying so; with it, the
    /// application answers (for example after asking the payment provider about the
    /// call's key) with a [`Resolution`](crate::journal::Resolution): fail, a result
    /// it found, or run it again.
    pub fn on_unknown_outcome<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(crate::journal::UnknownOutcome) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::journal::Resolution> + Send + 'static,
    {
        self.on_unknown_outcome = Some(Arc::new(move |u| Box::pin(f(u))));
        self
    }
    /// Register a signal.
    pub fn signal(mut self, s: Signal<D, C>) -> Self {
        self.signals.push(s);
        self
    }
    /// Hook run on a session's first turn.
    pub fn on_enter(mut self, h: impl PreHook<D, C> + 'static) -> Self {
        self.on_enter = Some(Arc::new(h));
        self
    }
    /// Upgrade sessions whose active flow changed incompatibly (its step is gone, or
    /// the flow is). Without it such sessions fail with `IncompatibleSession`.
    pub fn migrate(
        mut self,
        f: impl Fn(&mut Session<D, C>, &FlowVersionChange) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.migrate = Some(Arc::new(f));
        self
    }
    /// The model.
    pub fn provider(mut self, p: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(p));
        self
    }
    /// The model, shared.
    pub fn provider_arc(mut self, p: Arc<dyn Provider>) -> Self {
        self.provider = Some(p);
        self
    }
    /// Where sessions live (default: in memory).
    pub fn store(mut self, s: impl SessionStore + 'static) -> Self {
        self.store = Some(Arc::new(s));
        self
    }
    /// Where sessions live, shared.
    pub fn store_arc(mut self, s: Arc<dyn SessionStore>) -> Self {
        self.store = Some(s);
        self
    }
    /// The context new sessions start with (default: `C::default()`).
    pub fn context(mut self, c: C) -> Self {
        self.context = Some(c);
        self
    }
    /// Engine limits.
    pub fn config(mut self, c: AgentConfig) -> Self {
        self.config = c;
        self
    }
    /// Constrain a data field (the builder form of `#[field(...)]`): JSON-schema
    /// keywords such as `{"minimum": 1, "maximum": 12}`, `{"pattern": "^INV-\\d+$"}`,
    /// `{"enum": ["single", "double"]}`, `{"format": "date"}`, `{"x-inferred": true}`
    /// or `{"x-not-past": true}` (see [`Self::not_past`]). They are sent to the model
    /// and checked on every write; an unknown field or a pattern that does not compile
    /// fails `build()`.
    pub fn constrain(mut self, field: impl Into<String>, constraints: serde_json::Value) -> Self {
        self.constraints.push((field.into(), constraints));
        self
    }
    /// Refuse a day before today in a date or date-time field (the builder form of
    /// `#[field(not_past)]`): "today" is the agent's [`Self::clock`] in
    /// [`AgentConfig::time_zone`], so a check-in date the model resolved to last year
    /// is asked for again instead of stored.
    pub fn not_past(self, field: impl Into<String>) -> Self {
        self.constrain(field, serde_json::json!({ "x-not-past": true }))
    }
    /// A custom check on a field, run on every write after its schema constraints: `Ok`
    /// with the value to store (return it unchanged, or normalised: trimmed, title-cased;
    /// keep normalisers idempotent), or `Err` with a message the user may be shown. A
    /// model value it refuses is asked for again with the message; a tool's write fails
    /// the tool call; a hook's or dispatch's write fails the turn with
    /// [`crate::error::DataError::Rejected`]. `#[field(validate = path)]` on a `#[data]`
    /// field does the same for flows built with `#[flow]`. An unknown field fails `build()`.
    pub fn validate<T, F>(mut self, field: impl Into<String>, f: F) -> Self
    where
        T: serde::Serialize + serde::de::DeserializeOwned + 'static,
        F: Fn(T) -> Result<T, String> + Send + Sync + 'static,
    {
        self.checks
            .push(crate::data::custom::FieldCheck::typed(field, f));
        self
    }
    /// A claim guard: a model-written reply that matches `pattern` (a regular
    /// expression, e.g. `(?i)\b(booked|confirmed)\b`) needs every field of `requires`
    /// set, checked after the turn's tools and hooks wrote their data. A reply that
    /// claims it without them is rendered again once, told what is not so; if it still
    /// does, its claiming sentences are removed and listed in
    /// [`AgentResponse::withheld_claims`](crate::response::AgentResponse). Verbatim
    /// replies (templates, directives) are code's own text and are not checked. With a
    /// guard, a reply streams once checked rather than as it is generated. A pattern
    /// that does not compile or an unknown field fails `build()`.
    pub fn guard_claim<I, S>(mut self, pattern: impl Into<String>, requires: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.claims.push((
            pattern.into(),
            requires.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// The clock (default: system time).
    pub fn clock(mut self, c: impl Clock + 'static) -> Self {
        self.clock = Some(Arc::new(c));
        self
    }

    /// Validate the registry and build.
    pub fn build(self) -> Result<Agent<D, C>, ConfigErrors> {
        let mut errs = self.flow_errors;
        let agent_err = |problem: String, help: String| FlowConfigurationError {
            flow: String::new(),
            step: None,
            problem,
            help,
        };
        let Some(provider) = self.provider else {
            return Err(ConfigErrors(vec![agent_err(
                "no provider".into(),
                "call `.provider(..)`; `agent_core::testing::ScriptedProvider` works offline"
                    .into(),
            )]));
        };
        let mut flow_index = HashMap::new();
        for (i, f) in self.flows.iter().enumerate() {
            if flow_index.insert(f.id.to_string(), i).is_some() {
                errs.push(FlowConfigurationError {
                    flow: f.id.to_string(),
                    step: None,
                    problem: format!("duplicate flow id `{}`", f.id),
                    help: "flow ids must be unique within an agent".into(),
                });
            }
        }
        for c in &self.code_flows {
            if flow_index.contains_key(c.id.as_ref())
                || self.code_flows.iter().filter(|o| o.id == c.id).count() > 1
            {
                errs.push(FlowConfigurationError {
                    flow: c.id.to_string(),
                    step: None,
                    problem: format!("duplicate flow id `{}` (code flow)", c.id),
                    help: "flow ids must be unique within an agent, code flows included".into(),
                });
            }
            if c.id.is_empty() {
                errs.push(agent_err(
                    "a code flow has an empty id".into(),
                    "give it an id: `CodeFlow::new(\"tutor\", tutor)`".into(),
                ));
            }
        }
        let mut flow_ids: Vec<String> = self.flows.iter().map(|f| f.id.to_string()).collect();
        flow_ids.extend(self.code_flows.iter().map(|f| f.id.to_string()));
        if let Fallback::Flow(id) = self.router.fallback()
            && !flow_ids.contains(id)
        {
            errs.push(agent_err(
                format!("router fallback `{id}` is not a registered flow"),
                suggest(id, &flow_ids, "flows"),
            ));
        }
        for f in &self.flows {
            for (step, target, target_step) in f.flow_targets() {
                if target_step.is_none() && self.code_flows.iter().any(|c| c.id.as_ref() == target)
                {
                    continue;
                }
                match self.flows.iter().find(|g| g.id.as_ref() == target) {
                    None => errs.push(FlowConfigurationError {
                        flow: f.id.to_string(),
                        step: step.clone(),
                        problem: format!(
                            "target `{target}` is neither a step of this flow nor a registered flow"
                        ),
                        help: match &step {
                            Some(_) => format!(
                                "{}; steps of `{}`: {}",
                                suggest(&target, &flow_ids, "flows"),
                                f.id,
                                f.step_ids().join(", ")
                            ),
                            None => suggest(&target, &flow_ids, "flows"),
                        },
                    }),
                    Some(g) => {
                        if let Some(ts) = target_step
                            && g.step(&ts).is_none()
                        {
                            errs.push(FlowConfigurationError {
                                flow: f.id.to_string(),
                                step,
                                problem: format!(
                                    "target step `{ts}` does not exist in flow `{target}`"
                                ),
                                help: suggest(&ts, &g.step_ids(), "steps"),
                            });
                        }
                    }
                }
            }
        }
        for f in &self.flows {
            for st in &f.steps {
                for t in &st.must_call {
                    let offered = st
                        .tools
                        .iter()
                        .chain(&f.tools)
                        .chain(&self.tools)
                        .any(|x| x.name() == t.as_ref());
                    if !offered {
                        let names: Vec<String> = st
                            .tools
                            .iter()
                            .chain(&f.tools)
                            .chain(&self.tools)
                            .map(|x| x.name().to_owned())
                            .collect();
                        errs.push(FlowConfigurationError {
                            flow: f.id.to_string(),
                            step: Some(st.id.to_string()),
                            problem: format!(
                                "`requires_tool({t})`: no tool `{t}` is offered at this step"
                            ),
                            help: suggest(t, &names, "tools"),
                        });
                    }
                }
            }
        }
        let mut names = HashSet::new();
        for t in &self.tools {
            check_tool(t.as_ref(), "", None, &mut errs);
            if !names.insert(t.name().to_owned()) {
                errs.push(agent_err(
                    format!("duplicate agent tool `{}`", t.name()),
                    "tool names must be unique".into(),
                ));
            }
        }
        if self.store.as_ref().is_some_and(|s| !s.supports_journal()) {
            errs.extend(check_journal(&self.tools, &self.flows));
        }
        errs.extend(check_config(&self.config));
        let mut sig_ids = HashSet::new();
        for s in &self.signals {
            if !sig_ids.insert(s.id.clone()) {
                errs.push(agent_err(
                    format!("duplicate signal id `{}`", s.id),
                    "signal ids must be unique".into(),
                ));
            }
            if s.handler.is_none() {
                errs.push(agent_err(
                    format!("signal `{}` has no handler", s.id),
                    "call `.handle(..)`".into(),
                ));
            }
        }
        if !errs.is_empty() {
            return Err(ConfigErrors(errs));
        }
        let mut signals = self.signals;
        // Higher priority first; stable, so ties keep declaration order.
        signals.sort_by_key(|s| std::cmp::Reverse(s.priority));
        let mut flows = self.flows;
        for (i, f) in flows.iter_mut().enumerate() {
            f.index = i;
        }
        crate::flow::assign_owned_fields(&mut flows);
        let (switch_sections, switch_ids) = crate::prompt::render_switch_sections(&flows);
        let section = crate::prompt::render_agent_section(
            &self.name,
            self.persona.as_deref(),
            self.goal.as_deref(),
            &self.instructions,
            &self.glossary,
            &self.knowledge,
        );
        let route_descs = flows
            .iter()
            .map(|f| crate::prompt::route_description(&f.title, f.when.as_deref(), &f.description))
            .collect();
        let code_route_descs = self
            .code_flows
            .iter()
            .map(|f| f.route_description())
            .collect();
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let mut schema = DataSchema::of::<D>()
            .with_max_value_bytes(self.config.max_value_bytes)
            .with_model_string_chars(self.config.max_model_string_chars)
            .with_calendar(crate::clock::Calendar::new(
                clock.clone(),
                self.config.time_zone.clone(),
            ));
        for (field, c) in &self.constraints {
            if let Err(e) = schema.constrain(field, c) {
                errs.push(agent_err(
                    format!("cannot constrain `{field}`: {e}"),
                    suggest(
                        field,
                        &schema
                            .fields()
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                        "fields",
                    ),
                ));
            }
        }
        // The data type's own checks come with its `#[flow]`s (every flow of the agent
        // shares the type, so the first flow that carries them has them all), then the
        // builder's.
        let type_checks = flows
            .iter()
            .find(|f| !f.field_checks.is_empty())
            .map(|f| f.field_checks.clone())
            .unwrap_or_default();
        for check in type_checks.into_iter().chain(self.checks) {
            let field = check.field.clone();
            if let Err(e) = schema.add_check(check) {
                errs.push(agent_err(
                    format!("cannot validate `{field}`: {e}"),
                    suggest(
                        &field,
                        &schema
                            .fields()
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>(),
                        "fields",
                    ),
                ));
            }
        }
        if !self.constraints.is_empty() {
            // The field list in each flow's prompt reads the schema; the builder's
            // constraints are part of it now.
            for f in &mut flows {
                crate::prompt::render_flow_sections(f, &schema);
            }
        }
        for (p, e) in schema.invalid_patterns() {
            errs.push(agent_err(
                format!("the field pattern `{p}` does not compile: {e}"),
                "fix the regular expression in `#[field(pattern = ...)]` or `constrain`".into(),
            ));
        }
        let mut claim_guards = Vec::with_capacity(self.claims.len());
        for (pattern, requires) in self.claims {
            let known: Vec<String> = schema.fields().iter().map(|f| f.to_string()).collect();
            let mut ok = true;
            for f in requires.iter().filter(|f| schema.index_of(f).is_none()) {
                ok = false;
                errs.push(agent_err(
                    format!(
                        "the claim guard `{pattern}` requires `{f}`, which is not a data field"
                    ),
                    suggest(f, &known, "fields"),
                ));
            }
            if requires.is_empty() {
                ok = false;
                errs.push(agent_err(
                    format!("the claim guard `{pattern}` requires no field"),
                    "name the fields that must be set before a reply may say it".into(),
                ));
            }
            match regex::Regex::new(&pattern) {
                Ok(re) if ok => claim_guards.push(crate::claim::ClaimGuard {
                    pattern: re,
                    requires: requires.into_iter().map(Arc::from).collect(),
                }),
                Ok(_) => {}
                Err(e) => errs.push(agent_err(
                    format!("the claim guard pattern `{pattern}` does not compile: {e}"),
                    "fix the regular expression passed to `guard_claim`".into(),
                )),
            }
        }
        if !errs.is_empty() {
            return Err(ConfigErrors(errs));
        }
        let schema = Arc::new(schema);
        // Every new session starts from `D::default()`: its presence set is the same.
        let fresh_present = schema.present(&D::default());
        let lease_holder = lease_holder(&self.name);
        Ok(Agent {
            inner: Arc::new(AgentInner {
                name: self.name,
                flows: flows.into_iter().map(Arc::new).collect(),
                code_flows: self.code_flows.into_iter().map(Arc::new).collect(),
                router: self.router,
                on_response: self.on_response,
                on_unknown_outcome: self.on_unknown_outcome,
                switch_sections,
                switch_ids,
                flow_index,
                tools: self.tools,
                signals,
                instructions: self.instructions,
                on_enter: self.on_enter,
                migrate: self.migrate,
                provider,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                context: self.context.unwrap_or_default(),
                config: self.config,
                clock,
                schema,
                claim_guards,
                fresh_present,
                route_descs,
                code_route_descs,
                prompt_len: std::sync::atomic::AtomicUsize::new(0),
                section,
                lease_holder,
                locks: Mutex::new(FxHashMap::default()),
                schema_cache: Mutex::new(FxHashMap::default()),
                decoded: Mutex::new(FxHashMap::default()),
            }),
        })
    }
}

/// Engine settings that cannot work, found at `build()` rather than mid-conversation.
fn check_config(c: &AgentConfig) -> Vec<FlowConfigurationError> {
    let problem = |problem: &str, help: &str| FlowConfigurationError {
        flow: String::new(),
        step: None,
        problem: problem.into(),
        help: help.into(),
    };
    let mut errs = Vec::new();
    if c.classifier_batch_size == 0 {
        errs.push(problem(
            "`classifier_batch_size` is 0: no condition could ever be judged",
            "use at least 1 (default 32)",
        ));
    }
    if c.conflict_backoff.base > c.conflict_backoff.max {
        errs.push(problem(
            "`conflict_backoff.base` is longer than `conflict_backoff.max`",
            "make `max` at least `base` (default 20 ms and 500 ms)",
        ));
    }
    if let Some(l) = &c.lease {
        if l.ttl < Duration::from_millis(10) {
            errs.push(problem(
                "`lease.ttl` is under 10 ms: a lease would expire before a turn could renew it",
                "use a ttl of at least 10 ms (default 30 s), or `lease: None` to run without leases",
            ));
        }
        if l.poll.base > l.poll.max {
            errs.push(problem(
                "`lease.poll.base` is longer than `lease.poll.max`",
                "make `max` at least `base` (default 2 ms and 100 ms)",
            ));
        }
    }
    errs
}

/// A holder name unique to this agent value: its name, the process id and a random
/// part (two agents in one process hold leases apart).
fn lease_holder(name: &str) -> String {
    use std::hash::BuildHasher;
    let nonce = std::hash::RandomState::new().hash_one((name, std::process::id()));
    format!("{name}/pid{}/{:08x}", std::process::id(), nonce as u32)
}

/// Release a turn's lease; a failure only delays the next turn until it expires.
async fn release(held: &crate::store::HeldLease) {
    if let Err(e) = held.release().await {
        tracing::warn!(session = %held.lease().session_id, error = %e, "releasing the session lease failed; it expires after its ttl");
    }
}

/// `effect = once` tools registered on an agent whose store keeps no journal: their
/// calls could only fail, so `build()` says so (tools added at run time, by hooks or
/// code flows, fail at the call).
fn check_journal<D, C>(
    tools: &[Arc<dyn Tool<D, C>>],
    flows: &[Flow<D, C>],
) -> Vec<FlowConfigurationError> {
    let once = |t: &&Arc<dyn Tool<D, C>>| t.effect() == crate::tool::Effect::Once;
    let agent = tools.iter().filter(once).map(|t| (String::new(), t));
    let flow = flows.iter().flat_map(|f| {
        let steps = f.steps.iter().flat_map(|s| s.tools.iter());
        f.tools
            .iter()
            .chain(steps)
            .filter(once)
            .map(|t| (f.id.to_string(), t))
    });
    agent
        .chain(flow)
        .map(|(flow, t)| FlowConfigurationError {
            flow,
            step: None,
            problem: format!(
                "tool `{}` runs at most once (`effect = once`) but the session store keeps no tool journal",
                t.name()
            ),
            help: "use a store of agent_core::store (they all keep one), implement `SessionStore::journal_begin`/`journal_finish`/`supports_journal`, or declare the tool `effect = idempotent`".into(),
        })
        .collect()
}

/// Tool checks shared by flow and agent builders.
pub(crate) fn check_tool<D, C>(
    t: &dyn Tool<D, C>,
    flow: &str,
    step: Option<&str>,
    errs: &mut Vec<FlowConfigurationError>,
) {
    if !valid_tool_name(t.name()) {
        errs.push(FlowConfigurationError {
            flow: flow.to_owned(),
            step: step.map(str::to_owned),
            problem: format!("invalid tool name `{}`", t.name()),
            help: "use 1 to 64 ASCII letters, digits, `_` or `-`".into(),
        });
    }
    if t.description().trim().is_empty() {
        errs.push(FlowConfigurationError {
            flow: flow.to_owned(),
            step: step.map(str::to_owned),
            problem: format!("tool `{}` has no description", t.name()),
            help: "the model needs a description to decide when to call it".into(),
        });
    }
}
