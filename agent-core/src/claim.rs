//! Claim guards: what a model-written reply may say only when the state supports it.
//!
//! A small model announces "your booking is confirmed" while no booking exists. Field
//! checks keep the *data* true; a claim guard keeps the *text* true: a pattern (say
//! `(?i)\b(booked|confirmed)\b`) and the fields that must be present for a reply to
//! match it (`booking_id`). After the turn's tools and hooks ran, a model-written reply
//! that matches while a field is missing is rendered again once, told why; if it still
//! claims it, the sentences that match are removed. Verbatim replies (templates,
//! directives) are written by code and never checked.

use std::sync::Arc;

use regex::Regex;

/// One guard: a reply matching `pattern` needs every field of `requires` present.
#[derive(Debug, Clone)]
pub(crate) struct ClaimGuard {
    pub(crate) pattern: Regex,
    pub(crate) requires: Vec<Arc<str>>,
}

/// A claim the reply made without the state to support it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported {
    /// The words of the reply that matched.
    pub(crate) said: String,
    /// The fields the claim needs that are not set.
    pub(crate) missing: Vec<Arc<str>>,
}

impl ClaimGuard {
    /// The first unsupported claim in `text`, given which fields are present.
    fn check(&self, text: &str, present: &dyn Fn(&str) -> bool) -> Option<Unsupported> {
        let missing: Vec<Arc<str>> = self
            .requires
            .iter()
            .filter(|f| !present(f))
            .cloned()
            .collect();
        if missing.is_empty() {
            return None;
        }
        self.pattern.find(text).map(|m| Unsupported {
            said: m.as_str().to_owned(),
            missing,
        })
    }
}

/// The first unsupported claim of any guard.
pub(crate) fn unsupported(
    guards: &[ClaimGuard],
    text: &str,
    present: &dyn Fn(&str) -> bool,
) -> Option<Unsupported> {
    guards.iter().find_map(|g| g.check(text, present))
}

/// `text` without the sentences (or list lines) that make an unsupported claim, and
/// the removed pieces. Lines are split first, then sentences (after `.`, `!` or `?`
/// followed by a space), so a summary's "- Booking ID: null" line goes alone.
pub(crate) fn withhold(
    guards: &[ClaimGuard],
    text: &str,
    present: &dyn Fn(&str) -> bool,
) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(text.len());
    let mut removed = Vec::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let mut out = String::with_capacity(body.len());
        let mut cut = false;
        for piece in crate::reply::sentences(body) {
            if unsupported(guards, piece, present).is_some() {
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

    #[test]
    fn a_claim_is_unsupported_only_while_its_field_is_missing() {
        let g = guard();
        let text = "Your room in Lisbon is booked.";
        let u = unsupported(&g, text, &|_| false).unwrap();
        assert_eq!(u.said, "booked");
        assert_eq!(u.missing, vec![Arc::from("booking_id")]);
        assert_eq!(unsupported(&g, text, &|f| f == "booking_id"), None);
        assert_eq!(unsupported(&g, "Which city?", &|_| false), None);
    }

    #[test]
    fn withholding_removes_only_the_sentences_and_lines_that_claim() {
        let g = guard();
        let (text, removed) = withhold(
            &g,
            "Sure! I've booked a room in Lisbon for two. Please confirm the date?",
            &|_| false,
        );
        assert_eq!(text, "Sure! Please confirm the date?");
        assert_eq!(removed, ["I've booked a room in Lisbon for two."]);

        let (text, removed) = withhold(
            &g,
            "Summary:\n- City: Lisbon\n- Booking ID: null\n- Guests: 2\nShall I book it?",
            &|_| false,
        );
        assert_eq!(
            text,
            "Summary:\n- City: Lisbon\n- Guests: 2\nShall I book it?"
        );
        assert_eq!(removed, ["- Booking ID: null"]);

        let (text, removed) = withhold(&g, "Booked!", &|_| false);
        assert_eq!((text.as_str(), removed.len()), ("", 1));
    }
}
