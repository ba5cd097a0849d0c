//! Live streaming: whether the reply now arriving is certainly the turn's message, so
//! its text can reach the consumer as it streams (a dry walk with the decisions
//! already streamed for a speculative call).

use serde_json::Map;

use super::answer::{RespondOut, claimed_step};
use crate::data::{AgentContext, AgentData};
use crate::pipeline::Turn;
use crate::pipeline::screen::Verdict;
use crate::pipeline::walk::Stop;

/// What a rendering call renders, for deciding mid-stream whether its reply is final.
pub(crate) struct LiveTarget {
    pub(super) target: Stop,
    pub(super) alt: Option<usize>,
    pub(super) speculative: bool,
    /// The rules in its prompt (`Turn::rules_for_now`).
    pub(super) rules: String,
    pub(super) conditions: Vec<String>,
    pub(super) held: bool,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether the reply now starting to stream is certainly the turn's message, so its
    /// text can reach the consumer as it arrives. Only when nothing that runs after the
    /// call can replace or redirect it (no tool directive so far, no `finalize` on the
    /// step, no `on_complete` on a closing flow, no post-phase signal), and, for a
    /// speculative call, when a dry walk with the decisions already streamed (`head`:
    /// data, verdicts, claimed step) lands on the rendered step through hook-free steps.
    pub(super) async fn live_ok(&mut self, lt: &LiveTarget, head: Option<&str>) -> bool {
        // What a reply may state is read from the whole reply after the tools ran: it
        // streams once checked.
        if !self.post_bus.is_empty()
            || !self.a.claim_guards.is_empty()
            || !self.a.outcomes.is_empty()
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
        let Ok(mut out) = serde_json::from_str::<RespondOut>(head) else {
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
        if let Ok(Some(d)) = out.values() {
            for (x, verdict) in self.screen(&flow, d, None) {
                match verdict {
                    Verdict::Keep { .. } => {
                        patch.insert(x.field, x.value);
                    }
                    Verdict::NotCollected => {}
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
        let (dry, clean) = self.predict(false, None).await;
        // The rules of the step it lands on, with these values: those of its prompt?
        let same_rules = match &dry {
            Some(Stop::Render(_, j)) => self.rules_for_now(Some(&flow), Some(*j)) == lt.rules,
            Some(Stop::Closing(..)) => self.rules_for_now(Some(&flow), None) == lt.rules,
            _ => true,
        };
        self.s.data = saved_data;
        self.present = saved_present;
        self.judged = saved_judged;
        let id = |j: usize| flow.steps[j].id.as_ref();
        let claimed = match (&lt.target, lt.alt) {
            (Stop::Render(_, j), Some(a)) if a != *j => claimed_step(
                out.step.as_deref(),
                out.reply_asks_for.as_deref(),
                &flow,
                id(*j),
                id(a),
            ),
            _ => None,
        };
        clean
            && same_rules
            && match (&lt.target, dry) {
                (Stop::Render(f1, j1), Some(Stop::Render(f2, j2))) if *f1 == f2 => {
                    (*j1 == j2 && claimed.is_none_or(|c| c == id(*j1)))
                        || (*j1 != j2 && self.fallback_taken(&flow, lt.alt, j2, claimed))
                }
                (Stop::Closing(f1, _), Some(Stop::Closing(f2, _))) => *f1 == f2,
                _ => false,
            }
    }
}
