//! Entering a flow again after it completed: it starts over, without the values it
//! collected last time. Only the fields it owns are reset (those no other flow
//! collects or requires, computed at build); shared fields, such as a name another
//! flow asks for too, are kept.

use super::Turn;
use crate::data::{AgentContext, AgentData, apply_unchecked};
use crate::directive::{Directive, Position};
use crate::error::AgentError;
use crate::response::DirectiveSource;

/// What entering a flow does to the fields it owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reentry {
    /// A flow that completed before starts over (routing, directives, handoffs).
    StartOver,
    /// Keep them: the caller reset them already (before writing a directive's data).
    /// A correction that reopens a completed flow to change one answer keeps what
    /// was said too; it is to enter with this.
    Keep,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether entering `flow_id` now enters a completed declarative flow again (not
    /// the active one, and not blocked by the transition cap).
    pub(crate) fn reenters(&self, flow_id: &str) -> bool {
        let from = match &self.s.code {
            Some(c) => Some(c.flow.as_str()),
            None => self.s.flow.as_deref(),
        };
        from != Some(flow_id)
            && self.hops < self.a.config.max_transitions_per_turn
            && self.a.flow(flow_id).is_some()
            && self.s.completed_flows.iter().any(|f| f == flow_id)
    }

    /// The flow a directive's position enters again, if it does.
    pub(crate) fn reentered_by(&self, d: &Directive) -> Option<String> {
        let target = match &d.position {
            Some(Position::GoTo(g)) => Some(g.flow.as_str()),
            Some(Position::GoToStep(g)) => g.flow.as_deref(),
            _ => None,
        }?;
        self.reenters(target).then(|| target.to_owned())
    }

    /// Reset the fields `flow_id` owns to the values a new session has.
    pub(crate) fn start_over(
        &mut self,
        flow_id: &str,
        source: &DirectiveSource,
    ) -> Result<(), AgentError> {
        let Some(flow) = self.a.flow(flow_id).cloned() else {
            return Ok(());
        };
        if flow.owned_reset.is_empty() {
            return Ok(());
        }
        tracing::debug!(flow = flow_id, fields = ?flow.owned_reset.keys().collect::<Vec<_>>(), "flow entered again: its own fields start over");
        self.s.data = apply_unchecked(&self.s.data, &flow.owned_reset)
            .map_err(|e| AgentError::data(source, e))?;
        self.refresh_present();
        Ok(())
    }
}
