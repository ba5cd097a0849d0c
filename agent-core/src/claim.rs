//! What a model-written reply may state: one check of its sentences against the state.
//!
//! Field checks keep the *data* true; this keeps the *text* true. A model-written reply
//! (not a template, a tool's or a hook's verbatim reply, or the parts code composed) is
//! read sentence by sentence after the turn's tools and hooks ran:
//! - **Outcomes.** A tool declares the words by which a reply states its outcome
//!   ([`crate::tool::Tool::outcome_words`]: "booked", "reserved"). A statement using
//!   them is a claim unless a tool with those words succeeded in this turn. Questions
//!   ("Shall I book it?") claim nothing, nor does a statement whose words say it did not
//!   happen ("Nothing is booked yet": the English negations `not`, `no`, `never`,
//!   `nothing`, `n't` within the four words before).
//! - **Values.** A value the model wrote for a field this turn that was not stored or
//!   held for a yes (nothing the user said shows it), or the value a field held before
//!   this turn's correction, may not be named for that field: a sentence naming it (or
//!   one of its comma-separated parts) without the field's current value contradicts
//!   the state. A value the field's constraints refused may be named (the reply says
//!   why it is not possible). For a number field that holds a value, a number written
//!   before the field's name ("3 guests" for `guests`) must be that value or one of the
//!   field's bounds (its limits: "We take 1 to 12 guests").
//! - **Claim guards** ([`crate::agent::AgentBuilder::guard_claim`], deprecated): a
//!   pattern that needs fields present.
//!
//! - **Asking again.** For a value the user gave this turn, a sentence that repeats
//!   code's question for its field, or a question naming the field (by its identifier
//!   or as its doc names it: "invoice number") without its value, asks for what the
//!   state holds.
//!
//! Questions state nothing else ("Shall I book it?", "Did you mean Naples?").
//!
//! A reply that fails is rendered again once, told why; if it still does, the failing
//! sentences are removed and listed in
//! [`crate::response::AgentResponse::withheld_claims`].
//!
//! What it cannot see: values in other words than the model wrote them (a date written
//! out, a number in words), values from before this turn that nothing changed this
//! turn, outcomes stated without the declared words, and negations in other languages
//! (such a sentence counts as a claim).

use std::sync::Arc;

use regex::Regex;

use crate::data::ground::normalize;

/// One guard: a reply matching `pattern` needs every field of `requires` present.
#[derive(Debug, Clone)]
pub(crate) struct ClaimGuard {
    pub(crate) pattern: Regex,
    pub(crate) requires: Vec<Arc<str>>,
}

/// What a reply said that the state does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported {
    /// The words of the reply that state it.
    pub(crate) said: String,
    /// What is so instead ("`booking_id` not set", "`book_room` has not run").
    pub(crate) why: String,
}

/// A tool whose success a reply may state, and the words that state it (normalised).
#[derive(Debug, Clone)]
pub(crate) struct OutcomeTool {
    pub(crate) tool: Arc<str>,
    pub(crate) words: Vec<String>,
}

impl OutcomeTool {
    /// `tool` with its outcome words, or `None` when it declares none.
    pub(crate) fn of(tool: &str, words: Vec<String>) -> Option<Self> {
        let words: Vec<String> = words
            .iter()
            .map(|w| normalize(w).trim().to_owned())
            .filter(|w| !w.is_empty())
            .collect();
        (!words.is_empty()).then(|| Self {
            tool: Arc::from(tool),
            words,
        })
    }
}

/// What one field's values are this turn, for the value rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldFacts {
    /// The field's id.
    pub(crate) field: String,
    /// Its stored and held values, as a reply would write them.
    pub(crate) current: Vec<String>,
    /// Values it must not be said to have: written and not kept this turn, or held
    /// before this turn's correction.
    pub(crate) wrong: Vec<String>,
    /// For a number field that holds a value: the field's name, normalised
    /// ("guests"), which a number written before it refers to.
    pub(crate) counted_as: Option<String>,
    /// The field's bounds (its limits, which a reply may state).
    pub(crate) bounds: Vec<String>,
    /// For a field the user gave this turn: its names, normalised (its identifier as
    /// words, "check in"; how its doc names it, "invoice number"). A question naming
    /// one without the field's value asks for what the user just gave.
    pub(crate) given_as: Vec<String>,
    /// For a field the user gave this turn: the sentences of code's questions for it
    /// (its steps' `ask`, the question built from its doc), normalised. A sentence
    /// repeating one asks again for what the user just gave.
    pub(crate) asked_with: Vec<String>,
}

/// Everything a reply's sentence is checked against.
pub(crate) struct Facts<'a> {
    pub(crate) guards: &'a [ClaimGuard],
    pub(crate) present: &'a dyn Fn(&str) -> bool,
    pub(crate) outcomes: &'a [OutcomeTool],
    /// Whether the named tool succeeded in this turn.
    pub(crate) earned: &'a dyn Fn(&str) -> bool,
    pub(crate) fields: &'a [FieldFacts],
    /// Texts code wrote into this reply (its questions, what it told): not checked.
    pub(crate) code_wrote: &'a [String],
}

impl Facts<'_> {
    /// Why `sentence` (one sentence or list line of a reply) is not so, if it is not.
    pub(crate) fn judge(&self, sentence: &str) -> Option<Unsupported> {
        let trimmed = sentence.trim();
        if trimmed.is_empty() || self.code_wrote.iter().any(|c| c.contains(trimmed)) {
            return None;
        }
        if let Some(u) = self
            .guards
            .iter()
            .find_map(|g| g.check(sentence, self.present))
        {
            return Some(u);
        }
        if self.outcomes.is_empty() && self.fields.is_empty() {
            return None;
        }
        let question = trimmed.ends_with('?');
        let said = normalize(sentence);
        // Asking again for a value the user gave this turn ("Which invoice is it
        // about?" with INV-7 just stored) says the state does not hold it.
        for f in self.fields {
            // Any mention of the value counts here, a one-digit count included.
            let mentions = |c: &String| {
                let v = normalize(c);
                !v.trim().is_empty() && said.contains(v.as_str())
            };
            if f.current.is_empty() || f.current.iter().any(mentions) {
                continue;
            }
            let copied = f.asked_with.contains(&said);
            let names_it = question && f.given_as.iter().any(|g| said.contains(g.as_str()));
            if copied || names_it {
                return Some(Unsupported {
                    said: trimmed.to_owned(),
                    why: format!(
                        "the user has just given it: `{}` is {}",
                        f.field,
                        f.current.join(" or ")
                    ),
                });
            }
        }
        // A question states nothing else ("Shall I book it?", "Did you mean Naples?").
        if question {
            return None;
        }
        for o in self.outcomes {
            if (self.earned)(&o.tool) {
                continue;
            }
            for w in &o.words {
                // Another tool with the same words earned it.
                let earned_by_other = self
                    .outcomes
                    .iter()
                    .any(|p| p.words.contains(w) && (self.earned)(&p.tool));
                if !earned_by_other && states(&said, w) {
                    return Some(Unsupported {
                        said: w.clone(),
                        why: format!("`{}` has not run in this turn", o.tool),
                    });
                }
            }
        }
        for f in self.fields {
            let current = || match f.current.as_slice() {
                [] => format!("`{}` is not set", f.field),
                [one] => format!("`{}` is {one}", f.field),
                many => format!("`{}` is {}", f.field, many.join(" or ")),
            };
            let names_current = f.current.iter().any(|c| names(&said, c));
            if !names_current
                && let Some(w) = f.wrong.iter().find(|w| parts(w).any(|p| names(&said, p)))
            {
                return Some(Unsupported {
                    said: w.clone(),
                    why: current(),
                });
            }
            if let Some(label) = &f.counted_as
                && let Some(n) = counted(&said, label).find(|n| {
                    !f.current.iter().any(|c| c.trim() == n.as_str())
                        && !f.bounds.iter().any(|b| b == n)
                })
            {
                return Some(Unsupported {
                    said: format!("{n} {label}"),
                    why: current(),
                });
            }
        }
        None
    }
}

/// Whether normalised `said` names `value` as a whole word or phrase.
fn names(said: &str, value: &str) -> bool {
    let v = normalize(value);
    v.trim().len() > 1 && said.contains(v.as_str())
}

/// `value` and, when it has commas, each of its parts ("Naples, Italy": "Naples").
fn parts(value: &str) -> impl Iterator<Item = &str> {
    let split = value.contains(',');
    std::iter::once(value).chain(
        value
            .split(',')
            .filter(move |_| split)
            .map(str::trim)
            .filter(|p| p.chars().count() > 2),
    )
}

/// Whether normalised `said` states the outcome `words` (normalised) and does not
/// deny it just before.
fn states(said: &str, words: &str) -> bool {
    const DENIALS: [&str; 6] = ["not", "no", "never", "nothing", "t", "none"];
    let needle = format!(" {words} ");
    said.match_indices(needle.as_str()).any(|(at, _)| {
        !said[..at]
            .split(' ')
            .rev()
            .filter(|w| !w.is_empty())
            .take(4)
            .any(|w| DENIALS.contains(&w))
    })
}

/// The numbers written just before `label` (or `label` without a final `s`) in
/// normalised `said`.
fn counted<'s>(said: &'s str, label: &'s str) -> impl Iterator<Item = String> + 's {
    let one = label.strip_suffix('s').filter(|o| !o.is_empty());
    let words: Vec<&str> = said.split(' ').filter(|w| !w.is_empty()).collect();
    let mut out = Vec::new();
    for pair in words.windows(2) {
        let [n, w] = pair else { continue };
        if n.bytes().all(|b| b.is_ascii_digit()) && (*w == label || Some(*w) == one) {
            out.push((*n).to_owned());
        }
    }
    out.into_iter()
}

impl ClaimGuard {
    /// The first unsupported claim in `text`, given which fields are present.
    fn check(&self, text: &str, present: &dyn Fn(&str) -> bool) -> Option<Unsupported> {
        let missing: Vec<&str> = self
            .requires
            .iter()
            .filter(|f| !present(f))
            .map(|f| f.as_ref())
            .collect();
        if missing.is_empty() {
            return None;
        }
        self.pattern.find(text).map(|m| Unsupported {
            said: m.as_str().to_owned(),
            why: format!("{} not set", missing.join(", ")),
        })
    }
}

/// The first sentence (or list line) of `text` that `facts` finds not so.
pub(crate) fn unsupported(facts: &Facts<'_>, text: &str) -> Option<Unsupported> {
    text.lines()
        .flat_map(crate::reply::sentences)
        .find_map(|s| facts.judge(s))
}

/// `text` without the sentences (or list lines) that make an unsupported claim, and
/// the removed pieces. Lines are split first, then sentences (after `.`, `!` or `?`
/// followed by a space), so a summary's "- Booking ID: null" line goes alone.
pub(crate) fn withhold(facts: &Facts<'_>, text: &str) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(text.len());
    let mut removed = Vec::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let mut out = String::with_capacity(body.len());
        let mut cut = false;
        for piece in crate::reply::sentences(body) {
            if facts.judge(piece).is_some() {
                removed.push(piece.trim().to_owned());
                cut = true;
            } else {
                out.push_str(piece);
            }
        }
        if !cut {
            kept.push_str(line);
            continue;
        }
        // A line left with nothing but spacing or list punctuation goes whole.
        if out
            .trim_matches(|c: char| c.is_whitespace() || "-*•:".contains(c))
            .is_empty()
        {
            continue;
        }
        kept.push_str(out.trim_end());
        if line.ends_with('\n') {
            kept.push('\n');
        }
    }
    (kept.trim().to_owned(), removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Vec<ClaimGuard> {
        vec![ClaimGuard {
            pattern: Regex::new(r"(?i)\b(booked|confirmed|booking (id|number|reference))\b")
                .unwrap(),
            requires: vec![Arc::from("booking_id")],
        }]
    }

    fn facts<'a>(
        guards: &'a [ClaimGuard],
        present: &'a dyn Fn(&str) -> bool,
        outcomes: &'a [OutcomeTool],
        earned: &'a dyn Fn(&str) -> bool,
        fields: &'a [FieldFacts],
    ) -> Facts<'a> {
        Facts {
            guards,
            present,
            outcomes,
            earned,
            fields,
            code_wrote: &[],
        }
    }

    #[test]
    fn a_claim_is_unsupported_only_while_its_field_is_missing() {
        let g = guard();
        let text = "Your room in Lisbon is booked.";
        let none = |_: &str| false;
        let f = facts(&g, &none, &[], &none, &[]);
        let u = unsupported(&f, text).unwrap();
        assert_eq!(u.said, "booked");
        assert_eq!(u.why, "booking_id not set");
        let has = |f: &str| f == "booking_id";
        assert_eq!(unsupported(&facts(&g, &has, &[], &none, &[]), text), None);
        assert_eq!(unsupported(&f, "Which city?"), None);
    }

    #[test]
    fn withholding_removes_only_the_sentences_and_lines_that_claim() {
        let g = guard();
        let none = |_: &str| false;
        let f = facts(&g, &none, &[], &none, &[]);
        let (text, removed) = withhold(
            &f,
            "Sure! I've booked a room in Lisbon for two. Please confirm the date?",
        );
        assert_eq!(text, "Sure! Please confirm the date?");
        assert_eq!(removed, ["I've booked a room in Lisbon for two."]);

        let (text, removed) = withhold(
            &f,
            "Summary:\n- City: Lisbon\n- Booking ID: null\n- Guests: 2\nShall I book it?",
        );
        assert_eq!(
            text,
            "Summary:\n- City: Lisbon\n- Guests: 2\nShall I book it?"
        );
        assert_eq!(removed, ["- Booking ID: null"]);

        let (text, removed) = withhold(&f, "Booked!");
        assert_eq!((text.as_str(), removed.len()), ("", 1));
    }

    fn book_room() -> Vec<OutcomeTool> {
        OutcomeTool::of("book_room", vec!["booked".into(), "Reserved".into()])
            .into_iter()
            .chain(OutcomeTool::of("cancel_booking", vec!["cancelled".into()]))
            .collect()
    }

    #[test]
    fn an_outcome_is_stated_only_in_a_turn_whose_tool_succeeded() {
        let o = book_room();
        let none = |_: &str| false;
        let f = facts(&[], &none, &o, &none, &[]);
        for claim in [
            "Thank you, your room is booked.",
            "Your room in Lisbon has been RESERVED!",
            "Your booking has been cancelled.",
        ] {
            assert!(unsupported(&f, claim).is_some(), "{claim}");
        }
        let u = unsupported(&f, "All set: booked for two.").unwrap();
        assert_eq!(u.said, "booked");
        assert_eq!(u.why, "`book_room` has not run in this turn");
        // Questions and denials claim nothing; other words are not the outcome's.
        for fine in [
            "Shall I get it booked for you?",
            "Nothing is booked yet.",
            "I haven't booked anything.",
            "Your room is not reserved yet, say yes to go ahead.",
            "Which city would you like?",
            "The hotel is often overbooked in July.",
        ] {
            assert_eq!(unsupported(&f, fine), None, "{fine}");
        }
        // The tool ran: its outcome may be said, the other tool's still not.
        let booked = |t: &str| t == "book_room";
        let f = facts(&[], &none, &o, &booked, &[]);
        assert_eq!(unsupported(&f, "Your room is booked."), None);
        assert!(unsupported(&f, "Booked, and your old booking is cancelled.").is_some());
    }

    #[test]
    fn a_value_named_must_be_the_stored_or_held_one() {
        let none = |_: &str| false;
        let city = FieldFacts {
            field: "city".into(),
            current: vec!["Rome".into()],
            wrong: vec!["Naples, Italy".into()],
            counted_as: None,
            bounds: Vec::new(),
            ..FieldFacts::default()
        };
        let guests = FieldFacts {
            field: "guests".into(),
            current: vec!["2".into()],
            wrong: Vec::new(),
            counted_as: Some("guests".into()),
            bounds: vec!["1".into(), "12".into()],
            ..FieldFacts::default()
        };
        let fields = [city, guests];
        let f = facts(&[], &none, &[], &none, &fields);
        let u = unsupported(&f, "Great, your stay in Naples is noted.").unwrap();
        assert_eq!(
            (u.said.as_str(), u.why.as_str()),
            ("Naples, Italy", "`city` is Rome")
        );
        let u = unsupported(&f, "A room for 3 guests, then.").unwrap();
        assert_eq!(
            (u.said.as_str(), u.why.as_str()),
            ("3 guests", "`guests` is 2")
        );
        assert!(unsupported(&f, "Just 5 guests.").is_some());
        assert!(unsupported(&f, "Done for 1 guest.").is_none(), "a bound");
        for fine in [
            "Rome for 2 guests: noted.",
            "You changed Naples to Rome.",
            "Check-in is on the 3rd.",
            "Which city would you like?",
            "Did you mean Naples?",
            "Shall I make it 3 guests?",
        ] {
            assert_eq!(unsupported(&f, fine), None, "{fine}");
        }
        // The field's bounds are its limits, which may be said.
        assert_eq!(unsupported(&f, "We take 1 to 12 guests."), None);
    }

    #[test]
    fn asking_again_for_a_value_given_this_turn_is_caught() {
        let none = |_: &str| false;
        let invoice = FieldFacts {
            field: "invoice".into(),
            current: vec!["INV-7".into()],
            given_as: vec![normalize("invoice"), normalize("invoice number")],
            asked_with: vec![
                normalize("Which invoice is it about?"),
                normalize("Please give me its number (it starts with INV-)."),
            ],
            ..FieldFacts::default()
        };
        let fields = [invoice];
        let f = facts(&[], &none, &[], &none, &fields);
        for again in [
            "Which invoice is it about?",
            "Please give me its number (it starts with INV-).",
            "Could you please provide the invoice number?",
        ] {
            let u = unsupported(&f, again).unwrap();
            assert_eq!(u.said, again);
            assert_eq!(u.why, "the user has just given it: `invoice` is INV-7");
        }
        for fine in [
            "What would you like to know about invoice INV-7?",
            "Is INV-7 the right invoice number?",
            "The invoice number helps us find it.",
            "Which date was the charge?",
        ] {
            assert_eq!(unsupported(&f, fine), None, "{fine}");
        }
        // A field with no value is asked for freely.
        let empty = [FieldFacts {
            field: "invoice".into(),
            given_as: vec![normalize("invoice"), normalize("invoice number")],
            ..FieldFacts::default()
        }];
        let f = facts(&[], &none, &[], &none, &empty);
        assert_eq!(unsupported(&f, "What is the invoice number?"), None);
    }

    #[test]
    fn what_code_wrote_is_not_checked() {
        let o = book_room();
        let none = |_: &str| false;
        let wrote = [
            "Nothing was booked: it must be confirmed first. Booked rooms show here.".to_owned(),
        ];
        let f = Facts {
            guards: &[],
            present: &none,
            outcomes: &o,
            earned: &none,
            fields: &[],
            code_wrote: &wrote,
        };
        assert_eq!(unsupported(&f, "Booked rooms show here."), None);
        assert!(unsupported(&f, "Your room is booked.").is_some());
    }
}
