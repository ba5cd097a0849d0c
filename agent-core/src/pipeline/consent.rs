//! How the answer to a summary judges the user's agreement ([`Consent`]) and which
//! of a step's tools that answer may call ([`Gate`]). A tool that needs the user's
//! agreement runs only on a yes to the summary of its call the user read last
//! (`pipeline/propose.rs`): the turn after a summary, the answer classes the user's
//! message (a yes, a no, new details, something else) before it may name the tool,
//! and code holds the tools when the message changed a stored value or asks a
//! question without naming the action. A yes judged by the model is checked once
//! more before the call runs, unless it is a plain yes ([`plainly_agrees`]; the call
//! is `model/agree.rs`).

use std::sync::Arc;

use crate::data::ground::normalize;
use crate::provider::{Message, Role};
use crate::session::Proposal;
use crate::step::Step;
use crate::tool::{Tool, action_words, names_word};

/// What an answer that may call a tool (`tools_in_answer`) judges before it names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Consent {
    /// Nothing: `action` is null or a call (a call of a tool that needs the user's
    /// agreement is summarised, not run).
    None,
    /// Whether the user's latest message agrees to the summary the user read last.
    Answer,
    /// Whether the user asked for the action (in this message or earlier): a step that
    /// offers a tool waiting for the user's yes, with no summary pending. A call the
    /// answer names then is summarised for the yes, not run. Asked as "null or a
    /// call", Qwen2.5-Coder 1.5B rarely named the refund the user asked for, and wrote
    /// its instructions into the reply instead (help desk, 2026-12-01: 7 of 30 runs
    /// failed, 4 of them refunds); asked to judge the request first, it named it.
    Request,
}

impl Consent {
    /// How `action` is written, in the system prompt.
    pub(super) fn rule(self) -> &'static str {
        match self {
            Self::None => {
                "To use one, set `action` to {\"tool\": its name, \"with\": its arguments}; the user sees your message after the tool ran. Otherwise set `action` to null."
            }
            Self::Answer => CONSENT_RULE,
            Self::Request => REQUEST_RULE,
        }
    }

    /// The question in the per-turn state, with the user's words quoted: asked about
    /// "the user's latest message" alone, Qwen2.5-Coder 1.5B copied its previous
    /// judgement (a "yes" after a "not yet" judged `false`, message and all).
    pub(super) fn question(self, quoted: impl FnOnce() -> String) -> Option<String> {
        match self {
            Self::None => None,
            Self::Answer => Some(format!(
                "Is the user's latest message, {}, a yes (it agrees or asks you to go ahead), a no, new details or something else? Set `action.answer` accordingly.",
                quoted()
            )),
            Self::Request => Some(format!(
                "Act only on the user's request: has the user asked for it, in the latest message ({}) or earlier without taking it back? Set `action.agreed` accordingly.",
                quoted()
            )),
        }
    }
}

/// The key of the class of the user's answer in the consent form of `action`.
pub(super) const ANSWER: &str = "answer";
/// The class that agrees: the only one the grammar lets go on to a tool.
pub(super) const YES: &str = "yes";
/// The classes that do not agree ([`crate::pipeline::model`]'s schema explains why
/// there are several). No "a question": a question is held by code
/// ([`Gate::unless_asking`]), and the class caught plain yeses. Qwen2.5 1.5B at
/// temperature 0.7 read the classification question after "Yes, book it" as the user's
/// and classed it "a question": 7 of 92 logged yes-judgements replayed at their seeds
/// (6 of 18 live calls), 0 of 92 with the class removed (2026-11-27).
pub(super) const NOT_YES: [&str; 3] = ["no", "new details", "something else"];

/// The consent form of `action` for the answer to a summary: the user's latest
/// message is classed first (`answer`), and only a yes goes on to a tool and its
/// arguments.
const CONSENT_RULE: &str = "In `action`, first set `answer` to what the user's latest message is: \"yes\" (it agrees or asks you to go ahead), \"no\", \"new details\" or \"something else\". Only with \"yes\", also name the tool and its arguments; it runs before the user reads your message.";

/// The form for a step that offers a tool waiting for the user's yes: the user must
/// have asked for it before the answer names it (the call is then summarised).
const REQUEST_RULE: &str = "In `action`, first set `agreed`: true if the user has asked for the action (in the latest message, or earlier without taking it back), false otherwise. When true, also name the tool and its arguments.";

/// Which of a step's tools this answer may call, and how it judges consent.
pub(super) struct Gate<D, C> {
    pub(super) consent: Consent,
    pub(super) tools: Vec<Arc<dyn Tool<D, C>>>,
    /// Tools not offered to this answer.
    pub(super) withheld: Vec<String>,
    /// Why they are withheld, said in the per-turn state.
    held: Held,
}

/// Why a [`Gate`] withholds tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Nothing is withheld.
    Nothing,
    /// The message answering a summary changed the details it showed.
    Changed,
    /// The message answering a summary asks a question and names no action.
    Question,
    /// The message answering a summary was judged a yes, but a check of the message
    /// alone ([`crate::config::AgentConfig::check_agreement`]) found it does not
    /// agree.
    NotAgreed,
}

impl<D, C> Gate<D, C> {
    /// The gate for an answer about `step`: the answer to the summary in
    /// `proposal` when it is of one of the step's tools (the user's latest message is
    /// `latest`); otherwise every tool is offered, judged as a request when one waits
    /// for the user's yes (a call of it is then summarised, not run).
    pub(super) fn of(step: &Step<D, C>, proposal: Option<&Proposal>, latest: Option<&str>) -> Self {
        let answers = proposal.is_some_and(|p| step.tools.iter().any(|t| t.name() == p.tool));
        let consent = if answers {
            Consent::Answer
        } else if step.offers_agreed_tool() {
            Consent::Request
        } else {
            Consent::None
        };
        Self {
            consent,
            tools: step.tools.clone(),
            withheld: Vec::new(),
            held: Held::Nothing,
        }
        .unless_asking(latest)
    }

    /// A question is no agreement: an answer to a summary that asks something ("Does
    /// the hotel have parking?") runs nothing unless it names the action ("Can you
    /// book it now?", [`action_words`]); the question is answered and the summary
    /// shown again. At temperature 0.7, Qwen2.5 1.5B judged "Does the hotel have
    /// parking?" at the confirmation a yes in 1 of 3 runs and booked, and its chance
    /// of judging a question a yes was 17 to 33 % on the logged confirmations (token
    /// probabilities, 2026-11-27). A yes with a question ("Yes, but is breakfast
    /// included?") is asked again: one more turn, never a booking the user may not
    /// want once answered.
    fn unless_asking(mut self, latest: Option<&str>) -> Self {
        let Some(said) = latest.filter(|m| m.contains(['?', '¿', '？'])) else {
            return self;
        };
        if self.consent != Consent::Answer || self.tools.is_empty() {
            return self;
        }
        let said = normalize(said);
        let names = |t: &Arc<dyn Tool<D, C>>| {
            action_words(t.as_ref())
                .iter()
                .any(|w| names_word(&said, w))
        };
        if !self.tools.iter().any(names) {
            self.hold(Held::Question);
        }
        self
    }

    /// Withholds every tool offered to this answer, for `why`: the answer has no
    /// `action` to judge then.
    fn hold(&mut self, why: Held) {
        self.withheld = self.tools.drain(..).map(|t| t.name().to_owned()).collect();
        self.held = why;
        self.consent = Consent::None;
    }

    /// Whether the tools of an answer to a summary were withheld by code (the message
    /// changed the details, or asks a question): its reply, told so, is the answer,
    /// as when the model judges that the user did not agree.
    pub(super) fn holds_answer(&self) -> bool {
        matches!(self.held, Held::Changed | Held::Question | Held::NotAgreed)
    }

    /// An agreement is to what the user was shown: when the message changed a stored
    /// value, an answer to a summary runs nothing this turn, and the new details are
    /// summarised again. At temperature
    /// 0.7, Qwen2.5 1.5B judged "Make it July 5th instead", "2026-07-05" and "Does the
    /// hotel have parking?" at the confirmation a yes (3 of 168 concierge runs booked).
    pub(super) fn unless_changed(mut self, changed: bool) -> Self {
        if changed && self.consent == Consent::Answer && !self.tools.is_empty() {
            self.hold(Held::Changed);
        }
        self
    }

    /// The answer's action was checked on its own and the user's message does not
    /// agree ([`crate::config::AgentConfig::check_agreement`]): rendered again, this
    /// answer runs nothing and asks again.
    pub(super) fn unless_not_agreed(mut self, not_agreed: bool) -> Self {
        if not_agreed && self.consent == Consent::Answer && !self.tools.is_empty() {
            self.hold(Held::NotAgreed);
        }
        self
    }

    /// What the answer is told about the tools withheld (none: nothing).
    pub(super) fn note(&self) -> Option<String> {
        if self.withheld.is_empty() {
            return None;
        }
        let names = self.withheld.join(", ");
        Some(match self.held {
            Held::Changed => format!(
                "Not offered now: {names} (the user's latest message changed the details). Do not say it was done; show the new details and ask the user to confirm them."
            ),
            Held::Question => format!(
                "Not offered now: {names} (the user's latest message asks a question). Do not say it was done; answer the question, then ask the user to confirm."
            ),
            Held::NotAgreed => format!(
                "Not offered now: {names} (the user's latest message does not agree to go ahead yet). Do not say it was done; reply to the message, then ask whether to go ahead when the user is ready."
            ),
            Held::Nothing => return None,
        })
    }
}

/// What the user's latest message in `history` answers: the agent's last message
/// with text before it.
pub(super) fn asked_before(history: &[Message]) -> Option<&str> {
    let latest = history.iter().rposition(|m| m.role == Role::User)?;
    history[..latest]
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.is_empty())
        .map(|m| m.content.as_str())
}

/// Words that agree on their own ("yes", "go ahead", "sim", "d'accord"), normalised.
/// A message made of these, [`FILLER`] and the tool's action words is a yes that needs
/// no check; anything else the model judged a yes is checked in a call of its own.
/// The list only saves that call: a word missing from it costs one call, never a
/// wrong booking, and no word of refusal or delay may ever be added to it.
const AGREE: &[&str] = &[
    "yes",
    "yeah",
    "yea",
    "yep",
    "yup",
    "ya",
    "sure",
    "ok",
    "okay",
    "okey",
    "alright",
    "fine",
    "great",
    "perfect",
    "good",
    "correct",
    "exactly",
    "absolutely",
    "definitely",
    "certainly",
    "confirm",
    "confirmed",
    "proceed",
    "go",
    "works",
    "lovely",
    "awesome",
    "cool",
    "excellent",
    "wonderful",
    "si",
    "claro",
    "vale",
    "dale",
    "acuerdo",
    "accord",
    "perfecto",
    "adelante",
    "hazlo",
    "confirmo",
    "confirma",
    "sim",
    "pode",
    "certo",
    "otimo",
    "perfeito",
    "beleza",
    "oui",
    "parfait",
    "ja",
    "jawohl",
    "gerne",
    "klar",
    "genau",
    "passt",
    "perfekt",
    "super",
    "perfetto",
    "procedi",
    "conferma",
];

/// Words that neither agree nor hold back: they may stand beside an [`AGREE`] word.
const FILLER: &[&str] = &[
    "it", "that", "this", "thats", "s", "let", "lets", "please", "pls", "plz", "thanks", "thank",
    "you", "ty", "now", "ahead", "do", "and", "e", "et", "und", "all", "right", "sounds", "for",
    "me", "us", "by", "d", "de", "por", "favor", "gracias", "obrigado", "obrigada", "isso",
    "merci", "vas", "allez", "y", "bitte", "danke", "mach", "es", "va", "bene", "grazie",
];

/// Whether `message` is a plain yes: only [`AGREE`], [`FILLER`] and `action` words
/// (the tool's, "book" of "Book it"), with at least one that agrees or names the
/// action. "OK, let me think" is not ("think"), nor is "No problem, book it" ("no"):
/// those are checked.
pub(crate) fn plainly_agrees(message: &str, action: &[String]) -> bool {
    let said = normalize(message);
    let action: Vec<String> = action
        .iter()
        .map(|w| normalize(w).trim().to_owned())
        .collect();
    let names = |w: &str| {
        action
            .iter()
            .any(|a| !a.is_empty() && w.starts_with(a.as_str()))
    };
    let mut agrees = false;
    for w in said.split_whitespace() {
        if AGREE.contains(&w) || names(w) {
            agrees = true;
        } else if !FILLER.contains(&w) {
            return false;
        }
    }
    agrees
}

#[cfg(test)]
mod tests {
    use super::plainly_agrees;

    fn book() -> Vec<String> {
        vec!["book".into()]
    }

    #[test]
    fn agreement_words_alone_are_a_plain_yes() {
        for m in [
            "Yes, book it",
            "Yes please, go ahead",
            "OK, go ahead and book it",
            "Perfect, confirm it",
            "Sounds good, go ahead",
            "Sí, por favor",
            "Sim, pode",
            "Oui, d'accord",
            "Ja, bitte",
            "Book it now",
        ] {
            assert!(plainly_agrees(m, &book()), "{m}");
        }
    }

    #[test]
    fn a_hesitation_a_refusal_or_other_words_are_checked() {
        for m in [
            "Let me think about it for a moment",
            "OK, let me think",
            "Not yet, thanks",
            "Ainda não, obrigado",
            "No problem, book it",
            "Yes, but for 3 guests",
            "Yes, book Marriott please",
            "Thanks",
            "Please",
            "Do it",
            "👍",
            "",
        ] {
            assert!(!plainly_agrees(m, &book()), "{m}");
        }
    }

    #[test]
    fn the_tools_action_words_count_as_agreeing() {
        assert!(plainly_agrees("Refund it please", &["refund".into()]));
        assert!(!plainly_agrees("Refund it please", &book()));
    }
}
