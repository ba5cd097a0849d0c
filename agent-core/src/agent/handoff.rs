//! What an agent does when the user asks for a person (the human handoff pattern).

/// What the agent does when the user asks for a person
/// ([`Command::AskForHuman`](crate::command::Command::AskForHuman)), set with
/// [`AgentBuilder::human_handoff`](crate::agent::AgentBuilder::human_handoff). A
/// request in plain words ("can I talk to a person?") is acted on at once; one the
/// model read in other words is asked about first ("Do you want me to pass you to a
/// person?"), and a yes to that question settles it.
///
/// ```
/// use agent_core::agent::HumanHandoff;
///
/// // The default: the session is handed over and waits for the host.
/// let over = HumanHandoff::hand_over().reply("Connecting you to our front desk.");
/// // No one to hand over to: the agent says so and goes on.
/// let none = HumanHandoff::unavailable("Our staff answer by email at desk@example.com.");
/// // The agent's own flow takes it (a callback form, a ticket).
/// let own = HumanHandoff::flow("callback");
/// # let _ = (over, none, own);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HumanHandoff {
    /// Hand the session over to a person: the turn ends with `reply` and
    /// [`StoppedReason::HumanHandoff`](crate::response::StoppedReason::HumanHandoff), the
    /// session is marked ([`Session::handed_off`](crate::session::Session::handed_off)),
    /// and every later message is answered with `waiting`, with no model call, until
    /// the host ends the handoff ([`Agent::end_human_handoff`](crate::Agent::end_human_handoff)).
    HandOver {
        /// The reply of the turn that hands over.
        reply: String,
        /// The reply to every message while a person has the conversation.
        waiting: String,
    },
    /// No one can take the conversation: the reply says `reply` and the conversation
    /// goes on where it was.
    Unavailable {
        /// What the agent says instead.
        reply: String,
    },
    /// Start the agent's own flow with this id (it interrupts the active flow, which
    /// resumes when it ends).
    Flow(String),
}

impl HumanHandoff {
    /// Hand over, with the default replies.
    pub fn hand_over() -> Self {
        Self::HandOver {
            reply: "I'm passing you to a person from our team; they will reply here.".into(),
            waiting: "A person from our team will reply here soon.".into(),
        }
    }

    /// No one to hand over to: say `reply` instead.
    pub fn unavailable(reply: impl Into<String>) -> Self {
        Self::Unavailable {
            reply: reply.into(),
        }
    }

    /// Start the flow `id` instead.
    pub fn flow(id: impl Into<String>) -> Self {
        Self::Flow(id.into())
    }

    /// The same, with the reply of the turn that hands over (or the unavailable
    /// reply) set to `text`.
    #[must_use]
    pub fn reply(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Self::HandOver { reply, .. } | Self::Unavailable { reply } => *reply = text.into(),
            Self::Flow(_) => {}
        }
        self
    }

    /// The same, with the reply to messages while a person has the conversation set
    /// to `text` (hand-over only).
    #[must_use]
    pub fn waiting(mut self, text: impl Into<String>) -> Self {
        if let Self::HandOver { waiting, .. } = &mut self {
            *waiting = text.into();
        }
        self
    }
}

impl Default for HumanHandoff {
    fn default() -> Self {
        Self::hand_over()
    }
}
