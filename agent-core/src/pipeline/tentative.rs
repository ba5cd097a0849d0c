//! Values the user confirms. A value the model read that the user's words do not
//! show (no literal mention, nothing a field's resolver reads as it: "me and my
//! husband" for 2 guests, "Naples, Italy" for "Naples") is neither stored nor
//! dropped: it is held, the reply shows it back with a question the code writes, and
//! the user's next message settles it before anything else reads that message:
//! a yes stores it (through the same write as any value, hooks included), anything
//! else leaves it unstored and reported, and a new value for the field replaces it.
//! Whether the message is a yes is read by code for a plain yes and otherwise asked
//! of the model in a short call of its own (`model/agree.rs`): a phrasing no list
//! knows still gets an answer.

use serde_json::{Map, Value};

use super::Turn;
use super::consent::plainly_agrees;
use super::text::join;
use crate::command::Command;
use crate::data::{AgentContext, AgentData, Extracted};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::response::TentativeValue;

/// Why a tentative value the user did not agree to is not stored.
const NOT_CONFIRMED: &str = "the user did not confirm it";

/// A value as the user reads it.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Hold `x`, read for `flow`, until the user confirms it (a value held before
    /// for the same field is replaced).
    pub(super) fn hold_tentative(&mut self, flow: &Flow<D, C>, x: Extracted) {
        let replaces = serde_json::to_value(&self.s.data)
            .ok()
            .and_then(|mut d| d.get_mut(&x.field).map(Value::take))
            .filter(|v| !v.is_null());
        self.tentative.retain(|t| t.field != x.field);
        self.tentative.push(TentativeValue {
            field: x.field,
            value: x.value,
            words: x.quote,
            replaces,
            flow: flow.id.to_string(),
        });
    }

    /// Settle the values the last reply showed back, on the user's message: stored on
    /// a yes, reported as not stored otherwise. Runs before the message is read for
    /// anything else, so the reply and the walk see the settled state.
    pub(super) async fn settle_tentative(&mut self) -> Result<(), AgentError> {
        if self.s.tentative.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.s.tentative);
        let flow = self.s.flow.as_deref().and_then(|f| self.a.flow(f)).cloned();
        let agreed = plainly_agrees(self.msg, &[]) || self.agrees_with_last_question().await?;
        self.handled(if agreed {
            Command::Agree
        } else {
            Command::Decline
        });
        // A yes answers the check, not the question of the step the check replaced:
        // the walk goes on as from a step reached anew. Anything else is read as the
        // answer to that step's question ("no, 5 of us"; "5"), which it may carry.
        if agreed {
            self.awaiting = false;
        }
        let mut patch = Map::new();
        let mut words = Vec::new();
        for t in held {
            let collects = flow.as_ref().is_some_and(|f| {
                f.id.as_ref() == t.flow && f.collectable.iter().any(|c| c.as_ref() == t.field)
            });
            if agreed && collects {
                tracing::info!(field = %t.field, value = %t.value, "tentative value confirmed");
                words.push((t.field.clone(), t.words));
                patch.insert(t.field, t.value);
            } else {
                let reason = if agreed {
                    format!("the flow `{}` that collects it is no longer active", t.flow)
                } else {
                    NOT_CONFIRMED.to_owned()
                };
                tracing::info!(field = %t.field, value = %t.value, %reason, "tentative value not stored");
                self.drop_value(t.field, t.value, reason, false);
            }
        }
        match flow {
            Some(f) if !patch.is_empty() => self.store_values(&f, patch, words).await,
            _ => Ok(()),
        }
    }

    /// Show this turn's tentative values back to the user and keep them for the next
    /// message. The reply becomes what changed and the question the code writes
    /// ("Noted: Lisbon. Just to check: guests 3. Is that right?"): a reply the
    /// model wrote with the value in view may state it as settled. Where a tool ran
    /// this turn (its outcome is the model's reply to tell), the reply has something
    /// else to say (a value refused with the reason) or text was already streamed,
    /// the question is added to the model's reply instead.
    pub(super) fn show_tentative(&mut self, message: &mut String, deltas: &mut Vec<String>) {
        if self.tentative.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.tentative);
        // A message that asked for something else (to hear the last message again, a
        // person, to stop) answered no question of the flow: a value read from it
        // that its words do not show was made up, and the reply is that pattern's.
        let other = self
            .commands
            .iter()
            .find(|c| {
                matches!(
                    c,
                    Command::Repeat | Command::AskForHuman | Command::CancelFlow
                )
            })
            .map(Command::name);
        let mut kept = Vec::with_capacity(held.len());
        for t in held {
            if let Some(c) = other {
                let reason = format!("the message was read as `{c}`, not as a value");
                self.drop_value(t.field, t.value, reason, false);
            } else if self.s.flow.as_deref() == Some(t.flow.as_str()) {
                // Only for the flow that read it, while it is active.
                kept.push(t);
            } else {
                let reason = format!("the flow `{}` that read it is no longer active", t.flow);
                self.drop_value(t.field, t.value, reason, false);
            }
        }
        if kept.is_empty() {
            return;
        }
        let label = |field: &str| self.value_label(field);
        // A day as a summary says it ("check in Thursday 1 July 2027").
        let said = |field: &str, v: &Value| shown(&self.spoken(field, v));
        let items: Vec<String> = kept
            .iter()
            .map(|t| match &t.replaces {
                Some(old) => format!(
                    "{} {} (instead of {})",
                    label(&t.field),
                    said(&t.field, &t.value),
                    said(&t.field, old)
                ),
                None => format!("{} {}", label(&t.field), said(&t.field, &t.value)),
            })
            .collect();
        let check = format!("Just to check: {}. Is that right?", items.join("; "));
        // Values dropped as unsaid are not told (the question asks for them), so their
        // notes leave the reply to code.
        let to_tell = self.notes.len() > self.ungrounded.len();
        let did_more = self.streamed || !self.tool_calls.is_empty() || to_tell;
        if did_more {
            *message = join(&[std::mem::take(message), check]);
        } else {
            self.ack_before = Some(check.clone());
            *message = check;
        }
        deltas.clear();
        self.s.tentative = kept;
    }
}
