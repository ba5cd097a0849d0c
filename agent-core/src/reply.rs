//! Model-written replies, tidied before the user reads them. A small model that runs
//! on (measured on Qwen2.5-Coder 1.5B: "I'm here to help!" three times, then a sentence
//! cut at `max_reply_chars`) leaves text no person would send; the engine removes
//! sentences the reply already said and a last sentence the length limit cut.
//! Verbatim replies (templates, tools, hooks) are never changed.

use std::collections::HashSet;

/// `text` without repeated sentences and, when it reached `max_chars` (the decoder or
/// the cap stopped it), without its unfinished last sentence. `None` when nothing
/// changes. A reply that is one unfinished sentence is kept: something is better than
/// nothing.
pub(crate) fn tidy(text: &str, max_chars: usize) -> Option<String> {
    let cut = text.chars().nth(max_chars.saturating_sub(1)).is_some();
    let mut seen: HashSet<String> = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        for piece in sentences(line) {
            let key = normalise(piece);
            if key.is_empty() || seen.insert(key) {
                kept.push(piece);
            } else {
                changed = true;
            }
        }
    }
    if cut {
        let finished = |p: &str| {
            p.trim_end()
                .ends_with(['.', '!', '?', '…', '"', '\'', ')', '。', '！', '？'])
        };
        while kept.len() > 1 && kept.last().is_some_and(|p| !finished(p)) {
            kept.pop();
            changed = true;
        }
    }
    changed.then(|| kept.concat().trim_end().to_owned())
}

/// Sentences of one line, each with its trailing spacing (joined, they are the line):
/// a sentence ends at `.`, `!` or `?` followed by a space.
pub(crate) fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end = matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| *n == b' ');
        if end {
            // Keep the spaces after the mark with this sentence.
            let mut j = i + 1;
            while bytes.get(j) == Some(&b' ') {
                j += 1;
            }
            out.push(&line[start..j]);
            start = j;
        }
    }
    if start < line.len() {
        out.push(&line[start..]);
    }
    out
}

/// A sentence compared case- and spacing-insensitively.
fn normalise(s: &str) -> String {
    s.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_sentence_goes() {
        let t = "Which date? I'm here to help! Which date works? I'm here to help! Bye.";
        assert_eq!(
            tidy(t, 400).as_deref(),
            Some("Which date? I'm here to help! Which date works? Bye.")
        );
    }

    #[test]
    fn repeats_differing_in_case_or_spacing_go_too() {
        let t = "Thanks.  Which city?\nthanks. Which   city?";
        assert_eq!(tidy(t, 400).as_deref(), Some("Thanks.  Which city?"));
    }

    #[test]
    fn a_sentence_cut_by_the_limit_goes() {
        let t = "Which city would you like? I can also help you with some";
        let max = t.chars().count();
        assert_eq!(tidy(t, max).as_deref(), Some("Which city would you like?"));
    }

    #[test]
    fn an_unfinished_last_sentence_under_the_limit_stays() {
        let t = "Which city would you like? Tell me";
        assert_eq!(tidy(t, 400), None);
    }

    #[test]
    fn a_reply_of_one_cut_sentence_stays() {
        let t = "Which city would you like to stay in during your";
        assert_eq!(tidy(t, t.chars().count()), None);
    }

    #[test]
    fn a_clean_reply_is_unchanged() {
        assert_eq!(tidy("Booked. See you in Lisbon!", 400), None);
        assert_eq!(tidy("", 400), None);
    }
}
