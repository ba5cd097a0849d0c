//! Reply scores: what the user reads, measured per turn (rules on [`ReplyScore`]).

use std::collections::HashSet;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What one reply scored, by rules of the kit's own.
///
/// Nothing here is shared with the engine (no word list, no pattern, no helper): a
/// score that reused the engine's checks would only measure the engine against itself.
/// The rules are deliberately plain so that a number can be explained by reading the
/// reply:
///
/// - **words**: tokens separated by white space that hold a letter or a digit;
/// - **repeated**: sentences of two or more words that occur again in the same reply
///   (each extra occurrence counts one);
/// - **echoed**: sentences of two or more words of the reply that the previous reply of
///   the run also had, except a question asked again while the turn waits at the step
///   the previous turn waited at (a question repeated after a side question or a value
///   that was refused is the question still open);
/// - **leaked**: runs of five or more consecutive words of the call's instructions (the
///   system prompt and the per-turn notes the engine sent) that the reply repeats, and
///   data field identifiers written as identifiers (`check_in`, `bookingId`); the user's
///   own words, text the instructions quote (between double quotes, which is text the
///   engine means the user to read) and the agent author's own text for the user (step
///   prompts, `ask` and `reply` templates) do not count;
/// - **unasked**: the turn waits for a value (it stopped for input at a step that
///   collects a field still unset) and the reply asks nothing: no question mark (`?`,
///   `？`, `¿`) and no request in English words ("let me know", "provide", ...);
/// - **contradictions**: the reply names a value of a field that the state does not
///   hold (neither stored nor held for the user's yes, as a check shows it back): a
///   value the field held earlier in the run, a value the model wrote that was
///   not stored, or a value the scenario expects for it, while the reply does not also
///   name the stored value (text values are matched as whole words, ISO dates also in
///   their English forms such as "July 1st", numbers when a word of the field's name
///   stands within three words of them: "3 guests");
/// - **claims**: the reply matches an outcome pattern of a tool (the suite's
///   `[outcomes]`) in a turn in which that tool did not succeed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReplyScore {
    /// Words in the reply.
    pub words: usize,
    /// Sentences repeated within the reply.
    pub repeated: usize,
    /// Sentences repeated from the previous reply.
    pub echoed: usize,
    /// What leaked: instruction text (five or more words in a row) or field identifiers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaked: Vec<String>,
    /// The turn waits for a value and the reply asks no question.
    #[serde(default)]
    pub unasked: bool,
    /// Values named that the state does not hold (`field: value`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradictions: Vec<String>,
    /// Outcomes claimed without the tool that produces them (`tool: matched text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<String>,
}

/// Upper bounds a scenario puts on every reply of its runs (suite files:
/// `reply_bounds = { words = 40, echoed = 0 }` in `[defaults]` or a scenario).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ReplyBounds {
    /// Most words in a reply.
    pub words: Option<usize>,
    /// Most sentences repeated within a reply.
    pub repeated: Option<usize>,
    /// Most sentences repeated from the previous reply.
    pub echoed: Option<usize>,
    /// Most leaks in a reply.
    pub leaked: Option<usize>,
    /// Most contradictions in a reply.
    pub contradictions: Option<usize>,
    /// Most unearned outcome claims in a reply.
    pub claims: Option<usize>,
    /// Whether a reply that waits for a value must ask a question.
    pub asks: Option<bool>,
}

impl ReplyBounds {
    /// Bounds that check nothing; add the ones you need with the methods below.
    pub fn new() -> Self {
        Self::default()
    }
    /// At most `n` words per reply.
    pub fn words(mut self, n: usize) -> Self {
        self.words = Some(n);
        self
    }
    /// At most `n` sentences repeated within a reply.
    pub fn repeated(mut self, n: usize) -> Self {
        self.repeated = Some(n);
        self
    }
    /// At most `n` sentences repeated from the previous reply.
    pub fn echoed(mut self, n: usize) -> Self {
        self.echoed = Some(n);
        self
    }
    /// At most `n` leaks per reply.
    pub fn leaked(mut self, n: usize) -> Self {
        self.leaked = Some(n);
        self
    }
    /// At most `n` contradictions per reply.
    pub fn contradictions(mut self, n: usize) -> Self {
        self.contradictions = Some(n);
        self
    }
    /// At most `n` unearned claims per reply.
    pub fn claims(mut self, n: usize) -> Self {
        self.claims = Some(n);
        self
    }
    /// A reply that waits for a value must ask a question.
    pub fn asks(mut self, yes: bool) -> Self {
        self.asks = Some(yes);
        self
    }
    /// Whether no bound is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Each bound `score` breaks, one line each.
    pub fn check(&self, s: &ReplyScore) -> Vec<String> {
        let mut out = Vec::new();
        let mut over = |what: &str, found: usize, bound: Option<usize>, detail: &[String]| {
            if let Some(b) = bound
                && found > b
            {
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", detail.join("; "))
                };
                out.push(format!("reply: {found} {what}, bound {b}{detail}"));
            }
        };
        over("words", s.words, self.words, &[]);
        over("sentences repeated", s.repeated, self.repeated, &[]);
        over("sentences echoed", s.echoed, self.echoed, &[]);
        over("leaks", s.leaked.len(), self.leaked, &s.leaked);
        over(
            "contradictions",
            s.contradictions.len(),
            self.contradictions,
            &s.contradictions,
        );
        over("unearned claims", s.claims.len(), self.claims, &s.claims);
        if self.asks == Some(true) && s.unasked {
            out.push("reply: waits for a value and asks no question".to_owned());
        }
        out
    }
}

/// Patterns that state a tool's outcome (the suite's `[outcomes]`).
#[derive(Debug, Clone, Default)]
pub struct Outcomes {
    pub(crate) by_tool: Vec<(String, Vec<Regex>)>,
}

impl Outcomes {
    /// A set with no outcome patterns; add them with [`Outcomes::pattern`].
    pub fn new() -> Self {
        Self::default()
    }
    /// A reply matching `pattern` states an outcome of `tool`.
    pub fn pattern(mut self, tool: impl Into<String>, pattern: &str) -> Result<Self, regex::Error> {
        let re = Regex::new(pattern)?;
        let tool = tool.into();
        match self.by_tool.iter_mut().find(|(t, _)| *t == tool) {
            Some((_, v)) => v.push(re),
            None => self.by_tool.push((tool, vec![re])),
        }
        Ok(self)
    }
    /// Whether no pattern is set.
    pub fn is_empty(&self) -> bool {
        self.by_tool.is_empty()
    }
}

/// Everything a turn's score is computed from.
pub(crate) struct TurnFacts<'a> {
    pub reply: &'a str,
    pub previous_reply: Option<&'a str>,
    /// Instructions of the turn's model calls.
    pub instructions: &'a [String],
    /// Every user message of the run so far.
    pub user_messages: &'a [String],
    /// The stored data after the turn.
    pub data: &'a Map<String, Value>,
    /// Values per field that the state does not hold now but could be named.
    pub candidates: &'a [(String, Value)],
    /// Whether the turn waits for a value.
    pub waits: bool,
    /// Whether it waits at the step the previous turn waited at (its question may be
    /// asked again).
    pub asks_again: bool,
    /// Text the agent's author wrote for the user (step prompts and templates): not
    /// a leak when a reply says it.
    pub authored: &'a [String],
    /// Tools that succeeded this turn.
    pub succeeded: &'a [String],
    pub outcomes: &'a Outcomes,
}

pub(crate) fn score(f: &TurnFacts<'_>) -> ReplyScore {
    let sentences = split_sentences(f.reply);
    let mut seen = HashSet::new();
    let repeated = sentences
        .iter()
        .filter(|(s, _)| !seen.insert(s.as_str()))
        .count();
    let echoed = match f.previous_reply {
        Some(prev) => {
            let before: HashSet<String> = self::sentences(prev).into_iter().collect();
            let mut counted = HashSet::new();
            sentences
                .iter()
                .filter(|(s, question)| {
                    before.contains(s) && !(*question && f.asks_again) && counted.insert(s.as_str())
                })
                .count()
        }
        None => 0,
    };
    ReplyScore {
        words: words(f.reply),
        repeated,
        echoed,
        leaked: leaks(f),
        unasked: f.waits && !asks(f.reply),
        contradictions: contradictions(f),
        claims: claims(f),
    }
}

fn words(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Sentences of two or more words, normalised (lower case, letters and digits only).
fn sentences(text: &str) -> Vec<String> {
    split_sentences(text).into_iter().map(|(s, _)| s).collect()
}

/// Sentences of two or more words, normalised, each with whether it is a question.
fn split_sentences(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = matches!(c, '\n' | '!' | '?' | '。' | '！' | '？')
            || (c == '.' && chars.peek().is_none_or(|n| n.is_whitespace()));
        if ends {
            push_sentence(&mut out, &current, matches!(c, '?' | '？'));
            current.clear();
        } else {
            current.push(c);
        }
    }
    push_sentence(&mut out, &current, false);
    out
}

fn push_sentence(out: &mut Vec<(String, bool)>, raw: &str, question: bool) {
    let norm = normal_words(raw);
    if norm.len() >= 2 {
        out.push((norm.join(" "), question));
    }
}

/// Lower-case words of letters and digits.
fn normal_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// A question mark, or (in English) a request for something: "Please let me know the
/// city.", "Provide the number of guests."
fn asks(reply: &str) -> bool {
    const REQUESTS: [&str; 8] = [
        "let me know",
        "tell me",
        "provide",
        "share",
        "send me",
        "give me",
        "enter",
        "specify",
    ];
    if reply.contains(['?', '？', '¿']) {
        return true;
    }
    let words = format!(" {} ", normal_words(reply).join(" "));
    REQUESTS.iter().any(|r| words.contains(&format!(" {r} ")))
}

const LEAK_WORDS: usize = 5;

fn leaks(f: &TurnFacts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let reply = normal_words(f.reply);
    if reply.len() >= LEAK_WORDS && !f.instructions.is_empty() {
        let mut excluded: HashSet<Vec<String>> = HashSet::new();
        for u in f.user_messages.iter().chain(f.authored) {
            excluded.extend(grams(&normal_words(u)));
        }
        let mut instruction_grams: HashSet<Vec<String>> = HashSet::new();
        for text in f.instructions {
            let (plain, quoted) = split_quoted(text);
            for q in &quoted {
                excluded.extend(grams(&normal_words(q)));
            }
            instruction_grams.extend(grams(&normal_words(&plain)));
        }
        let mut i = 0;
        while i + LEAK_WORDS <= reply.len() {
            let g = reply[i..i + LEAK_WORDS].to_vec();
            if instruction_grams.contains(&g) && !excluded.contains(&g) {
                // Extend the run as far as it goes, report it once.
                let mut j = i + LEAK_WORDS;
                while j < reply.len() {
                    let next = reply[j + 1 - LEAK_WORDS..=j].to_vec();
                    if instruction_grams.contains(&next) && !excluded.contains(&next) {
                        j += 1;
                    } else {
                        break;
                    }
                }
                out.push(reply[i..j].join(" "));
                i = j;
            } else {
                i += 1;
            }
        }
    }
    for field in f.data.keys().filter(|k| is_identifier(k)) {
        let found = f
            .reply
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == field);
        if found {
            out.push(format!("field name `{field}`"));
        }
    }
    out
}

fn grams(words: &[String]) -> impl Iterator<Item = Vec<String>> + '_ {
    words.windows(LEAK_WORDS).map(<[String]>::to_vec)
}

/// The text outside double quotes, and each quoted part.
fn split_quoted(text: &str) -> (String, Vec<String>) {
    let mut plain = String::new();
    let mut quoted = Vec::new();
    for (i, part) in text.split('"').enumerate() {
        if i % 2 == 1 {
            quoted.push(part.to_owned());
            plain.push_str(" . ");
        } else {
            plain.push_str(part);
        }
    }
    (plain, quoted)
}

/// A field name that reads as code, not as a word: `check_in`, `bookingId`, `line2`.
fn is_identifier(name: &str) -> bool {
    name.contains('_')
        || name.chars().any(|c| c.is_ascii_digit())
        || name.chars().skip(1).any(char::is_uppercase)
}

fn contradictions(f: &TurnFacts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (field, candidate) in f.candidates {
        let stored = f.data.get(field).unwrap_or(&Value::Null);
        if names(f.reply, field, candidate) && !names(f.reply, field, stored) {
            let line = format!("{field}: {candidate}");
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// Whether `reply` names `value` as a value of `field`.
fn names(reply: &str, field: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => names_text(reply, s),
        Value::Number(n) => names_number(reply, field, &n.to_string()),
        _ => false,
    }
}

fn names_text(reply: &str, value: &str) -> bool {
    let value = value.trim();
    if value.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
        return false;
    }
    if let Some(forms) = date_forms(value) {
        let reply_words = normal_words(reply).join(" ");
        return forms.iter().any(|f| contains_words(&reply_words, f)) || reply.contains(value);
    }
    let want = normal_words(value).join(" ");
    contains_words(&normal_words(reply).join(" "), &want)
}

/// Whether the words `needle` occur in `hay` on word boundaries (both normalised).
fn contains_words(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let padded = format!(" {hay} ");
    padded.contains(&format!(" {needle} "))
}

/// A number names a field's value when a word of the field's name stands within three
/// words of it ("3 guests", "guests: 3").
fn names_number(reply: &str, field: &str, number: &str) -> bool {
    let number = number.trim_end_matches(".0");
    let words = normal_words(reply);
    let stems: Vec<String> = field
        .split(|c: char| c == '_' || c.is_uppercase())
        .filter(|w| w.len() >= 3)
        .map(|w| w.to_lowercase().chars().take(4).collect())
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        w == number
            && words[i.saturating_sub(3)..(i + 4).min(words.len())]
                .iter()
                .any(|near| stems.iter().any(|s| near.starts_with(s.as_str())))
    })
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// English ways of writing an ISO date (`2026-07-01`): "july 1", "1 july", "july 1st",
/// "1st of july" (normalised words), or `None` when the value is no ISO date.
fn date_forms(value: &str) -> Option<Vec<String>> {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let month: usize = value.get(5..7)?.parse().ok()?;
    let day: u32 = value.get(8..10)?.parse().ok()?;
    let name = MONTHS.get(month.checked_sub(1)?)?;
    let suffix = match day {
        1 | 21 | 31 => "st",
        2 | 22 => "nd",
        3 | 23 => "rd",
        _ => "th",
    };
    Some(vec![
        format!("{name} {day}"),
        format!("{name} {day}{suffix}"),
        format!("{day} {name}"),
        format!("{day}{suffix} {name}"),
        format!("{day}{suffix} of {name}"),
        format!("{day} of {name}"),
    ])
}

fn claims(f: &TurnFacts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (tool, patterns) in &f.outcomes.by_tool {
        if f.succeeded.iter().any(|t| t == tool) {
            continue;
        }
        for p in patterns {
            if let Some(m) = p.find(f.reply) {
                out.push(format!("{tool}: {:?}", m.as_str()));
                break;
            }
        }
    }
    out
}

/// Median and 90th percentile (nearest rank) of `values`.
pub(crate) fn median_p90(values: &mut [usize]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values.sort_unstable();
    let rank = |q: f64| {
        let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
        values[i] as f64
    };
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2] as f64
    } else {
        (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0
    };
    (median, rank(0.9))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn facts<'a>(
        reply: &'a str,
        data: &'a Map<String, Value>,
        instructions: &'a [String],
    ) -> TurnFacts<'a> {
        TurnFacts {
            reply,
            previous_reply: None,
            instructions,
            user_messages: &[],
            data,
            candidates: &[],
            waits: false,
            asks_again: false,
            authored: &[],
            succeeded: &[],
            outcomes: OUTCOMES.get_or_init(Outcomes::new),
        }
    }
    static OUTCOMES: std::sync::OnceLock<Outcomes> = std::sync::OnceLock::new();

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn words_and_sentences_repeated_within_and_from_the_previous_reply() {
        let data = Map::new();
        let mut f = facts(
            "Which city? I'm ready to assist you. I'm ready to assist you! Thanks.",
            &data,
            &[],
        );
        f.previous_reply = Some("Hello there. Which city?");
        let s = score(&f);
        assert_eq!(s.words, 13);
        assert_eq!(s.repeated, 1);
        // "Which city" is in both; single-word "Thanks" is no sentence.
        assert_eq!(s.echoed, 1);
    }

    #[test]
    fn instruction_text_and_field_identifiers_leak_but_quoted_text_and_user_words_do_not() {
        let data = map(json!({ "check_in": null, "city": "Rome" }));
        let instructions = vec![
            "Still needed from the user: check in date and guests. Say \"we take one to twelve guests at most\"."
                .to_owned(),
        ];
        let mut f = facts(
            "Still needed from the user: check in date. We take one to twelve guests at most. Your check_in?",
            &data,
            &instructions,
        );
        let s = score(&f);
        assert_eq!(
            s.leaked,
            vec![
                "still needed from the user check in date".to_owned(),
                "field name `check_in`".to_owned()
            ]
        );
        let users = vec!["still needed from the user check in date".to_owned()];
        f.user_messages = &users;
        assert_eq!(score(&f).leaked, vec!["field name `check_in`".to_owned()]);
    }

    #[test]
    fn a_value_the_state_does_not_hold_is_a_contradiction_unless_the_stored_one_is_named_too() {
        let data = map(json!({ "city": "Rome", "guests": 3, "check_in": "2026-07-01" }));
        let candidates = vec![
            ("city".to_owned(), json!("Naples")),
            ("guests".to_owned(), json!(2)),
            ("check_in".to_owned(), json!("2026-07-02")),
        ];
        let mut f = facts("Booking Naples for 2 guests on July 2nd.", &data, &[]);
        f.candidates = &candidates;
        assert_eq!(
            score(&f).contradictions,
            vec![
                "city: \"Naples\"".to_owned(),
                "guests: 2".to_owned(),
                "check_in: \"2026-07-02\"".to_owned()
            ]
        );
        f.reply = "Changed from Naples to Rome; 3 guests; July 1st; 2 nights.";
        assert!(score(&f).contradictions.is_empty());
    }

    #[test]
    fn an_outcome_without_its_tool_is_a_claim_and_a_waiting_turn_must_ask() {
        let data = Map::new();
        let outcomes = Outcomes::new()
            .pattern("book_room", r"(?i)\b(booked|your booking)\b")
            .unwrap();
        let mut f = facts("Thank you for your booking.", &data, &[]);
        f.outcomes = &outcomes;
        f.waits = true;
        let s = score(&f);
        assert_eq!(s.claims, vec!["book_room: \"your booking\"".to_owned()]);
        assert!(s.unasked);
        let ok = vec!["book_room".to_owned()];
        f.succeeded = &ok;
        f.reply = "Booked. Anything else?";
        let s = score(&f);
        assert!(s.claims.is_empty() && !s.unasked);
    }

    #[test]
    fn a_question_asked_again_at_the_same_step_is_no_echo_and_a_request_asks() {
        let data = Map::new();
        let mut f = facts("Canberra. Which date do you arrive?", &data, &[]);
        f.previous_reply = Some("Lisbon, noted. Which date do you arrive?");
        f.waits = true;
        assert_eq!(score(&f).echoed, 1);
        f.asks_again = true;
        assert_eq!(score(&f).echoed, 0);
        f.reply = "Please let me know the number of guests.";
        assert!(!score(&f).unasked);
        f.reply = "Thank you for your patience.";
        assert!(score(&f).unasked);
    }

    #[test]
    fn the_authors_own_prompt_is_no_leak() {
        let data = Map::new();
        let instructions = vec!["Step ask_device: Ask which device has the problem.".to_owned()];
        let authored = vec!["Ask which device has the problem.".to_owned()];
        let mut f = facts("Which device has the problem?", &data, &instructions);
        assert_eq!(score(&f).leaked, ["which device has the problem"]);
        f.authored = &authored;
        assert!(score(&f).leaked.is_empty());
    }

    #[test]
    fn bounds_report_what_they_caught() {
        let s = ReplyScore {
            words: 50,
            echoed: 1,
            unasked: true,
            ..ReplyScore::default()
        };
        let b = ReplyBounds::new().words(40).echoed(0).asks(true);
        assert_eq!(
            b.check(&s),
            vec![
                "reply: 50 words, bound 40".to_owned(),
                "reply: 1 sentences echoed, bound 0".to_owned(),
                "reply: waits for a value and asks no question".to_owned()
            ]
        );
    }

    #[test]
    fn median_and_p90_by_nearest_rank() {
        let mut v = vec![10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
        assert_eq!(median_p90(&mut v), (55.0, 90.0));
        assert_eq!(median_p90(&mut []), (0.0, 0.0));
    }
}
