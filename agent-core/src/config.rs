//! The engine's settings: limits, knobs and defaults an agent is built with. Kept below
//! the pipeline and the agent, which both read them.

use std::time::Duration;

use crate::backoff::ConflictBackoff;

/// What to do when another writer saved the session during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictPolicy {
    /// Return [`StoreError::Conflict`](crate::error::StoreError::Conflict); the caller decides.
    /// A turn whose once-tools' effects happened before its save lost returns
    /// [`AgentError::ConflictAfterEffects`](crate::error::AgentError::ConflictAfterEffects)
    /// instead, which lists them.
    Fail,
    /// Re-run the turn on the fresh state up to this many times, then fail (as `Fail`
    /// says). A re-run reuses the journaled results of the once-tools the turn called
    /// (see [`crate::journal`]).
    Retry(u32),
}

/// The engine's settings for an agent: per-turn limits (auto steps, flow hops, message
/// size, tool rounds, timeouts), token limits, reply style and length, grounding of the
/// values the model reads, the time zone, and how concurrent saves are handled. Start from
/// `AgentConfig::default()`, change the fields you need, and pass it to
/// `AgentBuilder::config`.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Auto steps walked per turn before stopping with `AutoStepCap`.
    pub max_auto_steps_per_turn: u32,
    /// Hops to a different flow per turn before stopping with `TransitionCap`.
    pub max_transitions_per_turn: u32,
    /// Flows that may wait on the dialogue stack ([`crate::session::Session::stack`])
    /// while others interrupt them. A flow the model starts past this depth is not
    /// started; the reply says to finish the current one first. Default 3.
    pub max_interruptions: usize,
    /// Tool rounds per model call.
    pub max_tool_rounds: u32,
    /// Offer a flow's tools as an `action` field of the structured answer instead of
    /// the provider's native tools, for servers and models that cannot call a tool
    /// while a JSON schema constrains the answer. Off by default. Measured on
    /// Qwen2.5-Coder 1.5B under llama.cpp: natively it never called `book_room`; with
    /// actions it did (the examples' local configuration turns it on). A call of a
    /// tool that waits for the user's agreement is summarised either way
    /// ([`crate::tool::Tool::needs_agreement`]).
    pub tools_in_answer: bool,
    /// Before a call that waits for the user's agreement runs on an answer to its
    /// summary ([`crate::tool::Tool::needs_agreement`]) that the turn's answer judged a
    /// yes, ask the model in a short call of its own whether that answer agrees; a
    /// plain yes ("Yes, book it") runs with no call at all. When it does not agree,
    /// nothing runs and the reply asks again. On by default: turn it off when the
    /// model's judgement of a yes inside the turn's answer can be trusted.
    /// Measured on Qwen2.5-Coder 1.5B at temperature 0.7: inside the full reply call
    /// it judged "Let me think about it for a moment", "Not yet, thanks" and "Ainda
    /// não, obrigado" a yes about a third of the time and booked (4 of 168 concierge
    /// runs); asked alone, with only the question and the answer, it gave 19
    /// hesitations a yes-probability of at most 0.18 (most under 0.01) and 23 yeses
    /// at least 0.90. Costs one call on a confirmation answered with other words.
    pub check_agreement: bool,
    /// Time limit of one tool call (a tool's own [`Tool::timeout`] wins). A call past
    /// it is cancelled and becomes a failed result the model (or the code flow) sees;
    /// `None` lets tools run as long as they take.
    ///
    /// [`Tool::timeout`]: crate::tool::Tool::timeout
    pub tool_timeout: Option<Duration>,
    /// Time limit of a whole turn (default 180 s): past it the turn ends with
    /// [`AgentError::TurnTimeout`](crate::error::AgentError::TurnTimeout) and the session is unchanged; a code flow still
    /// running a tenth of the limit before it is stopped as a failed step instead (see
    /// `max_flow_failures`). It counts from the moment the turn is asked for (the wait
    /// for a busy session included: a wait that reaches it fails the turn with
    /// [`AgentError::SessionBusy`](crate::error::AgentError::SessionBusy) before
    /// anything runs) to the save. `None` lets turns run as long as they take.
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
    /// What a turn does when another writer saved the same session first: re-run on the
    /// fresh session (default: up to 3 times) or fail with a typed conflict error; never
    /// last-write-wins.
    pub conflict: ConflictPolicy,
    /// Pause before each re-run of a conflicting turn (jittered exponential; 20 ms
    /// doubling up to 500 ms by default; [`ConflictBackoff::NONE`] re-runs at once).
    pub conflict_backoff: ConflictBackoff,
    /// The session lease: a turn (or [`Agent::dispatch`](crate::agent::Agent::dispatch)) first takes its session's
    /// lease in the store, so turns on one session from several agents or processes
    /// run one at a time instead of racing and re-running; a turn on a busy session
    /// waits up to [`LeaseConfig::max_wait`](crate::store::LeaseConfig), then fails
    /// with [`AgentError::SessionBusy`](crate::error::AgentError::SessionBusy). Default on (30 s ttl, 60 s wait). `None`, or a
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
    /// A reply that hands the user to another flow is written for that flow's first
    /// step in the same call: the hand-over section names each flow's first step and
    /// the answer's `data` carries the fields it collects, so the flow handed to needs
    /// no call of its own when it lands there (one call per hand-over instead of two).
    /// Off by default: on Qwen2.5-Coder 1.5B the longer hand-over section made the
    /// help desk's front desk hand greetings to billing (6 of 6), copy "First step:"
    /// into its reply and fill the other flows' fields with made-up values (31 in 21
    /// openings), against none of these without it. Worth trying on larger models.
    pub preview_handoffs: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_auto_steps_per_turn: 10,
            max_transitions_per_turn: 10,
            max_interruptions: 3,
            max_tool_rounds: 5,
            tools_in_answer: false,
            check_agreement: true,
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
            preview_handoffs: false,
        }
    }
}

/// The text of [`AgentConfig::reply_style`] unless you set another: short replies, and no
/// claim that an action happened unless a tool did it. Reuse it when you extend the
/// style rather than replace it.
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
    /// Extraction, classification, routing and agreement calls.
    pub judge: u32,
    /// The summary call that condenses an old part of a long history.
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
            K::Extract | K::Classify | K::Route | K::Agreement => self.judge,
            K::Summarize => self.summarize,
        }
    }
}
