//! Reading a respond answer into what the turn acts on: the reply, the step the reply
//! claims, the conditions judged, an action to run, and the [`Command`]s the model
//! read in the user's message (the conversion documented in [`crate::command`]).
//! What becomes of each command is decided in `pipeline/commands.rs`.

use std::sync::Arc;

use super::CallOutcome;
use super::answer::{Action, RespondOut, claimed_step, read_action};
use crate::command::Command;
use crate::data::{AgentContext, AgentData, read_extraction};
use crate::flow::Flow;
use crate::pipeline::Turn;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The answer `out` of a call rendered for `flow` (at the target and pending
    /// step of `pending`), judging `conditions`, with `message` its reply. `held`:
    /// the step's tools were held from this answer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn understand(
        &self,
        mut out: RespondOut,
        message: String,
        flow: &Option<Arc<Flow<D, C>>>,
        pending: &Option<(Arc<str>, usize)>,
        intents: &Option<Vec<(String, String)>>,
        conditions: &[String],
        held: bool,
    ) -> Result<CallOutcome, String> {
        let mut commands = Vec::new();
        let read_values = out.values_read();
        // Values: the `data` object's, then those written out as commands.
        if let Some(data) = out.values()? {
            commands.extend(read_extraction(&self.a.schema, data).into_iter().map(|x| {
                Command::SetValue {
                    field: x.field,
                    value: x.value,
                    words: x.quote,
                }
            }));
        }
        let claimed = match (flow, pending) {
            (Some(f), Some((target, a))) => claimed_step(
                out.step.as_deref(),
                out.reply_asks_for.as_deref(),
                f,
                target,
                &f.steps[*a].id,
            )
            .map(str::to_owned),
            _ => None,
        };
        // A flow to start: another flow judged a yes in `handoff`, or one named
        // (`switch_flow`, a `start_flow` command); only a flow the active one may hand
        // over to (the schema lists them) is followed, and two or more ask which one
        // the user means (clarification). Without an active flow, a schema intent
        // among the listed ones.
        let ids = flow
            .as_ref()
            .map_or(&[][..], |f| &self.a.switch_ids[f.index][..]);
        let mut starts = out.handoff_targets(ids);
        // The digression check sorted the message for this flow and found no other
        // flow: its reading stands (a small model's hand-over judgement in the full
        // call is the one it replaces).
        if !starts.is_empty() && flow.as_ref().is_some_and(|f| self.sorted == Some(f.index)) {
            tracing::info!(
                ?starts,
                "the digression check found no other flow; the answer's hand-over is not followed"
            );
            starts.clear();
        }
        starts.retain(|t| {
            let known = ids.iter().any(|id| id == t);
            if !known {
                tracing::warn!(target = %t, "the answer starts no flow the active one hands over to; ignored");
            }
            known
        });
        let intent = out.intent.filter(|i| {
            intents
                .as_ref()
                .is_some_and(|ids| ids.iter().any(|(id, _)| id == i))
        });
        match starts.len() {
            0 => commands.extend(intent.map(|flow| Command::StartFlow { flow })),
            1 => commands.extend(starts.pop().map(|flow| Command::StartFlow { flow })),
            _ => commands.push(Command::Clarify { flows: starts }),
        }
        // Agree or decline, from the consent form of `action` or written out.
        let mut tool_call = None;
        match out.action.map(|v| read_action(v, self.calls)).transpose()? {
            None | Some(Action::None) => {}
            Some(Action::Declined) => commands.push(Command::Decline),
            Some(Action::Call(c, agreed)) => {
                if agreed {
                    commands.push(Command::Agree);
                }
                tool_call = Some(c);
            }
        }
        // What else the user asks: stop the flow, a person, the last message again.
        let asked = (out.cancel == Some(true))
            .then_some(Command::CancelFlow)
            .into_iter()
            .chain(match out.is_asking_for.as_deref() {
                Some("a_person") => Some(Command::AskForHuman),
                Some("your_last_message_again") => Some(Command::Repeat),
                Some(super::schema::SKIP_QUESTION) => Some(Command::SkipQuestion),
                _ => None,
            });
        let written = out.commands.into_iter().flatten().filter(|c| {
            matches!(
                c,
                Command::Agree
                    | Command::Decline
                    | Command::CancelFlow
                    | Command::AskForHuman
                    | Command::Repeat
                    | Command::SkipQuestion
            )
        });
        for c in asked.chain(written) {
            if (flow.is_some() || c != Command::CancelFlow) && !commands.contains(&c) {
                commands.push(c);
            }
        }
        let judged = out.conditions.unwrap_or_default();
        let verdicts = conditions
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), judged.verdict(i)))
            .collect();
        Ok(CallOutcome {
            message,
            deltas: Vec::new(),
            commands,
            read_values,
            claimed,
            verdicts,
            // Not agreed to (checked on its own): declined, natively too.
            held: tool_call.is_none() && (held || self.not_agreed),
            tool_call,
            answer: None,
        })
    }
}
