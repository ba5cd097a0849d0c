//! The digression check ([`ModelProfile::checks_digressions`]): on a small model,
//! before the active flow's call reads an answer to its question, a short call of its
//! own asks whether the message answers that question or asks for one of the other
//! flows the active flow hands over to ("Wait, are you open on Saturdays?" while the
//! booking asks what the visit is for). When it names another flow, the turn starts
//! that flow as if the respond answer had (the stack keeps the interrupted flow, which
//! resumes when the other ends), and the active flow's call is not made.
//!
//! Inside the full respond call, with the conversation and the fields to read, a
//! small model does not judge hand-overs in a flow: Qwen2.5-Coder 1.5B judged every
//! other flow false for the clinic's four digressions, whatever the order of the
//! answer's keys, the length of the history or a note that asked for it first. Asked
//! with nothing but the flow, what its step asks for (the fields' descriptions) and
//! the other flows' `when`, the same model sorted 17 of 20 messages right (all four
//! digressions of the suite, eight answers of other wordings), and its three misses
//! read a digression as an answer, which leaves the turn as it was without the check
//! (temperature 0, 2026-11-29).
//!
//! The same call sorts two more kinds of step:
//!
//! - a step whose fields code sees the message cannot give (a `pattern` nothing said
//!   matches): the options are the other flows and "something else". With the answer
//!   offered, the model above sent none of three technical problems said in billing
//!   to support; told the message gives no invoice, and offered support under its
//!   title's label, it sent two of three (under the id `tech`, none).
//! - a step whose conditions only pick the flow to go to (a front desk): the options
//!   are those flows and "something else"; the pick judges the step's conditions.
//!   The model above sorted ten of ten first messages of the help desk this way
//!   (English and German, billing, support and a greeting), where the front desk's
//!   full call sent "I have a question about my latest invoice" to support.
//!
//! On a profile whose questions code writes, the call also reads what the message
//! gives, in `data` after the pick. Its instructions do not mention it, so the pick is
//! the one the call makes without it: a form that asked for the values in the
//! instructions sorted "Before that, I need my lisinopril renewed" as the answer to
//! "what is the visit for?" (4 of 4 runs). Inside a flow it reads the fields the step
//! asks for, and that reading (of the step's own fields only) stands for the flow's
//! own call when the message is nothing but the answer ([`Turn::answer_alone`]: "Anna
//! Berg", "A check-up"). Wherever it sorts, it also reads the fields of the flows it
//! may start, and the flow picked starts with them (`speculate.rs`): "It's my iPhone"
//! while billing asks for an invoice starts support with the device, in one call. A
//! message that is nothing but a value code reads by itself (a day, a pattern's
//! match) is not sorted at all ([`Turn::answer_read_by_code`]): "Monday next week,
//! please" to "which day?" was sorted as the answer on one run and as the opening
//! hours on another, the two within a tenth of a log-probability.
//!
//! At a step that only picks the flow to go to, a message the call keeps there and
//! that asks nothing ("hi", "thanks": no question mark) needs no call of the step's
//! own: code asks which of those flows the user wants, from their titles ("What can I
//! help you with: billing or technical support?"), or the step's `ask`. A message
//! that asks something is answered by the step's call, which judges none of the
//! conditions this call judged.
//!
//! Options are labelled by the flows' titles: the same model picked
//! `technical_support` for "my app keeps crashing" and never `tech`. When the call
//! keeps the message with the flow, the flow's own call starts no other flow.
//!
//! [`ModelProfile::checks_digressions`]: crate::policy::ModelProfile::checks_digressions

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::answer::strip_fences;
use crate::branch::Target;
use crate::codeflow::Router;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::pipeline::Turn;
use crate::pipeline::consent::plainly_agrees;
use crate::pipeline::patterns::said_asks_for_person;
use crate::prompt::{field_desc, one_line, step_task};
use crate::provider::{CallKind, FinishReason, Message, OutputSchema};

/// The answer's one field.
const ABOUT: &str = "about";

/// The user's message is quoted up to this many characters.
const MAX_MESSAGE_CHARS: usize = 600;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The flow the user's message asks for instead of answering `flow`'s question,
    /// when the model profile checks digressions and the message is the answer to a
    /// question of `flow`'s that code cannot read as an answer by itself (a plain yes
    /// needs no check, nor a message that speaks of stopping, which the flow's
    /// call reads as a cancel). A step whose branches judge conditions, or whose
    /// `prepare` hook may route in code, decides for itself. `None`: the message is
    /// read by `flow` as usual.
    pub(in crate::pipeline) async fn digression(
        &mut self,
        flow: &Arc<Flow<D, C>>,
    ) -> Result<Option<String>, AgentError> {
        if !self.a.provider.profile().checks_digressions() {
            return Ok(None);
        }
        // The step that asked, or one the conversation stands on without having
        // asked it (a flow a directive started), which reads the message too.
        let (j, asked) = match self.awaiting_model_step(flow) {
            Some(j) => (j, true),
            None if !self.awaiting => {
                let j = self.step_idx(flow);
                if !matches!(flow.steps[j].kind, crate::step::StepKind::Model) {
                    return Ok(None);
                }
                (j, false)
            }
            None => return Ok(None),
        };
        // Only the message as first read: once a flow was started or resumed this
        // turn, the message is that flow's.
        if self.transitions.len() != self.read_from
            || plainly_agrees(self.msg, &[])
            || crate::pipeline::stack::said_stopping(self.said())
        {
            return Ok(None);
        }
        // A plain request for a person is code's to read (the human handoff): no
        // other flow starts for it.
        if said_asks_for_person(self.said()) {
            self.sorted = Some(flow.index);
            return Ok(None);
        }
        // The agent's own step decides where its answers go: a condition of its
        // branches that leads anywhere but to another flow (or a condition of a step
        // after it), or its `prepare` hook, which may route in code. The built-in
        // check does not run there. A step whose conditions only pick the flow to go
        // to (a front desk) is sorted among those flows: its hook runs only when
        // none applies and the step asks again.
        let step = &flow.steps[j];
        let table = step.branch_table();
        let to_flow = |t: &Target| flow.flow_target(t);
        let conditional = || table.iter().filter(|b| !b.when.is_empty());
        let routing = flow.routes_to(j).is_some();
        // A step that routes is sorted; any other only once it asked, and only
        // without a hook or condition of its own (nor a condition of a step after it).
        let (own_rules, later_rules) = flow.own_rules(j);
        if !(routing || (asked && !own_rules)) || later_rules {
            return Ok(None);
        }
        // The options besides the step's own: the flows its conditions lead to (those
        // still to judge), then the other flows the active one hands over to.
        let due = self.due_branch_conditions(step, 0);
        let mut options: Vec<Opt> = Vec::new();
        for b in conditional() {
            if let Some(id) = to_flow(&b.then)
                && b.when.iter().all(|w| due.contains(w))
                && let Some(g) = self.a.flow(&id)
            {
                // Before the step asked, its branches are not walked: the flow
                // starts as the flows the active one hands over to do.
                options.push(Opt {
                    id: g.id.to_string(),
                    desc: b
                        .when
                        .iter()
                        .map(|w| one_line(w))
                        .collect::<Vec<_>>()
                        .join(", and "),
                    label: label(&g.title, &g.id),
                    whens: if asked { b.when.clone() } else { Vec::new() },
                });
            }
        }
        for id in &self.a.switch_ids[flow.index] {
            if options.iter().any(|o| &o.id == id) || !self.may_switch_to(id) {
                continue;
            }
            if let Some(g) = self.a.flow(id)
                && let Some(when) = g.when.as_deref()
            {
                options.push(Opt {
                    id: g.id.to_string(),
                    desc: one_line(when),
                    label: label(&g.title, &g.id),
                    whens: Vec::new(),
                });
            }
        }
        if options.is_empty() {
            return Ok(None);
        }
        // Code routes first: a step not asked yet runs its hooks before the call
        // that reads the message (as the walk would), and one that moves the
        // conversation decides.
        if !asked
            && (self.enter_hooks(flow, j).await?
                || self.prepare(flow, j).await?
                || self.turn_over())
        {
            return Ok(None);
        }
        // The labels the model picks from name what each option is: a small model
        // reads a flow's title better than its id ("technical_support" was picked for
        // "my app keeps crashing" where "tech" never was). Ids stand in for titles
        // that are missing or would give two options one label.
        unique_labels(&mut options);
        // Fields the step asks for that code sees the message cannot give (a pattern
        // nothing said matches): the message is then something else than an answer.
        let unsaid = !step.collect.is_empty() && self.readable(&step.collect).is_empty();
        // The option of staying: "something else" where the message is no answer (or
        // the step only routes), "answer" otherwise; named so no flow's label is taken.
        let other = unsaid || routing;
        let own = if other {
            ["other", "something_else", "this_task"].as_slice()
        } else {
            ["answer", "answer_to_this", "this_task"].as_slice()
        };
        let answer = own
            .iter()
            .find(|l| !options.iter().any(|o| o.label == **l))
            .copied()
            .unwrap_or("this_task");
        let title = if flow.title.is_empty() {
            flow.id.replace('_', " ")
        } else {
            one_line(&flow.title)
        };
        let mut sys =
            format!("You sort the user's latest message. The assistant is helping with: {title}. ");
        if step.collect.is_empty() {
            let _ = writeln!(sys, "Its current step: {}", one_line(&step_task(step)));
        } else {
            let asked: Vec<String> = step
                .collect
                .iter()
                .map(|f| {
                    let desc = field_desc(&self.a.schema, f);
                    if desc.is_empty() {
                        f.to_string()
                    } else {
                        format!("{f}: {desc}")
                    }
                })
                .collect();
            if unsaid {
                let _ = writeln!(
                    sys,
                    "It asked the user for {}; the message does not give it.",
                    asked.join("; ")
                );
            } else {
                let _ = writeln!(sys, "It just asked the user for {}", asked.join("; "));
            }
        }
        let _ = writeln!(sys, "Options for `{ABOUT}`:");
        if !other {
            let _ = writeln!(
                sys,
                "- {answer}: the message gives that, or goes on with {title}"
            );
        }
        for o in &options {
            let _ = writeln!(sys, "- {}: {}", o.label, o.desc);
        }
        if other {
            let _ = writeln!(sys, "- {answer}: something else");
        }
        sys.push_str("Answer with JSON only.");
        let mut ids: Vec<Value> = options
            .iter()
            .map(|o| Value::String(o.label.clone()))
            .collect();
        if other {
            ids.push(Value::String(answer.to_owned()));
        } else {
            ids.insert(0, Value::String(answer.to_owned()));
        }
        // On a profile whose questions code writes, the answer also carries what the
        // message gives for the fields the step asks for and for those of the flows
        // it may go to, after the pick and with nothing said about it in the
        // instructions: the pick is made as without it (the instructions and the
        // labels are the same). A message that is nothing but the answer needs no
        // call of the flow's own (`speculate.rs`); a flow picked starts with what the
        // message gave it, as from the sorting call with no flow under way.
        let own_fields = if !other && asked {
            self.readable(&step.collect)
        } else {
            Vec::new()
        };
        // Inside a flow, only the other flows' fields with no value yet: a stored
        // value is changed by a flow's own call, which reads the message with the
        // conversation, never by this one (measured: asked for the renewal's fields
        // while the booking held the patient's name, the model above read "renewal"
        // as the patient from "Before that, I need my lisinopril renewed").
        let reads: Vec<Arc<str>> = if self.a.provider.profile().composes_questions() {
            let mut reads = own_fields.clone();
            for f in self.fields_of(options.iter().map(|o| o.id.as_str())) {
                let stored = !routing
                    && self
                        .a
                        .schema
                        .index_of(&f)
                        .is_some_and(|i| self.is_present(i));
                if !stored && !reads.contains(&f) {
                    reads.push(f);
                }
            }
            let order = self.a.schema.fields();
            reads.sort_by_key(|f| order.iter().position(|o| o == f));
            reads
        } else {
            Vec::new()
        };
        let data_schema = (!reads.is_empty()).then(|| {
            self.a
                .schema
                .extraction_schema(&reads, self.a.config.cite_quotes)
        });
        let (picked, mut read) = match self.sort_call(sys, ids, answer, data_schema).await? {
            Some((p, d)) => (Some(p), d),
            None => (None, None),
        };
        // Only the fields it was asked to read (a provider whose decoding does not
        // hold the answer to its schema may write others).
        if let Some(d) = read.as_mut() {
            d.retain(|k, _| reads.iter().any(|f| f.as_ref() == k));
        }
        // A label, or a flow's id (the scripted provider's `Answer::route(..)`).
        let mut target = picked.as_deref().and_then(|p| {
            options
                .iter()
                .find(|o| p != answer && (o.label == p || o.id == p))
        });
        let Some(mut p) = picked.as_deref() else {
            return Ok(None);
        };
        // A message that gives the answer to the question just asked, in its own
        // words, and asks nothing answers it: another flow it also speaks of ("It's
        // a Pixel 8, and my invoice is INV-5 if that helps" at the device question)
        // is not started; the user can ask for it next.
        if target.is_some_and(|o| o.whens.is_empty())
            && asked
            && !asks_something(self.msg)
            && read.as_ref().is_some_and(|d| {
                own_fields.iter().any(|f| {
                    d.get(f.as_ref())
                        .is_some_and(|v| !v.is_null() && self.says(v))
                })
            })
        {
            tracing::info!(flow = %flow.id, "the message answers the question asked; no other flow starts");
            target = None;
            p = answer;
        }
        // The step's conditions are judged by the pick: the one it names holds, the
        // others do not, and the branch table decides as usual.
        for o in &options {
            for w in &o.whens {
                self.judged.entry(w.clone()).or_insert(false);
            }
        }
        // Judged here: the step's own call does not judge them again.
        let judged = &self.judged;
        self.deferred.retain(|w| !judged.contains_key(w));
        if let Some(o) = target {
            self.started_read = Some((Arc::from(o.id.as_str()), self.kept_for(&o.id, read.take())));
        }
        match target {
            Some(o) if !o.whens.is_empty() => {
                tracing::info!(flow = %flow.id, to = %o.id, "the message picks a branch of the step (digression check)");
                for w in &o.whens {
                    self.judged.insert(w.clone(), true);
                }
                Ok(None)
            }
            Some(o) => {
                tracing::info!(flow = %flow.id, to = %o.id, "the message asks for another flow (digression check)");
                Ok(Some(o.id.clone()))
            }
            None => {
                tracing::debug!(flow = %flow.id, picked = p, "the message stays with the flow (digression check)");
                self.sorted = Some(flow.index);
                // At a step that only routes, the question is code's.
                self.kept_at_routing = routing;
                // What it read for the step's own fields only: another flow's are
                // that flow's to read, if it starts.
                if p == answer {
                    self.sort_read = read
                        .map(|d| {
                            d.into_iter()
                                .filter(|(k, v)| {
                                    !v.is_null() && own_fields.iter().any(|f| f.as_ref() == k)
                                })
                                .collect::<Map<String, Value>>()
                        })
                        .filter(|d| !d.is_empty());
                }
                Ok(None)
            }
        }
    }

    /// The sorting call with no flow under way, for agents whose reply with no flow
    /// names the task to start (`Router::SchemaIntent`): on a small model, the
    /// message is first sorted among the flows that may start and "something else".
    /// `Some(id)`: start that flow (the reply with no flow is not written). `None`:
    /// no call was made, or it found no flow; after the latter (`sorted_none`), the
    /// reply with no flow is written without the tasks to start.
    ///
    /// Writing the reply and picking the task in one call, the model above sent "Hi,
    /// can I see a doctor this week?" to the clinic's opening hours; sorted alone
    /// (the flows' `when`, labelled by their titles, and "something else"), it sorted
    /// fifteen of fifteen first messages right (bookings, hours, renewals, a greeting,
    /// small talk, a request for a person, German).
    pub(in crate::pipeline) async fn sort_opening(&mut self) -> Result<Option<String>, AgentError> {
        if !self.a.provider.profile().checks_digressions()
            || !matches!(self.a.router, Router::SchemaIntent { .. })
            || self.s.flow.is_some()
            || self.s.code.is_some()
            || self.sorted_none
            || self.transitions.len() != self.read_from
            // A plain yes answers the last reply, which the sorting call does not see.
            || plainly_agrees(self.msg, &[])
        {
            return Ok(None);
        }
        // A plain request for a person is code's to read (the human handoff).
        if said_asks_for_person(self.said()) {
            self.sorted_none = true;
            return Ok(None);
        }
        let mut options: Vec<Opt> = Vec::new();
        {
            let cx = self.cx();
            let done = |id: &str| self.s.completed_flows.iter().any(|c| c.as_str() == id);
            for f in &self.a.flows {
                if f.is_eligible(&cx) && (f.reentrant || !done(f.id.as_ref())) {
                    options.push(Opt::opening(
                        &f.id,
                        &f.title,
                        f.when.as_deref(),
                        &f.description,
                    ));
                }
            }
            for f in &self.a.code_flows {
                options.push(Opt::opening(
                    &f.id,
                    &f.title,
                    f.when.as_deref(),
                    &f.description,
                ));
            }
        }
        options.retain(|o| !o.desc.is_empty());
        if options.is_empty() {
            return Ok(None);
        }
        unique_labels(&mut options);
        let other = ["other", "something_else", "none_of_these"]
            .into_iter()
            .find(|l| !options.iter().any(|o| o.label == *l))
            .unwrap_or("none_of_these");
        let mut sys = String::from(
            "You sort the user's latest message. No task is under way.\nOptions for `about`:\n",
        );
        for o in &options {
            let _ = writeln!(sys, "- {}: {}", o.label, o.desc);
        }
        let _ = writeln!(sys, "- {other}: something else");
        // On a profile whose questions code writes, the call also reads what the
        // message gives for the fields of the flows it may start: the flow picked
        // then needs no call of its own to read it (`converse.rs`).
        let reads: Vec<Arc<str>> = if self.a.provider.profile().composes_questions() {
            self.fields_of(options.iter().map(|o| o.id.as_str()))
        } else {
            Vec::new()
        };
        if !reads.is_empty() {
            let _ = writeln!(
                sys,
                "When `{ABOUT}` names a task, write in `data` the value the message gives for each field (null for what it does not say; never guess):"
            );
            for f in &reads {
                let desc = field_desc(&self.a.schema, f);
                if desc.is_empty() {
                    let _ = writeln!(sys, "- {f}");
                } else {
                    let _ = writeln!(sys, "- {f}: {desc}");
                }
            }
            self.push_today(&mut sys);
        }
        sys.push_str("Answer with JSON only.");
        let mut ids: Vec<Value> = options
            .iter()
            .map(|o| Value::String(o.label.clone()))
            .collect();
        ids.push(Value::String(other.to_owned()));
        let data_schema = (!reads.is_empty()).then(|| {
            self.a
                .schema
                .extraction_schema(&reads, self.a.config.cite_quotes)
        });
        let Some((p, read)) = self.sort_call(sys, ids, other, data_schema).await? else {
            return Ok(None);
        };
        match options
            .iter()
            .find(|o| p != other && (o.label == p || o.id == p))
        {
            Some(o) => {
                tracing::info!(to = %o.id, "the message asks for a flow (sorting call, no flow under way)");
                if !reads.is_empty() {
                    self.started_read =
                        Some((Arc::from(o.id.as_str()), self.kept_for(&o.id, read)));
                }
                Ok(Some(o.id.clone()))
            }
            None => {
                tracing::debug!(picked = %p, "the message asks for no flow (sorting call, no flow under way)");
                self.sorted_none = true;
                Ok(None)
            }
        }
    }

    /// The sorting call itself: `sys` lists the options, `labels` are the values the
    /// answer may take, `stay` the one the answer's `null` stands for; with `data`
    /// (an extraction schema), the answer also carries what the message gives, after
    /// the pick (keys go in alphabetical order: `about`, then `data`). The message is
    /// sent alone, without the conversation. `None`: the answer cannot be read.
    async fn sort_call(
        &mut self,
        sys: String,
        labels: Vec<Value>,
        stay: &str,
        data: Option<Value>,
    ) -> Result<Option<(String, Option<Map<String, Value>>)>, AgentError> {
        let mut schema = json!({
            "type": "object",
            "properties": { ABOUT: { "enum": labels } },
            "required": [ABOUT],
            "additionalProperties": false,
        });
        let reads = data.is_some();
        if let Some(d) = data {
            schema["properties"]["data"] = d;
            schema["required"] = json!([ABOUT, "data"]);
            if let Some(defs) = self.a.schema.defs() {
                schema["$defs"] = defs.clone();
            }
        }
        let said: String = self.msg.chars().take(MAX_MESSAGE_CHARS).collect();
        let mut req = self.request(CallKind::Route, sys, vec![Message::user(said)]);
        req.output = Some(OutputSchema {
            name: "digression".into(),
            schema: Arc::new(schema),
        });
        let (resp, _) = self.call(&req, None).await?;
        let answer = (resp.finish != FinishReason::Length)
            .then(|| serde_json::from_str::<Value>(strip_fences(&resp.content)).ok())
            .flatten();
        let picked = answer.as_ref().and_then(|v| {
            // `flow` too: the scripted provider's `Answer::route(..)`.
            match v.get(ABOUT).or_else(|| v.get("flow")) {
                Some(Value::String(p)) => Some(p.clone()),
                Some(Value::Null) => Some(stay.to_owned()),
                _ => None,
            }
        });
        if picked.is_none() {
            tracing::warn!(answer = %resp.content, "sorting answer unreadable; the message is read as before");
        }
        let read =
            answer
                .filter(|_| reads)
                .and_then(|mut v| match v.get_mut("data").map(Value::take) {
                    Some(Value::Object(d)) => Some(d),
                    _ => None,
                });
        Ok(picked.map(|p| (p, read)))
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The fields a sorting call reads for the flows `ids` (those that may start):
    /// every field they collect that the message may give, in the data type's order
    /// (one schema for the agent, whatever the flows).
    fn fields_of<'i>(&self, ids: impl Iterator<Item = &'i str>) -> Vec<Arc<str>> {
        let mut fields: Vec<Arc<str>> = Vec::new();
        for id in ids {
            if let Some(f) = self.a.flow(id) {
                for c in self.readable(&f.collectable) {
                    if !fields.contains(&c) {
                        fields.push(c);
                    }
                }
            }
        }
        let order = self.a.schema.fields();
        fields.sort_by_key(|f| order.iter().position(|o| o == f));
        fields
    }

    /// What a sorting call read that the flow `id` collects (it reads it when it
    /// starts); values of other flows' fields are not kept.
    fn kept_for(&self, id: &str, read: Option<Map<String, Value>>) -> Map<String, Value> {
        let collects = |k: &str| {
            self.a
                .flow(id)
                .is_some_and(|f| f.collectable.iter().any(|c| c.as_ref() == k))
        };
        read.unwrap_or_default()
            .into_iter()
            .filter(|(k, v)| !v.is_null() && collects(k))
            .collect()
    }
}

/// The words a message sorted as the answer may say beyond the values the sorting
/// call read for it ("it's" before "INV-7", "a" before "check-up", "please" after a
/// day) for that reading to stand for the flow's own. More, and the flow's call
/// reads the message with the conversation: what else it says is not lost.
const MAX_WORDS_BEYOND_ANSWER: usize = 2;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The answer to the flow's question read by code alone: on a profile whose
    /// questions code writes, at a model step that asked for fields code can read
    /// from words (a date, which [`resolve_date`] reads against the clock; a
    /// field with a `pattern`, whose match the message holds), when the message is
    /// nothing but those values ([`Self::answer_alone`]): "Monday next week,
    /// please" to "which day?", "It's INV-7" to "which invoice?". The values are
    /// then stored (or refused, with the reason) with no call: no other reading of
    /// such a message is possible, and the sorting call judged "Monday next week"
    /// against the opening hours within a tenth of a log-probability (Qwen2.5-Coder
    /// 1.5B, the answer on one run, the hours on another). A step whose conditions
    /// or `prepare` hook decide for themselves is not read this way.
    ///
    /// [`resolve_date`]: crate::data::ground::resolve_date
    pub(in crate::pipeline) fn answer_read_by_code(
        &self,
        flow: &Flow<D, C>,
    ) -> Option<Map<String, Value>> {
        if !self.a.provider.profile().composes_questions()
            || self.transitions.len() != self.read_from
        {
            return None;
        }
        let j = self.awaiting_model_step(flow)?;
        let step = &flow.steps[j];
        if step.collect.is_empty() || flow.own_rules(j) != (false, false) {
            return None;
        }
        let mut read = Map::new();
        for f in self.readable(&step.collect) {
            let Some(prop) = self.a.schema.property(&f) else {
                continue;
            };
            // A day the field refuses is refused with the reason, as from any reading
            // (or, said without its year, taken as the next such day and asked
            // about); a match written otherwise than the pattern wants ("inv-7") is
            // the model's to read.
            let value = if self.is_date(prop) {
                self.named_day()
                    .map(|d| Value::String(crate::data::Date::from(d).to_string()))
            } else {
                crate::data::spot::spotter(prop, self.a.schema.defs())
                    .and_then(|re| {
                        re.find(self.msg)
                            .map(|m| Value::String(m.as_str().to_owned()))
                    })
                    .filter(|v| self.a.schema.admit(&f, v).is_ok())
            };
            if let Some(v) = value {
                read.insert(f.to_string(), v);
            }
        }
        (!read.is_empty() && self.answer_alone(&read)).then_some(read)
    }

    /// Whether what the sorting call read from the message, sorted as the answer to
    /// the flow's question, stands for the flow's own reading: the message asks
    /// nothing, shows every value read by itself ([`Evidence::words_beyond`]), and
    /// says at most [`MAX_WORDS_BEYOND_ANSWER`] words beyond them, none a number nor
    /// (unless a day was read) a day.
    ///
    /// [`Evidence::words_beyond`]: crate::data::ground::Evidence::words_beyond
    pub(in crate::pipeline) fn answer_alone(&self, read: &Map<String, Value>) -> bool {
        if asks_something(self.msg) {
            return false;
        }
        let values = crate::data::extract::read_extraction(&self.a.schema, read.clone());
        let mut pairs = Vec::with_capacity(values.len());
        for x in &values {
            let Some(prop) = self.a.schema.property(&x.field) else {
                return false;
            };
            pairs.push((prop, &x.value));
        }
        let today = self.today();
        let evidence = crate::data::ground::Evidence {
            said: Arc::from(Vec::new()),
            today,
            defs: self.a.schema.defs(),
        };
        let Some(beyond) = evidence.words_beyond(&pairs, self.msg) else {
            return false;
        };
        let read_day = values.iter().any(|x| {
            x.value
                .as_str()
                .and_then(crate::data::validate::parse_date)
                .is_some()
        });
        let rest = beyond.join(" ");
        beyond.len() <= MAX_WORDS_BEYOND_ANSWER
            && !rest.chars().any(char::is_numeric)
            && (read_day || crate::data::ground::resolve_date(&rest, today).is_none())
    }
}

/// Whether `message` asks something (a question mark in any script's form): the
/// reply must then answer it, so what a sorting call read does not stand in for the
/// flow's own call.
pub(in crate::pipeline) fn asks_something(message: &str) -> bool {
    message.contains(['?', '？', '¿', '؟'])
}

/// One option of the sorting call besides the step's own.
struct Opt {
    /// The flow it leads to.
    id: String,
    /// What it says (the flow's `when`, or the branch's conditions).
    desc: String,
    /// The label the model picks.
    label: String,
    /// The branch conditions it stands for (empty for a flow the active one hands
    /// over to).
    whens: Vec<String>,
}

impl Opt {
    /// A flow as an option of the sorting call with no flow under way: what it is
    /// for is its `when`, else its description, else its title.
    fn opening(id: &str, title: &str, when: Option<&str>, description: &str) -> Self {
        let desc = [when.unwrap_or_default(), description, title]
            .into_iter()
            .map(one_line)
            .find(|d| !d.is_empty())
            .unwrap_or_default();
        Self {
            id: id.to_owned(),
            desc,
            label: label(title, id),
            whens: Vec::new(),
        }
    }
}

/// Ids stand in for the labels when a title is missing or two options would share
/// one label.
fn unique_labels(options: &mut [Opt]) {
    let unique = options
        .iter()
        .enumerate()
        .all(|(i, o)| !o.label.is_empty() && !options[..i].iter().any(|p| p.label == o.label));
    if !unique {
        for o in options {
            o.label.clone_from(&o.id);
        }
    }
}

/// A flow's title as an option's label: lower case, words joined by `_`, nothing
/// but letters and digits ("Technical support" → `technical_support`). Empty for an
/// empty title (the id stands in).
fn label(title: &str, id: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        id.to_owned()
    } else {
        words.join("_")
    }
}
