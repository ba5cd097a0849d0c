//! Consent before a tool with effects runs: how the answer judges it ([`Consent`]) and
//! which tools the answer may call at all ([`Gate`]).
//!
//! A model's judgement alone does not hold on a small model: measured on
//! Qwen2.5-Coder 1.5B (2026-11-26, 15 billing conversations x 2 seeds), asked whether
//! the user had asked for a refund it said yes to "It's INV-7" and "Die
//! Rechnungsnummer ist INV-3"; asked in a separate, focused call it said no to "Please
//! refund the double charge on INV-7" (18 of 30 right), and a quote of the request it
//! was asked to copy was the tool's own description. So the code decides when the
//! model may judge: a tool with request words (every [`Effect::Once`] tool unless it
//! says otherwise) is offered only when the user's own words name the action
//! ([`Tool::request_words`]) in the latest message or the one before, or when the
//! agent's last message ended with a question about it (the user answers an offer:
//! then the answer is judged as a yes or no, which the same model gets right). A
//! request is used up by the call it led to ([`crate::session::Session::acted`]):
//! measured on the help desk, "Also, my app crashes on start" after a refund was
//! judged a second request for it, on the strength of the message before. An answer
//! judged a yes is checked once
//! more before a tool with effects runs on it, unless it is a plain yes
//! ([`plainly_agrees`]; the call is `model/agree.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::data::ground::normalize;
use crate::provider::{Message, Role};
use crate::step::Step;
use crate::tool::{Effect, Tool, action_words, names_word};

/// What an answer that may call a tool (`tools_in_answer`) judges before it names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Consent {
    /// Nothing: `action` is null or a call (every tool offered is [`Effect::Pure`]).
    None,
    /// Whether the user's latest message agrees: the answer to an `act_on_answer`
    /// step's question ("Shall I book it?").
    Answer,
    /// Whether the user asked for the action, in this message or earlier: a tool with
    /// effects. Measured on Qwen2.5-Coder 1.5B, an answer free to name a tool refunded
    /// an invoice the user had only quoted for a question.
    Request,
}

impl Consent {
    /// The consent the answer about `step` gives before calling its tools.
    fn of<D, C>(step: &Step<D, C>) -> Self {
        if step.tools.is_empty() {
            Self::None
        } else if step.act_on_answer {
            Self::Answer
        } else if step.tools.iter().any(|t| t.effect() != Effect::Pure) {
            Self::Request
        } else {
            Self::None
        }
    }

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
        if self == Self::None {
            return None;
        }
        let quoted = quoted();
        match self {
            Self::None => None,
            Self::Answer => Some(format!(
                "Is the user's latest message, {quoted}, a yes (it agrees or asks you to go ahead), a no, new details or something else? Set `action.answer` accordingly."
            )),
            Self::Request => Some(format!(
                "Act only on the user's request: has the user asked for it, in the latest message ({quoted}) or earlier without taking it back? Set `action.agreed` accordingly."
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

/// The consent form of `action` for the answer to an `act_on_answer` step: the
/// user's latest message is classed first (`answer`), and only a yes goes on to a
/// tool and its arguments.
const CONSENT_RULE: &str = "In `action`, first set `answer` to what the user's latest message is: \"yes\" (it agrees or asks you to go ahead), \"no\", \"new details\" or \"something else\". Only with \"yes\", also name the tool and its arguments; it runs before the user reads your message.";

/// The consent form for a tool with effects: the user must have asked for it.
const REQUEST_RULE: &str = "In `action`, first set `agreed`: true if the user has asked for the action (in the latest message, or earlier without taking it back), false otherwise. When true, also name the tool and its arguments; it runs before the user reads your message.";

/// Which of a step's tools this answer may call, and how it judges consent.
pub(super) struct Gate<D, C> {
    pub(super) consent: Consent,
    pub(super) tools: Vec<Arc<dyn Tool<D, C>>>,
    /// Tools with effects not offered: nobody asked for them or was offered them.
    pub(super) withheld: Vec<String>,
    /// Why they are withheld, said in the per-turn state.
    held: Held,
}

/// Why a [`Gate`] withholds tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Nobody asked for them in their own words, or was offered them.
    NotAsked,
    /// The message answering a confirmation changed the details asked about.
    Changed,
    /// The message answering a confirmation asks a question and names no action.
    Question,
    /// The message answering a confirmation was judged a yes, but a check of the
    /// message alone ([`crate::config::AgentConfig::check_agreement`]) found it does
    /// not agree.
    NotAgreed,
}

impl<D, C> Gate<D, C> {
    /// The gate for an answer about `step`; `history` ends with the user's latest
    /// message, said in turn `turn`; `acted` holds the turn each tool with effects
    /// last ran in. A request is used up by the call it led to: words said in or
    /// before the turn the tool last ran do not offer it again.
    pub(super) fn of(
        step: &Step<D, C>,
        history: &[Message],
        acted: &BTreeMap<String, u64>,
        turn: u64,
    ) -> Self {
        let consent = Consent::of(step);
        let latest = history.iter().rposition(|m| m.role == Role::User);
        if consent != Consent::Request {
            return Self {
                consent,
                tools: step.tools.clone(),
                withheld: Vec::new(),
                held: Held::NotAsked,
            }
            .unless_asking(latest.map(|i| history[i].content.as_str()));
        }
        let requests = Requests::of(history, acted, turn);
        let (mut asked, mut offered) = (false, false);
        let mut tools = Vec::with_capacity(step.tools.len());
        let mut withheld = Vec::new();
        for t in &step.tools {
            match requests.ask(t.as_ref()) {
                Ask::Free => {}
                Ask::Asked => asked = true,
                Ask::Offered => offered = true,
                Ask::Not => {
                    withheld.push(t.name().to_owned());
                    continue;
                }
            }
            tools.push(t.clone());
        }
        let consent = if asked {
            Consent::Request
        } else if offered {
            Consent::Answer
        } else {
            Consent::None
        };
        Self {
            consent,
            tools,
            withheld,
            held: Held::NotAsked,
        }
        .unless_asking(latest.map(|i| history[i].content.as_str()))
    }

    /// A question is no agreement: an answer to a confirmation (`act_on_answer`, or an
    /// offer) that asks something ("Does the hotel have parking?") runs nothing unless
    /// it names the action ("Can you book it now?", [`action_words`]); the question is
    /// answered and the confirmation asked again. At temperature 0.7, Qwen2.5 1.5B
    /// judged "Does the hotel have parking?" at the confirmation a yes in 1 of 3 runs
    /// and booked, and its chance of judging a question a yes was 17 to 33 % on the
    /// logged confirmations (token probabilities, 2026-11-27). A yes with a question
    /// ("Yes, but is breakfast included?") is asked again: one more turn, never a
    /// booking the user may not want once answered.
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

    /// Whether the tools of an answer to a confirmation were withheld by code (the
    /// message changed the details, or asks a question): its reply, told so, is the
    /// answer, as when the model judges that the user did not agree.
    pub(super) fn holds_answer(&self) -> bool {
        matches!(self.held, Held::Changed | Held::Question | Held::NotAgreed)
    }

    /// An agreement is to what the user was shown: when the message changed a stored
    /// value, an answer to a confirmation (`act_on_answer`, or an offer) runs nothing
    /// this turn, and the question is asked again with the new details. At temperature
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
            Held::NotAsked => not_asked(&names),
        })
    }
}

/// The note on tools withheld because nobody asked for them.
fn not_asked(names: &str) -> String {
    format!(
        "Not offered now: {names} (the user has not asked for it in their own words). Do not say it was done; ask the user whether they want it if it fits."
    )
}

/// How a tool stands with the user's requests ([`Requests::ask`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// No effects ([`Effect::Pure`]): always offered, nothing to judge.
    Free,
    /// The user's latest message or the one before names it (a request not used
    /// up), or it has no request words (the model judges whether the user asked).
    Asked,
    /// The agent's last message ended with a question naming it (an offer).
    Offered,
    /// Neither: not offered.
    Not,
}

/// What the conversation asks for, read once per rendering and only when a tool with
/// request words is weighed: the user's latest two messages and the agent's closing
/// question before the latest, normalised.
pub(crate) struct Requests<'h> {
    history: &'h [Message],
    said: std::cell::OnceCell<Said>,
    acted: &'h BTreeMap<String, u64>,
    turn: u64,
}

/// The normalised words [`Requests`] reads.
struct Said {
    users: Vec<String>,
    offer: String,
}

impl<'h> Requests<'h> {
    /// The requests of `history` (ending with the user's latest message, said in turn
    /// `turn`); `acted` holds the turn each tool with effects last ran in.
    pub(crate) fn of(history: &'h [Message], acted: &'h BTreeMap<String, u64>, turn: u64) -> Self {
        Self {
            history,
            said: std::cell::OnceCell::new(),
            acted,
            turn,
        }
    }

    fn said(&self) -> &Said {
        self.said.get_or_init(|| Said {
            users: self
                .history
                .iter()
                .rev()
                .filter(|m| m.role == Role::User)
                .take(2)
                .map(|m| normalize(&m.content))
                .collect(),
            offer: asked_before(self.history)
                .and_then(closing_question)
                .map(|q| normalize(&q))
                .unwrap_or_default(),
        })
    }

    /// Whether `t` is asked for. A request is used up by the call it led to: words
    /// said in or before the turn the tool last ran do not offer it again.
    fn ask<D, C>(&self, t: &dyn Tool<D, C>) -> Ask {
        if t.effect() == Effect::Pure {
            return Ask::Free;
        }
        let words = t.request_words();
        if words.is_empty() {
            // The model's judgement decides (a request is judged).
            return Ask::Asked;
        }
        let named = |said: &str| words.iter().any(|w| names_word(said, w));
        // `users[k]` was said in turn `turn - k`.
        let ran = self.acted.get(t.name()).copied();
        let unused = |k: usize| ran.is_none_or(|r| r < self.turn.saturating_sub(k as u64));
        let said = self.said();
        if said
            .users
            .iter()
            .enumerate()
            .any(|(k, u)| unused(k) && named(u))
        {
            Ask::Asked
        } else if unused(1) && named(&said.offer) {
            // (An agent's message after the call reports it; it offers nothing.)
            Ask::Offered
        } else {
            Ask::Not
        }
    }

    /// The tools of `tools` offered outside a step's [`Gate`] (the agent's, the
    /// flow's, injected ones, a pending step's) under the same rule: one with request
    /// words only when the user asked for it or answers an offer of it. The names of
    /// the others go to `withheld`.
    pub(crate) fn filter<D, C>(
        &self,
        tools: &[Arc<dyn Tool<D, C>>],
        withheld: &mut Vec<String>,
    ) -> Vec<Arc<dyn Tool<D, C>>> {
        let mut out = Vec::with_capacity(tools.len());
        for t in tools {
            if self.ask(t.as_ref()) == Ask::Not {
                if !withheld.iter().any(|w| w == t.name()) {
                    withheld.push(t.name().to_owned());
                }
            } else {
                out.push(t.clone());
            }
        }
        out
    }
}

/// The note on tools [`Requests::filter`] withheld (none: nothing).
pub(crate) fn withheld_note(withheld: &[String]) -> Option<String> {
    (!withheld.is_empty()).then(|| not_asked(&withheld.join(", ")))
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

/// The part of the agent's message that can offer an action: its closing question
/// with the sentence before it ("I can refund your stay. Shall I?"); `None` when the
/// message does not end with a question. A message that only mentions the action
/// offers nothing: Qwen2.5 1.5B wrote the user's wish into its own reply ("... and
/// if I can get a refund. Thank you."), and "It's INV-7" then counted as the answer
/// to an offer and refunded.
fn closing_question(message: &str) -> Option<String> {
    let text = message.trim_end_matches(|c: char| {
        !(c.is_alphanumeric() || matches!(c, '?' | '？' | '.' | '!' | '。' | '！'))
    });
    if !text.ends_with(['?', '？']) {
        return None;
    }
    let pieces: Vec<&str> = text
        .lines()
        .flat_map(crate::reply::sentences)
        .filter(|p| !p.trim().is_empty())
        .collect();
    Some(pieces[pieces.len().saturating_sub(2)..].concat())
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
    use super::{closing_question, plainly_agrees};

    #[test]
    fn only_a_closing_question_can_offer() {
        assert_eq!(
            closing_question("Hello. I can refund your stay. Shall I?").as_deref(),
            Some("I can refund your stay. Shall I?")
        );
        assert_eq!(
            closing_question("Would you like a refund? 😊").as_deref(),
            Some("Would you like a refund?")
        );
        assert_eq!(
            closing_question("Which invoice? I will check if I can get a refund."),
            None
        );
        assert_eq!(closing_question(""), None);
    }

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
