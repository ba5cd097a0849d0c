//! From the resolved position to the turn's message: the speculative extraction +
//! reply call, the walk, re-rendering on mismatch, the post-LLM bus, and in-turn hops
//! with the intermediate message carried to the next rendering.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::model::{CallOutcome, Target};
use super::{Phase, Stop, Turn};
use crate::data::ground::{Evidence, Grounding, normalize, resolve_date};
use crate::data::{AgentContext, AgentData, Extracted, read_extraction};
use crate::directive::{Directive, merge};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::provider::Role;
use crate::response::{DirectiveSource, StoppedReason};
use crate::response::{DroppedValue, Event};
use crate::step::StepKind;
use crate::tool::Tool;

/// What becomes of one value the model extracted.
pub(crate) enum Verdict {
    Keep { inferred: bool },
    NotCollected,
    Ungrounded(String),
    Refused(String),
}

/// The user's messages normalised for grounding ([`normalize`]), kept for the turn:
/// the value checks of a turn (extraction, the live-streaming decision, corrections)
/// read the same messages, and normalising them is most of what grounding costs.
#[derive(Default)]
pub(crate) struct SaidMemo {
    /// The texts the memo was made from (the user's messages, then this turn's).
    texts: Vec<String>,
    /// Their normalised forms, consecutive repeats removed.
    said: Option<Arc<[String]>>,
}

impl SaidMemo {
    /// The normalised forms of `texts`, made again only when the texts differ from
    /// the last ones (the history changed: a summary replaced its beginning).
    fn said<'t>(&mut self, texts: impl Iterator<Item = &'t str> + Clone) -> Arc<[String]> {
        if let Some(said) = &self.said
            && texts.clone().eq(self.texts.iter().map(String::as_str))
        {
            return said.clone();
        }
        let texts: Vec<String> = texts.map(str::to_owned).collect();
        let mut said: Vec<String> = texts.iter().map(|t| normalize(t)).collect();
        said.dedup();
        let said: Arc<[String]> = said.into();
        self.texts = texts;
        self.said = Some(said.clone());
        said
    }
}

/// A speculative first call and what it rendered.
struct Speculation<D, C> {
    predicted: Stop,
    out: CallOutcome,
    generation: u32,
    /// Every value it extracted was stored: its reply did not assume a value that the
    /// engine dropped or refused.
    clean: bool,
    /// What the predicted step's `prepare` hook added, withdrawn if the walk lands
    /// elsewhere.
    undo: Option<PrepareUndo<D, C>>,
}

/// The prompt additions and tools a speculatively prepared step brought.
struct PrepareUndo<D, C> {
    key: (Arc<str>, Arc<str>),
    append: std::ops::Range<usize>,
    tools_before: Vec<Arc<dyn Tool<D, C>>>,
    injected: Vec<String>,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    fn needs_extraction(&self, flow: &Flow<D, C>) -> bool {
        flow.collectable_idx.iter().any(|&i| !self.is_present(i))
    }

    /// Whether the speculative call extracts: whenever the flow collects anything, even
    /// with every field present, so a correction ("actually, Porto") at the last step
    /// is read in the same call instead of being lost.
    fn may_extract(&self, flow: &Flow<D, C>) -> bool {
        !flow.collectable_idx.is_empty()
    }

    /// Write what the model extracted, field by field: only fields the active flow
    /// collects, only values that what the user said supports (grounding), only values
    /// their field's constraints accept. Everything else is not stored, reported, and
    /// noted for the reply, which asks again with the reason.
    async fn absorb_model_data(
        &mut self,
        flow: &Flow<D, C>,
        data: Option<Map<String, Value>>,
    ) -> Result<(), AgentError> {
        let Some(data) = data else { return Ok(()) };
        let mut patch = Map::new();
        for (x, verdict) in self.screen(flow, data) {
            match verdict {
                Verdict::Keep { inferred } => {
                    if inferred {
                        self.inferred.push(x.field.clone());
                    }
                    patch.insert(x.field, x.value);
                }
                Verdict::NotCollected => {
                    tracing::warn!(field = %x.field, flow = %flow.id, "model wrote a field the flow does not collect; dropped");
                    self.dropped.push(x.field);
                }
                Verdict::Ungrounded(reason) => {
                    tracing::info!(field = %x.field, %reason, "model value not grounded in what the user said; dropped");
                    self.drop_value(x.field, x.value, reason, false);
                }
                Verdict::Refused(reason) => {
                    tracing::info!(field = %x.field, %reason, "model value refused by the field's constraints");
                    self.rejected.push(format!("{} {reason}", x.field));
                    self.drop_value(x.field, x.value, reason, true);
                }
            }
        }
        if patch.is_empty() {
            return Ok(());
        }
        let (corrected, reopened) = self.corrections(flow, &mut patch);
        match self.a.schema.apply(&self.s.data, &patch) {
            Ok(next) => {
                self.s.data = next;
                self.refresh_present();
                // The draft was written with the new value in view (same call), and
                // a re-render shows it in the collected data: no note needed.
                for (field, from, to) in corrected {
                    tracing::info!(%field, %from, %to, "the user corrected a stored value");
                }
                // The first step whose answer was cleared asks again, if the flow had
                // moved past it.
                let here = self.s.step.as_deref().and_then(|s| flow.step_pos(s));
                if let (Some(back), Some(here)) = (reopened, here)
                    && back < here
                {
                    self.s.step = Some(flow.steps[back].id.to_string());
                    self.awaiting = false;
                    self.pos_gen += 1;
                }
                if let Some(h) = flow.hooks.on_data_update.clone() {
                    let cx = self.cx();
                    let what = || format!("on_data_update hook of flow `{}`", flow.id);
                    super::guard::hook(h.call(&cx), what).await?;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "model data rejected by the data type");
                self.rejected.push(e.to_string());
                self.notes
                    .push(format!("Not stored: {e}. Ask the user again for it."));
            }
        }
        Ok(())
    }

    /// The values in `patch` that replace a different stored value (the user corrected
    /// them), as (field, old, new); the fields of steps that `depends_on` a corrected
    /// field are cleared in the same patch, so those steps ask again (the first of them
    /// is returned too).
    pub(crate) fn corrections(
        &self,
        flow: &Flow<D, C>,
        patch: &mut Map<String, Value>,
    ) -> (Vec<(String, String, String)>, Option<usize>) {
        let Ok(Value::Object(current)) = serde_json::to_value(&self.s.data) else {
            return (Vec::new(), None);
        };
        let shown = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let corrected: Vec<(String, String, String)> = patch
            .iter()
            .filter_map(|(k, new)| {
                let old = current.get(k).filter(|o| !o.is_null())?;
                (old != new).then(|| (k.clone(), shown(old), shown(new)))
            })
            .collect();
        let mut first = None;
        for (j, step) in flow.steps.iter().enumerate() {
            if !step
                .depends_on
                .iter()
                .any(|d| corrected.iter().any(|(f, ..)| f == d.as_ref()))
            {
                continue;
            }
            for f in &step.collect {
                let present = current.get(f.as_ref()).is_some_and(|v| !v.is_null());
                if present && !patch.contains_key(f.as_ref()) {
                    tracing::info!(field = %f, step = %step.id, "cleared: a field it depends on was corrected");
                    patch.insert(f.to_string(), Value::Null);
                    first = first.or(Some(j));
                }
            }
        }
        (corrected, first)
    }

    /// Judge each value the model extracted, without side effects (the live-streaming
    /// decision simulates the turn with it too).
    pub(crate) fn screen(
        &self,
        flow: &Flow<D, C>,
        data: Map<String, Value>,
    ) -> Vec<(Extracted, Verdict)> {
        // Read when a value needs it: most turns extract nothing to ground.
        let mut evidence = None;
        read_extraction(&self.a.schema, data)
            .into_iter()
            .map(|x| {
                if !flow.collectable.iter().any(|f| f.as_ref() == x.field) {
                    return (x, Verdict::NotCollected);
                }
                let mut x = x;
                let mut inferred = false;
                if self.a.config.grounding
                    && let Some(prop) = self.a.schema.property(&x.field)
                {
                    let ev: &Evidence<'_> = evidence.get_or_insert_with(|| self.evidence());
                    match ev.check(prop, &x.value, x.quote.as_deref()) {
                        Grounding::Grounded => {}
                        Grounding::Inferred => inferred = true,
                        Grounding::Unsupported(r) => match self.date_from_message(&x.value, ev) {
                            // A wrong date, while the message names one day: that day.
                            Some(day) => {
                                tracing::info!(field = %x.field, model = %x.value, %day, "date corrected from the user's words");
                                x.value = Value::String(day);
                            }
                            None => return (x, Verdict::Ungrounded(r)),
                        },
                    }
                }
                match self.a.schema.admit(&x.field, &x.value) {
                    Err(r) => match self.admissible_day_said(&x.field, &x.value) {
                        // "July 1st" written as this year's past day, for a field that
                        // refuses the past: the next July 1st is what the user meant.
                        Some((day, v)) => {
                            tracing::info!(field = %x.field, model = %x.value, %day, "refused date replaced by the day the user named");
                            x.value = v;
                            (x, Verdict::Keep { inferred })
                        }
                        None => (x, Verdict::Refused(r)),
                    },
                    Ok(v) => {
                        x.value = v;
                        (x, Verdict::Keep { inferred })
                    }
                }
            })
            .collect()
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

    /// A tool the step requires that has not run successfully this turn.
    fn missing_tool(&self, step: &crate::step::Step<D, C>) -> Option<String> {
        step.must_call
            .iter()
            .find(|t| !self.tool_calls.iter().any(|c| c.ok && c.name == t.as_ref()))
            .map(|t| t.to_string())
    }

    /// The day the latest message names, as `YYYY-MM-DD`, when the model wrote a date.
    fn date_from_message(&self, value: &Value, ev: &Evidence<'_>) -> Option<String> {
        let written = value.as_str().and_then(crate::data::validate::parse_date)?;
        let day = resolve_date(self.msg, ev.today)?;
        (day != written).then(|| {
            format!(
                "{}-{:02}-{:02}",
                day.year(),
                u8::from(day.month()),
                day.day()
            )
        })
    }

    /// For a date the field refused: the day the user's latest message naming a day
    /// means (read against the clock, so a day without a year is the next such day),
    /// when it differs from the model's and the field admits it.
    fn admissible_day_said(&self, field: &str, value: &Value) -> Option<(String, Value)> {
        let written = value.as_str().and_then(crate::data::validate::parse_date)?;
        let today = self.a.config.time_zone.local(self.a.clock.now_ms()).date();
        let history = self.s.history.iter().rev().filter(|m| m.role == Role::User);
        std::iter::once(self.msg)
            .chain(history.map(|m| m.content.as_str()))
            .find_map(|text| resolve_date(text, today))
            .filter(|day| *day != written)
            .and_then(|day| {
                let text = crate::data::Date::from(day).to_string();
                let v = self
                    .a
                    .schema
                    .admit(field, &Value::String(text.clone()))
                    .ok()?;
                Some((text, v))
            })
    }

    /// Record a value that was not stored; `refused` values broke a constraint (the
    /// user is told why), the others were never said (the user is simply asked).
    fn drop_value(&mut self, field: String, value: Value, reason: String, refused: bool) {
        let shown = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // Small models repeat these lines to the user: they are written to be safe
        // to repeat.
        self.notes.push(if refused {
            format!("{field} {shown} is not possible: it {reason}. Ask for {field} again.")
        } else {
            format!("{field} is not known yet; ask for it when needed.")
        });
        let d = DroppedValue {
            field,
            value,
            reason,
        };
        self.emit(Event::DataDropped(d.clone()));
        if !refused {
            self.ungrounded.push(d);
        }
    }

    /// What the user said this session, for grounding.
    pub(crate) fn evidence(&self) -> Evidence<'_> {
        let texts = self
            .s
            .history
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .chain(std::iter::once(self.msg));
        let said = self
            .said_memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .said(texts);
        Evidence {
            said,
            today: self.a.config.time_zone.local(self.a.clock.now_ms()).date(),
            defs: self.a.schema.defs(),
        }
    }

    pub(super) fn awaiting_model_step(&self, flow: &Flow<D, C>) -> Option<usize> {
        if !self.awaiting {
            return None;
        }
        let idx = self.s.step.as_deref().and_then(|s| flow.step_pos(s))?;
        matches!(flow.steps[idx].kind, StepKind::Model).then_some(idx)
    }

    /// The first call, made before the walk when this message may carry data: it
    /// extracts and renders the predicted step in one go. When that answer hands the
    /// user to another flow, the flow it lands in reads the same message the same way
    /// (data first: "it's about invoice INV-12" stores the invoice in billing).
    async fn speculate(
        &mut self,
    ) -> Result<(Option<Speculation<D, C>>, Option<usize>), AgentError> {
        let mut hops = 0;
        loop {
            match self.speculate_once().await? {
                Some(done) => return Ok(done),
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
        let alt = self.awaiting_model_step(&flow);
        // A resumed turn has no new words to read: it answers with the tools' results.
        if self.tools_off
            || self.turn_over()
            || (!self.may_extract(&flow) && self.deferred.is_empty())
        {
            return Ok(Some((None, alt)));
        }
        let (predicted, _) = self.predict(true).await;
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
                    if self.needs_extraction(&flow) {
                        let data = self.extract_call(&flow).await?;
                        self.absorb_model_data(&flow, data).await?;
                    }
                    return Ok(Some((None, alt)));
                }
                self.speculating = true;
                let out = self
                    .render_call(Target::Step(flow.clone(), j), true, alt)
                    .await;
                self.speculating = false;
                let out = out?;
                spec = Some(Speculation {
                    predicted: Stop::Render(f, j),
                    out,
                    generation: self.aug.generation,
                    clean: true,
                    undo,
                });
            }
            Some(Stop::Closing(f, j)) => {
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
            let data = sp.out.data.take();
            let before = self.notes.len();
            let ungrounded_before = self.ungrounded.len();
            self.absorb_model_data(&flow, data).await?;
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
            if let Some(target) = sp.out.switch_flow.take()
                && self.may_switch_to(&target)
            {
                let said = std::mem::take(&mut sp.out.message);
                self.model_switch(target, said).await?;
                return Ok(None);
            }
        }
        Ok(Some((spec, alt)))
    }

    /// Withdraw what a predicted step's prepare hook added (the step was not entered);
    /// it runs again if the step is entered later this turn.
    fn withdraw_prepare(&mut self, u: PrepareUndo<D, C>) {
        self.aug.append.drain(u.append);
        for name in &u.injected {
            self.aug.tools.retain(|t| t.name() != name);
            if let Some(t) = u.tools_before.iter().find(|t| t.name() == name) {
                self.aug.tools.push(t.clone());
            }
        }
        self.prepared.remove(&u.key);
    }

    fn accepts(&self, sp: &Speculation<D, C>, actual: &Stop, alt: Option<usize>) -> bool {
        // An action asked for in a speculative answer has not run: it is accepted only
        // where it was asked (the predicted step, not a re-ask), and then replayed in a
        // rendering that runs it.
        if sp.generation != self.aug.generation
            || !sp.clean
            || (sp.out.tool_call.is_some() && (sp.out.answer.is_none() || sp.predicted != *actual))
        {
            return false;
        }
        let claimed = sp.out.claimed.as_deref();
        let flow = match actual {
            Stop::Render(f, _) | Stop::Closing(f, _) => self.a.flow(f),
            _ => None,
        };
        let Some(flow) = flow else { return false };
        let id_of = |j: usize| flow.steps[j].id.as_ref();
        match (&sp.predicted, actual) {
            (Stop::Render(f1, j1), Stop::Render(f2, j2)) if f1 == f2 => {
                if j1 == j2 {
                    claimed.is_none_or(|c| c == id_of(*j1))
                } else {
                    alt == Some(*j2) && claimed == Some(id_of(*j2))
                }
            }
            (Stop::Closing(f1, _), Stop::Closing(f2, _)) => f1 == f2,
            _ => false,
        }
    }

    /// How many renderings one turn may make before a redirect is refused: every hop
    /// and every auto step may cause one.
    fn rerender_cap(&self) -> u32 {
        let cfg = &self.a.config;
        cfg.max_transitions_per_turn + cfg.max_auto_steps_per_turn
    }

    /// A model may not send the conversation back to a flow it left earlier in this
    /// turn: two flows each judging the other the better fit would otherwise hand the
    /// user back and forth until the transition cap (code directives are not limited).
    fn may_switch_to(&self, target: &str) -> bool {
        let back = self
            .transitions
            .iter()
            .any(|t| t.from.as_deref() == Some(target));
        if back {
            tracing::info!(
                target,
                "switch_flow back to a flow left this turn; not followed"
            );
        }
        !back
    }

    /// The model asked to move to another flow: its message is not shown but carried
    /// to the next rendering as context (A3 transitions), and the hop counts against
    /// the transition cap, which keeps the message as the reply when reached.
    async fn model_switch(&mut self, target: String, said: String) -> Result<(), AgentError> {
        if !said.is_empty() {
            self.carried = Some(said);
        }
        let src = DirectiveSource::ModelSwitch(target.clone());
        let d = Directive::go_to(target);
        self.record(&src, &d, &[], &[], false);
        self.apply(src, d, Phase::Pre).await
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
        let (mut spec, mut alt) = self.speculate().await?;
        let mut rounds = 0u32;
        let mut claim_retried = false;
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
                    // a reason to tell or a reply the user already saw).
                    let asks = flow.steps[*j].ask.as_deref().filter(|_| {
                        !is_closing && alt != Some(*j) && !self.streamed && self.notes.is_empty()
                    });
                    // An accepted answer with an action is replayed, not reused: the
                    // action runs in that rendering as if the model had just answered.
                    let (reuse, mut replay) = match reuse {
                        Some(mut sp) if sp.out.tool_call.is_some() => (None, sp.out.answer.take()),
                        other => (other, None),
                    };
                    let mut out = match reuse {
                        Some(sp) => sp.out,
                        // A tool already set the reply (or aborted): a new rendering
                        // would be replaced, and could call the tool again.
                        None if self.reply_settled_since(0) => super::model::CallOutcome::default(),
                        None if asks.is_some() => {
                            if self.prepare(&flow, *j).await? || self.turn_over() {
                                continue;
                            }
                            super::model::CallOutcome::default()
                        }
                        None => {
                            if !is_closing && self.prepare(&flow, *j).await? {
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
                            if let Some(target) = out.switch_flow.take()
                                && self.may_switch_to(&target)
                            {
                                if rounds <= self.rerender_cap() {
                                    let said = std::mem::take(&mut out.message);
                                    self.model_switch(target, said).await?;
                                    // The flow handed to reads the message (data first).
                                    (spec, alt) = self.speculate().await?;
                                    continue;
                                }
                                tracing::warn!(
                                    target,
                                    "switch_flow ignored: the turn re-rendered too often"
                                );
                            }
                            out
                        }
                    };
                    if let Some(t) = asks
                        && !self.reply_settled_since(0)
                    {
                        let data = serde_json::to_value(&self.s.data).unwrap_or_default();
                        out.message = crate::template::render(t, &data);
                    }
                    finalize_step = Some((flow.clone(), *j));
                    declined = is_closing && out.declined;
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
                        let correcting = self.correctable();
                        let mut out = self.render_call(Target::Classic, false, None).await?;
                        if let (Some(cf), Some(data)) = (correcting, out.data.take()) {
                            match self.correct_completed(&cf, data).await? {
                                super::correct::Outcome::None => {}
                                // Rendered again: with the note, or inside the flow.
                                super::correct::Outcome::Refused
                                    if rounds <= self.rerender_cap() && !self.streamed =>
                                {
                                    continue;
                                }
                                super::correct::Outcome::Refused => {}
                                super::correct::Outcome::Reopened => continue,
                            }
                        }
                        let picked = out.switch_flow.clone().or_else(|| {
                            match (&self.a.router, self.a.flow_count()) {
                                (
                                    crate::codeflow::Router::SchemaIntent {
                                        fallback: crate::codeflow::Fallback::Flow(f),
                                    },
                                    n,
                                ) if n > 0 => Some(f.clone()),
                                _ => None,
                            }
                        });
                        match picked {
                            Some(f) if rounds <= self.rerender_cap() && !self.streamed => {
                                // The intent replaces the classic reply with the flow's.
                                let src = DirectiveSource::Routing(f.clone());
                                let d = Directive::go_to(f);
                                self.record(&src, &d, &[], &[], false);
                                self.apply(src, d, Phase::Pre).await?;
                                if self.s.code.is_some() {
                                    (String::new(), StoppedReason::NeedsInput, Vec::new())
                                } else {
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
            // then completion of a closing flow (its on_complete chains to next turn).
            if let Some((flow, j)) = &finalize_step
                && let Some(h) = flow.steps[*j].finalize.clone()
            {
                let d = {
                    let cx = self.cx();
                    let what =
                        || super::guard::of_step("finalize hook", &flow.id, &flow.steps[*j].id);
                    super::guard::hook(h.call(&cx), what).await?
                };
                self.post_bus.push((
                    DirectiveSource::Finalize(flow.steps[*j].id.as_ref().to_owned()),
                    d,
                ));
            }
            let bus = std::mem::take(&mut self.post_bus);
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
            if let Some(r) = self.post_reply.take() {
                message = r;
                stopped = StoppedReason::Reply;
            }
            if matches!(self.stopped, Some(StoppedReason::Aborted { .. })) {
                let st = self.stopped.clone().unwrap_or(StoppedReason::Halt);
                return Ok((String::new(), st, Vec::new()));
            }
            let moved = self.s.flow.is_some()
                && (self.s.flow.as_deref(), self.s.step.as_deref())
                    != (rendered.0.as_deref(), rendered.1.as_deref());
            if moved && self.stopped.is_none() {
                if rounds > self.rerender_cap() {
                    // Redirected after every rendering: stop instead of calling forever.
                    self.stopped = Some(StoppedReason::TransitionCap {
                        blocked: self.s.step.clone().unwrap_or_default(),
                    });
                    return Ok((message, self.stopped.clone().unwrap_or(stopped), deltas));
                }
                // Redirected after the message existed: render the new position, with
                // this message carried as unsent context.
                if !message.is_empty() {
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
            // A model-written reply the user has not seen yet loses what a model running
            // on adds: sentences said twice, a last sentence the length limit cut.
            if stopped != StoppedReason::Reply
                && !self.streamed
                && let Some(t) = crate::reply::tidy(&message, self.a.config.max_reply_chars)
            {
                tracing::debug!(before = %message, after = %t, "reply tidied");
                message = t;
            }
            // A model-written reply may claim only what the state holds (claim guards,
            // checked after this turn's tools and hooks wrote their data): rendered
            // again once, told why; then the claiming sentences are withheld.
            if stopped != StoppedReason::Reply
                && !message.is_empty()
                && !self.a.claim_guards.is_empty()
            {
                let present = |f: &str| {
                    self.a
                        .schema
                        .index_of(f)
                        .is_some_and(|i| self.is_present(i))
                };
                if let Some(u) = crate::claim::unsupported(&self.a.claim_guards, &message, &present)
                {
                    let here = finalize_step
                        .as_ref()
                        .filter(|(f, _)| self.s.flow.as_deref() == Some(f.id.as_ref()))
                        .map(|(f, j)| (f.id.to_string(), f.steps[*j].id.to_string()));
                    if let Some(at) = here
                        && !claim_retried
                        && !self.streamed
                        && rounds <= self.rerender_cap()
                    {
                        claim_retried = true;
                        let missing: Vec<&str> = u.missing.iter().map(|f| f.as_ref()).collect();
                        self.notes.push(format!(
                            "Your draft said \"{}\", which is not so yet ({} not set). Reply without saying it.",
                            u.said,
                            missing.join(", ")
                        ));
                        self.awaiting = false;
                        self.landed = Some(at);
                        continue;
                    }
                    let (kept, removed) =
                        crate::claim::withhold(&self.a.claim_guards, &message, &present);
                    tracing::warn!(
                        ?removed,
                        "reply claimed what the state does not hold; withheld"
                    );
                    self.withheld.extend(removed);
                    message = kept;
                }
            }
            return Ok((message, stopped, deltas));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_memo_normalises_once_and_again_when_the_messages_change() {
        let mut memo = SaidMemo::default();
        let first = memo.said(["Lisbon, please", "Lisbon, please", "2 guests"].into_iter());
        assert_eq!(&*first, [" lisbon please ", " 2 guests "]);
        let again = memo.said(["Lisbon, please", "Lisbon, please", "2 guests"].into_iter());
        assert!(Arc::ptr_eq(&first, &again));
        let changed = memo.said(["Lisbon, please", "3 guests"].into_iter());
        assert_eq!(&*changed, [" lisbon please ", " 3 guests "]);
        let shorter = memo.said(["Lisbon, please"].into_iter());
        assert_eq!(&*shorter, [" lisbon please "]);
        assert!(memo.said(std::iter::empty()).is_empty());
    }
}
