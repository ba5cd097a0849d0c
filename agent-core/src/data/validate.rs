//! The one validator of data writes: a field's value is checked against the
//! constraints of its own JSON schema (the schema the model is also given), so what
//! the model is told and what the engine accepts cannot drift apart.
//!
//! Supported keywords: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//! `minLength`, `maxLength`, `pattern`, `enum`, `const`, `format` (`date`,
//! `date-time`), `minItems`, `maxItems`, `items`, nested `properties`, `anyOf` /
//! `oneOf` (one branch must hold) and local `$ref`s, and one extension:
//! `"x-not-past": true` on a date or date-time refuses a day before today on the
//! agent's clock. Types are left to serde, which checks them when the write is applied.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

/// Compiled `pattern`s of a schema, keyed by their source.
#[derive(Debug, Clone, Default)]
pub(crate) struct Patterns {
    compiled: HashMap<String, Result<Regex, String>>,
}

impl Patterns {
    /// Compile every `pattern` found anywhere in `schema`.
    pub(crate) fn collect(schema: &Value, out: &mut Self) {
        match schema {
            Value::Object(o) => {
                if let Some(Value::String(p)) = o.get("pattern") {
                    out.compiled
                        .entry(p.clone())
                        .or_insert_with(|| Regex::new(p).map_err(|e| e.to_string()));
                }
                for v in o.values() {
                    Self::collect(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| Self::collect(v, out)),
            _ => {}
        }
    }

    /// Patterns that do not compile, with the reason.
    pub(crate) fn invalid(&self) -> impl Iterator<Item = (&str, &str)> {
        self.compiled
            .iter()
            .filter_map(|(p, r)| r.as_ref().err().map(|e| (p.as_str(), e.as_str())))
    }
}

/// What a check needs besides the value: shared definitions and compiled patterns.
pub(crate) struct Rules<'a> {
    pub(crate) defs: Option<&'a Value>,
    pub(crate) patterns: &'a Patterns,
    /// Today on the agent's clock, for `x-not-past`.
    pub(crate) today: time::Date,
}

impl Rules<'_> {
    /// Why `value` breaks `schema`, in words a user can be shown; `None` when it holds.
    pub(crate) fn check(&self, schema: &Value, value: &Value) -> Option<String> {
        self.check_depth(schema, value, 0)
    }

    fn check_depth(&self, schema: &Value, value: &Value, depth: u32) -> Option<String> {
        let Value::Object(s) = schema else {
            return None;
        };
        if depth > 16 {
            return None;
        }
        if let Some(Value::String(r)) = s.get("$ref")
            && let Some(target) = self.resolve(r)
            && let Some(why) = self.check_depth(target, value, depth + 1)
        {
            return Some(why);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(key) {
                let mut first = None;
                let holds = branches.iter().any(|b| {
                    let why = self.check_depth(b, value, depth + 1);
                    if first.is_none() {
                        first.clone_from(&why);
                    }
                    why.is_none()
                });
                if !holds {
                    return Some(first.unwrap_or_else(|| "is not an accepted value".into()));
                }
            }
        }
        if let Some(why) = check_type(s, value) {
            return Some(why);
        }
        if value.is_null() {
            return None;
        }
        if let Some(why) = check_enum(s, value) {
            return Some(why);
        }
        match value {
            Value::Number(n) => check_number(s, n.as_f64().unwrap_or(f64::NAN)),
            Value::String(text) => self.check_string(s, text),
            Value::Array(items) => self.check_array(s, items, depth),
            Value::Object(fields) => {
                let props = s.get("properties").and_then(Value::as_object)?;
                fields.iter().find_map(|(k, v)| {
                    let why = self.check_depth(props.get(k)?, v, depth + 1)?;
                    Some(format!("`{k}` {why}"))
                })
            }
            Value::Bool(_) | Value::Null => None,
        }
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        let name = reference.strip_prefix("#/$defs/")?;
        self.defs?.get(name)
    }

    fn check_string(&self, s: &serde_json::Map<String, Value>, text: &str) -> Option<String> {
        let chars = text.chars().count() as u64;
        if let Some(min) = s.get("minLength").and_then(Value::as_u64)
            && chars < min
        {
            return Some(format!("must be at least {min} characters long"));
        }
        if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
            && chars > max
        {
            return Some(format!("must be at most {max} characters long"));
        }
        if let Some(Value::String(p)) = s.get("pattern") {
            match self.patterns.compiled.get(p) {
                Some(Ok(re)) if !re.is_match(text) => {
                    return Some(format!("does not have the expected form ({p})"));
                }
                Some(Err(e)) => return Some(format!("cannot be checked: bad pattern ({e})")),
                _ => {}
            }
        }
        match s.get("format").and_then(Value::as_str) {
            Some("date") if parse_date(text).is_none() => {
                return Some("must be a calendar date written YYYY-MM-DD".into());
            }
            Some("date-time") if !is_date_time(text) => {
                return Some("must be a date and time written like 2026-07-01T14:00:00Z".into());
            }
            _ => {}
        }
        if s.get("x-not-past").and_then(Value::as_bool) == Some(true)
            && let Some(day) = day_of(text)
            && day < self.today
        {
            return Some(format!(
                "is in the past (today is {})",
                crate::data::Date::from(self.today)
            ));
        }
        None
    }

    fn check_array(
        &self,
        s: &serde_json::Map<String, Value>,
        items: &[Value],
        depth: u32,
    ) -> Option<String> {
        let n = items.len() as u64;
        if let Some(min) = s.get("minItems").and_then(Value::as_u64)
            && n < min
        {
            return Some(format!("must have at least {min} items"));
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
            && n > max
        {
            return Some(format!("must have at most {max} items"));
        }
        let item_schema = s.get("items")?;
        items.iter().enumerate().find_map(|(i, v)| {
            let why = self.check_depth(item_schema, v, depth + 1)?;
            Some(format!("item {} {why}", i + 1))
        })
    }
}

/// The JSON type, so that an `anyOf` branch of another type does not hold.
fn check_type(s: &serde_json::Map<String, Value>, value: &Value) -> Option<String> {
    let matches = |t: &str| match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    let declared = s.get("type")?;
    let ok = match declared {
        Value::String(t) => matches(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(matches),
        _ => true,
    };
    (!ok).then(|| format!("must be {}", describe_type(declared)))
}

fn describe_type(t: &Value) -> String {
    let name = |t: &str| match t {
        "integer" => "a whole number",
        "number" => "a number",
        "string" => "text",
        "boolean" => "true or false",
        "array" => "a list",
        "object" => "an object",
        _ => "empty",
    };
    match t {
        Value::String(t) => name(t).to_owned(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(name)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "of another type".to_owned(),
    }
}

fn check_enum(s: &serde_json::Map<String, Value>, value: &Value) -> Option<String> {
    if let Some(c) = s.get("const")
        && c != value
    {
        return Some(format!("must be {c}"));
    }
    let Some(Value::Array(allowed)) = s.get("enum") else {
        return None;
    };
    if allowed.contains(value) {
        return None;
    }
    let names: Vec<String> = allowed
        .iter()
        .filter(|v| !v.is_null())
        .map(|v| match v {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        })
        .collect();
    Some(format!("must be one of: {}", names.join(", ")))
}

fn check_number(s: &serde_json::Map<String, Value>, n: f64) -> Option<String> {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    let show = |b: f64| {
        if b.fract() == 0.0 && b.abs() < 1e15 {
            format!("{}", b as i64)
        } else {
            b.to_string()
        }
    };
    if let Some(min) = bound("minimum")
        && n < min
    {
        return Some(format!("must be at least {}", show(min)));
    }
    if let Some(max) = bound("maximum")
        && n > max
    {
        return Some(format!("must be at most {}", show(max)));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        return Some(format!("must be more than {}", show(min)));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        return Some(format!("must be less than {}", show(max)));
    }
    None
}

/// A `YYYY-MM-DD` calendar date.
pub(crate) fn parse_date(text: &str) -> Option<time::Date> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(text.trim(), &format).ok()
}

/// The calendar day of a `YYYY-MM-DD` or RFC 3339 value (the latter in its own offset).
fn day_of(text: &str) -> Option<time::Date> {
    parse_date(text).or_else(|| {
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()
            .map(time::OffsetDateTime::date)
    })
}

fn is_date_time(text: &str) -> bool {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, value: Value) -> Option<String> {
        let mut patterns = Patterns::default();
        Patterns::collect(&schema, &mut patterns);
        Rules {
            defs: None,
            patterns: &patterns,
            today: time::macros::date!(2026 - 06 - 15),
        }
        .check(&schema, &value)
    }

    #[test]
    fn ranges_lengths_patterns_enums_and_dates() {
        let guests = json!({ "type": ["integer", "null"], "minimum": 1, "maximum": 12 });
        assert_eq!(check(guests.clone(), json!(4)), None);
        assert_eq!(check(guests.clone(), Value::Null), None);
        assert_eq!(
            check(guests.clone(), json!(40)).as_deref(),
            Some("must be at most 12")
        );
        assert_eq!(
            check(guests, json!(0)).as_deref(),
            Some("must be at least 1")
        );
        let code = json!({ "type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3 });
        assert_eq!(check(code.clone(), json!("LIS")), None);
        assert!(check(code, json!("lis")).is_some());
        let room = json!({ "anyOf": [{ "enum": ["single", "double"] }, { "type": "null" }] });
        assert_eq!(check(room.clone(), json!("double")), None);
        assert_eq!(check(room.clone(), Value::Null), None);
        assert_eq!(
            check(room, json!("suite")).as_deref(),
            Some("must be one of: single, double")
        );
        let date = json!({ "type": "string", "format": "date" });
        assert_eq!(check(date.clone(), json!("2026-07-01")), None);
        assert!(check(date.clone(), json!(">(2am)")).is_some());
        assert!(check(date, json!("2026-02-30")).is_some());
    }

    #[test]
    fn not_past_refuses_days_before_today_only() {
        let day = json!({ "type": ["string", "null"], "format": "date", "x-not-past": true });
        assert_eq!(check(day.clone(), json!("2026-06-15")), None);
        assert_eq!(check(day.clone(), json!("2027-01-01")), None);
        assert_eq!(check(day.clone(), Value::Null), None);
        assert_eq!(
            check(day, json!("2026-06-14")).as_deref(),
            Some("is in the past (today is 2026-06-15)")
        );
        let moment = json!({ "type": "string", "format": "date-time", "x-not-past": true });
        assert_eq!(check(moment.clone(), json!("2026-06-15T08:00:00Z")), None);
        assert!(check(moment, json!("2026-06-14T23:00:00Z")).is_some());
        // Without the flag a past day is fine.
        assert_eq!(
            check(json!({ "format": "date" }), json!("2001-01-01")),
            None
        );
    }

    #[test]
    fn refs_resolve_in_defs() {
        let defs = json!({ "Tier": { "type": "string", "enum": ["gold", "silver"] } });
        let patterns = Patterns::default();
        let rules = Rules {
            defs: Some(&defs),
            patterns: &patterns,
            today: time::macros::date!(2026 - 06 - 15),
        };
        let schema = json!({ "$ref": "#/$defs/Tier" });
        assert_eq!(rules.check(&schema, &json!("gold")), None);
        assert!(rules.check(&schema, &json!("bronze")).is_some());
    }

    #[test]
    fn a_bad_pattern_is_reported_not_a_panic() {
        let schema = json!({ "type": "string", "pattern": "(" });
        let mut patterns = Patterns::default();
        Patterns::collect(&schema, &mut patterns);
        assert_eq!(patterns.invalid().count(), 1);
        assert!(check(schema, json!("x")).is_some());
    }
}
