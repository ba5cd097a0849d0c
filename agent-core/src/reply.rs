//! Model-written replies, tidied before the user reads them. A small model that runs
//! on (measured on Qwen2.5-Coder 1.5B: "I'm here to help!" three times, then a sentence
//! cut at `max_reply_chars`; "Summarise the booking and ask the guest to confirm." read
//! back from the step's prompt) leaves text no person would send; the engine removes
//! sentences the reply already said, sentences copied from the instructions it was
//! given, and a last sentence the length limit cut. Verbatim replies (templates,
//! tools, hooks) are never changed.

use std::collections::HashSet;

/// `text` without repeated sentences, without sentences copied from `prompt` (the
/// instructions of the call that wrote it) and, when it reached `max_chars` (the
/// decoder or the cap stopped it), without its unfinished last sentence. `None` when
/// nothing changes. A reply that would lose every sentence is kept whole, and one
/// unfinished sentence too: something is better than nothing.
pub(crate) fn tidy(text: &str, max_chars: usize, prompt: &str) -> Option<String> {
    let cut = text.chars().nth(max_chars.saturating_sub(1)).is_some();
    let echoes = instruction_sentences(prompt);
    let mut seen: HashSet<String> = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        for piece in sentences(line) {
            let key = normalise(piece);
            if key.is_empty() {
                kept.push(piece);
            } else if echoes.contains(&bare(&key)) || !seen.insert(key) {
                changed = true;
            } else {
                kept.push(piece);
            }
        }
    }
    if kept.iter().all(|p| p.trim().is_empty()) {
        kept = text.split_inclusive('\n').flat_map(sentences).collect();
        changed = false;
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

/// The sentences of the instructions a reply must not read back, keyed by [`bare`]:
/// each statement, and what follows a step's label in it ("Now, Step `confirm`:
/// Summarise the booking." gives "summarise the booking"). Left out, since a reply
/// may rightly say them: quoted text (the user's message, a question the agent
/// asked), questions and exclamations (a prompt may be the very line to say), and
/// short sentences ("Ask the city.").
fn instruction_sentences(prompt: &str) -> HashSet<String> {
    const MIN_WORDS: usize = 5;
    let mut out = HashSet::new();
    for line in prompt.lines() {
        let line = unquoted(line);
        let line = line.trim_start().trim_start_matches("- ");
        for s in sentences(line) {
            if !s.trim_end().ends_with('.') {
                continue;
            }
            let key = normalise(s);
            let after_label = key.split_once("`: ").map(|(_, rest)| bare(rest));
            for k in std::iter::once(bare(&key)).chain(after_label) {
                if k.split(' ').count() >= MIN_WORDS {
                    out.insert(k);
                }
            }
        }
    }
    out
}

/// `line` without its double-quoted spans.
fn unquoted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut inside = false;
    for c in line.chars() {
        if c == '"' {
            inside = !inside;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

/// A normalised sentence without backticks and its closing punctuation, so a reply's
/// "Summarise the booking!" matches the prompt's "`Summarise` the booking.".
fn bare(normalised: &str) -> String {
    normalised
        .replace('`', "")
        .trim_end_matches(['.', '!', '?', ' '])
        .to_owned()
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
            tidy(t, 400, "").as_deref(),
            Some("Which date? I'm here to help! Which date works? Bye.")
        );
    }

    #[test]
    fn repeats_differing_in_case_or_spacing_go_too() {
        let t = "Thanks.  Which city?\nthanks. Which   city?";
        assert_eq!(tidy(t, 400, "").as_deref(), Some("Thanks.  Which city?"));
    }

    #[test]
    fn a_sentence_cut_by_the_limit_goes() {
        let t = "Which city would you like? I can also help you with some";
        let max = t.chars().count();
        assert_eq!(
            tidy(t, max, "").as_deref(),
            Some("Which city would you like?")
        );
    }

    #[test]
    fn an_unfinished_last_sentence_under_the_limit_stays() {
        let t = "Which city would you like? Tell me";
        assert_eq!(tidy(t, 400, ""), None);
    }

    #[test]
    fn a_reply_of_one_cut_sentence_stays() {
        let t = "Which city would you like to stay in during your";
        assert_eq!(tidy(t, t.chars().count(), ""), None);
    }

    #[test]
    fn sentences_read_back_from_the_instructions_go() {
        let prompt = "Now, Step `confirm`: Summarise the booking and ask the guest to confirm.\n\
                      Does the user's latest message, \"Here is your booking: a room in Lisbon for two guests.\", agree?\n\
                      - Never say an action was made unless a tool made it.";
        let t = "Summarise the booking and ask the guest to confirm. Shall I book it?";
        assert_eq!(tidy(t, 400, prompt).as_deref(), Some("Shall I book it?"));
        let t = "Sure! Never say an action was made unless a tool made it! Which date?";
        assert_eq!(tidy(t, 400, prompt).as_deref(), Some("Sure! Which date?"));
        // Quoted text is the conversation's, and short sentences are anyone's.
        let t = "Here is your booking: a room in Lisbon for two guests. Shall I book it?";
        assert_eq!(tidy(t, 400, prompt), None);
        assert_eq!(tidy("Which city?", 400, "Ask: Which city?"), None);
        let say = "Say: Which city would you like to stay in?";
        let t = "Hello! Which city would you like to stay in?";
        assert_eq!(tidy(t, 400, say), None);
        // A reply that is nothing but the instructions is kept: better than nothing.
        let t = "Summarise the booking and ask the guest to confirm.";
        assert_eq!(tidy(t, 400, prompt), None);
    }

    #[test]
    fn a_clean_reply_is_unchanged() {
        assert_eq!(tidy("Booked. See you in Lisbon!", 400, ""), None);
        assert_eq!(tidy("", 400, ""), None);
    }
}
