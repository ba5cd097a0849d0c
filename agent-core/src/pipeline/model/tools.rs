//! Tool rounds: call, run the tools the model asked for (concurrency-safe ones in
//! parallel, gated for approval), feed the results back, until the model answers or
//! a tool settles the reply.

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::live::LiveTarget;
use crate::command::Command;
use crate::data::ground::{Grounding, normalize};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::pipeline::Turn;
use crate::pipeline::approve::Gate;
use crate::pipeline::consent::plainly_agrees;
use crate::provider::{CallKind, Message, ModelRequest, ModelResponse, Role, ToolCall};
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
            // (A summary whose values changed is shown again instead.)
            if confirms && self.raw_answer_changes(&resp.content) {
                self.changed_now = true;
            }
            let confirms = confirms && self.proposal_stands();
            if confirms && !self.round_agreed(tools, &resp.tool_calls).await? {
                for call in &resp.tool_calls {
                    req.messages
                        .push(Message::tool(call.id.clone(), NOT_AGREED));
                }
                req.kind = CallKind::ToolRound;
                req.tools.clear();
                continue;
            }
            if confirms {
                // A yes to the summary the user read: its call may run.
                self.agree_to_proposal();
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

    /// What becomes of a call whose arguments (those not derived,
    /// [`Tool::derived_args`]) the user did not all give: a required one keeps the
    /// call from running (the model is told to ask for it); an optional one is left
    /// out and the call runs without it. With grounding off every argument counts as
    /// given. An argument is given when
    /// - it has a data field's name and holds that field's stored value (said or
    ///   confirmed when it was stored),
    /// - the user's words show it (checked as a field's value is), or
    /// - the agent's last message showed it and the user agreed to that message.
    ///
    /// A text the data holds under another field's name is not given, whatever the
    /// words: the user gave it for that field (a city copied into a `hotel` argument
    /// names no hotel). A tool that takes a stored value names its argument like the
    /// field, or declares it derived.
    fn screen_args(&self, tools: &[Arc<dyn Tool<D, C>>], call: &ToolCall) -> ArgCheck {
        if !self.a.config.grounding {
            return ArgCheck::Given;
        }
        let Some(tool) = tools.iter().find(|t| t.name() == call.name) else {
            return ArgCheck::Given;
        };
        let Some(args) = call.arguments.as_object() else {
            return ArgCheck::Given;
        };
        let params = tool.parameters();
        let Some(props) = params.get("properties").and_then(Value::as_object) else {
            return ArgCheck::Given;
        };
        let required = |name: &str| {
            params
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|n| n == name))
        };
        let mut left_out = Vec::new();
        let derived = tool.derived_args();
        let mut evidence = None;
        let mut stored = None;
        let mut shown = None;
        let mut missing = Vec::new();
        for (name, value) in args {
            if matches!(value, Value::Null | Value::Bool(_) | Value::Object(_))
                || derived.iter().any(|d| d == name)
            {
                continue;
            }
            let Some(prop) = props.get(name) else {
                continue;
            };
            let stored = stored
                .get_or_insert_with(|| serde_json::to_value(&self.s.data).unwrap_or_default());
            let copied = match stored.get(name) {
                Some(v) if same_value(v, value) => continue,
                // Another field's text: it was given for that field (numbers
                // coincide by chance).
                _ => {
                    value.is_string()
                        && stored.as_object().is_some_and(|o| {
                            o.iter()
                                .any(|(k, v)| k != name && !v.is_null() && same_value(v, value))
                        })
                }
            };
            if copied {
                if required(name) {
                    missing.push(format!("`{name}` ({})", shown_text(value)));
                } else {
                    left_out.push(name.clone());
                }
                continue;
            }
            let ev = evidence.get_or_insert_with(|| self.evidence());
            if ev.check(prop, value, None) == Grounding::Grounded {
                continue;
            }
            let shown = shown.get_or_insert_with(|| self.agreed_to_last_message(tool.as_ref()));
            if let Some(last) = shown
                && shows(last, value)
            {
                continue;
            }
            if required(name) {
                missing.push(format!("`{name}` ({})", shown_text(value)));
            } else {
                left_out.push(name.clone());
            }
        }
        if !missing.is_empty() {
            return ArgCheck::NotRun(format!(
                "Not run: the user has not given {}. Ask the user for it; do not say it was done.",
                missing.join(", ")
            ));
        }
        if left_out.is_empty() {
            return ArgCheck::Given;
        }
        tracing::info!(tool = %call.name, ?left_out, "optional arguments the user did not give left out");
        let mut call = call.clone();
        if let Some(o) = call.arguments.as_object_mut() {
            o.retain(|k, _| !left_out.contains(k));
        }
        ArgCheck::LeftOut(call)
    }

    /// The agent's last message, normalised, when the user's message agrees to it
    /// (the answer agreed, or the message is a plain yes, in the tool's action words
    /// or not: "yes, book it").
    fn agreed_to_last_message(&self, tool: &dyn Tool<D, C>) -> Option<String> {
        let agreed = self.commands.contains(&Command::Agree)
            || plainly_agrees(self.msg, &crate::tool::action_words(tool));
        if !agreed {
            return None;
        }
        self.s
            .history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.content.is_empty())
            .map(|m| normalize(&m.content))
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
        // A call of a tool that waits for the user's yes runs only as the call the user
        // just agreed to; any other is summarised for the user (`pipeline/propose.rs`).
        // Calls with an argument the user never gave do not run: the model is told to
        // ask for it (the others of the round run as usual).
        let mut checks: Vec<ArgCheck> = Vec::with_capacity(calls.len());
        for c in calls {
            let gated = tools
                .iter()
                .find(|t| t.name() == c.name)
                .filter(|t| t.needs_agreement())
                .cloned();
            checks.push(match gated {
                Some(t) => match self.agreement(t.as_ref(), c) {
                    Ok(fixed) if fixed.arguments == c.arguments => ArgCheck::Given,
                    Ok(fixed) => ArgCheck::LeftOut(fixed),
                    Err(why) => ArgCheck::Summarised(why),
                },
                None => self.screen_args(tools, c),
            });
        }
        if checks.iter().any(|c| !matches!(c, ArgCheck::Given)) {
            let runs: Vec<ToolCall> = calls
                .iter()
                .zip(&checks)
                .filter_map(|(c, check)| match check {
                    ArgCheck::Given => Some(c.clone()),
                    ArgCheck::LeftOut(c) => Some(c.clone()),
                    ArgCheck::NotRun(_) | ArgCheck::Summarised(_) => None,
                })
                .collect();
            if runs.len() == calls.len() {
                return Box::pin(self.run_tools(tools, &runs)).await;
            }
            let mut ran = if runs.is_empty() {
                Vec::new()
            } else {
                Box::pin(self.run_tools(tools, &runs)).await
            }
            .into_iter();
            if self.paused.is_some() {
                return ran.collect();
            }
            let mut contents = Vec::with_capacity(calls.len());
            for (c, check) in calls.iter().zip(checks) {
                let why = match check {
                    ArgCheck::NotRun(why) => why,
                    // Not a call that ran or failed: the user reads its summary.
                    ArgCheck::Summarised(why) => {
                        contents.push(why);
                        continue;
                    }
                    ArgCheck::Given | ArgCheck::LeftOut(_) => {
                        contents.push(ran.next().unwrap_or_default());
                        continue;
                    }
                };
                tracing::info!(tool = %c.name, %why, "tool call not run: an argument the user did not give");
                let rec = ToolCallRecord {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    output: why.clone(),
                    ok: false,
                };
                self.emit(Event::ToolResult(rec.clone()));
                self.tool_calls.push(rec);
                contents.push(why);
            }
            return contents;
        }
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
        let journal = || self.journal_cx();
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
                    // A call with effects is remembered (a cancel says what stays
                    // done); a call the user agreed to uses up the yes
                    // (`pipeline/propose.rs`).
                    if let Some(t) = find(&c.name) {
                        if t.effect() != crate::tool::Effect::Pure {
                            self.s.acted.insert(c.name.clone(), self.s.turns);
                        }
                        if t.needs_agreement() {
                            self.ran_agreed();
                        }
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

/// What becomes of a call, by the arguments the user gave.
enum ArgCheck {
    /// Every argument is given: the call runs as it is.
    Given,
    /// Optional arguments nobody gave are left out: the call runs as this one.
    LeftOut(ToolCall),
    /// A required argument nobody gave: the call does not run; the tool result.
    NotRun(String),
    /// A call waiting for the user's yes: summarised, not run; the tool result.
    Summarised(String),
}

/// A value as the tool result names it.
fn shown_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether `stored` and `value` are the same value; text is compared case and
/// spacing aside, a list item by item.
fn same_value(stored: &Value, value: &Value) -> bool {
    match (stored, value) {
        (Value::String(a), Value::String(b)) => normalize(a) == normalize(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (a, b) => a == b,
    }
}

/// Whether the normalised message `last` shows `value` (each item of a list) as
/// whole words.
fn shows(last: &str, value: &Value) -> bool {
    match value {
        Value::Array(items) => !items.is_empty() && items.iter().all(|v| shows(last, v)),
        Value::String(s) => {
            let s = normalize(s);
            !s.trim().is_empty() && last.contains(&s)
        }
        other => last.contains(&format!(" {other} ")),
    }
}
