//! Model-written replies, tidied before the user reads them. A small model that runs
//! on (measured on Qwen2.5-Coder 1.5B: "I'm here to help!" three times, then a sentence
//! cut at `max_reply_chars`; "Summarise the booking and ask the guest to confirm." read
//! back from the step's prompt) leaves text no person would send; the engine removes
//! sentences the reply already said, sentences copied from the instructions it was
//! given (the notes too: "(Still needed from the user: check_in, guests.)" reached
//! the user in 5 of 56 concierge conversations), sentences that say the user's own
//! message back ("I want a refund." as the reply to "I want a refund": 22 of 75
//! answers in a help-desk run, 22 of 175 in a concierge run), sentences about "the
//! user" ("The user needs a refund."), and a last sentence the length limit cut.
//! Verbatim replies (templates, tools, hooks) are never changed.

use std::sync::{Arc, Mutex, PoisonError};

use crate::fxhash::{FxHashMap, FxHashSet};

use crate::provider::STATE_MARKER;

/// The instructions a reply was written from: the call's system text and the per-turn
/// state appended to the user's message. What a reply must not read back from them is
/// worked out only when a reply has a sentence long enough to be such a copy, line by
/// line, and kept per line in a [`ReadBackCache`]: most lines (the system text, a
/// step's instruction) are the same bytes call after call.
pub(crate) struct Instructions<'a> {
    system: &'a str,
    state: &'a str,
    cache: Option<&'a ReadBackCache>,
}

impl<'a> Instructions<'a> {
    /// A call's system text and per-turn state, with the agent's cache.
    pub(crate) fn new(system: &'a str, state: &'a str, cache: &'a ReadBackCache) -> Self {
        Self {
            system,
            state,
            cache: Some(cache),
        }
    }

    /// Instructions given as one text, read on every use (tests).
    #[cfg(test)]
    fn text(all: &'a str) -> Self {
        Self {
            system: all,
            state: "",
            cache: None,
        }
    }

    /// What a reply must not read back from these instructions. The system text is
    /// the same bytes call after call in a step, so its lines are read once and kept
    /// whole; the per-turn state is read line by line.
    fn read_back(&self) -> ReadBack {
        let Some(c) = self.cache else {
            let lines = self.system.lines().chain(self.state.lines());
            return ReadBack {
                system: Arc::new(LineReadBack::default()),
                lines: lines
                    .map(LineReadBack::of)
                    .filter(|l| !l.is_empty())
                    .map(Arc::new)
                    .collect(),
            };
        };
        let mut cached = c.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.len() > ReadBackCache::MAX_LINES {
            cached.clear();
        }
        let mut read = |text: &str, into: &mut Vec<Arc<LineReadBack>>| {
            for line in text.lines() {
                if let Some(l) = cached.get(line) {
                    if !l.is_empty() {
                        into.push(l.clone());
                    }
                    continue;
                }
                let l = Arc::new(LineReadBack::of(line));
                cached.insert(Arc::from(line), l.clone());
                if !l.is_empty() {
                    into.push(l);
                }
            }
        };
        let mut systems = c.systems.lock().unwrap_or_else(PoisonError::into_inner);
        let system = match systems.get(self.system) {
            Some(s) => s.clone(),
            None => {
                let mut v = Vec::new();
                read(self.system, &mut v);
                let mut all = LineReadBack::default();
                for l in v {
                    all.exact.extend(l.exact.iter().cloned());
                    all.within.extend(l.within.iter().cloned());
                }
                let s = Arc::new(all);
                if systems.len() >= ReadBackCache::MAX_SYSTEMS {
                    systems.clear();
                }
                systems.insert(Arc::from(self.system), s.clone());
                s
            }
        };
        let mut lines = Vec::new();
        read(self.state, &mut lines);
        ReadBack { system, lines }
    }
}

/// The [`LineReadBack`] of the instruction lines an agent sent lately, and of its
/// system texts whole.
#[derive(Default)]
pub(crate) struct ReadBackCache {
    lines: Mutex<FxHashMap<Arc<str>, Arc<LineReadBack>>>,
    systems: Mutex<FxHashMap<Arc<str>, Arc<LineReadBack>>>,
}

impl ReadBackCache {
    /// Lines kept; past it, the cache starts again (lines that carry values, such as
    /// the collected data, differ from call to call).
    const MAX_LINES: usize = 4096;
    /// System texts kept (one per step and flow, give or take the day's date).
    const MAX_SYSTEMS: usize = 256;
}

/// `text` without repeated sentences, without sentences copied from `prompt` (the
/// instructions of the call that wrote it), from `user` (the message it answers) or
/// from `answered` (the agent's question the user has answered, when the reply is
/// for the step after it: Qwen2.5 1.5B wrote the help desk's "Which invoice is it
/// about?" again after the user gave it, 2 of 41 turns) and, when it reached
/// `max_chars` (the decoder or the cap stopped it), without its unfinished last
/// sentence. `None` when nothing changes. A reply that would lose every sentence is
/// kept whole, and one unfinished sentence too: something is better than nothing.
pub(crate) fn tidy(
    text: &str,
    max_chars: usize,
    prompt: &Instructions<'_>,
    user: &str,
    answered: Option<&str>,
) -> Option<String> {
    let cut = text.chars().nth(max_chars.saturating_sub(1)).is_some();
    // Read lazily: most replies have no sentence long enough to be a copy.
    let mut read_back: Option<ReadBack> = None;
    let mut said_back: Option<FxHashSet<String>> = None;
    let mut seen: FxHashSet<String> = FxHashSet::default();
    let mut kept: Vec<&str> = Vec::new();
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        for piece in sentences(line) {
            let key = normalise(piece);
            if key.is_empty() {
                kept.push(piece);
                continue;
            }
            let b = bare(&key);
            let words = b.split(' ').count();
            let echo = (words >= USER_MIN_WORDS
                && said_back
                    .get_or_insert_with(|| {
                        let mut s = user_sentences(user);
                        s.extend(answered.map(user_sentences).unwrap_or_default());
                        s
                    })
                    .contains(&b))
                || (words >= READ_BACK_MIN_WORDS
                    && read_back
                        .get_or_insert_with(|| prompt.read_back())
                        .said_in(&b))
                || about_the_user(&b);
            if echo || !seen.insert(key) {
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

/// `text` without the tool calls a model wrote into it as JSON instead of calling the
/// tool (the local default model wrote `{"name": "everything__echo", "arguments":
/// {"message": "hi"}}` as its reply): every JSON object or array of objects that
/// has the shape of a tool call (`name` with `arguments`/`parameters`/`args`/`input`,
/// `tool` with arguments, a `function` object with a `name`, `tool_calls`), with the
/// code fence or `<tool_call>` tags around it. `None` when there is none; the rest,
/// trimmed and possibly empty, otherwise. A reply never reaches the user with one.
pub(crate) fn without_tool_calls(text: &str) -> Option<String> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while let Some(off) = text[at..].find(['{', '[']) {
        let start = at + off;
        let mut values =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        match values.next() {
            Some(Ok(v)) if is_tool_call(&v) => {
                let end = start + values.byte_offset();
                cuts.push((start, end));
                at = end;
            }
            _ => at = start + 1,
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut rest = String::with_capacity(text.len());
    let mut from = 0;
    for (start, end) in cuts {
        rest.push_str(&text[from..start]);
        from = end;
    }
    rest.push_str(&text[from..]);
    // What wrapped the calls, now empty: a code fence, `<tool_call>` tags.
    let wrappers = regex::Regex::new(
        r"(?s)```[A-Za-z]*\s*```|<\|?tool_calls?\|?>\s*(</\|?tool_calls?\|?>)?|</\|?tool_calls?\|?>",
    );
    let rest = match wrappers {
        Ok(re) => re.replace_all(&rest, "").into_owned(),
        Err(_) => rest,
    };
    Some(rest.trim().to_owned())
}

/// Whether a JSON value has the shape of a tool call (or a list of them).
fn is_tool_call(v: &serde_json::Value) -> bool {
    const ARGS: [&str; 4] = ["arguments", "parameters", "args", "input"];
    match v {
        serde_json::Value::Array(items) => !items.is_empty() && items.iter().all(is_tool_call),
        serde_json::Value::Object(o) => {
            let named = |k: &str| o.get(k).is_some_and(serde_json::Value::is_string);
            let with_args = ARGS.iter().any(|k| o.contains_key(*k));
            ((named("name") || named("tool") || named("tool_name")) && with_args)
                || o.get("function")
                    .and_then(|f| f.get("name"))
                    .is_some_and(serde_json::Value::is_string)
                || o.contains_key("tool_calls")
                || o.contains_key("tool_call")
        }
        _ => false,
    }
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

/// Fewest words of an instruction sentence a reply must not read back (shorter ones,
/// "Ask the city.", are anyone's).
const READ_BACK_MIN_WORDS: usize = 5;

/// Fewest words of a sentence of the user's a reply must not say back ("Yes,
/// thanks." is anyone's).
const USER_MIN_WORDS: usize = 3;

/// What a reply must not read back from the instructions, keyed by [`bare`]: each
/// statement, and what follows a step's label in it ("Now, Step `confirm`: Summarise
/// the booking." gives "summarise the booking"). Left out, since a reply may rightly
/// say them: quoted text (the user's message, a question the agent asked), questions
/// and exclamations (a prompt may be the very line to say), and short sentences ("Ask
/// the city."). A statement in the engine's own wording, which names "the user", a
/// field in backticks or a `field = value` pair, goes even inside a longer sentence
/// (the model wraps them: "(Still needed from the user: city.)", "I'll ask which
/// city the user wants to stay in next."); the author's facts ("The pool is closed
/// today.") only when said alone, as a reply may rightly build on them.
pub(crate) struct ReadBack {
    /// The system text's lines, as one.
    system: Arc<LineReadBack>,
    /// The per-turn state's lines.
    lines: Vec<Arc<LineReadBack>>,
}

/// The marker that starts the per-turn state, as [`bare`] reads it: said anywhere, it
/// is read back.
static MARKER: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| bare(&normalise(STATE_MARKER)));

impl ReadBack {
    fn said_in(&self, bare: &str) -> bool {
        holds(bare, MARKER.as_str())
            || self.system.said_in(bare)
            || self.lines.iter().any(|l| l.said_in(bare))
    }
}

/// What a reply must not read back from one line of the instructions (or from a
/// system text's lines together).
#[derive(Default)]
pub(crate) struct LineReadBack {
    /// Statements a reply sentence must not be.
    exact: Vec<String>,
    /// The engine's own statements, which a reply sentence must not contain.
    within: Vec<String>,
}

impl LineReadBack {
    fn of(line: &str) -> Self {
        let mut exact = Vec::new();
        let mut within = Vec::new();
        let line = unquoted(line);
        let line = line.trim_start().trim_start_matches("- ");
        for s in sentences(line) {
            let end = s.trim_end();
            // An unpunctuated line ("Collected so far: city = Lisbon") counts.
            if end.ends_with(['?', '!']) || (!end.ends_with('.') && !line.ends_with(s)) {
                continue;
            }
            let key = normalise(s);
            let after_label = key.split_once("`: ").map(|(_, rest)| rest.to_owned());
            for k in std::iter::once(key).chain(after_label) {
                let engine = k.contains("the user") || k.contains('`') || k.contains(" = ");
                let k = bare(&k);
                if k.split(' ').count() < READ_BACK_MIN_WORDS {
                    continue;
                }
                if engine {
                    within.push(k);
                } else {
                    exact.push(k);
                }
            }
        }
        Self { exact, within }
    }

    fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.within.is_empty()
    }

    fn said_in(&self, bare: &str) -> bool {
        self.exact.iter().any(|e| e == bare) || self.within.iter().any(|w| holds(bare, w))
    }
}

/// Whether `sentence` holds `entry`: a plain scan, cheaper than a substring
/// searcher's set-up for a sentence and an entry of a few words.
fn holds(sentence: &str, entry: &str) -> bool {
    let (s, e) = (sentence.as_bytes(), entry.as_bytes());
    let Some((&first, rest)) = e.split_first() else {
        return true;
    };
    if e.len() > s.len() {
        return false;
    }
    (0..=s.len() - e.len()).any(|i| s[i] == first && s[i + 1..].starts_with(rest))
}

/// A sentence about "the user" is the model talking about the conversation ("The
/// user has a billing or payment question.", "I'll refund it if the user asked for a
/// refund": its prompts name the person so), not to the person, who is "you" in a
/// reply. Nouns such as "the user manual" are not the person.
fn about_the_user(bare: &str) -> bool {
    const NOUNS: [&str; 12] = [
        "manual",
        "guide",
        "interface",
        "account",
        "name",
        "profile",
        "id",
        "agreement",
        "support",
        "settings",
        "portal",
        "community",
    ];
    // Most sentences do not say "user": the search is set up only for those that do.
    if !bare.as_bytes().windows(4).any(|w| w == b"user") {
        return false;
    }
    bare.match_indices("the user").any(|(i, m)| {
        if !bare[..i].is_empty() && !bare[..i].ends_with(' ') {
            return false;
        }
        let rest = &bare[i + m.len()..];
        let rest = rest.strip_prefix("'s").unwrap_or(rest);
        // "the users" or "the username" is another word.
        let Some(rest) = rest
            .strip_prefix(' ')
            .or_else(|| rest.is_empty().then_some(""))
        else {
            return rest.starts_with([',', ';', ':']);
        };
        let next = rest.split([' ', ',', ';', ':']).next().unwrap_or("");
        !NOUNS.contains(&next)
    })
}

/// The sentences of the user's message a reply must not say back, keyed by [`bare`]:
/// questions too (a question answered with itself is no answer); short ones ("Yes,
/// thanks.") are anyone's.
fn user_sentences(user: &str) -> FxHashSet<String> {
    user.lines()
        .flat_map(sentences)
        .map(|s| bare(&normalise(s)))
        .filter(|k| k.split(' ').count() >= USER_MIN_WORDS)
        .collect()
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
    let mut out = if normalised.contains('`') {
        normalised.replace('`', "")
    } else {
        normalised.to_owned()
    };
    let end = out.trim_end_matches(['.', '!', '?', ' ']).len();
    out.truncate(end);
    out
}

/// A sentence compared case- and spacing-insensitively.
fn normalise(s: &str) -> String {
    if s.is_ascii() {
        // As `split_whitespace` reads ASCII: the vertical tab is spacing too.
        let space = |b: u8| b.is_ascii_whitespace() || b == 0x0B;
        let mut out = Vec::with_capacity(s.len());
        for &b in s.as_bytes() {
            if space(b) {
                if out.last().is_some_and(|l| *l != b' ') {
                    out.push(b' ');
                }
            } else {
                out.push(b.to_ascii_lowercase());
            }
        }
        if out.last() == Some(&b' ') {
            out.pop();
        }
        return String::from_utf8(out).unwrap_or_default();
    }
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if word.is_ascii() {
            out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalising_reads_spacing_and_case_as_split_whitespace_and_to_lowercase_do() {
        for s in [
            "  Hello\t World \n",
            "Which   CITY?\x0b ",
            "",
            " \r\n ",
            "Ünïcode   ΣΑΣ  Text",
            "a\u{a0}b  C",
        ] {
            let slow = s
                .split_whitespace()
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(normalise(s), slow, "{s:?}");
        }
    }

    #[test]
    fn a_repeated_sentence_goes() {
        let t = "Which date? I'm here to help! Which date works? I'm here to help! Bye.";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "", None).as_deref(),
            Some("Which date? I'm here to help! Which date works? Bye.")
        );
    }

    #[test]
    fn repeats_differing_in_case_or_spacing_go_too() {
        let t = "Thanks.  Which city?\nthanks. Which   city?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "", None).as_deref(),
            Some("Thanks.  Which city?")
        );
    }

    #[test]
    fn a_sentence_cut_by_the_limit_goes() {
        let t = "Which city would you like? I can also help you with some";
        let max = t.chars().count();
        assert_eq!(
            tidy(t, max, &Instructions::text(""), "", None).as_deref(),
            Some("Which city would you like?")
        );
    }

    #[test]
    fn an_unfinished_last_sentence_under_the_limit_stays() {
        let t = "Which city would you like? Tell me";
        assert_eq!(tidy(t, 400, &Instructions::text(""), "", None), None);
    }

    #[test]
    fn a_reply_of_one_cut_sentence_stays() {
        let t = "Which city would you like to stay in during your";
        assert_eq!(
            tidy(t, t.chars().count(), &Instructions::text(""), "", None),
            None
        );
    }

    #[test]
    fn sentences_read_back_from_the_instructions_go() {
        let prompt = "Now, Step `confirm`: Summarise the booking and ask the guest to confirm.\n\
                      Does the user's latest message, \"Here is your booking: a room in Lisbon for two guests.\", agree?\n\
                      - Never say an action was made unless a tool made it.";
        let t = "Summarise the booking and ask the guest to confirm. Shall I book it?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(prompt), "", None).as_deref(),
            Some("Shall I book it?")
        );
        let t = "Sure! Never say an action was made unless a tool made it! Which date?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(prompt), "", None).as_deref(),
            Some("Sure! Which date?")
        );
        // Quoted text is the conversation's, and short sentences are anyone's.
        let t = "Here is your booking: a room in Lisbon for two guests. Shall I book it?";
        assert_eq!(tidy(t, 400, &Instructions::text(prompt), "", None), None);
        assert_eq!(
            tidy(
                "Which city?",
                400,
                &Instructions::text("Ask: Which city?"),
                "",
                None
            ),
            None
        );
        let say = "Say: Which city would you like to stay in?";
        let t = "Hello! Which city would you like to stay in?";
        assert_eq!(tidy(t, 400, &Instructions::text(say), "", None), None);
        // A reply that is nothing but the instructions is kept: better than nothing.
        let t = "Summarise the booking and ask the guest to confirm.";
        assert_eq!(tidy(t, 400, &Instructions::text(prompt), "", None), None);
    }

    #[test]
    fn holding_an_entry_is_containing_it() {
        let sentences = [
            "",
            "a",
            "ask which city",
            "which city the user wants",
            "ünï côdé ünï",
            "abab",
        ];
        let entries = [
            "",
            "a",
            "city",
            "the user",
            "user wants x",
            "côdé",
            "ünï",
            "bab",
            "abab",
            "ababa",
        ];
        for s in sentences {
            for e in entries {
                assert_eq!(holds(s, e), s.contains(e), "{s:?} {e:?}");
            }
        }
    }

    #[test]
    fn the_system_texts_read_back_is_kept_and_the_state_is_read_each_call() {
        let cache = ReadBackCache::default();
        let system = "You are Concierge.\n- Never say an action was made unless a tool made it.";
        let t = "Sure! Never say an action was made unless a tool made it! Which date?";
        let state = "Collected so far: city = Lisbon, guests = 2.";
        let p = Instructions::new(system, state, &cache);
        assert_eq!(
            tidy(t, 400, &p, "", None).as_deref(),
            Some("Sure! Which date?")
        );
        let t = "Which date? Collected so far: city = Lisbon, guests = 2.";
        assert_eq!(tidy(t, 400, &p, "", None).as_deref(), Some("Which date?"));
        // Another turn's state, the same system text: one entry, the new state read.
        let state = "Collected so far: city = Porto, guests = 2.";
        let p = Instructions::new(system, state, &cache);
        assert_eq!(tidy(t, 400, &p, "", None), None);
        let t = "Which date? Collected so far: city = Porto, guests = 2.";
        assert_eq!(tidy(t, 400, &p, "", None).as_deref(), Some("Which date?"));
        assert_eq!(cache.lines.lock().map(|e| e.len()).unwrap_or(0), 4);
        // The system text is read once, whole, for both turns.
        assert_eq!(cache.systems.lock().map(|e| e.len()).unwrap_or(0), 1);
        // A reply with no sentence long enough to be a copy reads nothing.
        let other = Instructions::new("Another system text, long enough to count.", "", &cache);
        assert_eq!(tidy("Which city? Thanks.", 400, &other, "", None), None);
        assert_eq!(cache.lines.lock().map(|e| e.len()).unwrap_or(0), 4);
    }

    #[test]
    fn the_engines_notes_go_even_when_wrapped() {
        let prompt = "You are Concierge.\n\
                      Rules for now:\n\
                      - ALWAYS mention that the pool is closed today for maintenance.\n\
                      Collected so far: check_in = 2026-07-01, city = Lisbon\n\
                      About the user's latest message:\n\
                      - Still needed from the user: check_in, guests.\n\
                      Now, Step `ask_city`: Ask which city the user wants to stay in.";
        let t = "What is the check-in date? (Still needed from the user: check_in, guests.) \
                 I'll ask which city the user wants to stay in next.";
        assert_eq!(
            tidy(t, 400, &Instructions::text(prompt), "", None).as_deref(),
            Some("What is the check-in date?")
        );
        let t = "Sure. [Agent notes for this reply, not from the user] Collected so far: check_in = 2026-07-01, city = Lisbon";
        assert_eq!(
            tidy(t, 400, &Instructions::text(prompt), "", None).as_deref(),
            Some("Sure.")
        );
        // The author's facts may be built on.
        let t = "Note that the pool is closed today for maintenance. Anything else?";
        assert_eq!(tidy(t, 400, &Instructions::text(prompt), "", None), None);
    }

    #[test]
    fn sentences_about_the_user_go() {
        let t = "The user has a billing or payment question. Which invoice is it?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "", None).as_deref(),
            Some("Which invoice is it?")
        );
        let t = "The user's latest message does not agree. Shall I book it?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "", None).as_deref(),
            Some("Shall I book it?")
        );
        assert_eq!(
            tidy(
                "The user manual is online. See page 3.",
                400,
                &Instructions::text(""),
                "",
                None
            ),
            None
        );
        // Anywhere in the sentence.
        let t = "I will refund it if the user asked for a refund. Anything else?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "", None).as_deref(),
            Some("Anything else?")
        );
        for kept in [
            "Open the user settings, then tap Reset. Anything else?",
            "Ask the users group. Anything else?",
            "Pick a new username. Anything else?",
        ] {
            assert_eq!(
                tidy(kept, 400, &Instructions::text(""), "", None),
                None,
                "{kept}"
            );
        }
    }

    #[test]
    fn sentences_said_back_to_the_user_go() {
        let user = "Sorry, we are 3, not 2";
        let t = "Sorry, we are 3, not 2. Shall I book it for 3 guests?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), user, None).as_deref(),
            Some("Shall I book it for 3 guests?")
        );
        // Case, spacing and the closing mark do not hide an echo; questions are echoes too.
        let user = "What time is check-in?\nAnd is there parking?";
        let t = "what time is   check-in. Check-in is at 3 pm. And is there parking?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), user, None).as_deref(),
            Some("Check-in is at 3 pm.")
        );
        // Short sentences are anyone's; a reply that is only the echo is kept.
        assert_eq!(
            tidy(
                "Thank you! Bye.",
                400,
                &Instructions::text(""),
                "Thank you!",
                None
            ),
            None
        );
        assert_eq!(
            tidy(
                "I want a refund.",
                400,
                &Instructions::text(""),
                "I want a refund",
                None
            ),
            None
        );
    }

    #[test]
    fn a_clean_reply_is_unchanged() {
        assert_eq!(
            tidy(
                "Booked. See you in Lisbon!",
                400,
                &Instructions::text(""),
                "",
                None
            ),
            None
        );
        assert_eq!(tidy("", 400, &Instructions::text(""), "", None), None);
    }

    #[test]
    fn the_question_the_user_answered_is_not_asked_again() {
        let asked = "Which invoice is it about? Please give me its number (it starts with INV-).";
        let t = "Which invoice is it about? Thanks, what would you like to know about INV-7?";
        assert_eq!(
            tidy(t, 400, &Instructions::text(""), "It's INV-7", Some(asked)).as_deref(),
            Some("Thanks, what would you like to know about INV-7?")
        );
        // Nothing else said: kept whole.
        assert_eq!(
            tidy(
                "Which invoice is it about?",
                400,
                &Instructions::text(""),
                "INV-7",
                Some(asked)
            ),
            None
        );
    }

    #[test]
    fn a_tool_call_written_as_text_is_removed() {
        use super::without_tool_calls as w;
        let call = r#"{"name": "everything__echo", "arguments": {"message": "hi"}}"#;
        assert_eq!(w(call).as_deref(), Some(""));
        assert_eq!(
            w(&format!("Sure, let me check.\n```json\n{call}\n```")).as_deref(),
            Some("Sure, let me check.")
        );
        assert_eq!(
            w(&format!("<tool_call>\n{call}\n</tool_call>")).as_deref(),
            Some("")
        );
        let openai = r#"{"type": "function", "function": {"name": "book", "arguments": "{}"}}"#;
        assert_eq!(
            w(&format!("Booking. {openai}")).as_deref(),
            Some("Booking.")
        );
        assert_eq!(w(&format!("[{call}, {call}]")).as_deref(), Some(""));
        assert_eq!(
            w(r#"{"tool_calls": [{"id": "1"}]} Done."#).as_deref(),
            Some("Done.")
        );
    }

    #[test]
    fn other_json_and_braces_stay() {
        use super::without_tool_calls as w;
        assert_eq!(w("Your booking: {\"room\": 12, \"name\": \"Ana\"}."), None);
        assert_eq!(w("Use {braces} and [brackets] freely."), None);
        assert_eq!(w("Plain reply."), None);
        assert_eq!(w("[1, 2, 3]"), None);
    }
}
