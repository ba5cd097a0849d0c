//! [`Conversation`]: say one message at a time, then assert on what happened. Each turn
//! must use the answers queued for it: one left over would silently answer a later
//! turn and make that turn's failure hard to read.

use crate::agent::Agent;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::response::{AgentResponse, StoppedReason};

use super::ScriptedProvider;

/// A conversation under test: say something, then assert on what happened.
///
/// After each turn that succeeds, the scripted provider must hold no queued answer:
/// [`Conversation::say`] otherwise fails with [`ConversationError::UnusedAnswers`]
/// listing them, and drops them, so they cannot answer a later turn. A test that
/// queues answers for several turns at once opts out with [`Conversation::queue_ahead`].
/// A failed turn returns its error and leaves the queue as it is (for a retry).
pub struct Conversation<D, C> {
    agent: Agent<D, C>,
    provider: ScriptedProvider,
    session: String,
    queue_ahead: bool,
}

/// Why [`Conversation::say`] failed: the turn failed, or it left scripted answers unused
/// (a test that queued more than the turn calls for).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConversationError {
    /// The turn itself failed with this error.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The turn succeeded without using every answer queued for it.
    #[error(
        "{} scripted answer(s) queued for this turn were not used: {}; the turn replied {message:?} at step {}. Queue only what the turn calls for, or use `Conversation::queue_ahead()` when answers are meant for later turns",
        unused.len(),
        unused.join("; "),
        step.as_deref().unwrap_or("-")
    )]
    UnusedAnswers {
        /// The unused answers, described (`Respond: message "When?"`), now dropped.
        unused: Vec<String>,
        /// The turn's reply.
        message: String,
        /// The step the turn ended at.
        step: Option<String>,
    },
}

/// The outcome of one `say`, with assertion helpers.
#[derive(Debug)]
pub struct Said<D> {
    /// The turn's full response, for assertions the helpers do not cover.
    pub response: AgentResponse<D>,
}

impl<D> Said<D> {
    /// Assert the current step.
    pub fn expect_step(&self, step: &str) -> &Self {
        assert_eq!(self.response.step.as_deref(), Some(step), "current step");
        self
    }
    /// Assert the active flow.
    pub fn expect_flow(&self, flow: Option<&str>) -> &Self {
        assert_eq!(self.response.flow.as_deref(), flow, "active flow");
        self
    }
    /// Assert the number of model calls this turn.
    pub fn expect_calls(&self, n: u32) -> &Self {
        assert_eq!(self.response.model_calls, n, "model calls this turn");
        self
    }
    /// Assert the stopped reason.
    pub fn expect_stopped(&self, r: StoppedReason) -> &Self {
        assert_eq!(self.response.stopped, r, "stopped reason");
        self
    }
    /// Assert on the data.
    pub fn expect_data(&self, check: impl FnOnce(&D) -> bool) -> &Self {
        assert!(check(&self.response.data), "data check failed");
        self
    }
    /// Assert that the reply is exactly `m` (panics with both texts otherwise).
    pub fn expect_message(&self, m: &str) -> &Self {
        assert_eq!(self.response.message, m, "message");
        self
    }
}

impl<D: AgentData, C: AgentContext> Conversation<D, C> {
    /// A conversation on a fresh session id.
    pub fn new(agent: Agent<D, C>, provider: ScriptedProvider) -> Self {
        Self {
            agent,
            provider,
            session: "test-session".into(),
            queue_ahead: false,
        }
    }
    /// Use another session id.
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session = id.into();
        self
    }
    /// Answers may be queued for later turns: a turn that leaves some queued is not
    /// reported, and they answer the next calls of their kind.
    pub fn queue_ahead(mut self) -> Self {
        self.queue_ahead = true;
        self
    }
    /// The scripted provider, to queue answers.
    pub fn provider(&self) -> &ScriptedProvider {
        &self.provider
    }
    /// The agent under test, for direct calls (sessions, state).
    pub fn agent(&self) -> &Agent<D, C> {
        &self.agent
    }
    /// Send a user message. Fails if the turn fails, or if it succeeded and left
    /// queued answers unused (unless [`Conversation::queue_ahead`]).
    pub async fn say(&self, message: &str) -> Result<Said<D>, ConversationError> {
        let response = self.agent.respond(&self.session, message).await?;
        if !self.queue_ahead {
            let unused = self.provider.take_unused();
            if !unused.is_empty() {
                return Err(ConversationError::UnusedAnswers {
                    unused,
                    message: response.message,
                    step: response.step,
                });
            }
        }
        Ok(Said { response })
    }
}
