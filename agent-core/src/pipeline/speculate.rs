//! The speculative first call: made before the walk when the message may carry data,
//! it extracts and renders the predicted step in one go; the walk then accepts its
//! reply or the turn renders again (a predicted step's `prepare` additions are
//! withdrawn when the walk lands elsewhere).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Turn;
use super::consent::asked_before;
use super::model::{CallOutcome, Target};
use super::walk::Stop;
use crate::data::ground::normalize;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::tool::Tool;

/// A speculative first call and what it rendered.
pub(super) struct Speculation<D, C> {
    pub(super) predicted: Stop,
    pub(super) out: CallOutcome,
    pub(super) generation: u32,
    /// Every value it extracted was stored: its reply did not assume a value that the
    /// engine dropped or refused.
    pub(super) clean: bool,
    /// What the predicted step's `prepare` hook added, withdrawn if the walk lands
    /// elsewhere.
    pub(super) undo: Option<PrepareUndo<D, C>>,
    /// The rules whose `if` held when it was written (`None`: not written by this
    /// flow's call, a hand-over's answer).
    pub(super) rules: Option<String>,
}

/// A hand-over answer read ahead for the flow it handed to
/// ([`crate::config::AgentConfig::preview_handoffs`]): its message was written for that
/// flow's first step, and `data` holds what it read for that flow's fields. Used
/// instead of the flow's own call when the flow lands on that step with every value
/// stored; otherwise its message is context for that call, as any hand-over's is.
pub(crate) struct Preview {
    flow: Arc<str>,
    data: Map<String, Value>,
}

/// The prompt additions and tools a speculatively prepared step brought.
pub(super) struct PrepareUndo<D, C> {
    key: (Arc<str>, Arc<str>),
    append: std::ops::Range<usize>,
    tools_before: Vec<Arc<dyn Tool<D, C>>>,
    injected: Vec<String>,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    fn needs_extraction(&self, flow: &Flow<D, C>) -> bool {
        flow.collectable_idx
            .iter()
            .any(|&i| !self.is_present(i) && self.is_readable(i))
    }

    /// Whether the speculative call extracts: whenever the flow collects anything, even
    /// with every field present, so a correction ("actually, Porto") at the last step
    /// is read in the same call instead of being lost. A flow that hands over with a
    /// read-ahead reads the message for the flows it hands to as well. A field nothing
    /// the user said could be a value of is not read ([`crate::data::spot`]).
    fn may_extract(&self, flow: &Flow<D, C>) -> bool {
        self.fields_read(flow) > 0
    }

    /// What the sorting call that started `flow` read for it
    /// ([`Turn::started_read`]), stored (or refused, with the reason code tells) like
    /// any value read. `true` when that reading stands for the flow's own: the
    /// message asks nothing (a question is the flow's call's to answer, and it
    /// reads the message then).
    pub(super) async fn absorb_started_read(
        &mut self,
        flow: &Arc<Flow<D, C>>,
    ) -> Result<bool, AgentError> {
        let Some((id, read)) = self.started_read.take() else {
            return Ok(false);
        };
        if id != flow.id {
            self.started_read = Some((id, read));
            return Ok(false);
        }
        if super::model::digress::asks_something(self.msg) {
            return Ok(false);
        }
        tracing::debug!(flow = %flow.id, "the sorting call's reading stands for the flow's");
        self.absorb_model_data(flow, Some(read)).await?;
        Ok(true)
    }

    /// Whether the sorting call kept the message at a step that only routes and the
    /// message asks nothing ("hi", "thanks"): the step's question, written by code,
    /// is the whole reply, with no call of the step's own.
    pub(super) fn nothing_to_answer(&self) -> bool {
        self.kept_at_routing && !super::model::digress::asks_something(self.msg)
    }

    /// The first call, made before the walk when this message may carry data: it
    /// extracts and renders the predicted step in one go. When that answer hands the
    /// user to another flow, the flow it lands in reads the same message the same way
    /// (data first: "it's about invoice INV-12" stores the invoice in billing).
    pub(super) async fn speculate(
        &mut self,
    ) -> Result<(Option<Speculation<D, C>>, Option<usize>), AgentError> {
        // A call the user agreed to already ran and set the reply.
        if self.reply_settled_since(0) {
            return Ok((None, None));
        }
        let mut hops = 0;
        loop {
            match self.speculate_once().await? {
                Some(done) => return Ok(done),
                // The flow the answer started was not started: the turn says so.
                None if self.not_started.is_some() => return Ok((None, None)),
                None if hops < self.rerender_cap() => hops += 1,
                None => return Ok((None, None)),
            }
        }
    }

    /// One flow's speculative call; `None` when its answer handed over to another flow.
    #[allow(clippy::type_complexity)]
    async fn speculate_once(
        &mut self,
    ) -> Result<Option<(Option<Speculation<D, C>>, Option<usize>)>, AgentError> {
        let Some(flow) = self.flow() else {
            return Ok(Some((None, None)));
        };
        let mut alt = self.awaiting_model_step(&flow);
        // The hand-over that brought the turn here read this message for this flow:
        // its values first (what decides where the flow lands).
        let mut preview = None;
        let mut had_preview = false;
        if let Some(p) = self.preview.take()
            && p.flow == flow.id
        {
            had_preview = true;
            let before = self.notes.len();
            self.absorb_model_data(&flow, Some(p.data)).await?;
            preview = (self.notes.len() == before)
                .then(|| crate::prompt::opening_step(&flow))
                .flatten();
        }
        // A resumed turn has no new words to read: it answers with the tools' results.
        if self.tools_off || self.turn_over() {
            return Ok(Some((None, alt)));
        }
        // A sorting call that started this flow read the message for it.
        if self.absorb_started_read(&flow).await? {
            return Ok(Some((None, alt)));
        }
        // An answer code reads by itself needs no call ("Monday next week" to "which
        // day?"): stored, and the walk goes on.
        if self.deferred.is_empty()
            && preview.is_none()
            && let Some(read) = self.answer_read_by_code(&flow)
        {
            tracing::debug!(flow = %flow.id, "the answer is read by code");
            self.absorb_model_data(&flow, Some(read)).await?;
            return Ok(Some((None, alt)));
        }
        // On a small model, whether the answer to the flow's question asks for
        // another flow instead, in a short call of its own (`model/digress.rs`); also
        // where code sees that the message does not give what the step asks for.
        let before = self.pos_gen;
        if let Some(target) = self.digression(&flow).await? {
            return match self.start_flow(target, String::new(), false).await? {
                None => Ok(None),
                Some(not_started) => {
                    self.not_started = Some(not_started);
                    Ok(None)
                }
            };
        }
        // The step's own hooks ran before the check and moved the conversation.
        if self.turn_over() {
            return Ok(Some((None, alt)));
        }
        if self.pos_gen != before {
            if self.left_for_another_flow(&flow) {
                return Ok(None);
            }
            if self.needs_extraction(&flow) {
                let data = self.extract_call(&flow).await?;
                self.absorb_model_data(&flow, data).await?;
            }
            return Ok(Some((None, alt)));
        }
        // What the sorting call read from a message it sorted as the answer, when
        // the message is nothing but that answer: stored (or refused, with the reason
        // code tells) like any value read, and the message is not read again; the
        // walk goes on, and the step it reaches is asked by code (or rendered by its
        // own call, as after any message that needs no reading).
        if let Some(read) = self.sort_read.take()
            && self.deferred.is_empty()
            && preview.is_none()
            && self.answer_alone(&read)
        {
            tracing::debug!(flow = %flow.id, "the sorting call's reading stands for the flow's");
            self.absorb_model_data(&flow, Some(read)).await?;
            return Ok(Some((None, alt)));
        }
        // Sorted as nothing to answer at a step that only routes: no call reads it
        // again (the sorting call read it for the flows it may start).
        if (self.nothing_to_answer() || !self.may_extract(&flow))
            && self.deferred.is_empty()
            && preview.is_none()
        {
            return Ok(Some((None, alt)));
        }
        // A step not asked yet is read as answered too (unless the hand-over's answer
        // was written for it) when that predicts a step one call can render with it
        // as the fallback; otherwise (a condition no call has judged, a closing, a
        // step whose `on_enter` must run first) the step itself is predicted.
        let ahead = if had_preview {
            None
        } else {
            self.unasked_model_step(&flow)
        };
        let mut predicted = None;
        if ahead.is_some() {
            predicted = match self.predict(true, ahead).await.0 {
                Some(Stop::Render(f, j)) if flow.steps[j].on_enter.is_none() => {
                    alt = alt.or(ahead);
                    Some(Stop::Render(f, j))
                }
                _ => None,
            };
        }
        if predicted.is_none() {
            predicted = self.predict(true, None).await.0;
        }
        // A message that speaks of stopping ("never mind that, I have a billing
        // question") is read by the asked step's own call, which reads a cancel and a
        // flow to start: a call that only extracts reads neither, and the step's call
        // would follow it in the same turn.
        if !matches!(predicted, Some(Stop::Render(..) | Stop::Closing(..)))
            && let Some(j) = alt
            && super::stack::said_stopping(self.said())
        {
            predicted = Some(Stop::Render(flow.id.clone(), j));
        }
        let mut spec = None;
        match predicted {
            Some(Stop::Render(f, j)) => {
                // Hooks run in the documented order (step on_enter, then prepare, then
                // the model call). Entering the current position is certain; entering a
                // predicted later step is not, so a step with an on_enter hook is not
                // rendered speculatively: extraction first, then the walk enters it.
                // A predicted step's prepare hook runs before the one call (its output
                // belongs in that call); if the walk then lands elsewhere, what it added
                // to the prompt and tools is withdrawn.
                let current =
                    !self.awaiting && self.s.step.as_deref() == Some(flow.steps[j].id.as_ref());
                let before = self.pos_gen;
                let mut undo = None;
                let moved = if current {
                    self.enter_hooks(&flow, j).await? || self.prepare(&flow, j).await?
                } else if flow.steps[j].on_enter.is_some() {
                    true
                } else if flow.steps[j].prepare.is_none() {
                    false
                } else {
                    let start = self.aug.append.len();
                    let tools_before = self.aug.tools.clone();
                    let moved = self.prepare(&flow, j).await?;
                    let injected = self
                        .aug
                        .tools
                        .iter()
                        .filter(|t| !tools_before.iter().any(|b| Arc::ptr_eq(b, t)))
                        .map(|t| t.name().to_owned())
                        .collect();
                    undo = Some(PrepareUndo {
                        key: (flow.id.clone(), flow.steps[j].id.clone()),
                        append: start..self.aug.append.len(),
                        tools_before,
                        injected,
                    });
                    moved
                };
                if self.turn_over() {
                    return Ok(Some((None, alt)));
                }
                if moved || self.pos_gen != before {
                    // Handed to another flow before any reply: that flow reads the
                    // message, as after a model's switch.
                    if self.left_for_another_flow(&flow) {
                        return Ok(None);
                    }
                    if self.needs_extraction(&flow) {
                        let data = self.extract_call(&flow).await?;
                        self.absorb_model_data(&flow, data).await?;
                    }
                    return Ok(Some((None, alt)));
                }
                // The hand-over's answer was written for this step: it is this
                // flow's reply, and nothing is left to judge or extract.
                let read_ahead = (preview == Some(j) && undo.is_none() && self.deferred.is_empty())
                    .then(|| self.carried.take())
                    .flatten();
                let rules = read_ahead
                    .is_none()
                    .then(|| self.rules_for_now(Some(&flow), Some(j)));
                let out = match read_ahead {
                    Some(message) => {
                        tracing::debug!(flow = %flow.id, step = %flow.steps[j].id, "hand-over answer used as the reply");
                        CallOutcome {
                            message,
                            ..CallOutcome::default()
                        }
                    }
                    None => {
                        self.speculating = true;
                        let out = self
                            .render_call(Target::Step(flow.clone(), j), true, alt)
                            .await;
                        self.speculating = false;
                        out?
                    }
                };
                spec = Some(Speculation {
                    predicted: Stop::Render(f, j),
                    out,
                    generation: self.aug.generation,
                    clean: true,
                    undo,
                    rules,
                });
            }
            Some(Stop::Closing(f, j)) => {
                let rules = Some(self.rules_for_now(Some(&flow), None));
                self.speculating = true;
                let out = self
                    .render_call(Target::Closing(flow.clone(), j), true, None)
                    .await;
                self.speculating = false;
                let out = out?;
                spec = Some(Speculation {
                    predicted: Stop::Closing(f, j),
                    out,
                    generation: self.aug.generation,
                    clean: true,
                    undo: None,
                    rules,
                });
            }
            _ if self.needs_extraction(&flow) => {
                let data = self.extract_call(&flow).await?;
                self.absorb_model_data(&flow, data).await?;
            }
            _ => {}
        }
        if let Some(sp) = &mut spec {
            for (c, v) in std::mem::take(&mut sp.out.verdicts) {
                self.judged.insert(c, v);
            }
            let mut data = sp.out.take_values();
            // Values for another flow's first step: kept for that flow if the answer
            // hands over to it, otherwise not read (they were asked for that case).
            let ahead = self.set_aside(&flow, &mut data);
            let before = self.notes.len();
            let ungrounded_before = self.ungrounded.len();
            let asks = sp.out.claimed.clone();
            self.absorb_answer(&flow, data, asks.as_deref()).await?;
            // A value nobody said was dropped: the draft stands if it never repeats it
            // (it did not build on it). A refused value is always told, so a draft with
            // one is rendered again.
            let notes = self.notes.len() - before;
            let invented = &self.ungrounded[ungrounded_before..];
            sp.clean = notes == 0
                || (notes == invented.len() && {
                    let said = normalize(&sp.out.message);
                    invented.iter().all(|d| {
                        let v = match &d.value {
                            Value::String(t) => normalize(t),
                            other => normalize(&other.to_string()),
                        };
                        v.is_empty() || !said.contains(&v)
                    })
                });
            if let Some(target) = sp.out.take_start()
                && self.may_switch_to(&target)
            {
                let said = std::mem::take(&mut sp.out.message);
                let ahead = ahead.and_then(|d| self.preview_for(&target, d));
                let leaves = sp.out.take_cancel() && super::stack::said_stopping(self.said());
                match self.start_flow(target, said, leaves).await? {
                    None => {
                        self.preview = ahead;
                        return Ok(None);
                    }
                    Some(not_started) => {
                        self.not_started = Some(not_started);
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some((spec, alt)))
    }

    /// Whether a hook moved the turn out of `flow` into another flow (the turn goes
    /// on there): the message is that flow's to read.
    pub(super) fn left_for_another_flow(&self, flow: &Flow<D, C>) -> bool {
        !self.turn_over()
            && self
                .s
                .flow
                .as_deref()
                .is_some_and(|f| f != flow.id.as_ref())
    }

    /// Take out of `data` the fields this flow's answer carries only for a hand-over
    /// (`switch_fields`); `None` when the flow has none.
    fn set_aside(
        &self,
        flow: &Flow<D, C>,
        data: &mut Option<Map<String, Value>>,
    ) -> Option<Map<String, Value>> {
        let extra = &self.a.switch_fields[flow.index];
        if extra.is_empty() {
            return None;
        }
        let d = data.as_mut()?;
        Some(
            extra
                .iter()
                .filter_map(|f| Some((f.to_string(), d.remove(f.as_ref())?)))
                .collect(),
        )
    }

    /// The read-ahead for a hand-over to `target`: the values it read for that flow's
    /// fields (the rest dropped unread), when that flow opens with a step a reply can
    /// be written for.
    fn preview_for(&self, target: &str, mut data: Map<String, Value>) -> Option<Preview> {
        let flow = self.a.flow(target)?;
        crate::prompt::opening_step(flow)?;
        data.retain(|k, _| flow.collectable.iter().any(|c| c.as_ref() == k));
        Some(Preview {
            flow: flow.id.clone(),
            data,
        })
    }

    /// Withdraw what a predicted step's prepare hook added (the step was not entered);
    /// it runs again if the step is entered later this turn.
    pub(super) fn withdraw_prepare(&mut self, u: PrepareUndo<D, C>) {
        self.aug.append.drain(u.append);
        for name in &u.injected {
            self.aug.tools.retain(|t| t.name() != name);
            if let Some(t) = u.tools_before.iter().find(|t| t.name() == name) {
                self.aug.tools.push(t.clone());
            }
        }
        self.prepared.remove(&u.key);
    }

    /// Whether a speculative reply that was not for the target stands for the step
    /// the walk stopped at, `j`: that step is the fallback the reply offered, and the
    /// reply says it asks it. A scripted answer says neither; it is taken for an
    /// unasked fallback (a model with the schema always says), never for an
    /// awaiting one, whose question was already asked.
    pub(super) fn fallback_taken(
        &self,
        flow: &Flow<D, C>,
        alt: Option<usize>,
        j: usize,
        claimed: Option<&str>,
    ) -> bool {
        alt == Some(j)
            && match claimed {
                Some(c) => c == flow.steps[j].id.as_ref(),
                None => self.awaiting_model_step(flow) != Some(j),
            }
    }

    /// Whether the step at `stop` acts only on the user's answer to it (a confirmation).
    fn confirms(&self, stop: &Stop) -> bool {
        match stop {
            Stop::Render(f, j) | Stop::Closing(f, j) => self
                .a
                .flow(f)
                .and_then(|f| f.steps.get(*j))
                .is_some_and(|s| s.offers_agreed_tool()),
            _ => false,
        }
    }

    /// Whether `message` repeats the reply before the user's latest message (case,
    /// punctuation and spacing aside; one contained in the other), for replies long
    /// enough for that to be a copy rather than the same short question.
    fn repeats_last_reply(&self, message: &str) -> bool {
        const MIN: usize = 24;
        let Some(prev) = asked_before(&self.s.history) else {
            return false;
        };
        let (prev, now) = (normalize(prev), normalize(message));
        prev.len() >= MIN && now.len() >= MIN && (now.contains(&prev) || prev.contains(&now))
    }

    pub(super) fn accepts(
        &self,
        sp: &Speculation<D, C>,
        actual: &Stop,
        alt: Option<usize>,
    ) -> bool {
        // An action asked for in a speculative answer has not run: it is accepted only
        // where it was asked (the predicted step, not a re-ask), and then replayed in a
        // rendering that runs it.
        if sp.generation != self.aug.generation
            || !sp.clean
            || (sp.out.tool_call.is_some() && (sp.out.answer.is_none() || sp.predicted != *actual))
        {
            return false;
        }
        // Values shown back for a yes: the code writes this reply (`tentative.rs`), so
        // another rendering would be replaced as well.
        if !self.tentative.is_empty() && sp.out.tool_call.is_none() {
            return true;
        }
        // Its action answered a confirmation whose details the same message changed:
        // rendered again without it (`Gate::unless_changed`).
        if sp.out.tool_call.is_some() && self.changed_now && self.confirms(actual) {
            return false;
        }
        let flow = match actual {
            Stop::Render(f, _) | Stop::Closing(f, _) => self.a.flow(f),
            _ => None,
        };
        let Some(flow) = flow else { return false };
        // Rules that hold only once its own values were stored (an `if` on the data)
        // or that belong to the step reached instead (the fallback's own rules) were
        // not in its prompt.
        let step = match actual {
            Stop::Render(_, j) => Some(*j),
            _ => None,
        };
        if sp
            .rules
            .as_ref()
            .is_some_and(|r| *r != self.rules_for_now(Some(flow), step))
        {
            return false;
        }
        // An action's answer is never shown: the tool writes the reply, or a call after
        // the tool's result does. What its message says it asks for, or whether it
        // copies an earlier reply, is beside the point (measured: Qwen2.5 1.5B named a
        // refund with the invoice it had just read and labelled its message as asking
        // for the invoice, in 5 of 41 help-desk turns, each rendered again).
        if sp.out.tool_call.is_some() {
            return true;
        }
        // A small model copies its previous reply (measured: 3 of 15 speculative calls
        // on Qwen2.5 1.5B); a copy is no answer to a step the conversation moved on to.
        if matches!(actual, Stop::Render(..))
            && !self.awaiting
            && self.repeats_last_reply(&sp.out.message)
        {
            return false;
        }
        let claimed = sp.out.claimed.as_deref();
        let id_of = |j: usize| flow.steps[j].id.as_ref();
        match (&sp.predicted, actual) {
            (Stop::Render(f1, j1), Stop::Render(f2, j2)) if f1 == f2 => {
                if j1 == j2 {
                    claimed.is_none_or(|c| c == id_of(*j1))
                } else {
                    self.fallback_taken(flow, alt, *j2, claimed)
                }
            }
            (Stop::Closing(f1, _), Stop::Closing(f2, _)) => f1 == f2,
            _ => false,
        }
    }
}
