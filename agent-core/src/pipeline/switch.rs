//! A flow switch the model asks for is not followed back to a flow left this turn,
//! and the cap on how often one turn renders again.

use super::Turn;
use crate::data::{AgentContext, AgentData};

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// How many renderings one turn may make before a redirect is refused: every hop
    /// and every auto step may cause one.
    pub(super) fn rerender_cap(&self) -> u32 {
        let cfg = &self.a.config;
        cfg.max_transitions_per_turn + cfg.max_auto_steps_per_turn
    }

    /// A model may not send the conversation back to a flow it left earlier in this
    /// turn: two flows each judging the other the better fit would otherwise hand the
    /// user back and forth until the transition cap (code directives are not limited).
    pub(super) fn may_switch_to(&self, target: &str) -> bool {
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
}
