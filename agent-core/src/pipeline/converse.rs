//! From the resolved position to the turn's message: the speculative extraction +
//! reply call, the walk, re-rendering on mismatch, the post-LLM bus, and in-turn hops
//! with the intermediate message carried to the next rendering.
//!
//! The parts live in their own files: the speculative call (`speculate.rs`), the
//! model's flow switch (`switch.rs`), screening extracted values (`screen.rs`).

use std::sync::Arc;

use super::consent::asked_before;
use super::correct::Outcome;
use super::model::{CallOutcome, Target};
use super::patterns::PatternRead;
use super::speculate::Speculation;
use super::walk::Stop;
use super::{Phase, Turn, guard};
use crate::command::Command;
use crate::data::{AgentContext, AgentData};
use crate::directive::{Directive, merge};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::response::{DirectiveSource, StoppedReason};
use crate::step::StepKind;

/// What code says when the user did not agree to a confirmation and changed nothing
/// (a change shows the confirmation's summary again).
const DECLINED: &str =
    "Nothing has been done yet: say yes when you want me to go ahead, or tell me what to change.";

/// [`DECLINED`] when the last reply already said it.
const DECLINED_AGAIN: &str = "Okay, I'll wait: nothing is done until you say yes.";

/// A summary the last reply showed, asked about again after a question: not the
/// same text a second time.
const AS_SUMMARISED: &str = "Shall I go ahead as summarised above?";

/// What code asks when a reply it writes has nothing else to ask.
const NEXT: &str = "What would you like me to do next?";

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// What each field's values are this turn, for the check of a reply's values
    /// (`claim.rs`): the fields with a value the reply may not name (written this
    /// turn and not kept for want of the user's words, or held before this turn's
    /// correction), and, when `message` has a digit, the number fields. Empty (nothing
    /// read) on most turns. A refused value is not among them: a reply says why.
    fn field_facts(&self, message: &str) -> Vec<crate::claim::FieldFacts> {
        let digits = message.bytes().any(|b| b.is_ascii_digit());
        // The fields the user gave a value this turn that hold it: a reply may not
        // ask for them again.
        let given: Vec<&str> = self
            .commands
            .iter()
            .filter_map(crate::command::Command::field)
            .filter(|f| {
                self.a
                    .schema
                    .index_of(f)
                    .is_some_and(|i| self.is_present(i))
            })
            .collect();
        if self.ungrounded.is_empty() && self.unheld.is_empty() && !digits && given.is_empty() {
            return Vec::new();
        }
        let shown = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let data = serde_json::to_value(&self.s.data).unwrap_or_default();
        let schema = &self.a.schema;
        let mut out = Vec::new();
        for field in schema.fields() {
            let number = schema.property(field).is_some_and(|p| {
                let t = schema.shape(p).get("type");
                let is = |n: &str| {
                    t.is_some_and(|t| {
                        t.as_str() == Some(n)
                            || t.as_array().is_some_and(|a| a.iter().any(|x| x == n))
                    })
                };
                is("integer") || is("number")
            });
            let wrong: Vec<String> = if number {
                Vec::new()
            } else {
                self.ungrounded
                    .iter()
                    .filter(|d| d.field == field.as_ref())
                    .map(|d| &d.value)
                    .chain(
                        self.unheld
                            .iter()
                            .filter(|(f, _)| f == field.as_ref())
                            .map(|(_, v)| v),
                    )
                    .filter(|v| !v.is_null())
                    .map(shown)
                    .collect()
            };
            let is_given = given.contains(&field.as_ref());
            if wrong.is_empty() && !(number && digits) && !is_given {
                continue;
            }
            let current: Vec<String> = data
                .get(field.as_ref())
                .filter(|v| !v.is_null())
                .into_iter()
                .chain(
                    self.tentative
                        .iter()
                        .filter(|t| t.field == field.as_ref())
                        .map(|t| &t.value),
                )
                .map(shown)
                .collect();
            let wrong: Vec<String> = wrong.into_iter().filter(|w| !current.contains(w)).collect();
            // A count is checked against a count the state holds; the field's bounds
            // are its limits, which a reply may state ("We take 1 to 12 guests").
            let counted_as = (number && digits && !current.is_empty()).then(|| {
                crate::data::ground::normalize(&field.replace('_', " "))
                    .trim()
                    .to_owned()
            });
            if wrong.is_empty() && counted_as.is_none() && !is_given {
                continue;
            }
            let (given_as, asked_with) = if is_given {
                self.asked_for(field)
            } else {
                (Vec::new(), Vec::new())
            };
            let bounds = schema
                .property(field)
                .map(|p| {
                    let p = schema.shape(p);
                    ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
                        .iter()
                        .filter_map(|k| p.get(*k))
                        .map(shown)
                        .collect()
                })
                .unwrap_or_default();
            out.push(crate::claim::FieldFacts {
                field: field.to_string(),
                current,
                wrong,
                counted_as,
                bounds,
                given_as,
                asked_with,
            });
        }
        out
    }

    /// How code asks for `field`, normalised: its names (identifier, doc), and the sentences
    /// of its questions (the `ask` of every step that collects it, without
    /// placeholders, and the question built from its doc).
    fn asked_for(&self, field: &str) -> (Vec<String>, Vec<String>) {
        use crate::data::ground::normalize;
        let schema = &self.a.schema;
        let mut given_as: Vec<String> = [
            normalize(&field.replace(['_', '-'], " ")),
            normalize(&super::question::field_phrase(schema, field)),
        ]
        .into_iter()
        .filter(|n| n.trim().len() > 1)
        .collect();
        given_as.dedup();
        let mut asked_with: Vec<String> = Vec::new();
        let mut add = |q: &str| {
            for s in crate::reply::sentences(q) {
                let n = normalize(s);
                if !n.trim().is_empty() && !asked_with.contains(&n) {
                    asked_with.push(n);
                }
            }
        };
        for flow in &self.a.flows {
            for step in &flow.steps {
                if let Some(ask) = step.ask.as_deref()
                    && !ask.contains('{')
                    && step.collect.iter().any(|c| c.as_ref() == field)
                {
                    add(ask);
                }
            }
        }
        if let Some(q) = super::question::built_question(schema, &[field]) {
            add(&q);
        }
        (given_as, asked_with)
    }

    /// Runs `f` with the facts a model-written `message` is checked against
    /// (`claim.rs`): the fields present, the outcomes this turn's tools earned, the
    /// values the message names, what code wrote.
    fn with_facts<R>(&self, message: &str, f: impl FnOnce(&crate::claim::Facts<'_>) -> R) -> R {
        let fields = self.field_facts(message);
        let present = |f: &str| {
            self.a
                .schema
                .index_of(f)
                .is_some_and(|i| self.is_present(i))
        };
        let earned = |t: &str| self.tool_calls.iter().any(|c| c.ok && c.name == t);
        let facts = crate::claim::Facts {
            guards: &self.a.claim_guards,
            present: &present,
            outcomes: &self.a.outcomes,
            earned: &earned,
            fields: &fields,
            code_wrote: &self.code_wrote,
        };
        f(&facts)
    }

    /// The note a rendering is told when `message` states what the state does not
    /// hold (the first thing it states), or `None`.
    fn claim_note(&self, message: &str) -> Option<String> {
        self.with_facts(message, |facts| crate::claim::unsupported(facts, message))
            .map(|u| {
                format!(
                    "Your draft said \"{}\", which is not so ({}). Reply without saying it.",
                    u.said, u.why
                )
            })
    }

    /// The reply about to be rendered replaces a draft written for another position:
    /// say what is still missing, so the new reply does not repeat the draft's claims.
    fn note_mismatch(&mut self, flow: &Flow<D, C>) {
        let missing: Vec<&str> = flow
            .required_idx
            .iter()
            .zip(&flow.required)
            .filter(|(i, _)| !self.is_present(**i))
            .map(|(_, f)| f.as_ref())
            .collect();
        if !missing.is_empty() {
            let note = format!("Still needed from the user: {}.", missing.join(", "));
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }

    /// A `prepare` hook handed the turn to another flow before any reply: the flow
    /// handed to reads the message (data first), as after a model's switch.
    async fn read_where_handed(
        &mut self,
        from: &Flow<D, C>,
        spec: &mut Option<Speculation<D, C>>,
        alt: &mut Option<usize>,
    ) -> Result<(), AgentError> {
        if self.left_for_another_flow(from) && !self.streamed {
            (*spec, *alt) = self.speculate().await?;
        }
        Ok(())
    }

    /// A tool the step requires that has not run successfully this turn.
    fn missing_tool(&self, step: &crate::step::Step<D, C>) -> Option<String> {
        step.must_call
            .iter()
            .find(|t| !self.tool_calls.iter().any(|c| c.ok && c.name == t.as_ref()))
            .map(|t| t.to_string())
    }

    /// The current flow and step ids, shared with the flow definition when they are
    /// registered there (no copy).
    fn position_ids(&self) -> (Option<Arc<str>>, Option<Arc<str>>) {
        let step = self.s.step.as_deref();
        let Some(fid) = self.s.flow.as_deref() else {
            return (None, step.map(Arc::from));
        };
        match self.a.flow(fid) {
            Some(flow) => (
                Some(flow.id.clone()),
                step.map(|s| {
                    flow.step_pos(s)
                        .map_or_else(|| Arc::from(s), |i| flow.steps[i].id.clone())
                }),
            ),
            None => (Some(Arc::from(fid)), step.map(Arc::from)),
        }
    }

    /// Produce the turn's message and stopped reason (and the streamed deltas of the
    /// call that produced it).
    pub(crate) async fn converse(
        &mut self,
    ) -> Result<(String, StoppedReason, Vec<String>), AgentError> {
        // The question the user's message answers, and where it was asked.
        let asked_at = self.awaiting.then(|| self.position_ids());
        self.read_from = self.transitions.len();
        let (mut spec, mut alt) = self.speculate().await?;
        if let Some(not_started) = self.not_started.take() {
            return Ok((not_started, StoppedReason::NeedsInput, Vec::new()));
        }
        // A cancel read by the first call stops the flow before anything is walked.
        if let Some(sp) = spec.as_mut() {
            match self.on_patterns(&mut sp.out).await? {
                None => {}
                Some(PatternRead::Reply(m, st)) => return Ok((m, st, Vec::new())),
                Some(PatternRead::Moved) => {
                    if let Some(u) = spec.take().and_then(|mut sp| sp.undo.take()) {
                        self.withdraw_prepare(u);
                    }
                    alt = None;
                }
            }
        }
        let mut rounds = 0u32;
        let mut claim_retried = false;
        let mut echo_retried = false;
        loop {
            rounds += 1;
            let stop = match self.resume_at.take() {
                Some(stop) => stop,
                None => self.walk().await?,
            };
            if let Some(sp) = spec.as_mut()
                && sp.predicted != stop
                && let Some(u) = sp.undo.take()
            {
                self.withdraw_prepare(u);
            }
            let rendered = self.position_ids();
            let mut closing: Option<Arc<Flow<D, C>>> = None;
            // The answer to the closing step judged that the user did not agree.
            let mut declined = false;
            let mut finalize_step: Option<(Arc<Flow<D, C>>, usize)> = None;
            let (mut message, mut stopped, deltas) = match &stop {
                Stop::Render(fid, j) | Stop::Closing(fid, j) => {
                    let Some(flow) = self.a.flow(fid).cloned() else {
                        return Ok((String::new(), StoppedReason::Responded, Vec::new()));
                    };
                    let is_closing = matches!(stop, Stop::Closing(..));
                    // A reply already streamed live was checked to be final; it is used
                    // even if the walk disagreed (a bug would show in the log, not as
                    // text the user saw and then lost).
                    let had_draft = spec.is_some();
                    let reuse = spec.take().filter(|sp| {
                        let ok = self.accepts(sp, &stop, alt);
                        if !ok {
                            tracing::debug!(
                                predicted = ?sp.predicted,
                                actual = ?stop,
                                claimed = ?sp.out.claimed,
                                clean = sp.clean,
                                moved_by_hooks = sp.generation != self.aug.generation,
                                action = sp.out.tool_call.is_some(),
                                notes = ?self.notes,
                                "speculative reply not used; rendering again"
                            );
                        }
                        if !ok && !self.streamed {
                            self.note_mismatch(&flow);
                            // A draft that stated what the state does not hold (a
                            // small model asking again for the value the message
                            // just gave) is rendered again told why: the one
                            // rendering the claim check allows, not a second.
                            if !claim_retried && let Some(note) = self.claim_note(&sp.out.message) {
                                claim_retried = true;
                                self.notes.push(note);
                            }
                        }
                        if !ok && self.streamed {
                            tracing::error!(
                                "a live-streamed speculative reply was not accepted by the walk"
                            );
                        }
                        ok || self.streamed
                    });
                    // The step's own question, written by code, the turn it is reached
                    // (not when the user answered it with something else, and not over
                    // a reason to tell or a reply the user already saw). A step read
                    // ahead as answered that the message did not answer is reached,
                    // not answered: its question is code's, over the model's fallback.
                    let asked = alt == Some(*j) && self.awaiting_model_step(&flow) == Some(*j);
                    let composes = self.a.provider.profile().composes_questions();
                    let question = (!self.streamed)
                        .then(|| self.step_question(&flow, *j))
                        .flatten()
                        .map(std::borrow::Cow::into_owned);
                    // What code tells first (a value refused, and why) goes with
                    // code's question; without one, the model tells it from the notes.
                    if question.is_none() || is_closing {
                        self.to_tell |= !self.told.is_empty();
                    }
                    let tells = !self.to_tell && question.is_some() && !self.told.is_empty();
                    // At a step that only routes, kept there by the sorting call: a
                    // message that asks nothing gets the question alone, as on
                    // reaching the step; one that asks something gets the model's
                    // answer, then the question, as on asking again.
                    let kept = self.kept_at_routing && flow.routes_to(*j).is_some();
                    let quiet = kept && self.nothing_to_answer();
                    let alone = if kept { quiet } else { !asked };
                    let asks = (!is_closing && alone && !self.to_tell)
                        .then(|| question.clone())
                        .flatten();
                    // On a small model, the question of a step asked again (the user
                    // answered with something else) is code's too, after at most the
                    // model's first statement (an answer to a side question), or after
                    // what code tells.
                    let again = ((asked || kept) && !is_closing && !self.to_tell && composes)
                        .then(|| question.clone())
                        .flatten();
                    // An accepted answer with an action is replayed, not reused: the
                    // action runs in that rendering as if the model had just answered.
                    // A tool that runs in this step's rendering has its outcome told by
                    // that rendering: code's question does not replace it.
                    let tools_before = self.tool_calls.len();
                    let (reuse, mut replay) = match reuse {
                        Some(mut sp) if sp.out.tool_call.is_some() => (None, sp.out.answer.take()),
                        other => (other, None),
                    };
                    let mut out = match reuse {
                        Some(sp) => sp.out,
                        // A tool already set the reply (or aborted): a new rendering
                        // would be replaced, and could call the tool again.
                        None if self.reply_settled_since(0) => CallOutcome::default(),
                        // An action the accepted answer carries is replayed by the
                        // step's call (below), even where code asks the question.
                        // Also the question asked again after a draft not used that
                        // was written over values nobody said (dropped): its reading
                        // was applied, and a second reading of the same message only
                        // risks another misreading ("Sorry, what did you say?" read
                        // as a cancel). Code's question, with no second call.
                        None if replay.is_none()
                            && (asks.is_some()
                                || (again.is_some()
                                    && (tells
                                        || (had_draft
                                            && !is_closing
                                            && !self.ungrounded.is_empty())))) =>
                        {
                            if self.prepare(&flow, *j).await? || self.turn_over() {
                                self.read_where_handed(&flow, &mut spec, &mut alt).await?;
                                continue;
                            }
                            CallOutcome::default()
                        }
                        None => {
                            if !is_closing && self.prepare(&flow, *j).await? {
                                self.read_where_handed(&flow, &mut spec, &mut alt).await?;
                                continue;
                            }
                            if self.turn_over() {
                                continue;
                            }
                            let target = if is_closing {
                                Target::Closing(flow.clone(), *j)
                            } else {
                                Target::Step(flow.clone(), *j)
                            };
                            self.replay = replay.take();
                            let out = self.render_call(target, false, None).await;
                            self.replay = None;
                            let mut out = out?;
                            if let Some(target) = out.take_start()
                                && self.may_switch_to(&target)
                            {
                                if rounds <= self.rerender_cap() {
                                    let said = std::mem::take(&mut out.message);
                                    let leaves = out.take_cancel()
                                        && super::stack::said_stopping(self.said());
                                    match self.start_flow(target, said, leaves).await? {
                                        // The flow handed to reads the message (data
                                        // first).
                                        None => {
                                            (spec, alt) = self.speculate().await?;
                                            continue;
                                        }
                                        Some(not_started) => {
                                            return Ok((
                                                not_started,
                                                StoppedReason::NeedsInput,
                                                Vec::new(),
                                            ));
                                        }
                                    }
                                } else {
                                    tracing::warn!(
                                        target,
                                        "switch_flow ignored: the turn re-rendered too often"
                                    );
                                }
                            }
                            match self.on_patterns(&mut out).await? {
                                None => {}
                                Some(PatternRead::Reply(m, st)) => return Ok((m, st, Vec::new())),
                                Some(PatternRead::Moved) => continue,
                            }
                            out
                        }
                    };
                    let ran_tool = self.tool_calls.len() != tools_before;
                    if let Some(t) = asks.as_deref()
                        && !self.reply_settled_since(0)
                        && !ran_tool
                    {
                        let data = self.question_values(&flow, *j);
                        let mut told = std::mem::take(&mut self.told);
                        told.push(crate::template::render(t, &data));
                        out.message = told.join(" ");
                        self.code_wrote.push(out.message.clone());
                        // On a small model, what the turn stored comes first.
                        if composes {
                            self.ack_before = Some(out.message.clone());
                        }
                    } else if let Some(t) = again.as_deref()
                        && !self.reply_settled_since(0)
                        && !ran_tool
                    {
                        let data = self.question_values(&flow, *j);
                        let q = crate::template::render(t, &data);
                        self.code_wrote.push(q.clone());
                        out.message = if tells {
                            let mut told = std::mem::take(&mut self.told);
                            self.code_wrote.extend(told.iter().cloned());
                            told.push(q);
                            told.join(" ")
                        } else {
                            let last: Vec<&str> =
                                asked_before(&self.s.history).into_iter().collect();
                            super::question::after_statement(&out.message, q, &last)
                        };
                    }
                    finalize_step = Some((flow.clone(), *j));
                    declined = is_closing && out.declined();
                    if declined && out.commands.contains(&Command::Decline) {
                        self.handled(Command::Decline);
                    }
                    // On a small model, a confirmation the user did not agree to is
                    // answered by code: nothing was done, and what the user can say,
                    // after the model's first statement if it is one (an answer to a
                    // side question). The step's action stays to run on a yes.
                    if declined
                        && composes
                        && !self.streamed
                        && !self.to_tell
                        && !self.reply_settled_since(0)
                        && self.missing_tool(&flow.steps[*j]).is_some()
                    {
                        // Values changed this turn: the summary of the new ones again.
                        let changed =
                            self.changed_now || self.commands.iter().any(|c| c.field().is_some());
                        if !changed {
                            // Code's text refers to the summary the user read: a yes to
                            // it still runs that call.
                            self.renew_proposal();
                        }
                        // Not a copy of the summary or of the last message.
                        let data = self.question_values(&flow, *j);
                        let summary = question
                            .as_deref()
                            .map(|t| crate::template::render(t, &data));
                        let earlier: Vec<&str> = asked_before(&self.s.history)
                            .into_iter()
                            .chain(summary.as_deref())
                            .collect();
                        // A question ("does it have parking?") is no refusal: its
                        // answer, then the summary again.
                        let asks = super::model::digress::asks_something(self.msg);
                        let last = asked_before(&self.s.history).map(str::trim);
                        let ask = match summary.clone() {
                            Some(s) if changed => s,
                            Some(s) if asks && last == Some(s.trim()) => AS_SUMMARISED.to_owned(),
                            Some(s) if asks => s,
                            _ if asked_before(&self.s.history)
                                .is_some_and(|l| l.trim_end().ends_with(DECLINED)) =>
                            {
                                DECLINED_AGAIN.to_owned()
                            }
                            _ => DECLINED.to_owned(),
                        };
                        self.code_wrote.push(ask.clone());
                        out.message = super::question::after_statement(&out.message, ask, &earlier);
                        out.deltas.clear();
                    }
                    if is_closing {
                        closing = Some(flow);
                        (out.message, StoppedReason::NeedsInput, out.deltas)
                    } else {
                        (out.message, StoppedReason::NeedsInput, out.deltas)
                    }
                }
                Stop::ReplyStep(fid, j) => {
                    let Some(flow) = self.a.flow(fid).cloned() else {
                        return Ok((String::new(), StoppedReason::Responded, Vec::new()));
                    };
                    let text = match &flow.steps[*j].kind {
                        StepKind::Reply(t) => {
                            let data = serde_json::to_value(&self.s.data).unwrap_or_default();
                            crate::template::render(t, &data)
                        }
                        _ => String::new(),
                    };
                    if flow.steps[*j].end {
                        closing = Some(flow.clone());
                    }
                    finalize_step = Some((flow, *j));
                    (text, StoppedReason::Reply, Vec::new())
                }
                Stop::Done => {
                    if let Some(st) = self.stopped.clone() {
                        let msg = match &st {
                            StoppedReason::Aborted { .. } => String::new(),
                            _ => self
                                .reply
                                .take()
                                .or_else(|| self.carried.take())
                                .unwrap_or_default(),
                        };
                        (msg, st, Vec::new())
                    } else if self.aug.halt {
                        match self.reply.take() {
                            Some(r) => (r, StoppedReason::Reply, Vec::new()),
                            None => (String::new(), StoppedReason::Halt, Vec::new()),
                        }
                    } else if let Some(r) = self.reply.take() {
                        (r, StoppedReason::Reply, Vec::new())
                    } else if self.s.code.is_some() {
                        // A code flow takes over; it speaks after this part of the turn.
                        let msg = self.carried.take().unwrap_or_default();
                        (msg, StoppedReason::NeedsInput, Vec::new())
                    } else {
                        // On a small model, the message is sorted among the flows first
                        // (`model/digress.rs`): a flow it asks for starts without the
                        // reply with no flow being written.
                        let (out, read) = match self.sort_opening().await? {
                            Some(f) => (CallOutcome::default(), Some(f)),
                            None => {
                                let correcting = self.correctable();
                                let mut out =
                                    self.render_call(Target::Classic, false, None).await?;
                                match self.on_patterns(&mut out).await? {
                                    None => {}
                                    Some(PatternRead::Reply(m, st)) => {
                                        return Ok((m, st, Vec::new()));
                                    }
                                    Some(PatternRead::Moved) => continue,
                                }
                                if let (Some(cf), Some(data)) = (correcting, out.take_values()) {
                                    match self.correct_completed(&cf, data).await? {
                                        Outcome::None => {}
                                        // Rendered again: with the note, or inside the flow.
                                        Outcome::Refused
                                            if rounds <= self.rerender_cap() && !self.streamed =>
                                        {
                                            continue;
                                        }
                                        Outcome::Refused => {}
                                        Outcome::Reopened => continue,
                                    }
                                }
                                // Sorted as no flow's: the reply starts none.
                                let read = out.take_start().filter(|_| !self.sorted_none);
                                (out, read)
                            }
                        };
                        let picked =
                            read.clone()
                                .or_else(|| match (&self.a.router, self.a.flow_count()) {
                                    (
                                        crate::codeflow::Router::SchemaIntent {
                                            fallback: crate::codeflow::Fallback::Flow(f),
                                        },
                                        n,
                                    ) if n > 0 => Some(f.clone()),
                                    _ => None,
                                });
                        match picked {
                            Some(f) if rounds <= self.rerender_cap() && !self.streamed => {
                                // The intent replaces the classic reply with the flow's:
                                // a flow the answer starts, or the router's fallback.
                                let src = match read {
                                    Some(_) => {
                                        let c = Command::start_flow(f.clone());
                                        let src = DirectiveSource::Command(c.to_string());
                                        self.handled(c);
                                        src
                                    }
                                    None => DirectiveSource::Routing(f.clone()),
                                };
                                let d = Directive::go_to(f);
                                self.record(&src, &d, &[], &[], false);
                                self.apply(src, d, Phase::Pre).await?;
                                if self.s.code.is_some() {
                                    (String::new(), StoppedReason::NeedsInput, Vec::new())
                                } else {
                                    // The flow started reads the message that started it
                                    // ("an appointment for Anna Berg, a check-up"), as a
                                    // flow handed to does: otherwise a question written
                                    // by code would ask for what the message just gave
                                    // (what the sorting call read may stand for that
                                    // reading: `speculate.rs`).
                                    if self.streamed {
                                        if let Some(flow) = self.flow() {
                                            self.absorb_started_read(&flow).await?;
                                        }
                                    } else {
                                        (spec, alt) = self.speculate().await?;
                                        if let Some(not_started) = self.not_started.take() {
                                            return Ok((
                                                not_started,
                                                StoppedReason::NeedsInput,
                                                Vec::new(),
                                            ));
                                        }
                                    }
                                    continue;
                                }
                            }
                            _ => (out.message, StoppedReason::Responded, out.deltas),
                        }
                    }
                }
            };

            if self.paused.is_some() {
                // A tool round is held for approval: the turn ends before the bus;
                // what earlier tools emitted waits with the round.
                self.note_paused_at(&stop);
                return Ok((message, stopped, deltas));
            }
            // Post-LLM bus: tool results and dispatches (already queued), finalize,
            // then completion of a closing flow (the flow its on_complete names speaks next, in this turn).
            if let Some((flow, j)) = &finalize_step
                && let Some(h) = flow.steps[*j].finalize.clone()
            {
                let d = {
                    let cx = self.cx();
                    let what = || guard::of_step("finalize hook", &flow.id, &flow.steps[*j].id);
                    guard::hook(h.call(&cx), what).await?
                };
                self.post_bus.push((
                    DirectiveSource::Finalize(flow.steps[*j].id.as_ref().to_owned()),
                    d,
                ));
            }
            let bus = std::mem::take(&mut self.post_bus);
            // Only a flow resumed by what follows (a completion) moves this rendering's
            // message into `lead`.
            self.resumed = None;
            let mut merged = Directive::default();
            let mut last_source = None;
            for (src, d) in bus {
                d.validate().map_err(|e| AgentError::directive(&src, e))?;
                self.record(&src, &d, &[], &[], false);
                merged = merge(merged, d);
                last_source = Some(src);
            }
            if let Some(src) = last_source {
                self.apply(src, merged, Phase::Post).await?;
            }
            if self.proposed_now() {
                // A call summarised for the user's yes: the step waits for it.
                closing = None;
            }
            if declined
                && let (Some(flow), Some((_, j))) = (&closing, &finalize_step)
                && self.s.flow.as_deref() == Some(flow.id.as_ref())
                && self.missing_tool(&flow.steps[*j]).is_some()
            {
                // The user did not agree, and the answer said so: the step stays and the
                // answer is the reply (no second rendering told that nothing was done).
                closing = None;
            }
            if let (Some(flow), Some((_, j))) = (&closing, &finalize_step)
                && self.s.flow.as_deref() == Some(flow.id.as_ref())
                && let Some(missing) = self.missing_tool(&flow.steps[*j])
                && rounds <= self.rerender_cap()
                && !self.streamed
            {
                // The model replied as if done, but the step's tool did not run: that
                // reply is not used; the step is asked again, told so.
                self.notes.push(format!(
                    "Nothing has been done yet ({missing} did not run): ask the user whether to go ahead."
                ));
                self.to_tell = true;
                self.awaiting = false;
                self.landed = Some((flow.id.to_string(), flow.steps[*j].id.to_string()));
                continue;
            }
            if let Some(flow) = closing
                && self.s.flow.as_deref() == Some(flow.id.as_ref())
            {
                self.complete_flow(
                    Phase::Post,
                    &DirectiveSource::OnComplete(flow.id.as_ref().to_owned()),
                )
                .await?;
            }
            // A verbatim reply from code (a tool, a finalize hook) is the message; the
            // position it moved to is not rendered this turn (the spec's
            // `{goTo, reply}`: the entered step's call is skipped).
            let verbatim = match self.post_reply.take() {
                Some(r) => {
                    message = r;
                    stopped = StoppedReason::Reply;
                    true
                }
                None => false,
            };
            if matches!(self.stopped, Some(StoppedReason::Aborted { .. })) {
                let st = self.stopped.clone().unwrap_or(StoppedReason::Halt);
                return Ok((String::new(), st, Vec::new()));
            }
            let moved = self.s.flow.is_some()
                && (self.s.flow.as_deref(), self.s.step.as_deref())
                    != (rendered.0.as_deref(), rendered.1.as_deref());
            let resumed = moved && self.resumed.take().is_some();
            if moved && self.stopped.is_none() && (!verbatim || resumed) {
                if rounds > self.rerender_cap() {
                    // Redirected after every rendering: stop instead of calling forever.
                    self.stopped = Some(StoppedReason::TransitionCap {
                        blocked: self.s.step.clone().unwrap_or_default(),
                    });
                    return Ok((message, self.stopped.clone().unwrap_or(stopped), deltas));
                }
                // Redirected after the message existed: render the new position, with
                // this message carried as unsent context; a flow resumed after the one
                // that spoke completed asks its question after that message.
                if resumed {
                    self.lead.push(message);
                } else if !message.is_empty() {
                    self.carried = Some(message);
                }
                self.awaiting = false;
                continue;
            }
            if let Some(f) = self.completed.last()
                && stopped != StoppedReason::Reply
                && self.s.flow.is_none()
            {
                stopped = StoppedReason::FlowCompleted { flow: f.clone() };
            }
            if let Some(st) = self.stopped.clone() {
                stopped = st;
            }
            // A model-written reply never carries a tool call the model wrote as text.
            if stopped != StoppedReason::Reply
                && let Some(rest) = crate::reply::without_tool_calls(&message)
            {
                tracing::warn!(reply = %message, "a tool call written as text was removed from the reply");
                message = if rest.is_empty() {
                    self.a.config.flow_error_reply.clone()
                } else {
                    rest
                };
            }
            // On a small model, a model-written reply the user has not seen yet loses
            // what a model running on adds: sentences said twice or said back, a last
            // sentence the length limit cut (`ModelProfile::tidies_replies`).
            if stopped != StoppedReason::Reply
                && !self.streamed
                && self.a.provider.profile().tidies_replies()
                && let Some(t) = crate::reply::tidy(
                    &message,
                    self.a.config.max_reply_chars,
                    &crate::reply::Instructions::new(
                        &self.prompt,
                        &self.prompt_state,
                        &self.a.read_backs,
                    ),
                    self.msg,
                    asked_at
                        .as_ref()
                        .filter(|at| **at != rendered)
                        .and_then(|_| asked_before(&self.s.history)),
                )
            {
                tracing::debug!(before = %message, after = %t, "reply tidied");
                message = t;
            }
            // On a small model, a reply written with no flow under way that only says
            // again what the agent's last message said answers nothing ("Is there a
            // gym?" after a booking, answered with the booking's text): rendered
            // again once, told so.
            if stopped != StoppedReason::Reply
                && !message.is_empty()
                && !self.streamed
                && !echo_retried
                && finalize_step.is_none()
                && self.s.flow.is_none()
                && self.a.provider.profile().tidies_replies()
                && rounds <= self.rerender_cap()
                && !self.code_wrote.iter().any(|c| message.contains(c.as_str()))
                && asked_before(&self.s.history).is_some_and(|last| says_again(&message, last))
            {
                tracing::debug!(reply = %message, "reply says the last message again; rendered again");
                echo_retried = true;
                self.notes.push(SAID_AGAIN.to_owned());
                continue;
            }
            // A model-written reply may state only what the state holds (`claim.rs`,
            // checked after this turn's tools and hooks wrote their data): rendered
            // again once, told why; then the sentences that still say it are withheld.
            if stopped != StoppedReason::Reply
                && !message.is_empty()
                && !self.streamed
                && let Some(note) = self.claim_note(&message)
            {
                let here = finalize_step
                    .as_ref()
                    .filter(|(f, _)| self.s.flow.as_deref() == Some(f.id.as_ref()))
                    .map(|(f, j)| (f.id.to_string(), f.steps[*j].id.to_string()));
                if let Some(at) = here
                    && !claim_retried
                    && rounds <= self.rerender_cap()
                {
                    claim_retried = true;
                    self.notes.push(note);
                    self.awaiting = false;
                    self.landed = Some(at);
                    continue;
                }
                let (kept, removed) =
                    self.with_facts(&message, |facts| crate::claim::withhold(facts, &message));
                tracing::warn!(
                    ?removed,
                    "reply stated what the state does not hold; withheld"
                );
                self.withheld.extend(removed);
                message = kept;
                // Nothing left: the step's own question, written by code, if it
                // has one; else what this turn stored, and a question for what
                // the user wants next (never an empty reply).
                if message.is_empty() {
                    message = match finalize_step
                        .as_ref()
                        .and_then(|(flow, j)| Some((self.step_question(flow, *j)?, flow, *j)))
                    {
                        Some((t, flow, j)) => {
                            crate::template::render(&t, &self.question_values(flow, j))
                        }
                        None => {
                            self.ack_before = Some(NEXT.to_owned());
                            NEXT.to_owned()
                        }
                    };
                    self.code_wrote.push(message.clone());
                }
            }
            return Ok((message, stopped, deltas));
        }
    }
}

/// What a rendering is told when its draft said the agent's last message again.
const SAID_AGAIN: &str = "Your draft said your previous message again. Answer the user's latest message; do not repeat what you said before.";

/// Whether every sentence of `message` is one the agent's `last` message said.
fn says_again(message: &str, last: &str) -> bool {
    let last = crate::data::ground::normalize(last);
    let sentences: Vec<&str> = message.lines().flat_map(crate::reply::sentences).collect();
    !sentences.is_empty()
        && sentences.iter().all(|s| {
            let s = crate::data::ground::normalize(s);
            !s.is_empty() && super::question::contains_words(&last, &s)
        })
}
