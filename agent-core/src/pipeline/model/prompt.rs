//! The respond request: the static sections first (the same bytes every call in a
//! flow, so provider prompt caches reuse them), then the history, then the per-turn
//! state (rules for now, what is collected, the step's task, consent, conditions to
//! judge, notes), appended to the latest user message.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Target;
use super::live::LiveTarget;
use super::push::{push_all, push_condition};
use super::schema::with_tool_call;
use crate::data::{AgentContext, AgentData};
use crate::flow::Flow;
use crate::pipeline::Turn;
use crate::pipeline::consent::{Consent, Gate, plainly_agrees};
use crate::pipeline::walk::Stop;
use crate::prompt::{one_line, render_dynamic_instructions};
use crate::provider::{
    CallKind, Message, ModelRequest, OutputSchema, Role, STATE_MARKER, ToolSpec,
};
use crate::tool::{Tool, action_words};

/// A rendered respond request and what reading its answer needs.
pub(super) struct Prompt<D, C> {
    pub(super) req: ModelRequest,
    pub(super) tools: Vec<Arc<dyn Tool<D, C>>>,
    pub(super) live: LiveTarget,
    pub(super) flow: Option<Arc<Flow<D, C>>>,
    /// The target step's id and the pending step the reply may re-ask instead.
    pub(super) pending: Option<(Arc<str>, usize)>,
    /// The conditions the answer judges, in key order.
    pub(super) conditions: Vec<String>,
    /// The flows a classic reply may name (schema-intent routing).
    pub(super) intents: Option<Vec<(String, String)>>,
    /// The answer is a JSON object (not plain text).
    pub(super) structured: bool,
    /// The step's tools were withheld from this answer to a confirmation by code
    /// ([`Gate::holds_answer`]): the answer stands as a reply that did not act.
    pub(super) answer_held: bool,
    /// How the answer judges consent before it names a tool.
    pub(super) consent: Consent,
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
            let mut text =
                String::with_capacity(m.content.len() + STATE_MARKER.len() + state.len() + 3);
            text.push_str(&m.content);
            text.push_str("\n\n");
            text.push_str(STATE_MARKER);
            text.push('\n');
            text.push_str(state);
            m.content = text.into();
        }
        None => messages.push(Message::user(format!("{STATE_MARKER}\n{state}"))),
    }
}

/// The tools, described in the prompt for a model that calls them through its answer.
fn tools_in_answer_section(sys: &mut String, specs: &[ToolSpec], consent: Consent) {
    sys.push_str("Tools you can use:\n");
    for t in specs {
        let _ = writeln!(sys, "- {}: {}", t.name, one_line(&t.description));
    }
    sys.push_str(consent.rule());
    sys.push('\n');
}

fn dedupe_tools<D, C>(tools: &mut Vec<Arc<dyn Tool<D, C>>>) {
    let mut out: Vec<Arc<dyn Tool<D, C>>> = Vec::with_capacity(tools.len());
    for t in tools.drain(..) {
        out.retain(|e| e.name() != t.name());
        out.push(t);
    }
    *tools = out;
}

/// What the answer's `cancel` key means (the cancel pattern, `pipeline/stack.rs`).
const CANCEL_RULE: &str = "Set `cancel` to true only when the user's latest message asks to stop this task altogether; a no, a question or a changed detail is not a cancel.\n";

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
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

    /// The rules whose `if` holds now, for a call in `flow` rendering `step`: the
    /// agent's, the flow's and the step's. A speculative reply was written with the
    /// rules of the data before its own values were stored; it stands only if they
    /// are still the ones (`Turn::accepts`).
    pub(crate) fn rules_for_now(&self, flow: Option<&Flow<D, C>>, step: Option<usize>) -> String {
        let cx = self.cx();
        let mut dynamic = String::new();
        render_dynamic_instructions(&mut dynamic, &self.a.instructions, &cx);
        if let Some(f) = flow {
            render_dynamic_instructions(&mut dynamic, &f.instructions, &cx);
            if let Some(s) = step.and_then(|j| f.steps.get(j)) {
                render_dynamic_instructions(&mut dynamic, &s.instructions, &cx);
            }
        }
        dynamic
    }

    /// The respond request for `target`. `extract` adds the `data` object; `alt` is
    /// the awaiting step the model may re-ask instead of the target.
    pub(super) fn render_prompt(
        &mut self,
        target: Target<D, C>,
        extract: bool,
        alt: Option<usize>,
    ) -> Prompt<D, C> {
        let flow = match &target {
            Target::Step(f, _) | Target::Closing(f, _) => Some(f.clone()),
            Target::Classic => None,
        };
        // Static sections first (the same bytes every call in this flow), the per-turn
        // state last, after the history: provider prompt caches reuse the prefix.
        let mut sys = String::with_capacity(self.a.prompt_capacity());
        let mut state = String::new();
        sys.push_str(&self.a.section);
        let step = match &target {
            Target::Step(_, j) => Some(*j),
            _ => None,
        };
        let rules = self.rules_for_now(flow.as_deref(), step);
        if !rules.is_empty() {
            state.push_str("Rules for now:\n");
            state.push_str(&rules);
        }
        // The target step's id and the pending step the reply may re-ask instead.
        let mut pending: Option<(Arc<str>, usize)> = None;
        // Every tool is offered; a call of one that needs the user's agreement is
        // summarised for a yes, not run (`pipeline/propose.rs`).
        let mut tools: Vec<Arc<dyn Tool<D, C>>> = self.a.tools.clone();
        // The answer to a summary: with tools in the answer the model judges the
        // user's agreement before naming one.
        let mut consent = Consent::None;
        let mut answer_held = false;
        if let Some(f) = &flow {
            sys.push_str(&f.section);
            sys.push_str(&f.extract_section);
            sys.push_str(&self.a.switch_sections[f.index]);
            sys.push_str(CANCEL_RULE);
            // What is known, and what this task still needs: an empty field another
            // part of the agent fills (a booking id a tool writes) is left out, so the
            // model has no slot to make a value up for.
            if let Ok(Value::Object(all)) = serde_json::to_value(&self.s.data) {
                push_collected(&mut state, &all, |k| {
                    f.collectable.iter().any(|c| c.as_ref() == k)
                });
            }
            // The field list is static (in the system prompt); whether this call reads
            // the message differs between the calls of a turn, so it is said here.
            let mut fill = (self.fields_read(f) > 0).then_some(if !extract {
                "Write null for every field in `data` this time.\n"
            } else if self.a.config.cite_quotes {
                "Before replying, fill `data` from the user's latest message (a new value replaces the collected one): each field as {\"quote\": the user's exact words that state it, \"value\": the value}; null when the user has not stated it. Never guess a value.\n"
            } else {
                "Before replying, fill `data` with what the user's latest message states (a new value replaces the collected one); null for a field the user has not stated. Never guess a value.\n"
            });
            // Read after a step's instruction ("Ask for the check-in date"), the
            // instruction to fill `data` is what the model sees last before writing it:
            // read before it, the step told a small model the value was missing.
            // Measured on Qwen2.5 1.5B (turn-one calls of 18 concierge openings that
            // give a date, token probabilities at temperature 0.7): a null date 8.1 %
            // of the time with the fill line first, 2.0 % with it after the step.
            // A call that judges an answer (`action` comes first) keeps the order
            // its judgement was measured with.
            if !matches!(target, Target::Step(..))
                && let Some(t) = fill.take()
            {
                state.push_str(t);
            }
            tools.extend(f.tools.iter().cloned());
            match &target {
                Target::Step(_, j) => {
                    let step = &f.steps[*j];
                    // Asked now, not answered: a step whose `ask` summarises its call
                    // offers it only in the answer to that question.
                    let gate = (step.proposes_by_ask().is_none()
                        || self.awaiting_model_step(f) == Some(*j))
                    .then(|| {
                        Gate::of(step, self.proposal.as_ref(), Some(self.msg))
                            .unless_changed(self.changed_now)
                            .unless_not_agreed(self.not_agreed)
                    });
                    if gate.as_ref().is_some_and(|g| g.consent != Consent::None)
                        && let Some(t) = fill.take()
                    {
                        state.push_str(t);
                    }
                    state.push_str("Now, ");
                    state.push_str(&step.section);
                    if let Some(gate) = gate {
                        consent = gate.consent;
                        answer_held = gate.holds_answer();
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
                        if self.awaiting_model_step(f) == Some(a) {
                            push_all(
                                &mut state,
                                &[
                                    "But if the user's latest message does not answer the pending question (",
                                    &s.id,
                                    "), instead ",
                                ],
                            );
                        } else {
                            // Not asked yet (the flow starts this turn): what the
                            // message must give for the step to count as answered.
                            let fields: Vec<&str> = s
                                .collect
                                .iter()
                                .zip(&s.collect_idx)
                                .filter(|(_, i)| !self.present.contains(**i))
                                .map(|(n, _)| n.as_ref())
                                .collect();
                            push_all(
                                &mut state,
                                &[
                                    "But if the user's latest message does not give `",
                                    &fields.join("` and `"),
                                    "`, instead ",
                                ],
                            );
                        }
                        push_all(
                            &mut state,
                            &[
                                &s.section,
                                "Then set `reply_asks_for` to what your message asks for.\n",
                            ],
                        );
                        tools.extend(s.tools.iter().cloned());
                        pending = Some((step.id.clone(), a));
                    }
                    if let Some(t) = fill.take() {
                        state.push_str(t);
                    }
                }
                Target::Closing(_, j) => {
                    let step = &f.steps[*j];
                    let gate = Gate::of(step, self.proposal.as_ref(), Some(self.msg))
                        .unless_changed(self.changed_now)
                        .unless_not_agreed(self.not_agreed);
                    let acts = !gate.tools.is_empty();
                    consent = gate.consent;
                    answer_held = gate.holds_answer();
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
                        } else if answer_held {
                            // The gate's note says why nothing is offered and what to do.
                            ""
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
        // Not when the sorting call found the message asks for no flow.
        let intents: Option<Vec<(String, String)>> = (flow.is_none()
            && self.s.code.is_none()
            && !self.sorted_none
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
                let schema = if n_cond < 64 && !self.hides_fields(f) {
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
                // An answer made of agreement words only ("OK, go ahead and book it")
                // can only be classed a yes: the classes that are not are left out.
                // Given them, Qwen2.5 1.5B classed such answers "no" or "something
                // else" in 3 of 168 concierge runs (temperature 0.7).
                let plain_yes = consent == Consent::Answer
                    && tools
                        .iter()
                        .any(|t| plainly_agrees(self.msg, &action_words(t.as_ref())));
                o.schema = Arc::new(with_tool_call(
                    &o.schema,
                    &specs,
                    consent,
                    plain_yes,
                    self.a.config.max_model_string_chars,
                ));
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
        // What the reply must not read back, with the system text `call` keeps.
        self.prompt_state.clone_from(&state);
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
            rules,
            conditions: conditions.clone(),
            // The message of an answer that may still call a tool, or that may correct
            // a completed flow, is not final.
            held: in_answer || correcting.is_some(),
        };
        Prompt {
            req,
            tools,
            live,
            flow,
            pending,
            conditions,
            intents,
            structured,
            answer_held,
            consent,
        }
    }
}

/// The state line. Known values as `field = value` pairs, then the fields not given
/// yet by name; with nothing known yet, the fields as the JSON object of nulls they
/// were always shown as. Measured on Qwen2.5 1.5B: with values shown as JSON, the
/// collected object was copied into `data` whole, so "Make it July 5th instead" at the
/// confirmation kept the stored date; shown as pairs (and told that a new value
/// replaces the collected one) the answer carried the new date. A placeholder for the
/// missing ones ("device = not yet") was copied as a value (7 of 76 help-desk
/// answers), so they have none. With nothing known, the pairs form ("Collected so
/// far: nothing") routed three of 30 help-desk openings differently from the JSON
/// form, two of them wrongly, so that state keeps the form routing was measured with.
fn push_collected(state: &mut String, all: &Map<String, Value>, collects: impl Fn(&str) -> bool) {
    let shown = || all.iter().filter(|(k, v)| !v.is_null() || collects(k));
    if shown().all(|(_, v)| v.is_null()) {
        state.push_str("Collected so far (null = not yet): {");
        for (i, (k, _)) in shown().enumerate() {
            if i > 0 {
                state.push(',');
            }
            push_json_string(state, k);
            state.push_str(":null");
        }
        state.push_str("}\n");
        return;
    }
    state.push_str("Collected so far: ");
    for (i, (k, v)) in shown().filter(|(_, v)| !v.is_null()).enumerate() {
        if i > 0 {
            state.push_str(", ");
        }
        state.push_str(k);
        state.push_str(" = ");
        match v {
            Value::String(s) => state.push_str(s),
            other => {
                let _ = write!(state, "{other}");
            }
        }
    }
    for (i, (k, _)) in shown().filter(|(_, v)| v.is_null()).enumerate() {
        state.push_str(if i == 0 { ". Not given yet: " } else { ", " });
        state.push_str(k);
    }
    state.push('\n');
}

/// `s` as a JSON string.
fn push_json_string(out: &mut String, s: &str) {
    // What serde_json escapes: the quote, the backslash and the control characters
    // below U+0020.
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&Value::String(s.to_owned()).to_string());
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::push_collected;

    fn collected(data: Value, collects: &[&str]) -> String {
        let mut state = String::new();
        if let Value::Object(all) = data {
            push_collected(&mut state, &all, |k| collects.contains(&k));
        }
        state
    }

    #[test]
    fn with_nothing_known_the_fields_are_the_json_object_of_nulls() {
        let data = json!({ "city": null, "check_in": null, "guests": null, "booking_id": null });
        // In the map's own order, as serde_json prints it.
        let shown: Map<String, Value> = data
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "booking_id")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            collected(data, &["city", "check_in", "guests"]),
            format!(
                "Collected so far (null = not yet): {}\n",
                Value::Object(shown)
            )
        );
        assert_eq!(
            collected(json!({ "a\"b": null }), &["a\"b"]),
            "Collected so far (null = not yet): {\"a\\\"b\":null}\n"
        );
        assert_eq!(
            collected(json!({}), &[]),
            "Collected so far (null = not yet): {}\n"
        );
    }

    #[test]
    fn known_values_are_pairs_then_the_fields_not_given_yet() {
        let data = json!({ "city": "Lisbon", "check_in": null, "guests": 2, "booking_id": null });
        assert_eq!(
            collected(data, &["city", "check_in", "guests"]),
            "Collected so far: city = Lisbon, guests = 2. Not given yet: check_in\n"
        );
        let data = json!({ "city": "Lisbon", "guests": [1, 2] });
        assert_eq!(
            collected(data, &["city"]),
            "Collected so far: city = Lisbon, guests = [1,2]\n"
        );
    }
}
