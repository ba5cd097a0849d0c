//! The flow context: every effect of a code flow goes through it, so the engine can
//! record its result the first time and feed the recorded result on every replay.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::journal::Entry;
use super::{FlowError, FlowRef, FlowResult, Outcome, ToolFailure};
use crate::clock::Clock;
use crate::error::CodeFlowError;
use crate::tool::{IntoTool, Tool};

/// What a run asks of the engine.
pub(crate) enum Request<D, C> {
    /// Extract the answer to the open question from the user's message.
    Extract {
        key: String,
        question: String,
        schema: Value,
        reply: oneshot::Sender<Option<Value>>,
    },
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

fn args_hash(v: &Value) -> u64 {
    // A fixed hasher: the hash is stored and compared across processes.
    let mut h = crate::fxhash::FxHasher::default();
    v.to_string().hash(&mut h);
    h.finish()
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

    /// Ask the user `text` and wait for the answer, extracted by the model against
    /// `T`'s schema. The first time, the turn ends with `text` as the reply; the next
    /// message answers it (asked again if it does not).
    ///
    /// The extraction is one small call: the question and the user's latest message,
    /// with an output bound from their lengths. An answer that cannot be read is
    /// repaired once; after that the turn fails with `MalformedModelOutput` and the
    /// flow still waits on the question.
    pub async fn ask<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        text: impl Into<String>,
    ) -> T {
        self.ask_as(key, text.into(), || {
            Some(serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null))
        })
        .await
    }

    /// Ask the user `text` and take their next message verbatim as the answer: no
    /// model call (for free text the flow wants untouched, such as a sentence to
    /// correct). A blank message asks again.
    pub async fn ask_text(&self, key: &str, text: impl Into<String>) -> String {
        self.ask_as(key, text.into(), || None).await
    }

    /// The ask machinery: `schema` gives the answer's schema for a model extraction,
    /// or `None` to take the message verbatim.
    async fn ask_as<T: DeserializeOwned>(
        &self,
        key: &str,
        question: String,
        schema: impl FnOnce() -> Option<Value>,
    ) -> T {
        enum Step {
            Answered(Value),
            Open(Option<String>),
            New,
            Halt(Option<CodeFlowError>),
        }
        let step = {
            let mut st = self.lock();
            let pos = st.pos;
            if st.error.is_some() {
                Step::Halt(None)
            } else {
                match st.journal.get(pos) {
                    None => Step::New,
                    Some(Entry::Ask { key: k, answer }) if k == key => match answer.clone() {
                        Some(v) => {
                            st.pos += 1;
                            Step::Answered(v)
                        }
                        None => Step::Open(st.message.take()),
                    },
                    Some(other) => {
                        Step::Halt(Some(self.diverged(pos, other, format!("ask(\"{key}\")"))))
                    }
                }
            }
        };
        match step {
            Step::Halt(e) => self.halt(e).await,
            Step::Answered(v) => match serde_json::from_value(v) {
                Ok(t) => t,
                Err(e) => {
                    let pos = self.lock().pos - 1;
                    let err = CodeFlowError::JournalType {
                        flow: self.inner.flow.clone(),
                        position: pos,
                        key: key.to_owned(),
                        message: e.to_string(),
                    };
                    self.halt(Some(err)).await
                }
            },
            Step::New => {
                {
                    let mut st = self.lock();
                    st.journal.push(Entry::Ask {
                        key: key.to_owned(),
                        answer: None,
                    });
                }
                let _ = self.inner.tx.send(Request::Suspend { question });
                std::future::pending().await
            }
            Step::Open(None) => {
                let _ = self.inner.tx.send(Request::Suspend { question });
                std::future::pending().await
            }
            Step::Open(Some(message)) => {
                let extracted = match schema() {
                    Some(schema) => {
                        let (reply, rx) = oneshot::channel();
                        let _ = self.inner.tx.send(Request::Extract {
                            key: key.to_owned(),
                            question: question.clone(),
                            schema,
                            reply,
                        });
                        rx.await.ok().flatten()
                    }
                    None => Some(Value::String(message))
                        .filter(|v| v.as_str().is_some_and(|m| !m.trim().is_empty())),
                };
                let typed = extracted
                    .and_then(|v| serde_json::from_value::<T>(v.clone()).ok().map(|t| (t, v)));
                match typed {
                    Some((t, v)) => {
                        {
                            let mut st = self.lock();
                            let pos = st.pos;
                            if let Some(Entry::Ask { answer, .. }) = st.journal.get_mut(pos) {
                                *answer = Some(v);
                            }
                            st.pos += 1;
                        }
                        self.recorded().await;
                        t
                    }
                    None => {
                        // Not an answer: ask again, the question stays open.
                        let _ = self.inner.tx.send(Request::Suspend { question });
                        std::future::pending().await
                    }
                }
            }
        }
    }

    /// Say `text` to the user (part of this turn's reply).
    pub async fn say(&self, text: impl Into<String>) {
        let text = text.into();
        let new = {
            let mut st = self.lock();
            if st.error.is_some() {
                None
            } else {
                let pos = st.pos;
                let fits = pos < st.journal.len() || st.room(self.inner.effect_limit);
                match st.journal.get(pos) {
                    None if !fits => None,
                    None => {
                        st.journal.push(Entry::Say { text });
                        st.pos += 1;
                        Some(Ok(true))
                    }
                    Some(Entry::Say { text: t }) if *t == text => {
                        st.pos += 1;
                        Some(Ok(false))
                    }
                    Some(other) => Some(Err(self.diverged(
                        pos,
                        other,
                        format!("say({})", super::journal::short(&text)),
                    ))),
                }
            }
        };
        match new {
            None => self.halt(None).await,
            Some(Err(e)) => self.halt(Some(e)).await,
            Some(Ok(true)) => self.recorded().await,
            Some(Ok(false)) => {}
        }
    }

    /// Call a tool (a `#[tool]` fn, an `FnTool`, an `Arc<dyn Tool>`). Its result is
    /// recorded: a replay gets the recorded result and does not call the tool again.
    /// Failures (invalid arguments, errors, panics, time limits) come back as
    /// [`ToolFailure`], which the flow may handle or propagate with `?`.
    ///
    /// The call follows the tool's [`Effect`](crate::tool::Effect) like a model's
    /// call: its [`ToolCx::idempotency_key`](crate::tool::ToolCx::idempotency_key) is
    /// the turn's and the call's position among the turn's live tool calls, so a turn
    /// re-run (a save conflict, a redelivered event) gets the same key, and an
    /// `effect = once` tool's journaled result instead of a second run.
    ///
    /// A failed step (the fn returns an error or panics later in the same turn) keeps
    /// none of the turn's records, so the next turn's attempt calls the tool again,
    /// as a new call with a new key (also for `once` tools): tools with side effects
    /// should be idempotent, or the flow should handle the error instead of failing
    /// the step.
    pub async fn tool(
        &self,
        tool: impl IntoTool<D, C>,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let t = tool.into_tool();
        self.call_tool(t.name().to_owned(), Ok(t), args).await
    }

    /// Call a tool registered on the agent, by name (an unknown name is a
    /// [`ToolFailure`] listing the registered tools).
    pub async fn tool_named(
        &self,
        name: &str,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let found = self.inner.tools.iter().find(|t| t.name() == name).cloned();
        let t = found.ok_or_else(|| {
            let known: Vec<&str> = self.inner.tools.iter().map(|t| t.name()).collect();
            format!(
                "unknown tool `{name}`; registered tools: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        });
        self.call_tool(name.to_owned(), t, args).await
    }

    async fn call_tool(
        &self,
        name: String,
        tool: Result<Arc<dyn Tool<D, C>>, String>,
        args: impl Serialize,
    ) -> Result<String, ToolFailure> {
        let args = match serde_json::to_value(args) {
            Ok(v) => v,
            Err(e) => Value::String(format!("<unserializable arguments: {e}>")),
        };
        let hash = args_hash(&args);
        let recorded = {
            let mut st = self.lock();
            let pos = st.pos;
            if st.error.is_some() {
                Err(None)
            } else {
                let fits = pos < st.journal.len() || st.room(self.inner.effect_limit);
                match st.journal.get(pos) {
                    None if !fits => Err(None),
                    None => Ok(None),
                    Some(Entry::Tool {
                        name: n,
                        args: a,
                        ok,
                        out,
                    }) if *n == name && *a == hash => {
                        let r = (*ok, out.clone());
                        st.pos += 1;
                        Ok(Some(r))
                    }
                    Some(other) => {
                        Err(Some(self.diverged(pos, other, format!("tool(\"{name}\")"))))
                    }
                }
            }
        };
        let (ok, out) = match recorded {
            Err(e) => return self.halt(e).await,
            Ok(Some(r)) => r,
            Ok(None) => {
                let (reply, rx) = oneshot::channel();
                let _ = self.inner.tx.send(Request::Tool {
                    tool,
                    name: name.clone(),
                    args,
                    reply,
                });
                let Ok((ok, out)) = rx.await else {
                    return self.halt(None).await;
                };
                {
                    let mut st = self.lock();
                    st.journal.push(Entry::Tool {
                        name: name.clone(),
                        args: hash,
                        ok,
                        out: out.clone(),
                    });
                    st.pos += 1;
                }
                self.recorded().await;
                (ok, out)
            }
        };
        if ok {
            Ok(out)
        } else {
            Err(ToolFailure {
                tool: name,
                message: out,
            })
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

    /// End the flow.
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

    /// Hand the conversation to another flow (code or declarative), named by its type.
    pub fn handoff<F: FlowRef>(&self) -> FlowResult {
        self.handoff_to(F::ID)
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

    /// The session's context.
    pub fn context(&self) -> &C {
        &self.inner.context
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// This flow's id.
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
