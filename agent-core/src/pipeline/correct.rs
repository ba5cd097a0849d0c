//! Corrections of a completed flow: for a few turns after a flow completes, the
//! classic reply also reads the user's message for new values of the flow's fields
//! ("actually, make it Porto"). A correction is never silently dropped: it is refused
//! with a reply that says so, or it reopens the flow (per [`Corrections`]).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Turn;
use super::reentry::Reentry;
use super::screen::Verdict;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::{Corrections, Flow};
use crate::response::DirectiveSource;

/// What a message did to a completed flow.
pub(crate) enum Outcome {
    /// No change of a stored value.
    None,
    /// Refused: the reply is rendered again with a note saying so.
    Refused,
    /// The flow is active again with the new value.
    Reopened,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The completed flow whose fields this turn's classic reply reads for corrections:
    /// it completed in one of the last `correction_window` turns, collects fields, and
    /// no flow is active.
    pub(crate) fn correctable(&self) -> Option<Arc<Flow<D, C>>> {
        let window = u64::from(self.a.config.correction_window);
        let last = self.s.last_completed.as_ref()?;
        let age = self.s.turns.saturating_sub(last.turn);
        if self.correction_done
            || self.s.flow.is_some()
            || self.s.code.is_some()
            || age == 0
            || age > window
        {
            return None;
        }
        self.a
            .flow(&last.flow)
            .filter(|f| !f.collectable.is_empty())
            .cloned()
    }

    /// Judge the values the classic reply read for the completed `flow`: only said
    /// values that replace a different stored one count; then refuse or reopen.
    pub(crate) async fn correct_completed(
        &mut self,
        flow: &Arc<Flow<D, C>>,
        data: Map<String, Value>,
    ) -> Result<Outcome, AgentError> {
        self.correction_done = true;
        let mut patch = Map::new();
        let mut words = Vec::new();
        for (x, verdict) in self.screen(flow, data, None) {
            if let Verdict::Keep { .. } = verdict {
                words.push((x.field.clone(), x.quote));
                patch.insert(x.field, x.value);
            }
        }
        let (corrected, _) = self.corrections(flow, &mut patch);
        if corrected.is_empty() {
            return Ok(Outcome::None);
        }
        match flow.corrections {
            Corrections::Refuse => {
                for (field, from, to) in corrected {
                    tracing::info!(flow = %flow.id, %field, %from, %to, "correction of a completed flow refused");
                    self.rejected.push(format!(
                        "{field} {to} not applied: {} is complete",
                        flow.title
                    ));
                    self.notes.push(format!(
                        "The {} is already complete and cannot be changed: {field} stays {from}. Tell the user so.",
                        flow.title
                    ));
                    self.to_tell = true;
                }
                Ok(Outcome::Refused)
            }
            Corrections::Reopen => {
                let next =
                    self.a
                        .schema
                        .apply(&self.s.data, &patch)
                        .map_err(|e| AgentError::Data {
                            source_name: format!("correction of flow `{}`", flow.id),
                            error: e,
                        })?;
                let mut fields = Vec::with_capacity(corrected.len());
                for (field, from, to) in corrected {
                    tracing::info!(flow = %flow.id, %field, %from, %to, "correction reopens a completed flow");
                    fields.push(field);
                }
                self.s.data = next;
                self.refresh_present();
                let stored = words
                    .into_iter()
                    .filter_map(|(f, w)| Some((f.clone(), patch.get(&f)?.clone(), w)))
                    .collect();
                self.record_values(stored, &fields);
                self.s.last_completed = None;
                let src = DirectiveSource::Routing(flow.id.to_string());
                self.enter_flow_as(flow.id.as_ref(), None, src, Reentry::Keep)
                    .await?;
                Ok(Outcome::Reopened)
            }
        }
    }
}
