//! The RFC's optional `/flow` slash commands ([`AgentConfig::flow_commands`]): read before
//! anything else in a turn, so a user (or an operator testing an agent) can start,
//! leave or inspect a flow without the router or the model deciding.
//!
//! [`AgentConfig::flow_commands`]: crate::config::AgentConfig::flow_commands

use super::Turn;
use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::AgentError;
use crate::response::DirectiveSource;

/// A parsed `/flow` slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slash {
    /// `/flow <id>`: start (or restart) that flow.
    Start(String),
    /// `/flow stop`: leave the active flow.
    Stop,
    /// `/flow status`: which flow is active, and where.
    Status,
    /// `/flow` alone, or with extra words: what the commands are.
    Help,
}

/// `Some` when the message is a `/flow` command (`/flowers` is not).
pub(crate) fn parse(message: &str) -> Option<Slash> {
    let rest = message.trim().strip_prefix("/flow")?;
    if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let mut words = rest.split_whitespace();
    Some(match (words.next(), words.next()) {
        (Some("stop"), None) => Slash::Stop,
        (Some("status"), None) => Slash::Status,
        (Some(id), None) => Slash::Start(id.to_owned()),
        _ => Slash::Help,
    })
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Carry out `cmd`. `Some(reply)` ends the turn with that reply (no model call);
    /// `None` means a flow was started and the turn goes on in it.
    pub(crate) async fn slash(&mut self, cmd: Slash) -> Result<Option<String>, AgentError> {
        let flows = || self.a.flow_ids().join(", ");
        Ok(Some(match cmd {
            Slash::Help => format!(
                "Flow commands: `/flow <id>` starts a flow, `/flow stop` leaves the active one, `/flow status` says which one is active. Flows: {}.",
                flows()
            ),
            Slash::Status => match (&self.s.code, &self.s.flow) {
                (Some(c), _) => match c.pending_ask() {
                    Some(key) => format!("Active flow: `{}` (waiting on `{key}`).", c.flow),
                    None => format!("Active flow: `{}`.", c.flow),
                },
                (None, Some(f)) => match &self.s.step {
                    Some(step) => format!("Active flow: `{f}` (at step `{step}`)."),
                    None => format!("Active flow: `{f}`."),
                },
                (None, None) => format!("No flow is active. Flows: {}.", flows()),
            },
            Slash::Stop => match self.stop_flow().await {
                Some(f) => format!("Left flow `{f}`."),
                None => "No flow is active.".to_owned(),
            },
            Slash::Start(id) => {
                if self.a.flow(&id).is_none() && self.a.code_flow(&id).is_none() {
                    format!("There is no flow `{id}`. Flows: {}.", flows())
                } else {
                    // An explicit choice replaces whatever a signal armed for this turn.
                    self.s.pending = None;
                    let src = DirectiveSource::Slash(format!("/flow {id}"));
                    self.record(&src, &Directive::go_to(id.clone()), &[], &[], false);
                    self.enter_flow(&id, None, src).await?;
                    return Ok(None);
                }
            }
        }))
    }

    /// Leave the active flow (code or declarative) without completing it.
    async fn stop_flow(&mut self) -> Option<String> {
        let left = if let Some(c) = self.s.code.take() {
            Some(c.flow)
        } else if let Some(f) = self.s.flow.clone() {
            self.leave_flow().await;
            self.s.flow = None;
            Some(f)
        } else {
            None
        };
        if left.is_some() {
            self.s.step = None;
            self.awaiting = false;
            self.pos_gen += 1;
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use super::{Slash, parse};

    #[test]
    fn flow_commands_parse_and_other_messages_do_not() {
        assert_eq!(parse("/flow tutor"), Some(Slash::Start("tutor".into())));
        assert_eq!(parse("  /flow   stop "), Some(Slash::Stop));
        assert_eq!(parse("/flow status"), Some(Slash::Status));
        assert_eq!(parse("/flow"), Some(Slash::Help));
        assert_eq!(parse("/flow tutor now"), Some(Slash::Help));
        assert_eq!(parse("/flowers please"), None);
        assert_eq!(parse("please /flow tutor"), None);
        assert_eq!(parse("hello"), None);
    }
}
