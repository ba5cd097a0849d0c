//! The end of a turn: the session saved (fenced by the lease, with the answer to its
//! event), the response built, text released to the consumer once durable, and the
//! saved session kept in the cache.

use super::{Turn, deadline, guard};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::provider::Message;
use crate::response::{AgentResponse, Event, StoppedReason};
use crate::session::Session;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Which path produced the reply, for the response and the response hook.
    fn response_meta(&mut self) -> crate::codeflow::ResponseMeta {
        use crate::codeflow::{ResponseMeta, Source};
        let (flow, handoff_from) = match &self.meta_flow {
            Some((f, from)) if self.from_code => (Some(f.clone()), from.clone()),
            Some((f, from)) if self.s.flow.as_deref() == Some(f.as_str()) => {
                (Some(f.clone()), from.clone())
            }
            _ => (self.s.flow.clone(), None),
        };
        ResponseMeta {
            source: if self.from_code {
                Source::Flow
            } else {
                Source::Classic
            },
            flow,
            handoff_from,
            end_reason: self.end_reason.take(),
        }
    }

    /// Persist, build the response, and keep the saved session in the cache.
    pub(super) async fn finish(
        mut self: Box<Self>,
        message: String,
        stopped: StoppedReason,
        deltas: Vec<String>,
    ) -> Result<AgentResponse<D>, AgentError> {
        let response = self.persist(message, stopped, deltas).await?;
        let meta = &response.meta;
        let span = tracing::Span::current();
        span.record("source", meta.source.as_str());
        if let Some(f) = &meta.flow {
            span.record("flow", f.as_str());
        }
        tracing::info!(
            source = meta.source.as_str(),
            flow = meta.flow.as_deref(),
            handoff_from = meta.handoff_from.as_deref(),
            model_calls = response.model_calls,
            "turn completed"
        );
        if let Some((bytes, span)) = self.saved.take() {
            let t = *self;
            t.a.remember(super::Remembered {
                bytes,
                session: t.s,
                present: t.present,
                span,
            });
        }
        Ok(response)
    }

    /// Persist and build the response.
    async fn persist(
        &mut self,
        message: String,
        stopped: StoppedReason,
        deltas: Vec<String>,
    ) -> Result<AgentResponse<D>, AgentError> {
        self.faulted()?;
        if !message.is_empty() {
            // Code's line about what the turn stored is the user's to read, not the
            // model's (see `Turn::ack`).
            match self.ack.take() {
                Some(ack) => {
                    let kept = message.replacen(&format!("{ack} "), "", 1);
                    self.s.history.push(Message::assistant(kept));
                }
                None => self.s.history.push(Message::assistant(message.as_str())),
            }
        }
        // A summary call may still run here, before the save: it stays within the
        // deadline; the save itself is never cut.
        let deadline = self.deadline;
        // (Not while a person has the conversation: no model call then.)
        if self.s.handed_off.is_none() {
            deadline::within(deadline, self.compact_history()).await?;
        }
        self.s.pending = self.next_pending.take();
        self.s.turns += 1;
        let version = self
            .s
            .flow
            .as_deref()
            .and_then(|f| self.a.flow(f))
            .map(|f| f.version.as_str());
        if self.s.flow_version.as_deref() != version {
            self.s.flow_version = version.map(str::to_owned);
        }
        self.s.updated_ms = self.a.clock.now_ms();
        self.s.version = self.expected_version + 1;
        let mut response = AgentResponse {
            session_id: self.s.id.clone(),
            message,
            stopped,
            executed_steps: std::mem::take(&mut self.executed),
            directive_chain: std::mem::take(&mut self.chain),
            commands: std::mem::take(&mut self.commands),
            data: self.s.data.clone(),
            flow: self
                .s
                .flow
                .clone()
                .or_else(|| self.s.code.as_ref().map(|c| c.flow.clone())),
            step: self.s.step.clone(),
            signals: std::mem::take(&mut self.signals_fired),
            tool_calls: std::mem::take(&mut self.tool_calls),
            awaiting_approval: self
                .s
                .approval
                .as_ref()
                .map(crate::approval::PendingApproval::waiting)
                .unwrap_or_default(),
            transitions: std::mem::take(&mut self.transitions),
            model_calls: self.calls,
            profile: self.a.provider.profile(),
            usage: self.usage,
            dropped_fields: std::mem::take(&mut self.dropped),
            rejected_data: std::mem::take(&mut self.rejected),
            ungrounded: std::mem::take(&mut self.ungrounded),
            tentative: self.s.tentative.clone(),
            inferred: std::mem::take(&mut self.inferred),
            withheld_claims: std::mem::take(&mut self.withheld),
            version: self.s.version,
            duplicate: false,
            meta: self.response_meta(),
            hook_failures: Vec::new(),
        };
        if let Some(id) = self.event_id.take() {
            // The response is stored with the session, atomically: a duplicate of this
            // event gets it back instead of advancing the conversation again.
            let keep = self.a.config.remembered_events.max(1);
            if self.s.events.len() >= keep {
                let excess = self.s.events.len() + 1 - keep;
                self.s.events.drain(..excess);
            }
            // A clearing turn keeps no trace of the conversation, not even in the
            // stored answer to its event.
            let redacted;
            let kept = if self.clear_session {
                redacted = AgentResponse {
                    session_id: response.session_id.clone(),
                    message: response.message.clone(),
                    stopped: response.stopped.clone(),
                    executed_steps: Vec::new(),
                    directive_chain: Vec::new(),
                    commands: Vec::new(),
                    data: D::default(),
                    flow: None,
                    step: None,
                    signals: Vec::new(),
                    tool_calls: Vec::new(),
                    awaiting_approval: Vec::new(),
                    transitions: Vec::new(),
                    model_calls: response.model_calls,
                    profile: response.profile,
                    usage: response.usage,
                    dropped_fields: Vec::new(),
                    rejected_data: Vec::new(),
                    ungrounded: Vec::new(),
                    tentative: Vec::new(),
                    inferred: Vec::new(),
                    withheld_claims: Vec::new(),
                    version: response.version,
                    duplicate: false,
                    meta: response.meta.clone(),
                    hook_failures: Vec::new(),
                };
                &redacted
            } else {
                &response
            };
            let stored = serde_json::to_value(kept).map_err(|e| {
                AgentError::Store(crate::error::StoreError::Corrupt {
                    session_id: self.s.id.clone(),
                    message: e.to_string(),
                })
            })?;
            self.s.events.push(crate::session::ProcessedEvent {
                id,
                response: stored,
            });
        }
        if self.clear_session {
            // Erase by saving an empty session under compare-and-swap (a plain delete
            // would let this turn silently win over a concurrent writer, and would let
            // a redelivered event run again): only the version and the processed event
            // ids survive; `prune` removes the record later.
            self.a.forget(&self.s.id);
            let mut erased =
                Session::<D, C>::new(self.s.id.clone(), self.a.context.clone(), self.s.updated_ms);
            erased.version = self.s.version;
            erased.events = std::mem::take(&mut self.s.events);
            let lease = self.lease.as_deref().map(crate::store::HeldLease::lease);
            let (store, expected) = (self.a.store.as_ref(), self.expected_version);
            crate::store::save_fenced(store, erased.encode()?, expected, lease).await?;
        } else {
            let prev = self.prev.take();
            let (stored, span) = self.s.encode_after(prev.as_ref().map(|p| p.view()))?;
            drop(prev);
            let bytes = (self.a.config.session_cache > 0).then(|| (stored.bytes.clone(), span));
            let lease = self.lease.as_deref().map(crate::store::HeldLease::lease);
            let (store, expected) = (self.a.store.as_ref(), self.expected_version);
            crate::store::save_fenced(store, stored, expected, lease).await?;
            self.saved = bytes;
        }
        // Text reaches the consumer only once the turn is durable: deltas concatenate to
        // the final message, and a failed save streams no text.
        let message = &response.message;
        if self.streamed {
            let sent = deltas.concat();
            match message.strip_prefix(sent.as_str()) {
                // Code added to the reply after it was streamed live (the completed
                // pattern's question): the rest follows.
                Some(rest) if !rest.is_empty() => self.emit(Event::TextDelta(rest.to_owned())),
                Some(_) => {}
                // Unreachable by construction (live text is only released when nothing
                // can replace it); never send a second copy.
                None => tracing::error!("streamed text differs from the final message"),
            }
        } else if self.sink.is_some() && !message.is_empty() {
            if deltas.concat() == *message {
                for d in deltas {
                    self.emit(Event::TextDelta(d));
                }
            } else {
                self.emit(Event::TextDelta(message.clone()));
            }
        }
        response.version = self.s.version;
        if let Some(h) = &self.a.on_response {
            // The turn is saved: a panic here cannot undo it, so the caller gets the
            // response with the failure listed.
            let meta = response.meta.clone();
            if let Err(e) = guard::call(|| "on_response hook".into(), || h(&response, &meta)) {
                tracing::error!(error = %e, "on_response hook failed (the turn was saved)");
                response.hook_failures.push(e.to_string());
            }
        }
        Ok(response)
    }
}
