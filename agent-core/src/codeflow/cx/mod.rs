//! The flow context: every effect of a code flow goes through it, so the engine can
//! record its result the first time and feed the recorded result on every replay.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::journal::Entry;
use super::{FlowError, FlowResult, Outcome};
use crate::clock::Clock;
use crate::error::CodeFlowError;
use crate::tool::Tool;

mod ask;
mod tools;

/// What a run asks of the engine.
pub(crate) enum Request<D, C> {
    /// Extract the answer to the open question from the user's message.
    Extract {
        key: String,
        question: String,
        schema: Value,
        reply: oneshot::Sender<Option<Value>>,
    },
    /// Whether the user's message agrees to the summary the flow asked about.
    Agree { reply: oneshot::Sender<bool> },
    /// Run a tool.
    Tool {
        tool: Result<Arc<dyn Tool<D, C>>, String>,
        name: String,
        args: Value,
        reply: oneshot::Sender<(bool, String)>,
    },
    /// Pause: the flow asked `question` and waits for the user.
    Suspend { question: String },
    /// Always-replay mode: something new was recorded; run again from scratch.
    Restart,
    /// The run broke a rule (see the replay's `error`).
    Stop,
}

/// The replay position of one run.
pub(crate) struct Replay {
    pub(crate) journal: Vec<Entry>,
    pub(crate) pos: usize,
    /// The user's message, until an open question consumes it.
    pub(crate) message: Option<String>,
    pub(crate) error: Option<CodeFlowError>,
    /// The run hit the per-turn effect budget (a loop that never asks).
    pub(crate) runaway: bool,
}

impl Replay {
    /// Whether one more new effect fits the turn's budget (the journal may not grow
    /// past `limit`); marks the run as runaway when it does not.
    fn room(&mut self, limit: usize) -> bool {
        if self.journal.len() >= limit {
            self.runaway = true;
            false
        } else {
            true
        }
    }
}

pub(crate) struct CxInner<D, C> {
    pub(crate) state: Mutex<Replay>,
    pub(crate) tx: mpsc::UnboundedSender<Request<D, C>>,
    pub(crate) flow: String,
    pub(crate) session_id: String,
    /// The session's data as this turn began.
    pub(crate) data: D,
    /// What `data()` shows, by journal position (see [`super::data_view`]).
    pub(crate) views: Vec<(usize, D)>,
    pub(crate) context: C,
    pub(crate) input: Option<Value>,
    pub(crate) handoff_from: Option<String>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(crate) always_replay: bool,
    /// The journal length this turn's run may not exceed.
    pub(crate) effect_limit: usize,
}

/// The context a code flow runs with. Everything that differs between runs (the
/// user's answers, tool results, time, randomness, ids) comes from here, so replaying
/// the fn against the journal takes the same path every time.
pub struct FlowCx<D, C> {
    pub(crate) inner: Arc<CxInner<D, C>>,
}

impl<D, C> Clone for FlowCx<D, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<D: Send + Sync + 'static, C: Send + Sync + 'static> FlowCx<D, C> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Replay> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stop this run: the driver reads the error from the replay state.
    async fn halt<T>(&self, error: Option<CodeFlowError>) -> T {
        if let Some(e) = error {
            let mut st = self.lock();
            if st.error.is_none() {
                st.error = Some(e);
            }
        }
        let _ = self.inner.tx.send(Request::Stop);
        std::future::pending().await
    }

    /// A divergence between this run and the journal at `pos`.
    fn diverged(&self, pos: usize, recorded: &Entry, called: String) -> CodeFlowError {
        CodeFlowError::NonDeterministic {
            flow: self.inner.flow.clone(),
            position: pos,
            recorded: recorded.describe(),
            called,
        }
    }

    /// Record a new entry; in always-replay mode, ask for a run from scratch.
    async fn recorded(&self) {
        if self.inner.always_replay {
            let _ = self.inner.tx.send(Request::Restart);
            std::future::pending::<()>().await;
        }
    }

    /// A recorded value: `make` runs the first time, the journal answers afterwards.
    async fn value<T>(
        &self,
        called: &str,
        get: impl Fn(&Entry) -> Option<T>,
        make: impl FnOnce() -> (Entry, T),
    ) -> T {
        let got = {
            let mut st = self.lock();
            if st.error.is_some() {
                None
            } else {
                let pos = st.pos;
                let fits = pos < st.journal.len() || st.room(self.inner.effect_limit);
                match st.journal.get(pos) {
                    None if !fits => None,
                    None => {
                        let (e, v) = make();
                        st.journal.push(e);
                        st.pos += 1;
                        Some(Ok((v, true)))
                    }
                    Some(e) => match get(e) {
                        Some(v) => Some(Ok((v, false))),
                        None => Some(Err(self.diverged(pos, e, called.to_owned()))),
                    },
                }
            }
        };
        if let Some(Ok((_, false))) = &got {
            self.lock().pos += 1;
        }
        match got {
            None => self.halt(None).await,
            Some(Err(e)) => self.halt(Some(e)).await,
            Some(Ok((v, new))) => {
                if new {
                    self.recorded().await;
                }
                v
            }
        }
    }

    /// The current time (ms since the Unix epoch), from the agent's clock; recorded,
    /// so a replay sees the same instant.
    pub async fn now_ms(&self) -> u64 {
        let clock = self.inner.clock.clone();
        self.value(
            "now_ms()",
            |e| match e {
                Entry::Now { ms } => Some(*ms),
                _ => None,
            },
            move || {
                let ms = clock.now_ms();
                (Entry::Now { ms }, ms)
            },
        )
        .await
    }

    /// A random number; recorded, so a replay sees the same value.
    pub async fn random_u64(&self) -> u64 {
        self.value(
            "random_u64()",
            |e| match e {
                Entry::Random { v } => Some(*v),
                _ => None,
            },
            || {
                let v = std::collections::hash_map::RandomState::new().hash_one(0u8);
                (Entry::Random { v }, v)
            },
        )
        .await
    }

    /// A fresh unique id (32 hex digits); recorded, so a replay sees the same id.
    pub async fn new_id(&self) -> String {
        self.value(
            "new_id()",
            |e| match e {
                Entry::Id { id } => Some(id.clone()),
                _ => None,
            },
            || {
                let s = std::collections::hash_map::RandomState::new();
                let id = format!("{:016x}{:016x}", s.hash_one(1u8), s.hash_one(2u8));
                (Entry::Id { id: id.clone() }, id)
            },
        )
        .await
    }

    /// End this flow as completed: the turn's reply goes out with what the flow said, and
    /// the conversation leaves the flow (the session stays). `reason` becomes the
    /// response's `meta.end_reason`.
    pub fn end(&self, reason: impl Into<String>) -> FlowResult {
        Ok(Outcome::End {
            reason: Some(reason.into()),
        })
    }

    /// End the flow and the conversation: this turn's reply goes out, then the session
    /// is erased (only its version and processed event ids remain, as with
    /// `Directive::abort_and_clear`); the next message starts afresh.
    pub fn end_session(&self, reason: impl Into<String>) -> FlowResult {
        Ok(Outcome::EndSession {
            reason: Some(reason.into()),
        })
    }

    /// Hand the conversation to another flow (code or declarative) of this agent, named
    /// by its type: a flow over this flow's data type `D` (a flow over another data type
    /// is a compile error; an id known only at run time goes to [`Self::handoff_to`]).
    ///
    /// Returns a [`FlowResult`] (named through the bound: rustc then reports a flow type
    /// that is not one at the call, in one short error).
    pub fn handoff<F>(&self) -> <Self as crate::typed::flow::HandoffTarget<F, D>>::Result
    where
        Self: crate::typed::flow::HandoffTarget<F, D>,
    {
        <Self as crate::typed::flow::HandoffTarget<F, D>>::handoff(self)
    }

    /// Hand the conversation to another flow by id.
    pub fn handoff_to(&self, flow: impl Into<String>) -> FlowResult {
        Ok(Outcome::Handoff {
            to: flow.into(),
            input: None,
        })
    }

    /// Hand off with a value the next code flow reads with [`FlowCx::input`].
    pub fn handoff_with(&self, flow: impl Into<String>, input: impl Serialize) -> FlowResult {
        let input = serde_json::to_value(input).map_err(|e| FlowError::new(e.to_string()))?;
        Ok(Outcome::Handoff {
            to: flow.into(),
            input: Some(input),
        })
    }

    /// The session's data (read-only; tools write data) as the turn in which this part
    /// of the fn first ran began, on every replay too: code before the flow's first
    /// question sees the data as the flow started, code after an answer sees it as the
    /// turn that brought the answer began. A write made in the same turn (by a tool
    /// this fn called) shows from the next answered question on; read a tool's result
    /// from its return value instead. So a `say` built from the data says the same
    /// thing on every replay.
    pub fn data(&self) -> &D {
        let pos = self.lock().pos;
        super::data_view::at(&self.inner.views, pos).unwrap_or(&self.inner.data)
    }

    /// The application-owned context of the session (read-only; the model never writes it).
    pub fn context(&self) -> &C {
        &self.inner.context
    }

    /// The id of the session this flow runs in, for keys and logs.
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// The id of this flow, as registered on the agent.
    pub fn flow_id(&self) -> &str {
        &self.inner.flow
    }

    /// The flow that handed off to this one.
    pub fn handoff_from(&self) -> Option<&str> {
        self.inner.handoff_from.as_deref()
    }

    /// The value passed with the handoff, if any.
    pub fn input(&self) -> Option<&Value> {
        self.inner.input.as_ref()
    }
}
