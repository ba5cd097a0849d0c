//! Grounded extraction: a value the model writes is stored only when what the user said
//! supports it, so a small model cannot fill a field nobody mentioned ("hi" is not a
//! city). The model cites, per field, the words it took the value from; the engine
//! checks, per type, that the value follows from them:
//!
//! - text: the value occurs in the cited words (case, accents, punctuation and spacing
//!   ignored; a word may differ in its ending, so "Lisboa" supports "Lisbon");
//! - numbers: stated in digits or in words ("two", "a couple", "dois"), or by one of
//!   the value's declared synonyms ("just me" for `1` guests);
//! - dates (`format: date`, or any `YYYY-MM-DD` value): the words name that day
//!   against the agent's clock ("July 1st", "1/7", "tomorrow", "next Friday",
//!   "in 3 days"); a year not stated must be this year or that of the next such
//!   day (whether a past day is acceptable is the field's own rule);
//! - enum values: the value or one of its declared synonyms occurs (synonyms are
//!   `"x-synonyms": {"double": ["two beds"], "1": ["just me"]}`, from
//!   `#[field(synonyms(...))]`);
//! - lists: every item is supported; booleans and objects are not checked.
//!
//! A quote that is not in what the user said is ignored and the value is checked
//! against the user's messages themselves. A field whose schema carries
//! `"x-inferred": true` (`#[field(inferred)]`) is exempt and its value is reported as
//! inferred.

use serde_json::Value;
use time::Date;

mod date;
mod lexicon;
mod number;
#[cfg(test)]
mod tests;
mod text;

use self::date::names_date;
pub(crate) use self::date::resolve_date;
use self::number::states_number;
pub(crate) use self::text::normalize;
use self::text::{contains_words, same_code};

/// What the user said this session, and today's date on the agent's clock.
pub(crate) struct Evidence<'a> {
    /// The user's messages, normalised ([`normalize`]).
    pub(crate) said: std::sync::Arc<[String]>,
    pub(crate) today: Date,
    pub(crate) defs: Option<&'a Value>,
}

/// The verdict on one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grounding {
    Grounded,
    /// The field opts out; stored and reported as inferred.
    Inferred,
    /// Not stored: why.
    Unsupported(String),
}

impl Evidence<'_> {
    /// Check `value` for a field of schema `prop`, cited by `quote`.
    pub(crate) fn check(&self, prop: &Value, value: &Value, quote: Option<&str>) -> Grounding {
        if flag(prop, "x-inferred", self.defs) {
            return Grounding::Inferred;
        }
        let quote = quote
            .map(normalize)
            .filter(|q| !q.is_empty() && self.said.iter().any(|s| s.contains(q.as_str())));
        let sources: Vec<&str> = match &quote {
            Some(q) => vec![q.as_str()],
            None => self.said.iter().map(String::as_str).collect(),
        };
        if sources.iter().any(|text| self.supports(prop, value, text)) {
            return Grounding::Grounded;
        }
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Grounding::Unsupported(match quote {
            Some(q) => format!("\"{q}\" does not say {shown}"),
            None => format!("the user did not say {shown}"),
        })
    }

    /// The words of `message` beyond the values of `read` (each a field's schema and
    /// the value read): words taken out one by one, from the first, while the rest
    /// alone still shows every value by the checks of [`Self::check`]. `None` when
    /// the message alone does not show them all. "It's INV-7" for `INV-7` leaves
    /// `it` and `s`; "Anna Berg" for `Anna Berg` leaves none; "Monday next week,
    /// please" for that day leaves the words the day can do without.
    pub(crate) fn words_beyond(
        &self,
        read: &[(&Value, &Value)],
        message: &str,
    ) -> Option<Vec<String>> {
        let text = normalize(message);
        let shown = |t: &str| read.iter().all(|(p, v)| self.supports(p, v, t));
        if read.is_empty() || !shown(&text) {
            return None;
        }
        let mut kept: Vec<&str> = text.split_whitespace().collect();
        let mut beyond = Vec::new();
        let mut rest = String::with_capacity(text.len());
        let mut i = 0;
        while i < kept.len() {
            rest.clear();
            rest.push(' ');
            for (j, w) in kept.iter().enumerate() {
                if j != i {
                    rest.push_str(w);
                    rest.push(' ');
                }
            }
            if shown(&rest) {
                beyond.push(kept.remove(i).to_owned());
            } else {
                i += 1;
            }
        }
        Some(beyond)
    }

    fn supports(&self, prop: &Value, value: &Value, text: &str) -> bool {
        match value {
            Value::Null | Value::Bool(_) | Value::Object(_) => true,
            Value::Array(items) => items.iter().all(|v| self.supports(prop, v, text)),
            Value::Number(n) => {
                n.as_f64().is_some_and(|n| states_number(text, n))
                    || self.says_synonym(prop, &number_key(n), text)
            }
            Value::String(s) => {
                if let Some(date) = crate::data::validate::parse_date(s) {
                    return names_date(text, date, self.today);
                }
                self.says_synonym(prop, s, text)
                    || contains_words(text, &normalize(s))
                    || same_code(text, s)
            }
        }
    }

    /// `text` says one of the synonyms declared for the value keyed `key`: the whole
    /// phrase, as words (case, accents and punctuation aside), since its short words
    /// carry the meaning ("just me" is not "just us").
    fn says_synonym(&self, prop: &Value, key: &str, text: &str) -> bool {
        synonyms(prop, key, self.defs).is_some_and(|syn| {
            syn.iter()
                .map(|x| normalize(x))
                .any(|x| !x.trim().is_empty() && text.contains(x.as_str()))
        })
    }
}

/// A number as an `x-synonyms` key: whole numbers without a fraction (`2.0` is `"2"`).
pub(crate) fn number_key(n: &serde_json::Number) -> String {
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), ..) => i.to_string(),
        (_, Some(u), _) => u.to_string(),
        // Whole floats are keyed like the integer they equal.
        #[allow(clippy::cast_possible_truncation)]
        (.., Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => (f as i64).to_string(),
        _ => n.to_string(),
    }
}

/// Whether a schema (or a `$ref`/`anyOf` branch of it) sets `key` to `true`.
fn flag(prop: &Value, key: &str, defs: Option<&Value>) -> bool {
    find(prop, defs, &|o| o.get(key).and_then(Value::as_bool)).unwrap_or(false)
}

/// Declared synonyms of a value: `"x-synonyms": {"double": ["two beds"], "1": ["just me"]}`
/// (a number is keyed as JSON writes it).
fn synonyms(prop: &Value, value: &str, defs: Option<&Value>) -> Option<Vec<String>> {
    find(prop, defs, &|o| {
        let list = o.get("x-synonyms")?.get(value)?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    })
}

fn find<T>(
    schema: &Value,
    defs: Option<&Value>,
    get: &dyn Fn(&serde_json::Map<String, Value>) -> Option<T>,
) -> Option<T> {
    fn go<T>(
        schema: &Value,
        defs: Option<&Value>,
        get: &dyn Fn(&serde_json::Map<String, Value>) -> Option<T>,
        depth: u32,
    ) -> Option<T> {
        let o = schema.as_object()?;
        if depth > 8 {
            return None;
        }
        if let Some(v) = get(o) {
            return Some(v);
        }
        if let Some(r) = o.get("$ref").and_then(Value::as_str)
            && let Some(t) = r.strip_prefix("#/$defs/").and_then(|n| defs?.get(n))
            && let Some(v) = go(t, defs, get, depth + 1)
        {
            return Some(v);
        }
        ["anyOf", "oneOf"].iter().find_map(|k| {
            o.get(*k)?
                .as_array()?
                .iter()
                .find_map(|b| go(b, defs, get, depth + 1))
        })
    }
    go(schema, defs, get, 0)
}
