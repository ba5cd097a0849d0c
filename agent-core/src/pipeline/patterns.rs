//! The repair patterns a respond answer can read besides values and flows, handled in
//! one order: a cancel (`stack.rs`), two flows that fit (clarification), a request for
//! a person (the human handoff), a request to hear the last message again (repeat), a
//! question the user skips.
//!
//! - **Clarification** ([`Command::Clarify`]): the answer started more than one flow.
//!   None starts; the reply, written by code from the flows' titles, asks which one
//!   the user means ("Do you mean appointment booking or prescription renewal?"), and
//!   the active flow stays at its step.
//! - **Human handoff** ([`Command::AskForHuman`]): what the agent's
//!   [`HumanHandoff`] says. Handing over happens at once when the message plainly
//!   asks for a person; a request the model read in a message that names a person in
//!   other words is asked about first ("Do you want me to pass you to a person from our
//!   team?", [`Session::asking_handoff`]), and a yes to that question hands over. A
//!   session handed over ([`Session::handed_off`]) answers every message with the
//!   waiting reply and makes no model call until the host ends the handoff.
//! - **Repeat** ([`Command::Repeat`]): the reply is the agent's last message, written
//!   by code, when the answer read nothing else the message says (no new value, no
//!   flow to start).
//! - **Skip question** ([`Command::SkipQuestion`]): a question whose fields the flow
//!   can do without is passed, and the walk goes on to the next step.
//!
//! When the answer also judges one of the active step's own conditions true, the
//! agent's branch decides and the built-in pattern does not run.
//!
//! [`Session::asking_handoff`]: crate::session::Session::asking_handoff
//! [`Session::handed_off`]: crate::session::Session::handed_off

use super::Turn;
use super::consent::plainly_agrees;
use super::model::CallOutcome;
use crate::agent::HumanHandoff;
use crate::command::Command;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::provider::Role;
use crate::response::StoppedReason;
use crate::session::HandedOff;

/// Words that name a person to talk to, normalised: a request for a person that
/// names one is acted on without asking. Any other phrasing the model reads as such a
/// request is asked about.
const PERSON: &[&str] = &[
    "human",
    "person",
    "someone",
    "somebody",
    "representative",
    "operator",
    "staff",
    "manager",
    "employee",
    "agent",
];

/// The question asked when a request for a person was read in other words.
const ASK_HANDOFF: &str = "Do you want me to pass you to a person from our team?";

/// Whether `message` names a person to talk to.
fn names_a_person(message: &str) -> bool {
    crate::data::ground::normalize(message)
        .split_whitespace()
        .any(|w| PERSON.contains(&w) || w.strip_suffix('s').is_some_and(|w| PERSON.contains(&w)))
}

/// Verbs that ask to be put in touch ("talk to", "speak with", "connect me to").
const TALK: &[&str] = &["talk", "speak", "connect", "transfer", "chat", "through"];

/// Words that may stand beside a person word in a bare request ("a real person
/// please", "human agent", "I want a human").
const FILLER: &[&str] = &[
    "a", "an", "the", "real", "live", "actual", "please", "i", "want", "need", "get", "me", "can",
    "could", "to", "with", "now", "your", "from", "team", "some", "one",
];

/// Whether `message` plainly asks for a person, in the common phrasings code
/// recognises without the model: a verb of talking followed closely by a person
/// ("can I talk to a human?", "connect me with someone from your staff"), or a
/// person word with nothing but filler ("representative please"). "My manager told
/// me to talk to you" is not one: the person comes before the verb.
#[cfg(test)]
pub(super) fn plainly_asks_for_person(message: &str) -> bool {
    said_asks_for_person(&crate::data::ground::normalize(message))
}

/// [`plainly_asks_for_person`] of a message already normalised
/// ([`Turn::said`](crate::pipeline::Turn::said)).
pub(super) fn said_asks_for_person(said: &str) -> bool {
    let person =
        |w: &str| PERSON.contains(&w) || w.strip_suffix('s').is_some_and(|w| PERSON.contains(&w));
    // Each word with whether it names a person, worked out once: both readings need
    // a person, so a message that names none is not one.
    let words: Vec<(&str, bool)> = said.split_whitespace().map(|w| (w, person(w))).collect();
    if !words.iter().any(|(_, p)| *p) {
        return false;
    }
    let after_talk = words
        .iter()
        .enumerate()
        .any(|(i, (w, _))| TALK.contains(w) && words[i + 1..].iter().take(6).any(|(_, p)| *p));
    after_talk || words.iter().all(|(w, p)| *p || FILLER.contains(w))
}

/// What a pattern the model read did to the turn.
pub(super) enum PatternRead {
    /// The turn's reply (written by code), and why the turn stopped.
    Reply(String, StoppedReason),
    /// The position moved (a flow stopped and the one it interrupted resumed, or a
    /// flow started): what was said is in `lead`; the walk goes on from there.
    Moved,
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The patterns in the answer `out`, handled: `None` when it reads none (or the
    /// agent's own branch decides the message).
    pub(super) async fn on_patterns(
        &mut self,
        out: &mut CallOutcome,
    ) -> Result<Option<PatternRead>, AgentError> {
        // Code's recognition applies where the user answered: once a branch, hook or
        // signal of the agent moved the turn to another flow, that flow decides.
        let plain = self.transitions.len() == self.read_from && said_asks_for_person(self.said());
        // A message that plainly asks for a person is that request: a cancel or two
        // flows the model read in it ("can I talk to a human?" read as stopping the
        // flow) give way to the handoff.
        if plain && !self.commands.contains(&Command::AskForHuman) {
            if out.take_cancel() {
                tracing::info!(
                    "a cancel read in a plain request for a person; the handoff decides"
                );
            }
            out.commands
                .retain(|c| !matches!(c, Command::Clarify { .. }));
        }
        if let Some(read) = self.on_cancel(out).await? {
            return Ok(Some(read));
        }
        if let Some(read) = self.on_clarify(out).await? {
            return Ok(Some(read));
        }
        // The model's reading, or a request code recognises (common phrasings). On a
        // small model, the reading counts only for a message that names a person
        // (`ModelProfile::corroborates_person_requests`).
        let read = out.take(&Command::AskForHuman)
            && (!self.a.provider.profile().corroborates_person_requests()
                || names_a_person(self.msg));
        // Once per turn: a flow started for it reads the same message.
        let human = (read || plain) && !self.commands.contains(&Command::AskForHuman);
        let repeat = out.take(&Command::Repeat);
        if !human && !repeat {
            return self.on_skip(out).await;
        }
        if out.verdicts.iter().any(|(_, holds)| *holds) || self.branch_decides().await? {
            tracing::info!("a pattern read, but a condition of the step holds: the branch decides");
            return Ok(None);
        }
        if human {
            return self.ask_for_human(plain).await.map(Some);
        }
        if self.reads_something_new(out) {
            return Ok(None);
        }
        let Some(last) = self.last_reply() else {
            return Ok(None);
        };
        self.handled(Command::Repeat);
        Ok(Some(PatternRead::Reply(last, StoppedReason::NeedsInput)))
    }

    /// Skip question: the user does not want to answer the question just asked. When
    /// every field the step asks for and the message did not give is one the flow can
    /// do without ([`Flow::may_skip`](crate::flow::Flow)), those fields are marked
    /// skipped and the walk goes on past the step; otherwise the question stands (the
    /// answer's reply says why).
    async fn on_skip(&mut self, out: &mut CallOutcome) -> Result<Option<PatternRead>, AgentError> {
        if !out.take(&Command::SkipQuestion) {
            return Ok(None);
        }
        let Some(flow) = self.flow() else {
            return Ok(None);
        };
        let Some(j) = self.awaiting_model_step(&flow) else {
            return Ok(None);
        };
        if !flow.may_skip(j) {
            tracing::info!(flow = %flow.id, step = %flow.steps[j].id, "a skip read at a question the flow needs answered; it stands");
            return Ok(None);
        }
        let missing: Vec<usize> = flow.steps[j]
            .collect_idx
            .iter()
            .copied()
            .filter(|&i| !self.is_present(i))
            .collect();
        if missing.is_empty() {
            return Ok(None);
        }
        if out.verdicts.iter().any(|(_, holds)| *holds) || self.branch_decides().await? {
            tracing::info!("a skip read, but a condition of the step holds: the branch decides");
            return Ok(None);
        }
        for i in missing {
            self.skipped.insert(i);
            if let Some(name) = self.a.schema.fields().get(i)
                && !self.s.skipped.iter().any(|s| s.as_str() == name.as_ref())
            {
                self.s.skipped.push(name.to_string());
            }
        }
        tracing::info!(flow = %flow.id, step = %flow.steps[j].id, "the user skipped the question");
        self.handled_in_chain(Command::SkipQuestion);
        Ok(Some(PatternRead::Moved))
    }

    /// Forget the questions skipped in flow `fid` (it completed or was cancelled): a
    /// new run of it asks them again.
    pub(super) fn forget_skipped(&mut self, fid: &str) {
        let Some(flow) = self.a.flow(fid).cloned() else {
            return;
        };
        if self.s.skipped.is_empty() {
            return;
        }
        self.s
            .skipped
            .retain(|f| !flow.collectable.iter().any(|c| c.as_ref() == f.as_str()));
        let mut kept = crate::data::FieldSet::default();
        for f in &self.s.skipped {
            if let Some(i) = self.a.schema.index_of(f) {
                kept.insert(i);
            }
        }
        self.skipped = kept;
    }

    /// Clarification: the answer started more than one flow. None starts; the reply,
    /// written by code from the flows' titles, asks which one the user means, and the
    /// active flow stays where it is (its values read from the message are kept).
    async fn on_clarify(
        &mut self,
        out: &mut CallOutcome,
    ) -> Result<Option<PatternRead>, AgentError> {
        let Some(i) = out
            .commands
            .iter()
            .position(|c| matches!(c, Command::Clarify { .. }))
        else {
            return Ok(None);
        };
        let c = out.commands.remove(i);
        let Command::Clarify { flows } = &c else {
            return Ok(None);
        };
        if out.verdicts.iter().any(|(_, holds)| *holds) || self.branch_decides().await? {
            tracing::info!("two flows fit, but a condition of the step holds: the branch decides");
            return Ok(None);
        }
        let titles: Vec<String> = flows.iter().map(|f| self.flow_title(f)).collect();
        let question = match titles.split_last() {
            Some((last, rest)) if !rest.is_empty() => {
                format!("Do you mean {} or {last}?", rest.join(", "))
            }
            _ => return Ok(None),
        };
        self.handled_in_chain(c);
        Ok(Some(PatternRead::Reply(
            question,
            StoppedReason::NeedsInput,
        )))
    }

    /// Whether the answer read a value the data does not already hold, or a flow to
    /// start: the message says more than "say that again".
    fn reads_something_new(&self, out: &CallOutcome) -> bool {
        let data = serde_json::to_value(&self.s.data).unwrap_or_default();
        // Handled already this turn (a speculative answer's values are stored before
        // its patterns are read), or still in the answer.
        self.commands
            .iter()
            .any(|c| c.field().is_some() || matches!(c, Command::StartFlow { .. }))
            || out.commands.iter().any(|c| match c {
                Command::SetValue { field, value, .. }
                | Command::CorrectValue { field, value, .. } => {
                    !value.is_null() && data.get(field) != Some(value)
                }
                Command::StartFlow { .. } => true,
                _ => false,
            })
    }

    /// The agent's last message before this turn, if any.
    fn last_reply(&self) -> Option<String> {
        self.s
            .history
            .iter()
            .rev()
            .skip_while(|m| m.role == Role::User)
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.to_string())
            .filter(|m| !m.is_empty())
    }

    /// The user asked for a person: what the agent's [`HumanHandoff`] says. `plain`:
    /// the message plainly asks for one (handed over without a question).
    async fn ask_for_human(&mut self, plain: bool) -> Result<PatternRead, AgentError> {
        match self.a.human_handoff.clone() {
            HumanHandoff::HandOver { reply, .. } => {
                if plain {
                    return Ok(self.hand_over(reply));
                }
                self.s.asking_handoff = true;
                Ok(PatternRead::Reply(
                    ASK_HANDOFF.to_owned(),
                    StoppedReason::NeedsInput,
                ))
            }
            HumanHandoff::Unavailable { reply } => {
                self.handled(Command::AskForHuman);
                Ok(PatternRead::Reply(reply, StoppedReason::Reply))
            }
            HumanHandoff::Flow(id) => {
                self.handled(Command::AskForHuman);
                match self.start_flow(id, String::new(), false).await? {
                    None => Ok(PatternRead::Moved),
                    Some(not_started) => {
                        Ok(PatternRead::Reply(not_started, StoppedReason::NeedsInput))
                    }
                }
            }
        }
    }

    /// Mark the session handed over to a person; `reply` is the turn's.
    fn hand_over(&mut self, reply: String) -> PatternRead {
        self.handled_in_chain(Command::AskForHuman);
        self.s.asking_handoff = false;
        self.s.handed_off = Some(HandedOff::new(
            self.a.clock.now_ms(),
            self.s.flow.clone(),
            self.s.step.clone(),
        ));
        tracing::info!(flow = ?self.s.flow, step = ?self.s.step, "session handed over to a person");
        PatternRead::Reply(reply, StoppedReason::HumanHandoff)
    }

    /// Settle the question whether to pass the user to a person, on their next
    /// message: a yes hands over; anything else is read as usual.
    pub(super) async fn settle_handoff(&mut self) -> Result<Option<String>, AgentError> {
        if !std::mem::take(&mut self.s.asking_handoff) {
            return Ok(None);
        }
        let HumanHandoff::HandOver { reply, .. } = self.a.human_handoff.clone() else {
            return Ok(None);
        };
        let agreed = plainly_agrees(self.msg, &[])
            || said_asks_for_person(self.said())
            || self.agrees_with_last_question().await?;
        if !agreed {
            self.handled(Command::Decline);
            return Ok(None);
        }
        self.handled(Command::Agree);
        match self.hand_over(reply) {
            PatternRead::Reply(m, _) => Ok(Some(m)),
            PatternRead::Moved => Ok(None),
        }
    }

    /// A session a person has: the waiting reply, with no model call (`None` when
    /// the session is not handed over). A directive pending for the next turn stays.
    pub(super) fn while_handed_off(&mut self) -> Option<String> {
        self.s.handed_off.as_ref()?;
        self.next_pending = self.s.pending.take();
        Some(match &self.a.human_handoff {
            HumanHandoff::HandOver { waiting, .. } => waiting.clone(),
            _ => match HumanHandoff::hand_over() {
                HumanHandoff::HandOver { waiting, .. } => waiting,
                _ => String::new(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{names_a_person, plainly_asks_for_person};

    #[test]
    fn a_plain_request_for_a_person_is_read_by_code() {
        for m in [
            "Can I talk to a human please?",
            "I want to speak to someone on your team",
            "I'd like to talk to someone at the front desk",
            "connect me with an agent",
            "representative please",
            "a real person",
            "Human!",
        ] {
            assert!(plainly_asks_for_person(m), "{m}");
        }
        for m in [
            "My manager told me to talk to you",
            "I'd like to book an appointment",
            "the person at the desk was rude",
            "we are two people",
            "talk soon",
        ] {
            assert!(!plainly_asks_for_person(m), "{m}");
        }
    }

    #[test]
    fn a_request_naming_a_person_is_read_by_code_and_others_are_not() {
        for m in [
            "can I talk to a human",
            "I want a real person",
            "get me someone from your staff",
            "representative please",
            "Agents?",
        ] {
            assert!(names_a_person(m), "{m}");
        }
        for m in ["this is useless", "can you help me", "I'd like to complain"] {
            assert!(!names_a_person(m), "{m}");
        }
    }
}
