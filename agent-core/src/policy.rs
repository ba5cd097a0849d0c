//! Model profiles, and the behaviours that exist to help small models, in one place.
//!
//! The engine's guarantees (validation, values the user confirms, the check of replies
//! against the state, a summary and a yes before a once-tool) hold on every model.
//! Some behaviours exist only because small models misread messages in ways capable
//! ones do not; they are switched by the [`ModelProfile`] of the model answering the
//! call ([`Provider::profile`](crate::provider::Provider::profile)), on for
//! [`ModelProfile::Small`] and off for [`ModelProfile::Capable`]. Each is a method of
//! `ModelProfile` named after what it does:
//!
//! | behaviour | small | capable |
//! |---|---|---|
//! | [`checks_digressions`](ModelProfile::checks_digressions): the answer to a flow's question is first sorted in a short call of its own (what the step asks for, the other flows' `when`), and a message that asks for another flow starts it ("Wait, are you open on Saturdays?" while a booking asks for a day); the same call reads the answer to the step's question, and a message that is nothing but that answer ("Anna Berg", "It's INV-7") needs no call of the flow's own; it also reads what the message gives for the flows it may go to, so a flow it picks starts with those values (with no flow under way, or at a step that only routes, the same) | on | off: the flow's own call judges hand-overs |
//! | [`composes_questions`](ModelProfile::composes_questions): a step that collects a value and has no `ask` is asked by a question code builds from the fields' docs and constraints, the turn the step is reached, after what the turn stored ("Noted: Lisbon.", not in the history the model reads); asked again, the model's first statement and that question; a refused value is told by code before it; a confirmation the user did not agree to is answered by code; at a front desk (a step that only picks the flow to go to), a message the sorting call keeps gets code's question from the flows' titles, alone when the message asks nothing (no call of the step's own), after the model's first statement otherwise | on | off: the model writes the question |
//! | [`tidies_replies`](ModelProfile::tidies_replies): a model-written reply loses sentences said twice, read back from its instructions, said back from the user's message or about "the user", and a last sentence the length limit cut; with no flow under way, one that only says the last message again is rendered again once, told so | on | off: the reply is the model's (still bounded by `max_reply_chars` and checked against the state) |
//! | [`corroborates_person_requests`](ModelProfile::corroborates_person_requests): a request for a person the model read counts only in a message that names one ("a human", "someone from your staff"); a message that does not is read as usual | on | off: the request is asked about ("Do you want me to pass you to a person from our team?") unless the message plainly asks |
//!
//! Providers are [`ModelProfile::Capable`] unless set otherwise: the providers of
//! `agent-providers` take `.profile(ModelProfile::Small)`, and the examples set it for
//! the local default model. The turn's [`AgentResponse::profile`](crate::response::AgentResponse::profile)
//! records the profile used.

use serde::{Deserialize, Serialize};

/// How much the engine trusts a model's reading of a message beyond its guarantees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelProfile {
    /// A hosted model of the current generation: the small-model behaviours are off.
    /// The default.
    #[default]
    Capable,
    /// A small model (a local 1-3 B model such as the local default, Qwen2.5-Coder
    /// 1.5B): the small-model behaviours are on.
    Small,
}

impl ModelProfile {
    /// Whether a request for a person the model read needs the message to name one
    /// (a word of a short list: "human", "person", "someone", "staff", ...) to count.
    /// Small models read such requests into ordinary messages ("I'd like to book an
    /// appointment" at a clinic whose first step asks for the patient's name).
    pub fn corroborates_person_requests(self) -> bool {
        self == Self::Small
    }

    /// Whether the answer to a flow's question is first sorted in a call of its own:
    /// does it give what the step asks for, or ask for another flow the active one
    /// hands over to? A message that asks for another flow starts it, and the flow
    /// asking waits on the dialogue stack. Small models judge hand-overs badly inside
    /// the flow's own call, which also reads values and writes the reply (see
    /// [`crate::command`], Digressions). It costs one short call on turns that answer
    /// a flow's question with something other than a plain yes, in agents whose
    /// flows hand over to flows that say `when` they apply. On a profile that also
    /// [composes questions](Self::composes_questions), the call reads the values the
    /// message gives after its pick (the instructions do not mention them, so the
    /// pick is made as without them): for the fields the step asks for, standing
    /// for the flow's own call when the message is nothing but that answer (it
    /// shows every value read by itself and says at most two more words, none a
    /// number); with no flow under way, or at a step that only routes, for the
    /// flows it may start, which then make no call of their own unless the message
    /// asks something. A message that gives the answer to the step's question in
    /// its own words (the value read is in the message) and asks nothing stays in
    /// the flow whatever else it speaks of.
    pub fn checks_digressions(self) -> bool {
        self == Self::Small
    }

    /// Whether the question of a model step that collects a value is written by code
    /// when the turn reaches the step, also where the step has no `ask`: one built from
    /// the doc and constraints of each field it still waits for ("Could you tell me the
    /// number of guests (1 to 12)?"; see [`Step::ask`](crate::step::Step::ask)
    /// for what the turn then sends). What the turn stored is said before it
    /// ("Noted: Lisbon, 2 guests."; values the question shows are left out), and
    /// before code's "Just to check" of a value held for a yes; that line is kept
    /// out of the history the model reads (a small model copied it into later
    /// readings, also after a cancel had cleared the values). Small models write that question padded with
    /// greetings and offers ("Hello! Is there anything else you'd like to know?" where
    /// the step asks for the visit's reason), and a turn that lands on another step than
    /// its model call predicted needs no second call to ask. When the user answers
    /// such a step with something else (a side question), the reply is the model's
    /// first sentence, if it is a statement of at most 25 words, then the step's
    /// question in code's words: the model's own questions and padding are left out,
    /// and so is a sentence naming something in backticks (the engine's own wording
    /// read back). A value the field's constraints refuse is told by code before the
    /// question ("0 is not possible for the number of guests: it must be at least 1.
    /// How many guests ...?"), with no second call; a confirmation the user did not
    /// agree to is answered by code ("Nothing has been done yet: say yes when you want
    /// me to go ahead, or tell me what to change."; the summary of the new values when
    /// the message changed one, the same summary again when it asks something, or
    /// "Shall I go ahead as summarised above?" when the summary was the last reply), after
    /// the model's first statement if it is one. A statement copied from the question
    /// or from the agent's last message (four in five of its words) is not kept either.
    /// After a draft not used because it was written over values nobody said, the
    /// question asked again is code's alone, with no second reading of the message.
    /// Steps whose tools the model may call as it asks keep the model's message, and
    /// so does a turn with something only the model can tell (a correction refused,
    /// an action that did not run).
    pub fn composes_questions(self) -> bool {
        self == Self::Small
    }

    /// Whether a model-written reply loses what a small model adds as it runs on
    /// (and, with no flow under way, is rendered again once, told so, when it only says
    /// the agent's last message again: "Is there a gym?" after a booking answered with
    /// the booking's text):
    /// sentences it already said, sentences read back from its own instructions (the
    /// engine's notes: "(Still needed from the user: check_in, guests.)"), sentences
    /// that say the user's message back or talk about "the user", and a last sentence
    /// the length limit cut. Measured on Qwen2.5-Coder 1.5B: the notes reached the user
    /// in 5 of 56 concierge conversations, and the user's own message was said back in
    /// 22 of 75 help-desk answers. A reply that would lose every sentence is kept whole.
    /// Code's texts (templates, tools' and hooks' replies) are never changed.
    pub fn tidies_replies(self) -> bool {
        self == Self::Small
    }
}
