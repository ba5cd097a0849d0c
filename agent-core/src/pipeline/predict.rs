//! The dry walk: which step will speak, predicted without running any hook, before
//! the model call (the speculative rendering) or while a reply streams (whether it
//! is final).

use super::Turn;
use super::guard::{self, of_step};
use super::walk::{Next, Stop, needs_input};
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::step::StepKind;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Predict, without running hooks, which step will speak. With `assume_answer`,
    /// the awaiting step's `collect` fields count as given, those the message could
    /// state ([`crate::data::spot`]) (the prediction made before
    /// the model call); without, the data as it is now (the check made while a reply
    /// streams). Returns `None` when the walk cannot be known without running code
    /// (an unjudged condition, a directive target, a missing required field), and
    /// whether every step passed on the way is free of hooks (so nothing can redirect).
    /// `ahead` is an unasked step to read as answered
    /// ([`Turn::unasked_model_step`]), as an awaiting one is.
    pub(crate) async fn predict(
        &mut self,
        assume_answer: bool,
        ahead: Option<usize>,
    ) -> (Option<Stop>, bool) {
        let Some(flow) = self.flow() else {
            return (None, false);
        };
        let mut present = self.present.clone();
        let mut idx = self.step_idx(&flow);
        let mut awaiting = self.awaiting || (assume_answer && ahead == Some(idx));
        if awaiting && assume_answer {
            for &i in &flow.steps[idx].collect_idx {
                if self.is_readable(i) {
                    present.insert(i);
                }
            }
        }
        let saved = std::mem::replace(&mut self.present, present);
        let mut out = None;
        let mut clean = true;
        let mut landed = self.landed.as_ref().and_then(|(f, s)| {
            (f.as_str() == flow.id.as_ref())
                .then(|| flow.step_pos(s))
                .flatten()
        });
        let mut autos = 0u32;
        for _ in 0..(flow.steps.len() * 2 + 2) {
            let step = &flow.steps[idx];
            if awaiting {
                awaiting = false;
                if matches!(step.kind, StepKind::Model)
                    && needs_input(step, &self.present, &self.skipped)
                {
                    out = Some(Stop::Render(flow.id.clone(), idx));
                    break;
                }
                let next = self.advance(&flow, idx, true, true).await;
                match predicted_next(next, &mut landed) {
                    Ok(Some(j)) => idx = j,
                    Ok(None) => {
                        out = self.predicted_end(&flow, idx);
                        break;
                    }
                    Err(()) => break,
                }
                continue;
            }
            // A hook that already ran this turn cannot redirect again.
            let key = (flow.id.clone(), step.id.clone());
            if (step.on_enter.is_some() && !self.entered.contains(&key))
                || (step.prepare.is_some() && !self.prepared.contains(&key))
            {
                clean = false;
            }
            let skipped = {
                let cx = self.cx();
                step.skip.as_ref().is_some_and(|p| {
                    guard::test(p, &cx, || of_step("`skip` predicate", &flow.id, &step.id))
                })
            };
            let next = if skipped {
                self.advance(&flow, idx, false, true).await
            } else {
                match &step.kind {
                    StepKind::Reply(_) => {
                        out = Some(Stop::ReplyStep(flow.id.clone(), idx));
                        break;
                    }
                    StepKind::Model
                        if step.requires_idx.iter().any(|&i| !self.present.contains(i)) =>
                    {
                        break;
                    }
                    StepKind::Model
                        if landed == Some(idx)
                            || needs_input(step, &self.present, &self.skipped)
                            || step.collect_idx.is_empty() =>
                    {
                        out = Some(Stop::Render(flow.id.clone(), idx));
                        break;
                    }
                    StepKind::Auto => {
                        autos += 1;
                        if autos > self.a.config.max_auto_steps_per_turn {
                            break;
                        }
                        self.advance(&flow, idx, true, true).await
                    }
                    _ => self.advance(&flow, idx, true, true).await,
                }
            };
            match predicted_next(next, &mut landed) {
                Ok(Some(j)) => idx = j,
                Ok(None) => {
                    out = self.predicted_end(&flow, idx);
                    break;
                }
                Err(()) => break,
            }
        }
        self.present = saved;
        // The step that speaks is not "passed on the way": its hooks ran or will run
        // before the call that renders it.
        (out, clean)
    }

    /// A dry walk reached the end: a closing, unless a required field is missing (the
    /// real walk would jump back; not predicted).
    fn predicted_end(&self, flow: &Flow<D, C>, idx: usize) -> Option<Stop> {
        if flow.required_idx.iter().any(|&i| !self.present.contains(i)) {
            return None;
        }
        Some(Stop::Closing(flow.id.clone(), idx))
    }
}

/// The next index of a dry walk: `Ok(None)` at the flow's end, `Err` when unknown.
fn predicted_next(
    next: Result<Next, AgentError>,
    landed: &mut Option<usize>,
) -> Result<Option<usize>, ()> {
    match next {
        Ok(Next::Step(j)) => Ok(Some(j)),
        Ok(Next::Landed(j)) => {
            *landed = Some(j);
            Ok(Some(j))
        }
        Ok(Next::End) => Ok(None),
        _ => Err(()),
    }
}
