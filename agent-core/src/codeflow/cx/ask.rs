//! The conversational effects of a code flow: questions that suspend the run until the
//! user answers, and replies, each recorded so a replay neither asks nor says twice.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{FlowCx, Request};
use crate::codeflow::journal::Entry;
use crate::error::CodeFlowError;

/// How the answer to a question is read.
enum Reading {
    /// Extracted by the model against a schema.
    Model(Value),
    /// The message as it is.
    Verbatim,
    /// A yes or no to a summary.
    Agreement,
}

impl<D: Send + Sync + 'static, C: Send + Sync + 'static> FlowCx<D, C> {
    /// Ask the user `text` and wait for the answer, extracted by the model against
    /// `T`'s schema. The first time, the turn ends with `text` as the reply; the next
    /// message answers it (asked again if it does not).
    ///
    /// The extraction is one small call: the question and the user's latest message,
    /// with an output bound from their lengths. An answer that cannot be read is
    /// repaired once; after that the turn fails with `MalformedModelOutput` and the
    /// flow still waits on the question. A message made only of stop words ("cancel",
    /// "never mind") stops the flow instead (see [`crate::command`], "Cancelling a
    /// flow").
    pub async fn ask<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        text: impl Into<String>,
    ) -> T {
        self.ask_as(key, text.into(), || {
            Reading::Model(serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null))
        })
        .await
    }

    /// Ask the user `text` and take their next message verbatim as the answer: no
    /// model call (for free text the flow wants untouched, such as a sentence to
    /// correct). A blank message asks again; a message made only of stop words stops
    /// the flow, as for [`FlowCx::ask`].
    pub async fn ask_text(&self, key: &str, text: impl Into<String>) -> String {
        self.ask_as(key, text.into(), || Reading::Verbatim).await
    }

    /// Show the user `summary` of what the flow is about to do and ask whether to go
    /// ahead; `true` on a yes. The question is `summary` followed by "Shall I go
    /// ahead?" unless it ends with a question already. A plain yes ("yes", "ok, go
    /// ahead", "sí, por favor") is read by code with no model call; any other answer
    /// is judged in a short call of its own, and one it cannot read is a no. The
    /// answer is recorded like [`FlowCx::ask`]'s, keyed by `key`.
    ///
    /// This is the code flow's form of the one way a tool waits for the user's
    /// agreement ([`crate::tool::Tool::needs_agreement`]): write the summary from the
    /// exact values the call will use, and make the call only on `true`. A tool a
    /// code flow calls with [`FlowCx::tool`] runs when the code calls it.
    ///
    /// ```no_run
    /// # use agent_core::codeflow::FlowCx;
    /// # async fn f(cx: FlowCx<(), ()>) -> Result<(), agent_core::codeflow::ToolFailure> {
    /// # let refund = agent_core::tool::FnTool::raw("refund", "Refund.", serde_json::json!({}), |_cx: agent_core::tool::ToolCx<(), ()>, _a: serde_json::Value| async { Ok(agent_core::tool::ToolOutput::text("ok")) });
    /// let invoice: String = cx.ask("invoice", "Which invoice?").await;
    /// if cx.confirm("refund", format!("Refund the duplicate charge on {invoice}")).await {
    ///     cx.tool(refund, serde_json::json!({ "invoice": invoice })).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn confirm(&self, key: &str, summary: impl Into<String>) -> bool {
        let question = crate::pipeline::with_go_ahead(&summary.into());
        self.ask_as(key, question, || Reading::Agreement).await
    }

    /// The ask machinery: `schema` gives how the answer is read (a model extraction
    /// against a schema, the message verbatim, or a yes or no).
    async fn ask_as<T: DeserializeOwned, R: Into<Reading>>(
        &self,
        key: &str,
        question: String,
        schema: impl FnOnce() -> R,
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
                let extracted = match schema().into() {
                    Reading::Model(schema) => {
                        let (reply, rx) = oneshot::channel();
                        let _ = self.inner.tx.send(Request::Extract {
                            key: key.to_owned(),
                            question: question.clone(),
                            schema,
                            reply,
                        });
                        rx.await.ok().flatten()
                    }
                    Reading::Verbatim => Some(Value::String(message))
                        .filter(|v| v.as_str().is_some_and(|m| !m.trim().is_empty())),
                    Reading::Agreement => {
                        let (reply, rx) = oneshot::channel();
                        let _ = self.inner.tx.send(Request::Agree { reply });
                        rx.await.ok().map(Value::Bool)
                    }
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
                        format!("say({})", crate::codeflow::journal::short(&text)),
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
}
