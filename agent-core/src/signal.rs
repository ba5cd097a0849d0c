//! Signals: cross-cutting detectors that run every turn, before the model (`pre`), after
//! it (`post`) or both, judged by code (`if`) and/or the model (`when`, batched into the
//! turn's one classifier call), optionally extracting a typed value.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::directive::{Directive, PreDirective};
use crate::hook::{Cx, Predicate};

/// When a signal runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the model call; may redirect, halt or augment this turn.
    Pre,
    /// After the model call; positions arm the next turn's pending directive.
    Post,
    /// Before and after the model call: the signal is checked in both phases.
    Both,
}

impl Phase {
    pub(crate) fn runs_pre(self) -> bool {
        matches!(self, Phase::Pre | Phase::Both)
    }
    pub(crate) fn runs_post(self) -> bool {
        matches!(self, Phase::Post | Phase::Both)
    }
}

/// How often a signal may fire in one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frequency {
    /// At most once per session.
    Once,
    /// Every time it matches.
    Always,
    /// Not again until the duration has passed since it last fired.
    Cooldown(Duration),
}

/// When a signal last fired and how often, kept in the session so `once` and `cooldown`
/// hold across turns and restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalState {
    /// How many times it fired.
    pub fired: u32,
    /// When it last fired (milliseconds since the Unix epoch, from the agent's clock).
    pub last_fired_ms: u64,
}

/// What a signal handler sees: the turn's view (data, context, flow, step, message) and
/// the value the classifier extracted for the signal, if it asked for one.
pub struct SignalCx<'a, D, C> {
    pub(crate) cx: &'a Cx<'a, D, C>,
    pub(crate) extracted: Option<&'a Value>,
    pub(crate) phase: Phase,
    pub(crate) reply: Option<&'a str>,
}

impl<'a, D, C> SignalCx<'a, D, C> {
    /// The turn view (data, context, position, message).
    pub fn turn(&self) -> &'a Cx<'a, D, C> {
        self.cx
    }
    /// The phase being run (`Pre` or `Post`).
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// The value the model extracted for this signal, typed.
    pub fn extracted<T: DeserializeOwned>(&self) -> Option<T> {
        self.extracted
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
    /// The raw extracted value.
    pub fn extracted_json(&self) -> Option<&'a Value> {
        self.extracted
    }
    /// In the post phase: the assistant message of this turn.
    pub fn reply(&self) -> Option<&'a str> {
        self.reply
    }
}

/// What a signal does when it fires: returns the directive (reply, halt, go to a flow,
/// data writes, prompt additions) for this turn. Closures of the same shape implement it,
/// so most signals pass a closure to [`Signal::handle`]; implement the trait for a
/// handler that keeps state or awaits something.
#[async_trait]
pub trait SignalHandler<D, C>: Send + Sync {
    /// Run the handler for a matched signal.
    async fn call(&self, cx: &SignalCx<'_, D, C>) -> SignalDirective<D, C>;
}

#[async_trait]
impl<D, C, F> SignalHandler<D, C> for F
where
    F: Fn(&SignalCx<'_, D, C>) -> SignalDirective<D, C> + Send + Sync,
    D: Sync,
    C: Sync,
{
    async fn call(&self, cx: &SignalCx<'_, D, C>) -> SignalDirective<D, C> {
        self(cx)
    }
}

/// A cross-cutting detector checked every turn whatever flow or step is active ("the user
/// wants a human", "the user is angry"): a code condition ([`Signal::if_`]) and/or a
/// condition the model judges ([`Signal::when`]), a phase, a frequency, and a handler
/// whose directive takes effect. Register it with `AgentBuilder::signal`; use a signal
/// rather than a branch when the condition applies across flows.
pub struct Signal<D, C> {
    pub(crate) id: String,
    pub(crate) phase: Phase,
    pub(crate) when: Option<String>,
    pub(crate) if_: Option<Predicate<D, C>>,
    pub(crate) extract: Option<Value>,
    pub(crate) frequency: Frequency,
    pub(crate) priority: i32,
    pub(crate) handler: Option<Arc<dyn SignalHandler<D, C>>>,
}

impl<D, C> fmt::Debug for Signal<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("id", &self.id)
            .field("phase", &self.phase)
            .field("when", &self.when)
            .field("frequency", &self.frequency)
            .field("priority", &self.priority)
            .finish()
    }
}

impl<D: Sync + 'static, C: Sync + 'static> Signal<D, C> {
    /// A signal with an id (unique per agent), running in the pre phase, always.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            phase: Phase::Pre,
            when: None,
            if_: None,
            extract: None,
            frequency: Frequency::Always,
            priority: 0,
            handler: None,
        }
    }
    /// Run before the model call ([`Phase::Pre`], the default: the signal can redirect, halt
    /// or add to this turn's prompt), after it ([`Phase::Post`]: its position arms the next
    /// turn), or both.
    pub fn phase(mut self, phase: Phase) -> Self {
        self.phase = phase;
        self
    }
    /// Fire when the model judges `condition` true of the user's message. The condition is
    /// judged in the turn's one classifier call together with the other due conditions; with
    /// an [`if_`](Self::if_) as well, it is judged only when the code condition holds.
    pub fn when(mut self, condition: impl Into<String>) -> Self {
        self.when = Some(condition.into());
        self
    }
    /// A code condition (runs first; when it fails the `when` is never judged).
    pub fn if_(mut self, p: impl Fn(&Cx<'_, D, C>) -> bool + Send + Sync + 'static) -> Self {
        self.if_ = Some(Arc::new(p));
        self
    }
    /// Ask the classifier to extract a value of type `T` when the signal matches.
    pub fn extract<T: JsonSchema>(mut self) -> Self {
        let mut s = schemars::schema_for!(T).to_value();
        if let Value::Object(o) = &mut s {
            o.remove("$schema");
            o.remove("title");
        }
        self.extract = Some(s);
        self
    }
    /// Fire at most once per session.
    pub fn once(mut self) -> Self {
        self.frequency = Frequency::Once;
        self
    }
    /// Fire whenever it matches (default).
    pub fn always(mut self) -> Self {
        self.frequency = Frequency::Always;
        self
    }
    /// Fire at most once per `d`.
    pub fn cooldown(mut self, d: Duration) -> Self {
        self.frequency = Frequency::Cooldown(d);
        self
    }
    /// Higher priorities run first (ties: declaration order).
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    /// What to do when the signal fires: a closure `|cx| SignalDirective::..` or any
    /// [`SignalHandler`]. Required: `build()` rejects a signal without one.
    pub fn handle(mut self, h: impl SignalHandler<D, C> + 'static) -> Self {
        self.handler = Some(Arc::new(h));
        self
    }

    /// Whether the frequency rule allows firing now.
    pub(crate) fn allowed(&self, state: Option<&SignalState>, now_ms: u64) -> bool {
        match (self.frequency, state) {
            (_, None) | (Frequency::Always, _) => true,
            (Frequency::Once, Some(s)) => s.fired == 0,
            (Frequency::Cooldown(d), Some(s)) => {
                s.fired == 0 || now_ms.saturating_sub(s.last_fired_ms) >= d.as_millis() as u64
            }
        }
    }
}

/// Computes a signal's reply when it fires.
pub type ReplyFn<D, C> = Arc<dyn Fn(&SignalCx<'_, D, C>) -> String + Send + Sync>;

/// A late-binding reply for signals: text, or a function of the signal's view.
pub enum ReplyWith<D, C> {
    /// The same text every time.
    Text(String),
    /// Computed when the signal fires.
    Fn(ReplyFn<D, C>),
}

impl<D, C> Clone for ReplyWith<D, C> {
    fn clone(&self) -> Self {
        match self {
            ReplyWith::Text(t) => ReplyWith::Text(t.clone()),
            ReplyWith::Fn(f) => ReplyWith::Fn(f.clone()),
        }
    }
}

/// What signal handlers return: a [`PreDirective`] plus signal-only fields.
pub struct SignalDirective<D, C> {
    /// The pre-directive (in the post phase its pre-only fields are dropped and its
    /// position becomes the next turn's pending directive).
    pub pre: PreDirective<D, C>,
    /// Skip the remaining signal handlers of this phase.
    pub stop_other_signals: bool,
    /// A reply computed when the signal fires.
    pub reply_with: Option<ReplyWith<D, C>>,
}

impl<D, C> Default for SignalDirective<D, C> {
    fn default() -> Self {
        Self {
            pre: PreDirective::default(),
            stop_other_signals: false,
            reply_with: None,
        }
    }
}

impl<D, C> Clone for SignalDirective<D, C> {
    fn clone(&self) -> Self {
        Self {
            pre: self.pre.clone(),
            stop_other_signals: self.stop_other_signals,
            reply_with: self.reply_with.clone(),
        }
    }
}

impl<D, C> fmt::Debug for SignalDirective<D, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignalDirective")
            .field("pre", &self.pre)
            .field("stop_other_signals", &self.stop_other_signals)
            .field("reply_with", &self.reply_with.is_some())
            .finish()
    }
}

impl<D, C> From<Directive> for SignalDirective<D, C> {
    fn from(d: Directive) -> Self {
        Self {
            pre: d.into(),
            ..Self::default()
        }
    }
}

impl<D, C> From<PreDirective<D, C>> for SignalDirective<D, C> {
    fn from(pre: PreDirective<D, C>) -> Self {
        Self {
            pre,
            ..Self::default()
        }
    }
}

impl<D, C> SignalDirective<D, C> {
    /// An empty signal directive.
    pub fn new() -> Self {
        Self::default()
    }
    /// Skip the remaining handlers of this phase.
    pub fn stop_other_signals(mut self) -> Self {
        self.stop_other_signals = true;
        self
    }
    /// A fixed late-bound reply.
    pub fn reply_with(mut self, text: impl Into<String>) -> Self {
        self.reply_with = Some(ReplyWith::Text(text.into()));
        self
    }
    /// A reply computed from the signal's view when it fires.
    pub fn reply_with_fn(
        mut self,
        f: impl Fn(&SignalCx<'_, D, C>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.reply_with = Some(ReplyWith::Fn(Arc::new(f)));
        self
    }
    /// Set the pre-directive part.
    pub fn pre(mut self, pre: PreDirective<D, C>) -> Self {
        self.pre = pre;
        self
    }
}
