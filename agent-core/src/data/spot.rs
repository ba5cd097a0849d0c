//! Fields the user cannot have given yet: a string field with a `pattern` (an
//! invoice number, an order code, a phone number) holds only values that match it,
//! and grounding stores only values the user's own words state, so while no user
//! message contains a match, no value of the field can be stored. Such a field is
//! left out of what a model call is asked to read: the call has no slot to make a
//! value up for, and the engine does not predict a step that needs it. Measured on
//! Qwen2.5 1.5B (help desk, 41 turns): with the invoice field offered, the model wrote
//! a made-up invoice number in 14 of 16 billing calls whose messages had none, and
//! each one it repeated in its reply cost another call.
//!
//! The search is looser than the check (case aside; also with spaces removed and
//! with punctuation removed), so it only ever keeps a field the grounding check
//! would refuse, never hides one it would accept.

use regex::Regex;
use serde_json::Value;

use super::value_shape;

/// The search form of a field's pattern: what finds a possible value anywhere in a
/// message. `None` when the field has no pattern, may be inferred or said by a
/// synonym, or its pattern cannot be searched for safely (anchors inside it).
pub(crate) fn spotter(prop: &Value, defs: Option<&Value>) -> Option<Regex> {
    // An optional field's one alternative besides `null`, or the type it references.
    let shape = value_shape(prop, defs);
    let opts_out = |v: &Value| {
        ["x-inferred", "x-synonyms", "format"]
            .iter()
            .any(|k| v.get(*k).is_some())
    };
    if opts_out(prop) || opts_out(shape) {
        return None;
    }
    match shape.get("pattern") {
        Some(Value::String(p)) => search_form(p),
        _ => None,
    }
}

/// Whether `re` finds a possible value in `text`: as written, without spaces, or
/// with letters and digits only ("+351 912 345 678", "INV 7").
pub(crate) fn spots(re: &Regex, text: &str) -> bool {
    if re.is_match(text) {
        return true;
    }
    let despaced: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if re.is_match(&despaced) {
        return true;
    }
    let compact: String = text.chars().filter(|c| c.is_alphanumeric()).collect();
    re.is_match(&compact)
}

/// `^X$` becomes a case-insensitive search for `X`; a pattern with any other anchor
/// or with inline flags is not searched for (a field it constrains is never hidden).
fn search_form(pattern: &str) -> Option<Regex> {
    let body = pattern.strip_prefix('^').unwrap_or(pattern);
    let body = match body.strip_suffix('$') {
        Some(b) if !ends_escaped(b) => b,
        _ => body,
    };
    if !plain(body) {
        return None;
    }
    Regex::new(&format!("(?i)(?:{body})")).ok()
}

/// Whether the last character of `s` is an escaping backslash.
fn ends_escaped(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// No anchor (`^`, `$`, `\A`, `\z`) outside a class and no inline flags.
fn plain(body: &str) -> bool {
    let mut chars = body.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = chars.next();
                if !in_class && matches!(escaped, Some('A' | 'z' | 'Z')) {
                    return false;
                }
            }
            '[' => in_class = true,
            ']' => in_class = false,
            '^' | '$' if !in_class => return false,
            '(' if !in_class && chars.peek() == Some(&'?') => {
                chars.next();
                if !matches!(chars.peek(), Some(':' | '<' | 'P' | '=' | '!')) {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spot(prop: Value, text: &str) -> Option<bool> {
        spotter(&prop, None).map(|re| spots(&re, text))
    }

    #[test]
    fn a_pattern_field_is_spotted_only_where_a_match_is() {
        let inv = json!({ "type": "string", "pattern": "^INV-[0-9]+$" });
        assert_eq!(spot(inv.clone(), "It's inv-7, please"), Some(true));
        assert_eq!(spot(inv.clone(), "I was charged twice"), Some(false));
        assert_eq!(spot(inv.clone(), "my invoice number"), Some(false));
        let phone = json!({ "type": "string", "pattern": "^\\+[0-9]{9,15}$" });
        assert_eq!(spot(phone.clone(), "call +351 912 345 678"), Some(true));
        assert_eq!(spot(phone, "call me"), Some(false));
        let code = json!({ "type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$" });
        assert_eq!(spot(code, "order AB-1234"), Some(true), "punctuation aside");
    }

    #[test]
    fn optional_fields_and_refs_are_read_through() {
        let opt = json!({ "anyOf": [
            { "type": "string", "pattern": "^INV-[0-9]+$" }, { "type": "null" } ] });
        assert_eq!(spot(opt.clone(), "INV-12"), Some(true));
        assert_eq!(spot(opt, "hello"), Some(false));
        let defs = json!({ "Code": { "type": "string", "pattern": "^X[0-9]$" } });
        let re = spotter(&json!({ "$ref": "#/$defs/Code" }), Some(&defs));
        assert!(re.is_some_and(|re| spots(&re, "x1") && !spots(&re, "y")));
    }

    #[test]
    fn fields_that_words_may_state_otherwise_are_never_hidden() {
        for prop in [
            json!({ "type": "string" }),
            json!({ "type": "string", "pattern": "^a$|^b$" }),
            json!({ "type": "string", "pattern": "^[0-9]+$", "x-inferred": true }),
            json!({ "type": "string", "pattern": "^[0-9]+$", "x-synonyms": { "1": ["one"] } }),
            json!({ "type": "string", "format": "date", "pattern": "^[0-9-]+$" }),
            json!({ "type": "string", "pattern": "(?m)^x" }),
            json!({ "type": "string", "pattern": "[" }),
            json!({ "anyOf": [ { "type": "string", "pattern": "^a$" }, { "type": "string" } ] }),
        ] {
            assert_eq!(spot(prop.clone(), "zzz"), None, "{prop}");
        }
        // A trailing escaped dollar is part of the pattern, not an anchor.
        assert_eq!(
            spot(json!({ "type": "string", "pattern": "^[0-9]+\\$" }), "5$"),
            Some(true)
        );
    }
}
