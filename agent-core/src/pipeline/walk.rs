//! The step walk: from the awaiting step (answered by this message) or a freshly
//! entered step, through satisfied and auto steps, branches and linear successors, to
//! the step that speaks this turn. The dry variant that predicts that step before the
//! model call without running any hook is in `predict.rs`.

use std::sync::Arc;

use super::guard::{self, of_branch, of_step};
use super::{Phase, Turn};
use crate::branch::Target;
use crate::data::{AgentContext, AgentData, FieldSet};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::flow::Flow;
use crate::hook::Cx;
use crate::response::{DirectiveSource, Event, StepRef, StoppedReason};
use crate::step::{Step, StepKind};

/// Where the walk stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A model step of the active flow speaks.
    Render(Arc<str>, usize),
    /// The active flow reached its end: a closing message, then completion.
    Closing(Arc<str>, usize),
    /// A reply step speaks verbatim.
    ReplyStep(Arc<str>, usize),
    /// Nothing to render in a flow (no active flow, abort, halt, verbatim reply, cap).
    Done,
}

/// What comes after a step.
pub(super) enum Next {
    Step(usize),
    End,
    /// A directive moved the position; re-read it.
    Moved,
    /// A `when` condition is not judged yet (dry walk only).
    Unknown,
    /// A branch jumped to this step (dry walk only): it speaks even if satisfied.
    Landed(usize),
}

/// Whether a step can run with the data present (`requires`), and whether its
/// `collect` fields are all filled.
pub(super) fn needs_input<D, C>(step: &Step<D, C>, present: &FieldSet, skipped: &FieldSet) -> bool {
    if step.requires_idx.iter().any(|&i| !present.contains(i)) {
        return true;
    }
    !step.collect_idx.is_empty()
        && step
            .collect_idx
            .iter()
            .any(|&i| !present.contains(i) && !skipped.contains(i))
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    pub(super) fn step_idx(&self, flow: &Flow<D, C>) -> usize {
        self.s
            .step
            .as_deref()
            .and_then(|s| flow.step_pos(s))
            .unwrap_or_else(|| flow.entry())
    }

    fn mark_executed(&mut self, flow: &Flow<D, C>, idx: usize) {
        let r = StepRef {
            flow: flow.id.as_ref().to_owned(),
            step: flow.steps[idx].id.as_ref().to_owned(),
        };
        self.emit(Event::StepEntered(r.clone()));
        self.executed.push(r);
    }

    /// Run a step's `on_enter` once per turn; true when it moved the position.
    pub(crate) async fn enter_hooks(
        &mut self,
        flow: &Arc<Flow<D, C>>,
        idx: usize,
    ) -> Result<bool, AgentError> {
        let step = &flow.steps[idx];
        let key = (flow.id.clone(), step.id.clone());
        if !self.entered.insert(key) {
            return Ok(false);
        }
        let before = self.pos_gen;
        if let Some(h) = step.on_enter.clone() {
            let d = {
                let cx = self.cx();
                guard::hook(h.call(&cx), || of_step("on_enter hook", &flow.id, &step.id)).await?
            };
            self.emit_pre(DirectiveSource::StepOnEnter(step.id.as_ref().to_owned()), d)
                .await?;
        }
        Ok(self.pos_gen != before || self.turn_over())
    }

    /// Run a step's `prepare` once per turn; true when it moved the position.
    pub(crate) async fn prepare(
        &mut self,
        flow: &Arc<Flow<D, C>>,
        idx: usize,
    ) -> Result<bool, AgentError> {
        let step = &flow.steps[idx];
        let key = (flow.id.clone(), step.id.clone());
        if !self.prepared.insert(key) {
            return Ok(false);
        }
        let before = self.pos_gen;
        if let Some(h) = step.prepare.clone() {
            let d = {
                let cx = self.cx();
                guard::hook(h.call(&cx), || of_step("prepare hook", &flow.id, &step.id)).await?
            };
            self.emit_pre(DirectiveSource::Prepare(step.id.as_ref().to_owned()), d)
                .await?;
        }
        Ok(self.pos_gen != before || self.turn_over())
    }

    /// Run the hooks of the auto steps the walk is certain to pass first: from a
    /// position that does not await an answer, through auto steps without `skip`,
    /// while only the definition (no condition) picks the next one. The walk would
    /// run them before any model call anyway; run now, what they write (a tier, a
    /// flag) is in the data the predicted walk reads, so the one speculative call
    /// renders the step the walk will reach. A hook that moves the position stops
    /// here; the walk goes on from where it put the conversation.
    pub(crate) async fn run_certain_auto_hooks(&mut self) -> Result<(), AgentError> {
        if self.awaiting || self.turn_over() {
            return Ok(());
        }
        let Some(flow) = self.flow() else {
            return Ok(());
        };
        let start = self.s.step.clone();
        let mut idx = self.step_idx(&flow);
        let mut passed = Vec::new();
        for _ in 0..self.a.config.max_auto_steps_per_turn {
            let step = &flow.steps[idx];
            if !matches!(step.kind, StepKind::Auto) || step.skip.is_some() {
                break;
            }
            passed.push(idx);
            // The hooks see the step they belong to as the position, as in the walk.
            self.s.step = Some(step.id.as_ref().to_owned());
            let before = self.pos_gen;
            let moved = self.enter_hooks(&flow, idx).await? || self.prepare(&flow, idx).await?;
            if moved || self.pos_gen != before {
                // The walk starts from the new position: the steps passed here ran.
                for &j in &passed {
                    self.mark_executed(&flow, j);
                }
                return Ok(());
            }
            match fixed_next(&flow, idx) {
                Some(j) => idx = j,
                None => break,
            }
        }
        self.s.step = start;
        Ok(())
    }

    /// The step this message answers, when it is a model step.
    pub(super) fn awaiting_model_step(&self, flow: &Flow<D, C>) -> Option<usize> {
        if !self.awaiting {
            return None;
        }
        let idx = self.s.step.as_deref().and_then(|s| flow.step_pos(s))?;
        matches!(flow.steps[idx].kind, StepKind::Model).then_some(idx)
    }

    /// The step the conversation stands on without having asked it yet (a flow
    /// entered this turn, a position a directive set), when the message may answer it
    /// as if it had: a model step that collects something still missing, with what it
    /// requires, and nothing that runs or decides in code before it is rendered (no
    /// hooks, `skip`, tools, required tools; a code-written `ask` is
    /// still code's when the message does not answer the step) and
    /// not landed on by a branch (which speaks even when satisfied). The speculative
    /// call reads such a step as answered and renders the one after it, with this
    /// one as the fallback to ask instead: "Book a room in Madrid" is answered in one
    /// call, not read for the city and then rendered again for the date.
    pub(super) fn unasked_model_step(&self, flow: &Flow<D, C>) -> Option<usize> {
        if self.awaiting {
            return None;
        }
        let idx = self.step_idx(flow);
        let step = &flow.steps[idx];
        let landed = self
            .landed
            .as_ref()
            .is_some_and(|(f, s)| f.as_str() == flow.id.as_ref() && s.as_str() == step.id.as_ref());
        let plain = matches!(step.kind, StepKind::Model)
            && step.on_enter.is_none()
            && step.prepare.is_none()
            && step.skip.is_none()
            && step.tools.is_empty()
            && step.must_call.is_empty();
        let open = !step.collect_idx.is_empty()
            && step
                .collect_idx
                .iter()
                .any(|&i| !self.present.contains(i) && self.is_readable(i))
            && step.requires_idx.iter().all(|&i| self.present.contains(i));
        (plain && open && !landed).then_some(idx)
    }

    /// A verbatim reply, a halt or a terminal outcome ends the walk.
    pub(crate) fn turn_over(&self) -> bool {
        self.stopped.is_some() || self.reply.is_some() || self.aug.halt
    }

    /// Walk to the step that speaks this turn, running hooks and applying directives.
    pub(crate) async fn walk(&mut self) -> Result<Stop, AgentError> {
        let mut autos = 0u32;
        let mut guard = 0u32;
        loop {
            guard += 1;
            if self.turn_over() || guard > 1000 {
                return Ok(Stop::Done);
            }
            let Some(flow) = self.flow() else {
                return Ok(Stop::Done);
            };
            let idx = self.step_idx(&flow);
            let step = &flow.steps[idx];
            if self.s.step.as_deref() != Some(step.id.as_ref()) {
                self.s.step = Some(step.id.as_ref().to_owned());
            }

            if self.awaiting {
                if matches!(step.kind, StepKind::Model)
                    && needs_input(step, &self.present, &self.skipped)
                {
                    return Ok(Stop::Render(flow.id.clone(), idx));
                }
                self.awaiting = false;
                match self.advance(&flow, idx, true, false).await? {
                    Next::Step(j) => self.s.step = Some(flow.steps[j].id.as_ref().to_owned()),
                    Next::End => {
                        if let Some(stop) = self.end_of_flow(&flow, idx) {
                            return Ok(stop);
                        }
                    }
                    Next::Moved | Next::Unknown | Next::Landed(_) => {}
                }
                continue;
            }

            self.mark_executed(&flow, idx);
            let skipped = {
                let cx = self.cx();
                step.skip.as_ref().is_some_and(|p| {
                    guard::test(p, &cx, || of_step("`skip` predicate", &flow.id, &step.id))
                })
            };
            if skipped {
                match self.advance(&flow, idx, false, false).await? {
                    Next::Step(j) => self.s.step = Some(flow.steps[j].id.as_ref().to_owned()),
                    Next::End => {
                        if let Some(stop) = self.end_of_flow(&flow, idx) {
                            return Ok(stop);
                        }
                    }
                    Next::Moved | Next::Unknown | Next::Landed(_) => {}
                }
                continue;
            }
            match &step.kind {
                StepKind::Auto => {
                    autos += 1;
                    if autos > self.a.config.max_auto_steps_per_turn {
                        self.stopped = Some(StoppedReason::AutoStepCap {
                            step: step.id.as_ref().to_owned(),
                        });
                        return Ok(Stop::Done);
                    }
                    if self.enter_hooks(&flow, idx).await? || self.prepare(&flow, idx).await? {
                        continue;
                    }
                    match self.advance(&flow, idx, true, false).await? {
                        Next::Step(j) => self.s.step = Some(flow.steps[j].id.as_ref().to_owned()),
                        Next::End => {
                            if let Some(stop) = self.end_of_flow(&flow, idx) {
                                return Ok(stop);
                            }
                        }
                        Next::Moved | Next::Unknown | Next::Landed(_) => {}
                    }
                }
                StepKind::Reply(_) => {
                    if self.enter_hooks(&flow, idx).await? {
                        continue;
                    }
                    return Ok(Stop::ReplyStep(flow.id.clone(), idx));
                }
                StepKind::Model => {
                    if self.enter_hooks(&flow, idx).await? {
                        continue;
                    }
                    if step.requires_idx.iter().any(|&i| !self.is_present(i)) {
                        // Cannot run yet: go back to the first step collecting a missing field.
                        let missing: Vec<usize> = step
                            .requires_idx
                            .iter()
                            .copied()
                            .filter(|&i| !self.is_present(i))
                            .collect();
                        if let Some(j) = flow
                            .steps
                            .iter()
                            .position(|s| s.collect_idx.iter().any(|c| missing.contains(c)))
                            && j != idx
                        {
                            self.s.step = Some(flow.steps[j].id.as_ref().to_owned());
                            continue;
                        }
                        return Ok(Stop::Render(flow.id.clone(), idx));
                    }
                    let landed = self.landed.as_ref().is_some_and(|(f, s)| {
                        f.as_str() == flow.id.as_ref() && s.as_str() == step.id.as_ref()
                    });
                    if !landed
                        && !step.collect_idx.is_empty()
                        && !needs_input(step, &self.present, &self.skipped)
                    {
                        // Satisfied by data already given: executed without asking.
                        match self.advance(&flow, idx, true, false).await? {
                            Next::Step(j) => {
                                self.s.step = Some(flow.steps[j].id.as_ref().to_owned())
                            }
                            Next::End => {
                                if let Some(stop) = self.end_of_flow(&flow, idx) {
                                    return Ok(stop);
                                }
                            }
                            Next::Moved | Next::Unknown | Next::Landed(_) => {}
                        }
                        continue;
                    }
                    return Ok(Stop::Render(flow.id.clone(), idx));
                }
            }
        }
    }

    /// The walk reached the end of the flow: close it, unless a required field is
    /// missing, in which case go back to the first step that collects it.
    fn end_of_flow(&mut self, flow: &Arc<Flow<D, C>>, idx: usize) -> Option<Stop> {
        if let Some(&missing) = flow.required_idx.iter().find(|&&i| !self.is_present(i))
            && let Some(j) = flow
                .steps
                .iter()
                .position(|s| s.collect_idx.contains(&missing))
        {
            self.s.step = Some(flow.steps[j].id.as_ref().to_owned());
            self.awaiting = false;
            self.pos_gen += 1;
            return None;
        }
        self.s.step = Some(flow.steps[idx].id.as_ref().to_owned());
        Some(Stop::Closing(flow.id.clone(), idx))
    }

    /// Branches (first match wins), then the linear successor.
    pub(super) async fn advance(
        &mut self,
        flow: &Arc<Flow<D, C>>,
        idx: usize,
        use_branches: bool,
        dry: bool,
    ) -> Result<Next, AgentError> {
        let step = &flow.steps[idx];
        if use_branches {
            for (n, b) in step.branch_table().iter().enumerate() {
                let code_ok = {
                    let cx = self.cx();
                    b.if_
                        .iter()
                        .all(|p| guard::test(p, &cx, || of_branch(n, &flow.id, &step.id)))
                };
                if !code_ok {
                    continue;
                }
                if !b.when.is_empty() {
                    let missing: Vec<String> = b
                        .when
                        .iter()
                        .filter(|w| !self.judged.contains_key(w.as_str()))
                        .cloned()
                        .collect();
                    if !missing.is_empty() {
                        if dry {
                            if missing.iter().all(|m| self.deferred.contains(m)) {
                                // Judged in the speculative call; predicted false.
                                continue;
                            }
                            return Ok(Next::Unknown);
                        }
                        // Judge every remaining condition of the table in one call.
                        let rest = self.due_branch_conditions(step, n);
                        self.judge(rest).await?;
                    }
                    if !b
                        .when
                        .iter()
                        .all(|w| self.judged.get(w.as_str()) == Some(&true))
                    {
                        continue;
                    }
                }
                if dry {
                    return Ok(match &b.then {
                        Target::Step(s) => flow.step_pos(s).map_or(Next::Unknown, Next::Landed),
                        _ => Next::Unknown,
                    });
                }
                let label = match &b.label {
                    Some(l) => format!("{}:{l}", step.id),
                    None => step.id.as_ref().to_owned(),
                };
                let source = DirectiveSource::Branch(label);
                let d = match &b.then {
                    Target::Step(s) => Directive::go_to_step(s.clone()),
                    Target::Flow(f) | Target::Id(f) => Directive::go_to(f.clone()),
                    Target::Directive(d) => d.clone(),
                };
                let has_position = d.position.is_some();
                self.record(&source, &d, &[], &[], false);
                self.apply(source, d, Phase::Pre).await?;
                if has_position || self.turn_over() {
                    return Ok(Next::Moved);
                }
                break;
            }
        }
        self.successor(flow, idx, dry).await
    }

    /// Conditions of a branch table from entry `from` on whose code predicates pass.
    pub(crate) fn due_branch_conditions(&self, step: &Step<D, C>, from: usize) -> Vec<String> {
        let cx = self.cx();
        let flow = self.s.flow.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        for (n, b) in step.branch_table().iter().enumerate().skip(from) {
            if b.if_
                .iter()
                .all(|p| guard::test(p, &cx, || of_branch(n, flow, &step.id)))
            {
                for w in &b.when {
                    if !self.judged.contains_key(w.as_str()) && !out.contains(w) {
                        out.push(w.clone());
                    }
                }
            }
        }
        out
    }

    /// The implicit fork after `idx`: the run of conditional steps (`if`/`when`)
    /// followed by the first unconditional one; the first conditional candidate that
    /// passes wins, else the unconditional one, else the flow ends.
    async fn successor(
        &mut self,
        flow: &Arc<Flow<D, C>>,
        idx: usize,
        dry: bool,
    ) -> Result<Next, AgentError> {
        let candidates = flow.successors(idx);
        if candidates.is_empty() {
            return Ok(Next::End);
        }
        let whens: Vec<String> = {
            let cx = self.cx();
            candidates
                .iter()
                .map(|&j| &flow.steps[j])
                .filter(|s| {
                    s.if_.as_ref().is_none_or(|p| {
                        guard::test(p, &cx, || of_step("`if` predicate", &flow.id, &s.id))
                    })
                })
                .filter_map(|s| s.when.clone())
                .filter(|w| !self.judged.contains_key(w.as_str()))
                .collect()
        };
        let predicted_false = dry && whens.iter().all(|w| self.deferred.contains(w));
        if !whens.is_empty() && !predicted_false {
            if dry {
                return Ok(Next::Unknown);
            }
            self.judge(whens).await?;
        }
        let cx = self.cx();
        let passes = |s: &Step<D, C>, cx: &Cx<'_, D, C>| {
            s.if_
                .as_ref()
                .is_none_or(|p| guard::test(p, cx, || of_step("`if` predicate", &flow.id, &s.id)))
                && s.when
                    .as_ref()
                    .is_none_or(|w| self.judged.get(w.as_str()) == Some(&true))
        };
        let fallback = candidates
            .iter()
            .copied()
            .find(|&j| flow.steps[j].if_.is_none() && flow.steps[j].when.is_none());
        let chosen = candidates
            .iter()
            .copied()
            .filter(|&j| Some(j) != fallback)
            .find(|&j| passes(&flow.steps[j], &cx))
            .or(fallback);
        Ok(chosen.map_or(Next::End, Next::Step))
    }
}

/// The step after `idx` when the definition alone decides it: a first branch entry
/// without conditions that targets a step, or (no branches) a single linear successor.
fn fixed_next<D, C>(flow: &Flow<D, C>, idx: usize) -> Option<usize> {
    let step = &flow.steps[idx];
    match step.branch_table().first() {
        Some(b) if b.is_unconditional() => match &b.then {
            Target::Step(s) => flow.step_pos(s),
            _ => None,
        },
        Some(_) => None,
        None => match flow.successors(idx).as_slice() {
            [j] => Some(*j),
            _ => None,
        },
    }
}
