//! What becomes of the [`Command`]s the model read (`model/understand.rs` reads them
//! from the answer): each kind has its handler here or names the one it goes
//! through, and each command handled is listed in the response
//! ([`crate::response::AgentResponse::commands`]). A command that changes the data or
//! the position becomes a directive with the source [`DirectiveSource::Command`],
//! merged and applied like any other.
//!
//! - `set_value`, `correct_value`: [`Turn::absorb_model_data`] screens each value
//!   (the flow collects it, the user's words support it, the field's constraints
//!   accept it), stores the rest in one patch, and records each stored value; a value
//!   that replaces another stored one is a correction, whatever the answer called it.
//! - `start_flow`: [`Turn::start_flow`], once the turn checked that the active flow may
//!   hand over to that flow and that it was not left earlier this turn.
//! - `agree`: the action the answer names runs (the tool loop in `model/respond.rs`).
//! - `decline`: no action runs; a confirmation step stays (`converse.rs`).

use serde_json::{Map, Value};

use super::{Phase, Turn};
use crate::command::Command;
use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::response::DirectiveSource;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// List a command as handled this turn.
    pub(super) fn handled(&mut self, c: Command) {
        self.commands.push(c);
    }

    /// List a command that changes no data or position as handled, and put it in
    /// the directive chain (source `command`).
    pub(super) fn handled_in_chain(&mut self, c: Command) {
        // Pushed as is: `record` leaves out directives that change nothing.
        self.chain.push(crate::response::ChainEntry {
            source: DirectiveSource::Command(c.to_string()),
            directive: Directive::default(),
            append_prompt: Vec::new(),
            inject_tools: Vec::new(),
            halt: false,
        });
        self.handled(c);
    }

    /// The model read that the user wants another flow: the conversation moves there.
    /// The answer's message is not shown but carried to the next rendering as context
    /// (A3 transitions), and the hop counts against the transition cap, which keeps
    /// the message as the reply when reached.
    ///
    /// The flow it leaves waits on the dialogue stack and resumes when this one
    /// ends (`stack.rs`); a flow already waiting there resumes at its step. With the
    /// stack full, the flow is not started: `Some` reply that says so. An answer
    /// that also cancels the active flow (`leaves`: "no booking, I want to leave
    /// feedback") leaves it for good instead.
    pub(super) async fn start_flow(
        &mut self,
        target: String,
        said: String,
        leaves: bool,
    ) -> Result<Option<String>, AgentError> {
        let resume = self.resume_point(&target);
        if !leaves && !self.interrupt_for(&target) {
            let active = self.s.flow.clone().unwrap_or_default();
            return Ok(Some(format!(
                "Let's finish {} first; then ask me again about {}.",
                self.flow_title(&active),
                self.flow_title(&target)
            )));
        }
        if !said.is_empty() {
            self.carried = Some(said);
        }
        let c = Command::start_flow(target.clone());
        let src = DirectiveSource::Command(c.to_string());
        self.handled(c);
        if let Some(step) = resume {
            self.resume_at(&target, step, src).await?;
            return Ok(None);
        }
        let d = Directive::go_to(target);
        self.record(&src, &d, &[], &[], false);
        self.apply(src, d, Phase::Pre).await?;
        Ok(None)
    }

    /// Record the values a model answer's value commands stored (`stored`, with the
    /// user's words each came from) and which of them replaced another value
    /// (`corrected`): one directive each in the chain, one command each in the
    /// response.
    pub(super) fn record_values(
        &mut self,
        stored: Vec<(String, Value, Option<String>)>,
        corrected: &[String],
    ) {
        for (field, value, words) in stored {
            let c = if corrected.contains(&field) {
                Command::CorrectValue {
                    field: field.clone(),
                    value: value.clone(),
                    words,
                }
            } else {
                Command::SetValue {
                    field: field.clone(),
                    value: value.clone(),
                    words,
                }
            };
            let mut patch = Map::new();
            patch.insert(field, value);
            let d = Directive {
                data: Some(patch),
                ..Directive::default()
            };
            self.record(
                &DirectiveSource::Command(c.to_string()),
                &d,
                &[],
                &[],
                false,
            );
            self.handled(c);
        }
    }
}
