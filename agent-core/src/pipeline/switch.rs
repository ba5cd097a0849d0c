//! A flow switch the model asked for (its message carried, unsent, to the next
//! rendering), not followed back to a flow left this turn, and the cap on how often
//! one turn renders again.

use super::{Phase, Turn};
use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::response::DirectiveSource;

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

    /// The model asked to move to another flow: its message is not shown but carried
    /// to the next rendering as context (A3 transitions), and the hop counts against
    /// the transition cap, which keeps the message as the reply when reached.
    pub(super) async fn model_switch(
        &mut self,
        target: String,
        said: String,
    ) -> Result<(), AgentError> {
        if !said.is_empty() {
            self.carried = Some(said);
        }
        let src = DirectiveSource::ModelSwitch(target.clone());
        let d = Directive::go_to(target);
        self.record(&src, &d, &[], &[], false);
        self.apply(src, d, Phase::Pre).await
    }
}
