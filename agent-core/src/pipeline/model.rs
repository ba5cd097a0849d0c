//! Model calls: the structured respond call (reply + extraction + step claim + flow
//! switch, with the tool loop), extraction-only, classifier, summariser. Malformed
//! structured answers get one repair attempt, then a typed error.

use std::fmt::Write as _;
use std::sync::Arc;

use std::hash::{Hash, Hasher};

use futures::StreamExt;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::consent::{Consent, Gate};
use super::judged::{Judged, condition_index};
use super::stream::MessageExtractor;
use super::{Stop, Turn};
use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, ProviderError};
use crate::flow::Flow;
use crate::fxhash::FxHasher;
use crate::prompt::render_dynamic_instructions;
use crate::provider::{
    CallKind, FinishReason, Message, ModelRequest, ModelResponse, OutputSchema, Role, STATE_MARKER,
    StreamChunk, ToolCall, ToolSpec,
};
use crate::response::{DirectiveSource, Event, ToolCallRecord};
use crate::tool::{Tool, ToolCx, ToolCxParts, ToolError};

/// What a rendering call is for.
#[derive(Clone)]
pub(crate) enum Target<D, C> {
    /// Speak for a step.
    Step(Arc<Flow<D, C>>, usize),
    /// Close a finished flow (the step index is the one the user answered).
    Closing(Arc<Flow<D, C>>, usize),
    /// No active flow.
    Classic,
}

/// The parsed answer of a rendering call.
#[derive(Debug, Default)]
pub(crate) struct CallOutcome {
    pub(crate) message: String,
    pub(crate) deltas: Vec<String>,
    pub(crate) data: Option<Map<String, Value>>,
    pub(crate) claimed: Option<String>,
    pub(crate) switch_flow: Option<String>,
    pub(crate) verdicts: Vec<(String, bool)>,
    /// A tool the model asked for in its answer (`tools_in_answer`).
    pub(crate) tool_call: Option<ToolCall>,
    /// The answer judged that the user did not agree (`"agreed": false`).
    pub(crate) declined: bool,
    /// A speculative answer that asked for an action: the raw answer, replayed in the
    /// rendering that runs the action if the walk accepts it (no second model call).
    pub(crate) answer: Option<ModelResponse>,
}

/// The classifier's answer.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    pub(crate) extracted: Vec<(usize, Value)>,
    pub(crate) flow: Option<String>,
}

/// One question for the classifier.
pub(crate) struct Question {
    pub(crate) condition: String,
    pub(crate) extract: Option<Value>,
}

/// The respond call's answer, parsed straight into its fields (unknown keys ignored:
/// compatible servers add some).
#[derive(serde::Deserialize)]
struct RespondOut {
    message: Option<String>,
    #[serde(default)]
    data: Option<Value>,
    /// A step id (scripted answers, older prompts); `answered` is what the schema asks.
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    re_ask: Option<bool>,
    /// One yes/no per other flow (what the schema asks).
    #[serde(default)]
    handoff: Option<Map<String, Value>>,
    /// A flow id (scripted answers written by hand, older prompts).
    #[serde(default)]
    switch_flow: Option<String>,
    #[serde(default)]
    intent: Option<String>,
    #[serde(default)]
    conditions: Option<Judged>,
    #[serde(default)]
    action: Option<Value>,
}

impl RespondOut {
    /// The flow this answer hands over to: the first of `ids` (the order the prompt
    /// lists them) judged true in `handoff`, else a `switch_flow` id as written.
    fn handoff_target(
        handoff: Option<Map<String, Value>>,
        switch_flow: Option<String>,
        ids: &[String],
    ) -> Option<String> {
        let picked = handoff.as_ref().and_then(|h| {
            ids.iter()
                .find(|id| h.get(id.as_str()) == Some(&Value::Bool(true)))
                .cloned()
        });
        picked.or(switch_flow)
    }

    /// Whether the answer asks for any hand-over at all.
    fn hands_over(&self) -> bool {
        self.switch_flow.is_some()
            || self
                .handoff
                .as_ref()
                .is_some_and(|h| h.values().any(|v| v == &Value::Bool(true)))
    }
}

/// The step a speculative reply was written for: the pending step when the model says
/// its message asks the pending question again (`re_ask`), the target when it says
/// not; a `step` id naming either (scripted answers) counts too. `None` when it said
/// neither.
fn claimed_step<'a>(
    step: &'a Option<String>,
    re_ask: Option<bool>,
    target: &'a str,
    pending: &'a str,
) -> Option<&'a str> {
    match (step.as_deref(), re_ask) {
        (Some(s), _) if s == target || s == pending => Some(s),
        (_, Some(false)) => Some(target),
        (_, Some(true)) => Some(pending),
        _ => None,
    }
}

/// The per-turn state goes after the history, appended to the latest user message in
/// this request only (the stored history keeps the user's words), so every byte
/// before it is what the previous call sent.
fn attach_state(messages: &mut Vec<Message>, state: &str) {
    if state.is_empty() {
        return;
    }
    match messages.iter_mut().rev().find(|m| m.role == Role::User) {
        Some(m) => {
            let text = format!("{}\n\n{STATE_MARKER}\n{state}", &*m.content);
            m.content = text.into();
        }
        None => messages.push(Message::user(format!("{STATE_MARKER}\n{state}"))),
    }
}

/// The tools, described in the prompt for a model that calls them through its answer.
fn tools_in_answer_section(sys: &mut String, specs: &[ToolSpec], consent: Consent) {
    sys.push_str("Tools you can use:\n");
    for t in specs {
        let _ = writeln!(sys, "- {}: {}", t.name, t.description);
    }
    sys.push_str(consent.rule());
    sys.push('\n');
}

/// `schema` with a required `action`: null, or one of the tools with its arguments.
/// Keys are written in schema order (alphabetical): `action` comes before `message`
/// and `tool` before `with`, so the model decides to act before it describes the
/// outcome (asked after the message, Qwen2.5 1.5B announced bookings and never acted).
///
/// With `consent`, `action` is `{"agreed": false}` or `{"agreed": true, "tool": ..,
/// "with": ..}`: a yes/no judgement of the user's answer, which the grammar then
/// holds the tool call to. Asked as "null or a call", Qwen2.5 1.5B wrote null to
/// "Yes, book it", "Sure" and "OK, go ahead" alike; asked to judge agreement first, it
/// acted on each of them and on none of "No, not yet", an off-topic question or a
/// correction (2026-11-26, llama.cpp, temperature 0).
fn with_tool_call(schema: &Value, specs: &[ToolSpec], consent: bool) -> Value {
    let mut schema = schema.clone();
    let mut options: Vec<Value> = specs
        .iter()
        .map(|t| {
            if consent {
                json!({
                    "type": "object",
                    "properties": {
                        "agreed": { "const": true },
                        "tool": { "const": t.name },
                        "with": t.parameters,
                    },
                    "required": ["agreed", "tool", "with"],
                    "additionalProperties": false,
                })
            } else {
                json!({
                    "type": "object",
                    "properties": {
                        "tool": { "const": t.name },
                        "with": t.parameters,
                    },
                    "required": ["tool", "with"],
                    "additionalProperties": false,
                })
            }
        })
        .collect();
    options.push(if consent {
        json!({
            "type": "object",
            "properties": { "agreed": { "const": false } },
            "required": ["agreed"],
            "additionalProperties": false,
        })
    } else {
        json!({ "type": "null" })
    });
    if let Some(o) = schema.as_object_mut() {
        if let Some(Value::Object(props)) = o.get_mut("properties") {
            props.insert("action".into(), json!({ "anyOf": options }));
        }
        if let Some(Value::Array(req)) = o.get_mut("required") {
            req.push(Value::String("action".into()));
        }
    }
    schema
}

fn without_action(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(o) = schema.as_object_mut() {
        if let Some(Value::Object(props)) = o.get_mut("properties") {
            props.remove("action");
        }
        if let Some(Value::Array(req)) = o.get_mut("required") {
            req.retain(|r| r != "action");
        }
    }
    schema
}

/// The answer's `action`: a call the tool loop can run, nothing (null), or the consent
/// form's `"agreed": false` (whatever else it holds).
fn read_action(v: Value, n: u32) -> Result<Action, String> {
    let Value::Object(mut o) = v else {
        return match v {
            Value::Null => Ok(Action::None),
            _ => Err("`action` is not an object".into()),
        };
    };
    match o.get("agreed") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => return Ok(Action::Declined),
        Some(_) => return Err("`action.agreed` is not true or false".into()),
    }
    let Some(Value::String(name)) = o.remove("tool") else {
        return Err("`action` has no `tool`".into());
    };
    Ok(Action::Call(ToolCall {
        id: format!("answer-{n}"),
        name,
        arguments: o.remove("with").unwrap_or_else(|| json!({})),
    }))
}

/// What an answer's `action` says.
enum Action {
    /// `null`: nothing to do.
    None,
    /// `{"agreed": false}`: the user did not agree or ask.
    Declined,
    Call(ToolCall),
}

fn strip_fences(content: &str) -> &str {
    let t = content.trim();
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map_or(t, |r| r.trim_end().trim_end_matches("```"))
        .trim()
}

pub(super) fn parse_json_object(content: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(strip_fences(content)) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "expected a JSON object, got {}",
            crate::data::json_kind(&other)
        )),
        Err(e) => Err(format!("not valid JSON ({e})")),
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    pub(super) fn request(
        &self,
        kind: CallKind,
        system: String,
        messages: Vec<Message>,
    ) -> ModelRequest {
        ModelRequest {
            kind,
            system,
            messages,
            tools: Vec::new(),
            output: None,
            max_tokens: Some(
                self.a
                    .config
                    .max_tokens
                    .unwrap_or_else(|| self.a.config.token_limits.of(kind, self.s.flow.is_some())),
            ),
            temperature: self.a.config.temperature,
            seed: self.a.config.seed,
        }
    }

    pub(super) fn history_messages(&self) -> Vec<Message> {
        self.s.history.clone()
    }

    /// The user's message, quoted (and cut) for a question about it in the per-turn
    /// state ([`Consent::question`]).
    fn quoted_message(&self) -> String {
        const MAX: usize = 200;
        let cut = match self.msg.char_indices().nth(MAX) {
            Some((i, _)) => &self.msg[..i],
            None => self.msg,
        };
        Value::String(cut.to_owned()).to_string()
    }

    /// Today's date, weekday and time zone on the agent's clock (when configured).
    pub(super) fn push_today(&self, sys: &mut String) {
        if self.a.config.date_in_prompt {
            sys.push_str(&self.a.config.time_zone.today_line(self.a.clock.now_ms()));
            sys.push('\n');
        }
    }

    /// One provider call, streamed when a sink is attached; counts calls and usage.
    /// With `live`, the reply's text goes to the consumer as it arrives once
    /// [`Turn::live_ok`] decides (when the message starts) that it is final.
    pub(super) async fn call(
        &mut self,
        req: &ModelRequest,
        live: Option<&LiveTarget>,
    ) -> Result<(ModelResponse, Vec<String>), AgentError> {
        self.faulted()?;
        let kind = req.kind;
        if kind == CallKind::Respond
            && let Some(resp) = self.replay.take()
        {
            return Ok((resp, Vec::new()));
        }
        self.calls += 1;
        let provider = self.a.provider.name();
        let flow = self.s.flow.as_deref().unwrap_or("");
        let span = crate::telemetry::chat_span(provider, req, &self.s.id, flow);
        let result = self.call_inner(req, live).instrument(span.clone()).await;
        crate::telemetry::record_chat(&span, self.a.provider.name(), &result);
        let (resp, deltas) = result?;
        tracing::trace!(
            kind = ?kind,
            prompt = %req.instructions(),
            answer = %resp.content,
            tool_calls = resp.tool_calls.len(),
            "model call"
        );
        self.usage.add(resp.usage);
        Ok((resp, deltas))
    }

    async fn call_inner(
        &mut self,
        req: &ModelRequest,
        live: Option<&LiveTarget>,
    ) -> Result<(ModelResponse, Vec<String>), AgentError> {
        let kind = req.kind;
        let err = |source: ProviderError| AgentError::Provider { kind, source };
        let a = self.a;
        let Some(sink) = self.sink else {
            return Ok((a.provider.generate(req).await.map_err(err)?, Vec::new()));
        };
        let structured = req.output.is_some();
        // Text of a round that also offers tools may turn out not to be the reply.
        let mut undecided = live.is_some_and(|l| !l.held) && req.tools.is_empty();
        let mut is_live = false;
        let mut extractor = MessageExtractor::new();
        let mut deltas: Vec<String> = Vec::new();
        let mut stream = a.provider.generate_stream(req);
        let mut done = None;
        while let Some(chunk) = stream.next().await {
            match chunk.map_err(err)? {
                StreamChunk::Text(t) => {
                    let piece = if structured { extractor.push(&t) } else { t };
                    if undecided && let Some(lt) = live {
                        let head = if structured {
                            extractor.take_head()
                        } else {
                            None
                        };
                        if head.is_some() || (!structured && !piece.is_empty()) {
                            undecided = false;
                            // Boxed: the dry walk can reach the classifier, which calls back here.
                            is_live = Box::pin(self.live_ok(lt, head.as_deref())).await;
                        }
                    }
                    let piece = if is_live {
                        // Live text stops at `max_reply_chars`, where the final
                        // message is cut too.
                        let budget = self
                            .a
                            .config
                            .max_reply_chars
                            .saturating_sub(self.live_chars);
                        let cut = super::cap_chars(piece, budget);
                        self.live_chars += cut.chars().count();
                        cut
                    } else {
                        piece
                    };
                    if !piece.is_empty() {
                        let sent = is_live;
                        if sent {
                            sink.send(Event::TextDelta(piece.clone()));
                            self.streamed = true;
                        }
                        deltas.push(piece);
                        if sent {
                            // Let the consumer have it now, even when the provider's
                            // chunks are all ready at once.
                            tokio::task::yield_now().await;
                        }
                    }
                }
                StreamChunk::Done(r) => {
                    done = Some(r);
                    break;
                }
            }
        }
        let resp = done.ok_or_else(|| {
            err(ProviderError::InvalidResponse(
                "stream ended without a final answer".into(),
            ))
        })?;
        Ok((resp, deltas))
    }

    /// A rendering call with the tool loop. `extract` adds the `data` object; `alt` is
    /// the awaiting step the model may re-ask instead of the target.
    pub(crate) async fn render_call(
        &mut self,
        target: Target<D, C>,
        extract: bool,
        alt: Option<usize>,
    ) -> Result<CallOutcome, AgentError> {
        let flow = match &target {
            Target::Step(f, _) | Target::Closing(f, _) => Some(f.clone()),
            Target::Classic => None,
        };
        // Static sections first (the same bytes every call in this flow), the per-turn
        // state last, after the history: provider prompt caches reuse the prefix.
        let mut sys = String::with_capacity(self.a.prompt_capacity());
        let mut state = String::new();
        sys.push_str(&self.a.section);
        {
            let cx = self.cx();
            let mut dynamic = String::new();
            render_dynamic_instructions(&mut dynamic, &self.a.instructions, &cx);
            if let Some(f) = &flow {
                render_dynamic_instructions(&mut dynamic, &f.instructions, &cx);
                if let Target::Step(_, j) = &target {
                    render_dynamic_instructions(&mut dynamic, &f.steps[*j].instructions, &cx);
                }
            }
            if !dynamic.is_empty() {
                state.push_str("Rules for now:\n");
                state.push_str(&dynamic);
            }
        }
        // The target step's id and the pending step the reply may re-ask instead.
        let mut pending: Option<(Arc<str>, usize)> = None;
        let mut tools: Vec<Arc<dyn Tool<D, C>>> = self.a.tools.clone();
        // The answer to an `act_on_answer` step: its tools are offered, and with tools in
        // the answer the model judges the user's agreement before naming one.
        let mut consent = Consent::None;
        if let Some(f) = &flow {
            sys.push_str(&f.section);
            sys.push_str(&f.extract_section);
            sys.push_str(&self.a.switch_sections[f.index]);
            // What is known, and what this task still needs: an empty field another
            // part of the agent fills (a booking id a tool writes) is left out, so the
            // model has no slot to make a value up for.
            if let Ok(Value::Object(all)) = serde_json::to_value(&self.s.data) {
                let shown: Map<String, Value> = all
                    .into_iter()
                    .filter(|(k, v)| !v.is_null() || f.collectable.iter().any(|c| c.as_ref() == k))
                    .collect();
                push_all(
                    &mut state,
                    &[
                        "Collected so far (null = not yet): ",
                        &Value::Object(shown).to_string(),
                        "\n",
                    ],
                );
            }
            // The field list is static (in the system prompt); whether this call reads
            // the message differs between the calls of a turn, so it is said here.
            if !f.collectable.is_empty() {
                state.push_str(if !extract {
                    "Write null for every field in `data` this time.\n"
                } else if self.a.config.cite_quotes {
                    "Before replying, fill `data` from the user's latest message: each field as {\"quote\": the user's exact words that state it, \"value\": the value}; null when the user has not stated it. Never guess a value.\n"
                } else {
                    "Before replying, fill `data` with what the user's latest message states; null for a field the user has not stated. Never guess a value.\n"
                });
            }
            tools.extend(f.tools.iter().cloned());
            match &target {
                Target::Step(_, j) => {
                    let step = &f.steps[*j];
                    state.push_str("Now, ");
                    state.push_str(&step.section);
                    // Asked now, not answered: an `act_on_answer` step waits for it.
                    if !step.act_on_answer || self.awaiting_model_step(f) == Some(*j) {
                        let gate = Gate::of(step, &self.s.history);
                        consent = gate.consent;
                        if let Some(n) = gate.note() {
                            state.push_str(&n);
                            state.push('\n');
                        }
                        tools.extend(gate.tools);
                        if self.a.config.tools_in_answer
                            && let Some(q) = consent.question(|| self.quoted_message())
                        {
                            if consent == Consent::Answer {
                                state.push_str("The user's latest message answers this step. ");
                            }
                            state.push_str(&q);
                            state.push('\n');
                        }
                    }
                    if let Some(a) = alt.filter(|a| a != j) {
                        let s = &f.steps[a];
                        push_all(
                            &mut state,
                            &[
                                "But if the user's latest message does not answer the pending question (",
                                &s.id,
                                "), instead ",
                                &s.section,
                                "Set `re_ask` to true in that case, otherwise to false.\n",
                            ],
                        );
                        tools.extend(s.tools.iter().cloned());
                        pending = Some((step.id.clone(), a));
                    }
                }
                Target::Closing(_, j) => {
                    let step = &f.steps[*j];
                    let gate = Gate::of(step, &self.s.history);
                    let acts = !gate.tools.is_empty();
                    consent = gate.consent;
                    // A small model reads "ask the guest to confirm" in the step's own
                    // prompt and asks again: say that this message is the answer, and
                    // what to do with a yes and with anything else.
                    let question = self
                        .a
                        .config
                        .tools_in_answer
                        .then(|| consent.question(|| self.quoted_message()))
                        .flatten();
                    let _ = writeln!(
                        state,
                        "The task is finishing: everything needed is collected. The user's latest message answers this step: {}{}",
                        step.section,
                        if let Some(q) = &question {
                            q
                        } else if acts {
                            "If the user agrees or asks you to go ahead, do it now with the tool offered; the user reads your message after it ran. If the user declines or asks something else, do not use it and answer."
                        } else {
                            "Confirm the outcome to the user; use the tools offered if an action is needed."
                        }
                    );
                    if let Some(n) = gate.note() {
                        state.push_str(&n);
                        state.push('\n');
                    }
                    tools.extend(gate.tools);
                }
                Target::Classic => {}
            }
        }
        let conditions: Vec<String> =
            if extract || alt.is_some() || matches!(target, Target::Closing(..)) {
                std::mem::take(&mut self.deferred)
            } else {
                Vec::new()
            };
        if !conditions.is_empty() {
            state.push_str("Also judge whether each condition holds for the user's latest message, true or false, in `conditions`:\n");
            for (i, c) in conditions.iter().enumerate() {
                push_condition(&mut state, i, c);
            }
        }
        if let Some(c) = &self.carried {
            let _ = writeln!(
                state,
                "Context from the previous part of this turn, not yet shown to the user: \"{c}\". Carry over what matters from it."
            );
        }
        if !self.aug.append.is_empty() {
            state.push_str("For this turn:\n");
            for a in &self.aug.append {
                let _ = writeln!(state, "- {a}");
            }
        }
        if !self.notes.is_empty() {
            state.push_str("About the user's latest message:\n");
            for n in &self.notes {
                let _ = writeln!(state, "- {n}");
            }
        }
        for t in &self.aug.tools {
            tools.retain(|e| e.name() != t.name());
            tools.push(t.clone());
        }
        dedupe_tools(&mut tools);
        if self.tools_off {
            tools.clear();
        }

        // Schema-intent routing: the classic reply names the flow the user wants.
        let intents: Option<Vec<(String, String)>> = (flow.is_none()
            && self.s.code.is_none()
            && matches!(self.a.router, crate::codeflow::Router::SchemaIntent { .. })
            && self.a.flow_count() > 0)
            .then(|| {
                let decl = self.a.flows.iter().map(|f| {
                    let mut d = f.title.clone();
                    if let Some(w) = &f.when {
                        d = format!("{d} (when {w})");
                    }
                    (f.id.as_ref().to_owned(), d)
                });
                let code = self
                    .a
                    .code_flows
                    .iter()
                    .map(|f| (f.id.as_ref().to_owned(), f.route_description()));
                decl.chain(code).collect()
            });
        // A flow completed in the last few turns: the classic reply also reads the
        // message for corrections of its fields (`pipeline/correct.rs`).
        let correcting = if flow.is_none() && intents.is_none() {
            self.correctable()
        } else {
            None
        };
        let structured = flow.is_some() || intents.is_some() || correcting.is_some();
        let output = match &flow {
            None if intents.is_some() => {
                let ids = intents.as_deref().unwrap_or_default();
                sys.push_str("If the user wants one of these tasks, set `intent` to its id (null if none fits):\n");
                for (id, d) in ids {
                    let _ = writeln!(sys, "- {id}: {d}");
                }
                sys.push_str("Answer with JSON only; write the reply to the user in `message`.\n");
                let schema = self.a.cached_schema(7, || {
                    let mut e: Vec<Value> =
                        ids.iter().map(|(i, _)| Value::String(i.clone())).collect();
                    e.push(Value::Null);
                    json!({
                        "type": "object",
                        "properties": {
                            "message": { "type": "string" },
                            "intent": { "type": ["string", "null"], "enum": e },
                        },
                        "required": ["message", "intent"],
                        "additionalProperties": false,
                    })
                });
                Some(OutputSchema {
                    name: "turn".into(),
                    schema,
                })
            }
            Some(f) => {
                sys.push_str("Answer with JSON only; write the reply to the user in `message`.\n");
                let n_cond = conditions.len();
                let make = || {
                    let switch_ids = &self.a.switch_ids[f.index];
                    self.respond_schema(f, n_cond, switch_ids)
                };
                // One schema per flow (and number of judged conditions): the same bytes
                // at every step and in every call, so a provider's prompt cache (which
                // covers tools and schema on hosted APIs) keeps its prefix.
                let schema = if n_cond < 64 {
                    let key = 1u64 | (f.index as u64 & 0xffff) << 4 | (n_cond as u64) << 53;
                    self.a.cached_schema(key, make)
                } else {
                    Arc::new(make())
                };
                Some(OutputSchema {
                    name: "turn".into(),
                    schema,
                })
            }
            None => correcting.as_ref().map(|cf| {
                let done: Map<String, Value> = serde_json::to_value(&self.s.data)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(k, _)| cf.collectable.iter().any(|f| f.as_ref() == k))
                    .collect();
                let _ = writeln!(
                    state,
                    "The user's {} is complete, with {}. If the user's latest message changes one of these details, write the new value in `data`; write null for every detail not changed.",
                    cf.title,
                    Value::Object(done)
                );
                sys.push_str("Answer with JSON only; write the reply to the user in `message`.\n");
                let schema = self.a.cached_schema(
                    9 | (cf.index as u64 & 0xffff) << 4,
                    || {
                        let mut o = json!({
                            "type": "object",
                            "properties": {
                                "data": self.a.schema.extraction_schema(&cf.collectable, false),
                                "message": { "type": "string", "maxLength": self.a.config.max_reply_chars },
                            },
                            "required": ["data", "message"],
                            "additionalProperties": false,
                        });
                        if let (Some(defs), Value::Object(m)) = (self.a.schema.defs(), &mut o) {
                            m.insert("$defs".into(), defs.clone());
                        }
                        o
                    },
                );
                OutputSchema {
                    name: "turn".into(),
                    schema,
                }
            }),
        };

        if let Some(style) = &self.a.config.reply_style {
            sys.push_str(style);
            sys.push('\n');
        }

        // Servers that cannot combine tools with a JSON schema (llama.cpp) get the tools
        // as an `action` field of the answer instead.
        let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec()).collect();
        let in_answer = self.a.config.tools_in_answer && flow.is_some() && !specs.is_empty();
        let output = match output {
            Some(mut o) if in_answer => {
                tools_in_answer_section(&mut sys, &specs, consent);
                o.schema = Arc::new(with_tool_call(&o.schema, &specs, consent != Consent::None));
                Some(o)
            }
            other => other,
        };
        // The date changes once a day: it stays in the system prompt (a small model
        // echoes what is appended to the user's message), so the prefix a provider
        // caches holds for the day.
        self.push_today(&mut sys);
        if let Some(sum) = &self.s.summary {
            let _ = writeln!(sys, "Summary of the earlier conversation: {sum}");
        }
        self.a.note_prompt_len(sys.len() + state.len());
        let mut messages = self.history_messages();
        attach_state(&mut messages, &state);
        let mut req = self.request(CallKind::Respond, sys, messages);
        if !in_answer {
            req.tools = specs;
        }
        req.output = output;
        let live = LiveTarget {
            target: match &target {
                Target::Step(f, j) => Stop::Render(f.id.clone(), *j),
                Target::Closing(f, j) => Stop::Closing(f.id.clone(), *j),
                Target::Classic => Stop::Done,
            },
            alt,
            speculative: self.speculating,
            conditions: conditions.clone(),
            // The message of an answer that may still call a tool, or that may correct
            // a completed flow, is not final.
            held: in_answer || correcting.is_some(),
        };
        let (resp, deltas, settled) = self.tool_loop(&mut req, &tools, &live).await?;
        if settled {
            // A tool's verbatim reply replaces whatever the model would say next; the
            // conditions this call was to judge are judged not to hold, as when an
            // answer leaves them out.
            return Ok(CallOutcome {
                // Held for approval after text went out live: that text stays.
                message: if self.paused.is_some() && self.streamed {
                    resp.content
                } else {
                    String::new()
                },
                deltas,
                verdicts: conditions.iter().map(|c| (c.clone(), false)).collect(),
                ..CallOutcome::default()
            });
        }
        if !structured {
            return Ok(CallOutcome {
                message: resp.content,
                deltas,
                ..CallOutcome::default()
            });
        }
        let mut resp = resp;
        let mut deltas = deltas;
        let mut attempts = 0;
        let mut acted = false;
        loop {
            let parsed = if resp.finish == FinishReason::Length {
                Err(CUT_SHORT.to_string())
            } else {
                serde_json::from_str::<RespondOut>(strip_fences(&resp.content))
                    .map_err(|e| format!("not valid JSON for the expected object ({e})"))
                    .and_then(|out| {
                        let Some(message) = out.message else {
                            return Err("`message` is missing".into());
                        };
                        let data = match out.data {
                            None | Some(Value::Null) => None,
                            Some(Value::Object(d)) => Some(d),
                            Some(_) => return Err("`data` is not an object".into()),
                        };
                        let claimed = match (&flow, &pending) {
                            (Some(f), Some((target, a))) => {
                                claimed_step(&out.step, out.re_ask, target, &f.steps[*a].id)
                                    .map(str::to_owned)
                            }
                            _ => None,
                        };
                        let ids = flow
                            .as_ref()
                            .map_or(&[][..], |f| &self.a.switch_ids[f.index][..]);
                        let handoff = RespondOut::handoff_target(out.handoff, out.switch_flow, ids);
                        let intent = out.intent.filter(|i| {
                            intents
                                .as_ref()
                                .is_some_and(|ids| ids.iter().any(|(id, _)| id == i))
                        });
                        // The schema lists the other flows; a model that names anything
                        // else (or its own flow) is not followed.
                        let switch_flow = handoff
                            .filter(|t| {
                                let known = flow.as_ref().is_some_and(|f| {
                                    self.a.switch_ids[f.index].iter().any(|id| id == t)
                                });
                                if !known {
                                    tracing::warn!(target = %t, "switch_flow names no other flow; ignored");
                                }
                                known
                            })
                            .or(intent);
                        let (tool_call, declined) =
                            match out.action.map(|v| read_action(v, self.calls)).transpose()? {
                                None | Some(Action::None) => (None, false),
                                Some(Action::Declined) => (None, true),
                                Some(Action::Call(c)) => (Some(c), false),
                            };
                        let judged = out.conditions.unwrap_or_default();
                        let verdicts = conditions
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (c.clone(), judged.verdict(i)))
                            .collect();
                        Ok(CallOutcome {
                            message,
                            deltas: Vec::new(),
                            data,
                            claimed,
                            switch_flow,
                            verdicts,
                            tool_call,
                            declined,
                            answer: None,
                        })
                    })
            };
            match parsed {
                Ok(mut out) => {
                    // A speculative answer's action waits: it runs only if the walk
                    // accepts that answer, in a rendering that replays this answer.
                    if self.speculating && out.tool_call.is_some() {
                        out.answer = Some(resp.clone());
                    }
                    if !self.speculating
                        && !acted
                        && let Some(call) = out.tool_call.take()
                    {
                        // A tool asked for in the answer: run it, then ask again with
                        // its result, as a native tool round would.
                        acted = true;
                        let mut assistant = Message::assistant(String::new());
                        assistant.tool_calls = vec![call.clone()];
                        req.messages.push(assistant);
                        let since = self.post_bus.len();
                        let results = self.run_tools(&tools, std::slice::from_ref(&call)).await;
                        if self.paused.is_some() {
                            // Held for approval: the answer's message is not used
                            // (it may announce what has not happened).
                            out.message.clear();
                            out.deltas = std::mem::take(&mut deltas);
                            return Ok(out);
                        }
                        for content in results {
                            req.messages.push(Message::tool(call.id.clone(), content));
                        }
                        if self.reply_settled_since(since) {
                            out.message.clear();
                            out.deltas = std::mem::take(&mut deltas);
                            return Ok(out);
                        }
                        // The follow-up writes the message; no second action, so a
                        // model repeating itself cannot book twice.
                        if let Some(o) = req.output.as_mut() {
                            o.schema = Arc::new(without_action(&o.schema));
                        }
                        req.kind = CallKind::ToolRound;
                        let (r, d) = self.call(&req, None).await?;
                        resp = r;
                        deltas = d;
                        attempts = 0;
                        continue;
                    }
                    out.deltas = std::mem::take(&mut deltas);
                    return Ok(out);
                }
                Err(problem) if attempts < self.a.config.repair_attempts && !self.streamed => {
                    attempts += 1;
                    tracing::warn!(%problem, "malformed structured answer; asking for a repair");
                    ask_for_repair(&mut req, resp.content.clone(), &problem);
                    req.tools.clear();
                    let (r, d) = self.call(&req, None).await?;
                    resp = r;
                    deltas = d;
                }
                Err(problem) => {
                    return Err(AgentError::MalformedModelOutput {
                        kind: CallKind::Respond,
                        message: problem,
                    });
                }
            }
        }
    }

    /// Whether a tool that ran since `since` (a position in the post bus) set the
    /// reply verbatim or aborted: the model's next message would be replaced, so it is
    /// not asked for (one call fewer, and the user reads the code's text).
    pub(super) fn reply_settled_since(&self, since: usize) -> bool {
        self.post_bus.get(since..).is_some_and(|new| {
            new.iter().any(|(_, d)| {
                d.reply.is_some()
                    || matches!(d.position, Some(crate::directive::Position::Abort(_)))
            })
        })
    }

    /// Call, run requested tools, feed results back, until the model answers or a
    /// tool settles the reply (the third value).
    async fn tool_loop(
        &mut self,
        req: &mut ModelRequest,
        tools: &[Arc<dyn Tool<D, C>>],
        live: &LiveTarget,
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
    pub(super) async fn run_round(
        &mut self,
        tools: &[Arc<dyn Tool<D, C>>],
        calls: &[ToolCall],
        fixed: Option<(Vec<super::approve::Gate>, Vec<String>)>,
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
            if let super::approve::Gate::Fail(e) = std::mem::replace(g, super::approve::Gate::Run) {
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

    /// Extraction only (no message is needed this turn).
    pub(crate) async fn extract_call(
        &mut self,
        flow: &Arc<Flow<D, C>>,
    ) -> Result<Option<Map<String, Value>>, AgentError> {
        let mut sys = String::from(
            "Extract structured data from the user's latest message into `data`, for these fields:\n",
        );
        for field in &flow.collectable {
            let _ = writeln!(sys, "- {field}");
        }
        sys.push_str(if self.a.config.cite_quotes {
            "Write each as {\"quote\": the user's exact words that state it, \"value\": the value}; null when the message does not state it. Never guess a value.\n"
        } else {
            "Write null for a field the message does not state. Never guess a value.\n"
        });
        self.push_today(&mut sys);
        let schema = self.a.cached_schema(2 | (flow.index as u64) << 4, || {
            let mut schema = json!({
                "type": "object",
                "properties": { "data": self.a.schema.extraction_schema(&flow.collectable, self.a.config.cite_quotes) },
                "required": ["data"],
                "additionalProperties": false,
            });
            if let (Some(defs), Value::Object(o)) = (self.a.schema.defs(), &mut schema) {
                o.insert("$defs".into(), defs.clone());
            }
            schema
        });
        let mut req = self.request(CallKind::Extract, sys, self.history_messages());
        req.output = Some(OutputSchema {
            name: "extraction".into(),
            schema,
        });
        let (resp, _) = self.call(&req, None).await?;
        let mut m = parse_json_object(&resp.content).map_err(|message| {
            AgentError::MalformedModelOutput {
                kind: CallKind::Extract,
                message,
            }
        })?;
        match m.remove("data") {
            Some(Value::Object(d)) => Ok(Some(d)),
            _ => Ok(None),
        }
    }

    /// Judge `when` conditions (one call per `classifier_batch_size` conditions).
    pub(crate) async fn judge(&mut self, conditions: Vec<String>) -> Result<(), AgentError> {
        let qs: Vec<Question> = conditions
            .into_iter()
            .map(|condition| Question {
                condition,
                extract: None,
            })
            .collect();
        self.classify(&qs, &[]).await.map(|_| ())
    }

    /// The classifier: conditions (with optional extraction) and, when `flows` is not
    /// empty, routing — in one call per batch.
    pub(crate) async fn classify(
        &mut self,
        questions: &[Question],
        flows: &[(&str, &str)],
    ) -> Result<Verdicts, AgentError> {
        let mut verdicts = Verdicts::default();
        let batch = self.a.config.classifier_batch_size.max(1);
        let chunks: Vec<&[Question]> = if questions.is_empty() {
            vec![&[]]
        } else {
            questions.chunks(batch).collect()
        };
        for (ci, chunk) in chunks.into_iter().enumerate() {
            let base = ci * batch;
            let routing = ci == 0 && !flows.is_empty();
            if chunk.is_empty() && !routing {
                continue;
            }
            let kind = if chunk.is_empty() {
                CallKind::Route
            } else {
                CallKind::Classify
            };
            let mut sys = String::with_capacity(self.a.prompt_capacity());
            sys.push_str(
                "You judge the user's latest message in the context of the conversation.\n",
            );
            if !chunk.is_empty() {
                sys.push_str("For each condition, answer true or false in `conditions`:\n");
                for (i, q) in chunk.iter().enumerate() {
                    push_condition(&mut sys, base + i, &q.condition);
                }
                if chunk.iter().any(|q| q.extract.is_some()) {
                    sys.push_str("For conditions that are true and listed in `extracted`, also extract the value.\n");
                }
            }
            let (min_confidence, guidance) = match &self.a.router {
                crate::codeflow::Router::Detector {
                    min_confidence,
                    prompt,
                    ..
                } => (*min_confidence, prompt.as_deref()),
                crate::codeflow::Router::SchemaIntent { .. } => (None, None),
            };
            if routing {
                sys.push_str("Pick the task the user wants in `flow` (null if none fits):\n");
                for (id, when) in flows {
                    push_all(&mut sys, &["- ", id, ": ", when, "\n"]);
                }
                if let Some(g) = guidance {
                    sys.push_str(g);
                    sys.push('\n');
                }
                if min_confidence.is_some() {
                    sys.push_str(
                        "Give your confidence in that pick, from 0 to 1, in `confidence`.\n",
                    );
                }
            }
            sys.push_str("Answer with JSON only.");
            // The schema depends on the keys, the extraction schemas and the flow ids,
            // never on the condition texts: cache it by those.
            let key = {
                let mut h = FxHasher::default();
                (base, chunk.len(), routing).hash(&mut h);
                for (i, q) in chunk.iter().enumerate() {
                    if q.extract.is_some() {
                        (i, &q.condition).hash(&mut h);
                    }
                }
                if routing {
                    for (id, _) in flows {
                        id.hash(&mut h);
                    }
                    min_confidence.is_some().hash(&mut h);
                }
                (h.finish() & !0xf) | 3
            };
            let schema = self.a.cached_schema(key, || {
                classify_schema(chunk, base, routing, flows, min_confidence.is_some())
            });
            self.a.note_prompt_len(sys.len());
            let mut req = self.request(kind, sys, self.history_messages());
            req.output = Some(OutputSchema {
                name: "classification".into(),
                schema,
            });
            let mut attempts = 0;
            let out = loop {
                let (resp, _) = self.call(&req, None).await?;
                let problem = if resp.finish == FinishReason::Length {
                    CUT_SHORT.to_owned()
                } else {
                    match serde_json::from_str::<ClassifyOut>(strip_fences(&resp.content)) {
                        Ok(out) if out.conditions.is_some() || chunk.is_empty() => break Some(out),
                        Ok(_) => "`conditions` is missing".to_owned(),
                        Err(e) => format!("not valid JSON for the expected object ({e})"),
                    }
                };
                if attempts < self.a.config.repair_attempts {
                    attempts += 1;
                    tracing::warn!(%problem, ?kind, "malformed classifier answer; asking for a repair");
                    ask_for_repair(&mut req, resp.content, &problem);
                    continue;
                }
                if chunk.is_empty() {
                    // A routing answer that cannot be read picks nothing: the router's
                    // fallback applies (conditions, by contrast, are never guessed).
                    tracing::warn!(%problem, "routing answer unreadable; the router's fallback applies");
                    break None;
                }
                return Err(AgentError::MalformedModelOutput {
                    kind,
                    message: problem,
                });
            };
            let Some(out) = out else { continue };
            let conds = out.conditions.unwrap_or_default();
            for (i, q) in chunk.iter().enumerate() {
                self.judged
                    .insert(q.condition.clone(), conds.verdict(base + i));
            }
            if let Some(extracted) = out.extracted {
                for (k, e) in extracted {
                    if let Some(n) = condition_index(&k).and_then(|n| n.checked_sub(base))
                        && n < chunk.len()
                        && !e.is_null()
                    {
                        verdicts.extracted.push((base + n, e));
                    }
                }
            }
            if routing {
                verdicts.flow = out.flow.filter(|f| flows.iter().any(|(id, _)| id == f));
                if let (Some(min), Some(f)) = (min_confidence, &verdicts.flow) {
                    let conf = out.confidence.unwrap_or(0.0);
                    if conf < f64::from(min) {
                        tracing::debug!(flow = %f, confidence = conf, min, "routing pick below the confidence threshold; falling back");
                        verdicts.flow = None;
                    }
                }
            }
        }
        Ok(verdicts)
    }

    /// Summarise history older than the last `keep_last_messages` once it exceeds the
    /// token budget.
    pub(crate) async fn compact_history(&mut self) -> Result<(), AgentError> {
        let cfg = &self.a.config;
        let keep = cfg.keep_last_messages;
        if self.s.history.len() <= keep {
            return Ok(());
        }
        let tokens: usize = self
            .s
            .history
            .iter()
            .map(|m| crate::prompt::estimate_tokens(&m.content))
            .sum();
        if tokens <= cfg.history_token_budget {
            return Ok(());
        }
        let cut = self.s.history.len() - keep;
        let old: Vec<Message> = self.s.history[..cut].to_vec();
        let mut sys = String::from(
            "Summarise the conversation so far in a few sentences. Keep every fact, value and decision the user gave.",
        );
        if let Some(prev) = &self.s.summary {
            let _ = write!(sys, " Earlier summary to fold in: {prev}");
        }
        let req = self.request(CallKind::Summarize, sys, old);
        let (resp, _) = self.call(&req, None).await?;
        self.s.summary = Some(resp.content.trim().to_owned());
        self.s.history.drain(..cut);
        Ok(())
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The respond call's schema: `conditions`, `data` (what the flow collects),
    /// `handoff` (one yes/no per other flow), then `message` and `re_ask` (keys go on
    /// the wire in alphabetical order, which llama.cpp's grammar follows: decisions that
    /// change the data or the flow come before the message). The same for every call in
    /// the flow: `data` is there even when the call does not read the message (the
    /// answer's `data` is then ignored), and `re_ask` (does the message ask the pending
    /// question again?) says which step the reply is for, instead of a per-call `step`
    /// enum, whose first value a small model picks.
    fn respond_schema(&self, f: &Flow<D, C>, n_conditions: usize, switch_ids: &[String]) -> Value {
        let mut props = Map::new();
        let mut required = Vec::new();
        let model_steps = f
            .steps
            .iter()
            .filter(|s| matches!(s.kind, crate::step::StepKind::Model))
            .count();
        if model_steps > 1 {
            props.insert("re_ask".into(), json!({ "type": "boolean" }));
            required.push("re_ask");
        }
        if !f.collectable.is_empty() {
            props.insert(
                "data".into(),
                self.a
                    .schema
                    .extraction_schema(&f.collectable, self.a.config.cite_quotes),
            );
            required.push("data");
        }
        if n_conditions > 0 {
            let mut cprops = Map::new();
            for i in 0..n_conditions {
                cprops.insert(format!("c{i}"), json!({ "type": "boolean" }));
            }
            let keys: Vec<Value> = cprops.keys().map(|k| Value::String(k.clone())).collect();
            props.insert(
                "conditions".into(),
                json!({ "type": "object", "properties": cprops, "required": keys, "additionalProperties": false }),
            );
            required.push("conditions");
        }
        if !switch_ids.is_empty() {
            let flows: Map<String, Value> = switch_ids
                .iter()
                .map(|id| (id.clone(), json!({ "type": "boolean" })))
                .collect();
            let keys: Vec<Value> = flows.keys().map(|k| Value::String(k.clone())).collect();
            props.insert(
                "handoff".into(),
                json!({ "type": "object", "properties": flows, "required": keys, "additionalProperties": false }),
            );
            required.push("handoff");
        }
        props.insert(
            "message".into(),
            json!({ "type": "string", "maxLength": self.a.config.max_reply_chars }),
        );
        required.push("message");
        let mut schema = json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        });
        if let (Some(defs), Value::Object(o)) = (self.a.schema.defs(), &mut schema) {
            o.insert("$defs".into(), defs.clone());
        }
        schema
    }
}

/// What a rendering call renders, for deciding mid-stream whether its reply is final.
pub(crate) struct LiveTarget {
    target: Stop,
    alt: Option<usize>,
    speculative: bool,
    conditions: Vec<String>,
    held: bool,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether the reply now starting to stream is certainly the turn's message, so its
    /// text can reach the consumer as it arrives. Only when nothing that runs after the
    /// call can replace or redirect it (no tool directive so far, no `finalize` on the
    /// step, no `on_complete` on a closing flow, no post-phase signal), and, for a
    /// speculative call, when a dry walk with the decisions already streamed (`head`:
    /// data, verdicts, claimed step) lands on the rendered step through hook-free steps.
    async fn live_ok(&mut self, lt: &LiveTarget, head: Option<&str>) -> bool {
        // Claim guards read the whole reply after the tools ran: it streams once checked.
        if !self.post_bus.is_empty()
            || !self.a.claim_guards.is_empty()
            || self.a.signals.iter().any(|s| s.phase.runs_post())
        {
            return false;
        }
        let flow = match &lt.target {
            Stop::Render(f, j) | Stop::Closing(f, j) => match self.a.flow(f) {
                Some(flow) if flow.steps[*j].finalize.is_none() => Some(flow.clone()),
                _ => return false,
            },
            // Schema-intent routing may replace a classic reply with a flow's.
            Stop::Done
                if matches!(self.a.router, crate::codeflow::Router::SchemaIntent { .. })
                    && self.a.flow_count() > 0 =>
            {
                return false;
            }
            Stop::Done => None,
            Stop::ReplyStep(..) => return false,
        };
        if let (Stop::Closing(..), Some(f)) = (&lt.target, &flow)
            && (f.hooks.on_complete.is_some() || f.on_complete.is_some())
        {
            return false;
        }
        let Some(head) = head else {
            return !lt.speculative;
        };
        let Ok(out) = serde_json::from_str::<RespondOut>(head) else {
            return false;
        };
        if out.hands_over() {
            return false;
        }
        if !lt.speculative {
            return true;
        }
        let Some(flow) = flow else { return false };
        // Simulate what the turn will do with these decisions, on copies.
        let mut patch = Map::new();
        if let Some(Value::Object(d)) = out.data.clone() {
            for (x, verdict) in self.screen(&flow, d) {
                match verdict {
                    super::converse::Verdict::Keep { .. } => {
                        patch.insert(x.field, x.value);
                    }
                    super::converse::Verdict::NotCollected => {}
                    // A value that will not be stored changes the reply: not final.
                    _ => return false,
                }
            }
        }
        let data = match self.a.schema.apply(&self.s.data, &patch) {
            Ok(d) => d,
            Err(_) => self.s.data.clone(),
        };
        let present = self.a.schema.present(&data);
        let saved_data = std::mem::replace(&mut self.s.data, data);
        let saved_present = std::mem::replace(&mut self.present, present);
        let saved_judged = self.judged.clone();
        let conds = out.conditions.unwrap_or_default();
        for (i, c) in lt.conditions.iter().enumerate() {
            self.judged.insert(c.clone(), conds.verdict(i));
        }
        let (dry, clean) = self.predict(false).await;
        self.s.data = saved_data;
        self.present = saved_present;
        self.judged = saved_judged;
        let id = |j: usize| flow.steps[j].id.as_ref();
        let claimed = match (&lt.target, lt.alt) {
            (Stop::Render(_, j), Some(a)) if a != *j => {
                claimed_step(&out.step, out.re_ask, id(*j), id(a))
            }
            _ => None,
        };
        clean
            && match (&lt.target, dry) {
                (Stop::Render(f1, j1), Some(Stop::Render(f2, j2))) if *f1 == f2 => {
                    (*j1 == j2 && claimed.is_none_or(|c| c == id(*j1)))
                        || (lt.alt == Some(j2) && claimed == Some(id(j2)))
                }
                (Stop::Closing(f1, _), Some(Stop::Closing(f2, _))) => *f1 == f2,
                _ => false,
            }
    }
}

/// The classifier's answer.
#[derive(serde::Deserialize)]
struct ClassifyOut {
    #[serde(default)]
    conditions: Option<Judged>,
    #[serde(default)]
    extracted: Option<Map<String, Value>>,
    #[serde(default)]
    flow: Option<String>,
    #[serde(default)]
    confidence: Option<f64>,
}

/// Why a structured answer that stopped at the token limit is not used (complete-
/// looking JSON may still be cut).
pub(crate) const CUT_SHORT: &str = "the answer was cut by the token limit";

/// How much of an unusable answer a repair request shows the model.
const REPAIR_ECHO_CHARS: usize = 2000;

/// Ask again for a structured answer that could not be used: the answer and the
/// problem go at the end of the request (the one repair rule of every call kind).
pub(crate) fn ask_for_repair(req: &mut ModelRequest, mut answer: String, problem: &str) {
    // A runaway answer is shown cut: echoing it whole could overflow the context.
    if let Some((end, _)) = answer.char_indices().nth(REPAIR_ECHO_CHARS) {
        answer.truncate(end);
        answer.push('…');
    }
    req.messages.push(Message::assistant(answer));
    req.messages.push(Message::user(format!(
        "Your previous answer could not be used: {problem}. Answer again with only the JSON object the schema describes."
    )));
}

/// Append pieces in order (prompts are built on every call: no format machinery).
fn push_all(out: &mut String, parts: &[&str]) {
    for p in parts {
        out.push_str(p);
    }
}

/// `- cN: condition` (what the model answers by key `cN`), without format machinery.
fn push_condition(sys: &mut String, n: usize, condition: &str) {
    sys.push_str("- c");
    push_number(sys, n);
    sys.push_str(": ");
    sys.push_str(condition);
    sys.push('\n');
}

fn push_number(s: &mut String, n: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(char::from(b));
    }
}

/// Schema of a classifier call: `conditions` (one boolean per key), `extracted` (per key
/// with an extraction schema) and, when routing, `flow`.
fn classify_schema(
    chunk: &[Question],
    base: usize,
    routing: bool,
    flows: &[(&str, &str)],
    confidence: bool,
) -> Value {
    let mut props = Map::new();
    let mut required: Vec<&str> = Vec::new();
    if !chunk.is_empty() {
        let mut cprops = Map::new();
        let mut eprops = Map::new();
        for (i, q) in chunk.iter().enumerate() {
            let key = format!("c{}", base + i);
            cprops.insert(key.clone(), json!({ "type": "boolean" }));
            if let Some(s) = &q.extract {
                eprops.insert(key, s.clone());
            }
        }
        let keys: Vec<Value> = cprops.keys().map(|k| Value::String(k.clone())).collect();
        props.insert(
            "conditions".into(),
            json!({ "type": "object", "properties": cprops, "required": keys, "additionalProperties": false }),
        );
        required.push("conditions");
        if !eprops.is_empty() {
            props.insert(
                "extracted".into(),
                json!({ "type": "object", "properties": eprops }),
            );
        }
    }
    if routing {
        let mut ids: Vec<Value> = flows
            .iter()
            .map(|(id, _)| Value::String((*id).to_owned()))
            .collect();
        ids.push(Value::Null);
        props.insert(
            "flow".into(),
            json!({ "type": ["string", "null"], "enum": ids }),
        );
        required.push("flow");
        if confidence {
            props.insert(
                "confidence".into(),
                json!({ "type": "number", "minimum": 0, "maximum": 1 }),
            );
            required.push("confidence");
        }
    }
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}

fn dedupe_tools<D, C>(tools: &mut Vec<Arc<dyn Tool<D, C>>>) {
    let mut out: Vec<Arc<dyn Tool<D, C>>> = Vec::with_capacity(tools.len());
    for t in tools.drain(..) {
        out.retain(|e| e.name() != t.name());
        out.push(t);
    }
    *tools = out;
}
