//! Tool rounds: call, run the tools the model asked for (concurrency-safe ones in
//! parallel, gated for approval), feed the results back, until the model answers or
//! a tool settles the reply.

use std::sync::Arc;

use tracing::Instrument;

use super::live::LiveTarget;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::pipeline::Turn;
use crate::pipeline::approve::Gate;
use crate::provider::{CallKind, Message, ModelRequest, ModelResponse, ToolCall};
use crate::response::{DirectiveSource, Event, ToolCallRecord};
use crate::tool::{Effect, Tool, ToolCx, ToolCxParts, ToolError};

/// The result a tool call gets when the user's answer to a confirmation does not
/// agree: it did not run.
pub(super) const NOT_AGREED: &str = "Not run: the user's latest message does not agree to go ahead yet. Do not say it was done; reply to the message, then ask whether to go ahead when the user is ready.";

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether a tool that ran since `since` (a position in the post bus) set the
    /// reply verbatim or aborted: the model's next message would be replaced, so it is
    /// not asked for (one call fewer, and the user reads the code's text).
    pub(in crate::pipeline) fn reply_settled_since(&self, since: usize) -> bool {
        self.post_bus.get(since..).is_some_and(|new| {
            new.iter().any(|(_, d)| {
                d.reply.is_some()
                    || matches!(d.position, Some(crate::directive::Position::Abort(_)))
            })
        })
    }

    /// Call, run requested tools, feed results back, until the model answers or a
    /// tool settles the reply (the third value). `confirms`: the call answers a
    /// confirmation, so a tool with effects runs only if the user's answer agrees
    /// ([`Turn::agrees_to`]); otherwise no call of the round runs, each gets
    /// [`NOT_AGREED`] as its result, and the model answers without tools.
    pub(super) async fn tool_loop(
        &mut self,
        req: &mut ModelRequest,
        tools: &[Arc<dyn Tool<D, C>>],
        live: &LiveTarget,
        confirms: bool,
    ) -> Result<(ModelResponse, Vec<String>, bool), AgentError> {
        let mut round = 0u32;
        loop {
            let (resp, deltas) = self.call(req, Some(live)).await?;
            if resp.tool_calls.is_empty() || req.tools.is_empty() {
                return Ok((resp, deltas, false));
            }
            round += 1;
            let mut assistant = Message::assistant(resp.content.clone());
            assistant.tool_calls = resp.tool_calls.clone();
            req.messages.push(assistant);
            if confirms && !self.round_agreed(tools, &resp.tool_calls).await? {
                for call in &resp.tool_calls {
                    req.messages
                        .push(Message::tool(call.id.clone(), NOT_AGREED));
                }
                req.kind = CallKind::ToolRound;
                req.tools.clear();
                continue;
            }
            let since = self.post_bus.len();
            let results = self.run_tools(tools, &resp.tool_calls).await;
            if self.paused.is_some() {
                // Held for approval: nothing ran; the turn ends here.
                req.messages.pop();
                return Ok((resp, deltas, true));
            }
            for (call, content) in resp.tool_calls.iter().zip(results) {
                req.messages.push(Message::tool(call.id.clone(), content));
            }
            if self.reply_settled_since(since) {
                return Ok((resp, deltas, true));
            }
            req.kind = CallKind::ToolRound;
            if round >= self.a.config.max_tool_rounds {
                // Out of rounds: one last call without tools forces a message.
                req.tools.clear();
            }
        }
    }

    /// Whether the user's answer to a confirmation agrees to every tool with effects
    /// in a round (checked once a turn: a round after one not agreed to is not).
    async fn round_agreed(
        &mut self,
        tools: &[Arc<dyn Tool<D, C>>],
        calls: &[ToolCall],
    ) -> Result<bool, AgentError> {
        for call in calls {
            let Some(t) = tools.iter().find(|t| t.name() == call.name) else {
                continue;
            };
            if t.effect() == Effect::Pure {
                continue;
            }
            if self.not_agreed || !self.agrees_to(t.as_ref()).await? {
                self.not_agreed = true;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Why a tool's data writes would be refused by the fields' constraints, if so.
    fn refused_tool_write(
        &self,
        directive: &crate::directive::Directive,
        dispatched: &[crate::directive::Directive],
    ) -> Option<String> {
        std::iter::once(directive)
            .chain(dispatched)
            .flat_map(|d| d.data_patches())
            .find_map(|patch| {
                patch.iter().find_map(|(k, v)| {
                    let why = self.a.schema.check_value(k, v)?;
                    Some(format!("the value for `{k}` was refused: it {why}"))
                })
            })
    }

    /// Execute one round of tool calls: concurrency-safe ones in parallel, the others in
    /// order. Failures and panics become failed results the model sees. A round with
    /// a call that needs a person's approval does not run: it is held
    /// (`self.paused`) and no results come back.
    pub(super) async fn run_tools(
        &mut self,
        tools: &[Arc<dyn Tool<D, C>>],
        calls: &[ToolCall],
    ) -> Vec<String> {
        match self.gate_round(tools, calls, None) {
            None => Vec::new(),
            Some(gates) => {
                self.run_round(tools, calls, Some((gates, Vec::new())))
                    .await
            }
        }
    }

    /// Run a round whose calls passed their gates; `fixed` carries each call's gate
    /// and, for a round that was held for approval, the keys its calls got then.
    pub(in crate::pipeline) async fn run_round(
        &mut self,
        tools: &[Arc<dyn Tool<D, C>>],
        calls: &[ToolCall],
        fixed: Option<(Vec<Gate>, Vec<String>)>,
    ) -> Vec<String> {
        let (mut gates, keys) = fixed.unwrap_or_default();
        let parts = ToolCxParts {
            turn: self.turn_tag.clone(),
            session_id: Arc::from(self.s.id.as_str()),
            flow: self.s.flow.as_deref().map(Arc::from),
            step: self.s.step.as_deref().map(Arc::from),
            data: Arc::new(self.s.data.clone()),
            context: Arc::new(self.s.context.clone()),
        };
        let available: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
        let mut results: Vec<
            Option<(
                Result<crate::tool::ToolOutput, ToolError>,
                crate::hook::Dispatcher,
            )>,
        > = (0..calls.len()).map(|_| None).collect();
        for c in calls {
            self.emit(Event::ToolCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            });
        }
        let find = |name: &str| tools.iter().find(|t| t.name() == name).cloned();
        let limit = self.a.config.tool_timeout;
        // Each call's position in the turn (its idempotency key's part); a held
        // round keeps the keys it got when it was asked for.
        let seq = self.tool_seq;
        if keys.is_empty() {
            self.tool_seq += calls.len();
        }
        let cx_of = |i: usize, c: &ToolCall| match keys.get(i) {
            Some(k) => parts.keyed(k.clone()),
            None => parts.cx(seq + i, &c.name, &c.arguments),
        };
        // Calls failed by their gate (denied, or held behind an earlier approval).
        for (i, g) in gates.iter_mut().enumerate() {
            if let Gate::Fail(e) = std::mem::replace(g, Gate::Run) {
                results[i] = Some((Err(e), crate::hook::Dispatcher::default()));
            }
        }
        let journal = || crate::journal::JournalCx {
            store: self.a.store.as_ref(),
            hook: self.a.on_unknown_outcome.as_ref(),
        };
        // Parallel batch.
        let parallel: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                results[*i].is_none() && find(&c.name).is_some_and(|t| t.concurrency_safe())
            })
            .map(|(i, _)| i)
            .collect();
        let futs = parallel.iter().map(|&i| {
            let tool = find(&calls[i].name);
            let cx: ToolCx<D, C> = cx_of(i, &calls[i]);
            let dispatcher = cx.dispatcher.clone();
            let args = calls[i].arguments.clone();
            let span = crate::telemetry::tool_span(
                &calls[i].name,
                Some(&calls[i].id),
                tool.as_ref().map(|t| t.description()),
                &args,
                parts.flow.as_deref(),
                true,
            );
            let j = journal();
            let outer = span.clone();
            async move {
                let r = match tool {
                    Some(t) => crate::journal::call(j, t.as_ref(), cx, args, limit).await,
                    None => Err(ToolError::Failed("tool vanished".into())),
                };
                crate::telemetry::record_tool(&span, &r);
                (i, r, dispatcher)
            }
            .instrument(outer)
        });
        for (i, r, d) in futures::future::join_all(futs).await {
            results[i] = Some((r, d));
        }
        for (i, c) in calls.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let r = match find(&c.name) {
                Some(t) => {
                    let cx = cx_of(i, c);
                    let d = cx.dispatcher.clone();
                    let span = crate::telemetry::tool_span(
                        &c.name,
                        Some(&c.id),
                        Some(t.description()),
                        &c.arguments,
                        parts.flow.as_deref(),
                        false,
                    );
                    let r =
                        crate::journal::call(journal(), t.as_ref(), cx, c.arguments.clone(), limit)
                            .instrument(span.clone())
                            .await;
                    crate::telemetry::record_tool(&span, &r);
                    (r, d)
                }
                None => (
                    Err(ToolError::Unknown {
                        name: c.name.clone(),
                        available: available.clone(),
                    }),
                    crate::hook::Dispatcher::default(),
                ),
            };
            results[i] = Some(r);
        }
        let mut contents = Vec::with_capacity(calls.len());
        for (c, r) in calls.iter().zip(results) {
            let Some((r, dispatcher)) = r else { continue };
            // A failed tool changes nothing: its directive and its dispatched writes
            // are dropped. A write its field constraints refuse fails the call, and
            // the model sees why.
            let dispatched = dispatcher.drain();
            let r = r.and_then(
                |out| match self.refused_tool_write(&out.directive, &dispatched) {
                    Some(why) => Err(ToolError::Failed(why)),
                    None => Ok(out),
                },
            );
            let (content, ok) = match r {
                Ok(out) => {
                    // A call with effects uses up the request that led to it
                    // (`pipeline/consent.rs`).
                    if find(&c.name).is_some_and(|t| t.effect() != crate::tool::Effect::Pure) {
                        self.s.acted.insert(c.name.clone(), self.s.turns);
                    }
                    let src = DirectiveSource::Tool(c.name.clone());
                    if !out.directive.is_empty() {
                        self.post_bus.push((src, out.directive));
                    }
                    for d in dispatched {
                        self.post_bus
                            .push((DirectiveSource::ToolDispatch(c.name.clone()), d));
                    }
                    (out.content, true)
                }
                Err(e) => {
                    tracing::warn!(tool = %c.name, error = %e, "tool call failed; its writes are dropped");
                    (format!("ERROR: {e}"), false)
                }
            };
            let rec = ToolCallRecord {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                output: content.clone(),
                ok,
            };
            self.emit(Event::ToolResult(rec.clone()));
            self.tool_calls.push(rec);
            contents.push(content);
        }
        contents
    }
}
