//! The agent: a registry of flows, tools and signals over a provider and a store, and
//! the entry points `respond`, `respond_stream` and `dispatch`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use futures::Stream;
use serde_json::Value;

use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::{AgentError, StoreError};
use crate::flow::Flow;
use crate::pipeline::AgentInner;
use crate::pipeline::Sink;
use crate::pipeline::deadline::Deadline;
use crate::response::{AgentResponse, Event};
use crate::session::Session;

mod builder;
mod checks;
mod handoff;
mod turn;

use turn::release;

pub use crate::config::{AgentConfig, ConflictPolicy, DEFAULT_REPLY_STYLE, TokenLimits};
pub use crate::pipeline::{FlowVersionChange, Migration};
pub use builder::AgentBuilder;
pub use handoff::HumanHandoff;

/// Settings of one turn, for [`Agent::respond_with`] and the other `_with` methods; the
/// default is a plain turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOptions {
    /// The inbound event's id (a webhook delivery id, a message id). A repeated id
    /// returns the stored response and does not advance the session.
    pub event_id: Option<String>,
}

impl TurnOptions {
    /// Options for a message that carries an inbound event id (a webhook delivery id): a
    /// redelivery of the same id returns the stored response and does not advance the
    /// session.
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
    /// Start defining an agent: add a provider, flows, tools and settings, then call
    /// `build()`.
    pub fn builder() -> AgentBuilder<D, C> {
        AgentBuilder::new()
    }

    /// The agent's name, as given to `AgentBuilder::name` (it appears in the prompt and in
    /// traces).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The agent's declarative flows in registration order, to list or draw them.
    pub fn flows(&self) -> impl Iterator<Item = &Flow<D, C>> {
        self.inner.flows.iter().map(|f| f.as_ref())
    }

    /// Answer one user message in a session (created on first use).
    ///
    /// The session id must follow the session-id rule (non-empty, at most
    /// [`crate::store::MAX_SESSION_ID_BYTES`] bytes, no control characters; see
    /// [`crate::store::check_session_id`]): any other is
    /// [`AgentError::InvalidSessionId`] before the store is touched. The same holds
    /// for every method of the agent that names a session.
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

    /// [`Agent::respond_stream`] with per-turn options, such as the inbound event id that
    /// makes a redelivered message return the stored response instead of running again.
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
        crate::store::check_session_id(session_id)?;
        if let Input::Message(message) = message
            && message.len() > inner.config.max_message_bytes
        {
            return Err(AgentError::MessageTooLarge {
                len: message.len(),
                limit: inner.config.max_message_bytes,
            });
        }
        // The deadline starts now: the wait for the session counts toward it.
        let deadline = Deadline::start(inner.config.turn_timeout);
        let held = self.hold_session(session_id, deadline).await?;
        let lease = held.lease.clone();
        // Pinned in place: the turn's future is large, and moving it into `hold` costs.
        let work = std::pin::pin!(self.attempts(
            session_id,
            message,
            options,
            sink,
            deadline,
            lease.as_ref()
        ));
        let Some(lease_held) = lease.as_deref() else {
            return work.await;
        };
        let result = lease_held
            .hold(work)
            .await
            .unwrap_or_else(|e| Err(e.into()));
        release(lease_held).await;
        drop(held);
        result
    }

    /// The stored session, if any. An id that breaks the session-id rule
    /// ([`crate::store::check_session_id`]) is [`AgentError::InvalidSessionId`].
    pub async fn session(&self, id: &str) -> Result<Option<Session<D, C>>, AgentError> {
        crate::store::check_session_id(id)?;
        match self.inner.store.load(id).await? {
            Some(stored) => Ok(Some(Session::decode(&stored)?)),
            None => Ok(None),
        }
    }

    /// Delete a session. An id that breaks the session-id rule
    /// ([`crate::store::check_session_id`]) is [`AgentError::InvalidSessionId`].
    pub async fn delete_session(&self, id: &str) -> Result<bool, AgentError> {
        crate::store::check_session_id(id)?;
        self.inner.forget(id);
        Ok(self.inner.store.delete(id).await?)
    }

    /// Queue a directive for a session from outside any turn (a webhook, a queue). It is
    /// validated now (shape and targets) and applied first thing next turn; it merges
    /// with a directive already pending. One with a position (or a reply) decides the
    /// turn and skips routing; one that only writes data or context leaves routing and
    /// signals to run as usual.
    pub async fn dispatch(&self, session_id: &str, directive: Directive) -> Result<(), AgentError> {
        crate::store::check_session_id(session_id)?;
        // Bounded like a turn's wait (a dispatch does no work worth a deadline).
        let held = self
            .hold_session(session_id, Deadline::start(self.inner.config.turn_timeout))
            .await?;
        let out = self
            .dispatch_held(session_id, directive, held.lease.as_deref())
            .await;
        if let Some(h) = &held.lease {
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
        self.update_held(session_id, held, |session| {
            self.inner
                .check_targets(&directive, session.flow.as_deref())
                .map_err(|e| AgentError::directive("dispatch", e))?;
            session.pending = Some(match session.pending.take() {
                Some(p) => crate::directive::merge(p, directive.clone()),
                None => directive.clone(),
            });
            Ok(true)
        })
        .await
        .map(|_| ())
    }

    /// Change session `session_id` outside any turn with `change` (which says
    /// whether it changed anything) and save it, re-running on fresh state after a
    /// save conflict as the conflict policy says. Returns what `change` said.
    async fn update_held(
        &self,
        session_id: &str,
        held: Option<&crate::store::HeldLease>,
        change: impl Fn(&mut Session<D, C>) -> Result<bool, AgentError>,
    ) -> Result<bool, AgentError> {
        let mut attempt = 0;
        loop {
            let mut session = self.load_or_new(session_id).await?;
            let expected = session.version;
            if !change(&mut session)? {
                return Ok(false);
            }
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
                other => {
                    other?;
                    return Ok(true);
                }
            }
        }
    }

    /// End a human handoff ([`crate::agent::HumanHandoff`]): the session's next
    /// message is the agent's again, read at the step the conversation was handed
    /// over from. `false` when the session was not handed over (nothing changes).
    /// An id that breaks the session-id rule ([`crate::store::check_session_id`]) is
    /// [`AgentError::InvalidSessionId`].
    pub async fn end_human_handoff(&self, session_id: &str) -> Result<bool, AgentError> {
        crate::store::check_session_id(session_id)?;
        let held = self
            .hold_session(session_id, Deadline::start(self.inner.config.turn_timeout))
            .await?;
        let out = self
            .update_held(session_id, held.lease.as_deref(), |session| {
                Ok(session.handed_off.take().is_some())
            })
            .await;
        if let Some(h) = &held.lease {
            release(h).await;
        }
        if matches!(out, Ok(true)) {
            self.inner.forget(session_id);
        }
        out
    }

    /// [`Agent::dispatch`] for a directive that arrived as JSON (the spec's flat shape).
    pub async fn dispatch_json(&self, session_id: &str, value: Value) -> Result<(), AgentError> {
        let d = Directive::from_json(value).map_err(|e| AgentError::directive("dispatch", e))?;
        self.dispatch(session_id, d).await
    }
}
