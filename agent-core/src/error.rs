//! Typed errors. Every variant says what went wrong and how to fix it.

use std::fmt;
use std::time::Duration;

use thiserror::Error;

use crate::provider::CallKind;
// Defined with the model boundary it belongs to; kept here too so every error is in one place.
pub use crate::provider::ProviderError;

/// A data or context write that the type rejects.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum DataError {
    /// The value is not a JSON object.
    #[error("expected a JSON object for a data write, found {found}; pass a struct or a map")]
    NotAnObject {
        /// What was found.
        found: &'static str,
    },
    /// Serializing the current value failed.
    #[error("could not serialize the data: {0}; make sure the type serializes to an object")]
    Serialize(String),
    /// The patch names a field the type does not have.
    #[error("unknown field `{field}`; known fields: {}", known.join(", "))]
    UnknownField {
        /// The unknown field.
        field: String,
        /// The fields the type has.
        known: Vec<String>,
    },
    /// Values that break their field's constraints (range, pattern, length, enum,
    /// date format, size cap); nothing was written.
    #[error("{}; the write was not applied", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rejected(Vec<FieldRejection>),
    /// The type rejected the values.
    #[error("invalid value for {}: {message}; the write was not applied", if fields.is_empty() { "the data".to_string() } else { format!("field(s) {}", fields.join(", ")) })]
    Invalid {
        /// The offending fields, when they could be named.
        fields: Vec<String>,
        /// The deserializer's message.
        message: String,
    },
}

/// One value refused by its field's constraints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldRejection {
    /// The name of the field whose value was refused, as the data type declares it.
    pub field: String,
    /// Why, in words a user can be shown ("must be at most 12").
    pub reason: String,
}

impl std::fmt::Display for FieldRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.field, self.reason)
    }
}

/// A directive whose shape breaks the rules, or whose target does not exist.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum DirectiveError {
    /// Not a directive object at all.
    #[error("malformed directive: {0}")]
    Malformed(String),
    /// A field has the wrong JSON type.
    #[error("directive field `{field}` must be {expected}, found {found}")]
    Shape {
        /// Field name.
        field: &'static str,
        /// What it accepts.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// An object form has a key it does not know.
    #[error("directive field `{field}` has unknown key `{key}`; allowed: {}", allowed.join(", "))]
    UnknownKey {
        /// Field name.
        field: &'static str,
        /// The unknown key.
        key: String,
        /// Keys it accepts.
        allowed: &'static [&'static str],
    },
    /// A target id is missing or empty (e.g. `goTo: {}`).
    #[error("directive field `{field}` needs a non-empty {what}")]
    EmptyTarget {
        /// Field name.
        field: &'static str,
        /// What is missing.
        what: &'static str,
    },
    /// More than one position field.
    #[error("a directive can hold one position field, found {}; move follow-ups into `complete.next`", fields.join(" + "))]
    MultiplePositions {
        /// The position fields found.
        fields: Vec<String>,
    },
    /// `reply` together with `abort`.
    #[error("`reply` cannot be combined with `abort`: an aborted conversation delivers no reply")]
    ReplyWithAbort,
    /// The target flow is not registered.
    #[error("unknown flow `{flow}`; registered flows: {}", known.join(", "))]
    UnknownFlow {
        /// The unknown flow id.
        flow: String,
        /// Registered flow ids.
        known: Vec<String>,
    },
    /// The target step is not in the flow.
    #[error("flow `{flow}` has no step `{step}`; its steps: {}", known.join(", "))]
    UnknownStep {
        /// Flow searched.
        flow: String,
        /// The unknown step id.
        step: String,
        /// The flow's steps.
        known: Vec<String>,
    },
    /// A step-relative position with no active flow.
    #[error(
        "`{field}` needs an active flow, but none is active; use `goTo` or `goToStep` with a flow"
    )]
    NoActiveFlow {
        /// Field name.
        field: &'static str,
    },
}

/// One problem in a flow or agent definition, found at `build()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowConfigurationError {
    /// Flow id (empty for agent-level problems).
    pub flow: String,
    /// Step id, when the problem is in a step.
    pub step: Option<String>,
    /// What is wrong, in one sentence naming the offending id or field.
    pub problem: String,
    /// How to fix it (valid choices, the rule).
    pub help: String,
}

impl fmt::Display for FlowConfigurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.flow.is_empty() {
            write!(f, "agent")?;
        } else {
            write!(f, "flow `{}`", self.flow)?;
        }
        if let Some(s) = &self.step {
            write!(f, ", step `{s}`")?;
        }
        write!(f, ": {}", self.problem)?;
        if !self.help.is_empty() {
            write!(f, " ({})", self.help)?;
        }
        Ok(())
    }
}

impl std::error::Error for FlowConfigurationError {}

/// Every problem found in one definition, reported together.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{} configuration error(s):\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
pub struct ConfigErrors(pub Vec<FlowConfigurationError>);

/// A session id that breaks the session-id rule ([`crate::store::check_session_id`]):
/// the agent refuses it before touching the store, and nothing changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SessionIdError {
    /// The id is empty.
    #[error(
        "the session id is empty; give each conversation a non-empty id (at most 4096 bytes, no control characters)"
    )]
    Empty,
    /// The id is longer than [`crate::store::MAX_SESSION_ID_BYTES`].
    #[error(
        "the session id is {len} bytes long, over the limit of {limit} bytes; use a shorter id (a long natural key can be hashed, e.g. its SHA-256 in hex)"
    )]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The id contains a control character (Unicode category Cc: U+0000–U+001F,
    /// U+007F–U+009F).
    #[error(
        "the session id has the control character U+{code:04X} at byte {at}; session ids may not contain control characters (U+0000–U+001F, U+007F–U+009F): remove or encode them"
    )]
    ControlCharacter {
        /// Byte offset of the character in the id.
        at: usize,
        /// The character's code point.
        code: u32,
    },
}

/// Why a session store call failed: a version conflict (another writer saved first), a
/// lost lease, a corrupt record, or the backend (database, network). Turns that hit it
/// fail without saving; a conflict is re-run as the agent's `ConflictPolicy` says.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum StoreError {
    /// Compare-and-swap failed: someone saved the session since it was loaded.
    #[error(
        "session `{session_id}` was changed concurrently (expected version {expected}, found {found}); reload and retry the turn"
    )]
    Conflict {
        /// Session id.
        session_id: String,
        /// Version the writer expected.
        expected: u64,
        /// Version in the store.
        found: u64,
    },
    /// The stored bytes could not be read.
    #[error(
        "session `{session_id}` could not be decoded: {message}; the stored data does not match the agent's types"
    )]
    Corrupt {
        /// Session id.
        session_id: String,
        /// Decoder message.
        message: String,
    },
    /// The store's backend failed (a database or network error), with its message.
    #[error("session store backend error: {0}")]
    Backend(String),
    /// A save (or renewal) under a session lease that another holder took over: this
    /// holder's lease expired (it did not renew in time) and the session's turns are
    /// someone else's now. Nothing was written.
    #[error(
        "the lease on session `{session_id}` (fencing token {token}) was taken over{}; nothing was saved: the lease expired before it was renewed (raise the lease ttl if turns stall that long) and another turn holds the session now",
        match current { Some(t) => format!(" (current token {t})"), None => String::new() }
    )]
    LeaseLost {
        /// Session id.
        session_id: String,
        /// The token this holder had.
        token: u64,
        /// The session's current token, if it has a lease.
        current: Option<u64>,
    },
    /// A lease method was called on a store that does not keep leases
    /// ([`crate::store::SessionStore::supports_leases`] is `false`).
    #[error(
        "this session store does not keep session leases (session `{session_id}`); implement the lease methods of `SessionStore`, or run without leases (`AgentConfig::lease = None`)"
    )]
    LeasesUnsupported {
        /// Session id.
        session_id: String,
    },
    /// A journal method was called on a store that keeps no once-tool journal
    /// ([`crate::store::SessionStore::supports_journal`] is `false`).
    #[error(
        "this session store keeps no once-tool journal (session `{session_id}`); implement the journal methods of `SessionStore`, or declare the tool `effect = idempotent`"
    )]
    JournalUnsupported {
        /// Session id.
        session_id: String,
    },
}

/// Why a turn failed. A failed turn never changes the stored session.
///
/// Non-exhaustive: match the variants you handle and keep a catch-all arm.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum AgentError {
    /// The agent definition is invalid.
    #[error(transparent)]
    Config(#[from] ConfigErrors),
    /// A model call failed.
    #[error("model call ({kind:?}) failed: {source}")]
    Provider {
        /// Which call.
        kind: CallKind,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// The model's answer was not usable, even after a repair attempt.
    #[error("the model's {kind:?} answer was malformed: {message}; the session was left unchanged")]
    MalformedModelOutput {
        /// Which call.
        kind: CallKind,
        /// What was wrong.
        message: String,
    },
    /// A directive was invalid or pointed nowhere.
    #[error("directive from {source_name} rejected: {error}")]
    Directive {
        /// Who emitted it.
        source_name: String,
        /// What was wrong.
        error: DirectiveError,
    },
    /// A data or context write was rejected.
    #[error("write from {source_name} rejected: {error}")]
    Data {
        /// Who emitted it.
        source_name: String,
        /// What was wrong.
        error: DataError,
    },
    /// Loading or saving the session failed; the turn's changes were not saved.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A user callback (hook, predicate, signal handler, reply function, migration
    /// or response hook) panicked. The turn was stopped before its save, so the
    /// session is unchanged (except for `on_response`, which runs after the save and is
    /// reported in [`AgentResponse::hook_failures`](crate::response::AgentResponse)).
    #[error("{what} panicked: {message}")]
    HookPanicked {
        /// Which callback ("prepare hook of step `confirm` in flow `booking`").
        what: String,
        /// Panic payload, when it was a string.
        message: String,
    },
    /// The turn ran past [`AgentConfig::turn_timeout`](crate::AgentConfig) and was
    /// stopped before its save; the session is unchanged.
    #[error(
        "the turn took longer than {after:?} and was stopped; the session was left unchanged (raise `turn_timeout`, or look for a tool, hook or code flow that does not finish)"
    )]
    TurnTimeout {
        /// The limit.
        after: Duration,
    },
    /// The stored session cannot continue with the current flow definitions.
    #[error(
        "session `{session_id}` cannot continue: {problem}; register a migration with `AgentBuilder::migrate` or reset the session"
    )]
    IncompatibleSession {
        /// Session id.
        session_id: String,
        /// What changed.
        problem: String,
    },
    /// Other turns (in this or another process) held the session for longer than
    /// this turn could wait: [`LeaseConfig::max_wait`](crate::store::LeaseConfig) or
    /// `turn_timeout`, whichever is shorter (the wait counts toward the turn's
    /// deadline). This turn did not run and the session is unchanged. Send the
    /// message again later.
    #[error(
        "session `{session_id}` is busy: other turns{} held it for the whole {waited:?} this turn waited; nothing ran (retry later; the wait is bounded by `lease.max_wait` and by `turn_timeout`, whichever is shorter)",
        match holder { Some(h) => format!(" (held by `{h}`)"), None => String::new() }
    )]
    SessionBusy {
        /// Session id.
        session_id: String,
        /// How long this turn waited.
        waited: Duration,
        /// Who held the lease at the last attempt.
        holder: Option<String>,
    },
    /// [`Agent::resolve_approval`](crate::agent::Agent::resolve_approval) named a call
    /// that does not wait for a decision (already decided, never asked for, or the
    /// session has none pending): nothing changed.
    #[error(
        "session `{session_id}` has no tool call `{call_id}` waiting for approval; {}",
        if waiting.is_empty() { "none waits".to_owned() } else { format!("waiting: {}", waiting.join(", ")) }
    )]
    NoPendingApproval {
        /// Session id.
        session_id: String,
        /// The call id given.
        call_id: String,
        /// The calls that do wait.
        waiting: Vec<String>,
    },
    /// A code flow broke the replay rules.
    #[error(transparent)]
    CodeFlow(#[from] CodeFlowError),
    /// The session id breaks the session-id rule
    /// ([`crate::store::check_session_id`]); the call was refused before the store
    /// was touched.
    #[error(transparent)]
    InvalidSessionId(#[from] SessionIdError),
    /// A once-tool's ([`crate::tool::Effect::Once`]) journaled result was reused (an
    /// event delivered again after this holder lost the session's lease, a turn
    /// re-run after a save conflict) on a session another turn saved since, and its
    /// writes would erase what that turn saved: a field it writes has changed since
    /// the call (`changed`). **The tool's effect happened** (`effect` carries the
    /// journaled output), but its writes were not applied and the turn was stopped
    /// before its save: the session holds what the other turn saved. Tell the user
    /// what was done (the output), or merge such results with
    /// [`AgentBuilder::on_stale_once_result`](crate::agent::AgentBuilder::on_stale_once_result).
    /// Delivering the event again gives this error again (the tool does not run).
    #[error(
        "`{}` already ran (its effect happened; journaled output: \"{}\"), but its result was computed on data that changed since (field(s) {}) and was not applied: another turn saved session `{}` in between; nothing was saved (merge such results with `AgentBuilder::on_stale_once_result`)",
        .0.effect.tool, .0.effect.output, .0.changed.join(", "), .0.session_id
    )]
    OnceResultStale(Box<crate::journal::StaleOnceResult>),
    /// The turn's save lost its compare-and-swap (another writer saved the session
    /// first, `conflict` is the store's [`StoreError::Conflict`]) and was not re-run
    /// again ([`crate::ConflictPolicy`]), **after** once-tool calls
    /// ([`crate::tool::Effect::Once`]) whose effects happened: `effects` lists them with
    /// their journaled outputs. Nothing of the turn was saved; delivering it again
    /// (same inbound event id) reuses the journaled results instead of running the
    /// tools. Without once-effects such a turn fails with
    /// `AgentError::Store(StoreError::Conflict { .. })`.
    #[error(
        "{conflict}; the once-tool call(s) {} of this turn had already run (their effects happened and their results are journaled: delivered again, the turn reuses them)",
        effects.iter().map(|e| format!("`{}` (\"{}\")", e.tool, e.output)).collect::<Vec<_>>().join(", ")
    )]
    ConflictAfterEffects {
        /// The store's conflict.
        #[source]
        conflict: StoreError,
        /// The once-tool calls whose effects happened in this turn's attempts.
        effects: Vec<crate::journal::OnceEffect>,
    },
    /// The user message exceeds the configured limit.
    #[error(
        "user message of {len} bytes exceeds the limit of {limit} bytes; raise `max_message_bytes` or shorten it"
    )]
    MessageTooLarge {
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

/// A code flow that cannot be replayed faithfully: a bug in the flow's code, not in
/// the input. It counts as a failed step of the flow (reported in
/// `StoppedReason::FlowFailed::replay`), so repeated failures clear the flow instead
/// of failing every turn; in always-replay mode (the test kit) the turn fails with it.
#[derive(Debug, Clone, Error, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CodeFlowError {
    /// The replay called something other than what the journal recorded here.
    #[error(
        "code flow `{flow}` is not deterministic: at journal position {position} the replay called {called}, but the recorded run called {recorded}; take time, randomness and ids from `ctx` and keep the order of effects stable"
    )]
    NonDeterministic {
        /// The flow.
        flow: String,
        /// Index in the journal.
        position: usize,
        /// What was recorded there.
        recorded: String,
        /// What the replay called.
        called: String,
    },
    /// The replay finished while the journal still had entries.
    #[error(
        "code flow `{flow}` is not deterministic: the replay returned after {position} of {recorded} recorded effects; the fn must take the same path on every run"
    )]
    EndedEarly {
        /// The flow.
        flow: String,
        /// Effects replayed.
        position: usize,
        /// Effects recorded.
        recorded: usize,
    },
    /// A recorded answer no longer fits the type the flow asks for.
    #[error(
        "code flow `{flow}`: the recorded answer to `{key}` (journal position {position}) does not fit the requested type: {message}; keep `ask` types stable or migrate the session"
    )]
    JournalType {
        /// The flow.
        flow: String,
        /// Index in the journal.
        position: usize,
        /// The ask's key.
        key: String,
        /// The deserializer's message.
        message: String,
    },
    /// Always-replay mode: a run from scratch ended differently from the live run.
    #[error(
        "code flow `{flow}` is not deterministic: replayed from scratch it ended with {replayed}, the live run with {live}"
    )]
    DifferentOutcome {
        /// The flow.
        flow: String,
        /// The live run's outcome.
        live: String,
        /// The replay's outcome.
        replayed: String,
    },
}

impl AgentError {
    pub(crate) fn directive(source: impl fmt::Display, error: DirectiveError) -> Self {
        AgentError::Directive {
            source_name: source.to_string(),
            error,
        }
    }
    pub(crate) fn data(source: impl fmt::Display, error: DataError) -> Self {
        AgentError::Data {
            source_name: source.to_string(),
            error,
        }
    }
}
