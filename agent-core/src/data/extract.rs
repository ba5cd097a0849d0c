//! The shape of the `data` object the model fills, and reading it back.
//!
//! Every field the flow collects is required and nullable, in one fixed order: a
//! grammar-constrained decoder (llama.cpp) writes the keys in schema order, so with
//! optional keys a model that began with a later field could never go back to an
//! earlier one (that is how `check_in` was never extracted once `city` was written).
//! Each value comes with the user's words it was taken from:
//! `{"quote": "the two of us", "value": 2}`, which grounding checks ([`super::ground`]).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::DataSchema;

/// One value the model extracted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Extracted {
    pub(crate) field: String,
    pub(crate) value: Value,
    pub(crate) quote: Option<String>,
}

impl DataSchema {
    /// The `data` object schema for `fields`: all required, each `null` or a quote and
    /// a value (or the bare value when `quoted` is off).
    pub fn extraction_schema(&self, fields: &[Arc<str>], quoted: bool) -> Value {
        let mut props = Map::new();
        let mut required = Vec::new();
        for f in fields {
            let Some(p) = self.property(f) else { continue };
            let limit = self.model_string_chars;
            let value = bounded(representable(non_null(p)), limit);
            let entry = if quoted {
                let mut wrapped = json!({
                    "type": "object",
                    "properties": {
                        "quote": { "type": "string", "maxLength": limit, "description": "the user's own words this value comes from" },
                        "value": value,
                    },
                    "required": ["quote", "value"],
                    "additionalProperties": false,
                });
                if let (Some(d), Value::Object(o)) = (p.get("description"), &mut wrapped) {
                    o.insert("description".into(), d.clone());
                }
                json!({ "anyOf": [wrapped, { "type": "null" }] })
            } else {
                json!({ "anyOf": [value, { "type": "null" }] })
            };
            props.insert(f.to_string(), entry);
            required.push(Value::String(f.to_string()));
        }
        json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        })
    }
}

/// Bounds that constrained decoding would enforce by rewriting what the user said,
/// left out of the schema the model writes to: with `minimum: 1, maximum: 12` in the
/// schema, llama.cpp's grammar cannot write 20 or 0, so "a room for 20 people" came
/// back as 2 (Qwen2.5-Coder 1.5B: "Copy {\"guests\": 20}" gave 2 with the bounds, 20
/// without). The model writes what it read; the field's validation
/// ([`crate::data::validate`]) refuses a value out of bounds with the reason, and the
/// reply asks again with it. Lengths keep their upper bound (it also stops a rambling
/// value); the type, formats, patterns and enums stay.
const REWRITING_BOUNDS: [&str; 7] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "minItems",
];

fn representable(mut p: Value) -> Value {
    fn strip(v: &mut Value) {
        if let Value::Object(o) = v {
            for k in REWRITING_BOUNDS {
                o.remove(k);
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                if let Some(Value::Array(branches)) = o.get_mut(key) {
                    branches.iter_mut().for_each(strip);
                }
            }
            if let Some(items) = o.get_mut("items") {
                strip(items);
            }
        }
    }
    strip(&mut p);
    p
}

/// A free string field with a length bound: constrained decoding (llama.cpp's
/// grammar, strict structured outputs) stops a small model that rambles inside a
/// value before it spends the call's token budget there.
fn bounded(mut p: Value, limit: usize) -> Value {
    if let Value::Object(o) = &mut p
        && o.get("type").and_then(Value::as_str) == Some("string")
        && !["maxLength", "enum", "const", "format", "pattern"]
            .iter()
            .any(|k| o.contains_key(*k))
    {
        o.insert("maxLength".into(), Value::from(limit));
    }
    p
}

/// Every free string in a schema (a tool's arguments: properties, items, branches,
/// definitions) bounded as [`bounded`] bounds a field. Measured on Qwen2.5-Coder
/// 1.5B at temperature 0.7: the `hotel` argument of `book_room` ran "Madrid, Spain,
/// Europe, Western Europe, Europe, ..." to the token limit in 2 of 168 concierge
/// runs, and the repair call repeated it.
pub(crate) fn bound_strings(p: &mut Value, limit: usize) {
    if let Value::Object(o) = p {
        for key in ["properties", "$defs", "definitions"] {
            if let Some(Value::Object(m)) = o.get_mut(key) {
                m.values_mut().for_each(|v| bound_strings(v, limit));
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(a)) = o.get_mut(key) {
                a.iter_mut().for_each(|v| bound_strings(v, limit));
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(v @ Value::Object(_)) = o.get_mut(key) {
                bound_strings(v, limit);
            }
        }
    }
    let whole = std::mem::take(p);
    *p = bounded(whole, limit);
}

/// A field schema without its `null` alternative (the wrapper adds one).
fn non_null(p: &Value) -> Value {
    let mut p = p.clone();
    let Value::Object(o) = &mut p else { return p };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let t = types.remove(0);
            o.insert("type".into(), t);
        }
    }
    if let Some(Value::Array(branches)) = o.get_mut("anyOf") {
        branches.retain(|b| b.get("type").and_then(Value::as_str) != Some("null"));
        if branches.len() == 1 {
            let only = branches.remove(0);
            o.remove("anyOf");
            if let Value::Object(b) = only {
                for (k, v) in b {
                    o.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(e)) = o.get_mut("enum") {
        e.retain(|v| !v.is_null());
    }
    // The engine's own annotations (`x-inferred`, `x-not-past`, `x-synonyms`) are
    // rules it applies, not JSON Schema: strict providers refuse unknown keywords.
    o.retain(|k, _| !k.starts_with("x-"));
    p
}

/// The values in a model's `data` object, quoted or bare; nulls (not stated) skipped.
pub(crate) fn read_extraction(schema: &DataSchema, data: Map<String, Value>) -> Vec<Extracted> {
    let mut out = Vec::with_capacity(data.len());
    for (field, v) in data {
        let (value, quote) = match v {
            Value::Null => continue,
            Value::Object(mut o) if is_quoted(schema, &field, &o) => {
                let quote = match o.remove("quote") {
                    Some(Value::String(q)) => Some(q),
                    _ => None,
                };
                (o.remove("value").unwrap_or(Value::Null), quote)
            }
            other => (other, None),
        };
        if value.is_null() {
            continue;
        }
        out.push(Extracted {
            field,
            value,
            quote,
        });
    }
    out
}

/// A `{"quote", "value"}` wrapper, not a field whose own values are objects.
fn is_quoted(schema: &DataSchema, field: &str, o: &Map<String, Value>) -> bool {
    if !o.contains_key("value") || o.keys().any(|k| k != "value" && k != "quote") {
        return false;
    }
    let own_object = schema.property(field).is_some_and(|p| {
        let t = p.get("type");
        t == Some(&json!("object"))
            || t.and_then(Value::as_array)
                .is_some_and(|a| a.contains(&json!("object")))
    });
    !own_object
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[test]
    fn every_free_string_of_a_tools_arguments_is_bounded() {
        let mut args = json!({
            "type": "object",
            "properties": {
                "hotel": { "type": "string" },
                "code": { "type": "string", "pattern": "^[A-Z]{3}$" },
                "room": { "type": "string", "enum": ["single", "double"] },
                "notes": { "type": "array", "items": { "type": "string" } },
                "guest": { "$ref": "#/$defs/Guest" },
                "nights": { "type": "integer" },
                "either": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            },
            "$defs": { "Guest": { "type": "object", "properties": { "name": { "type": "string", "maxLength": 9 } } } },
        });
        bound_strings(&mut args, 40);
        let p = &args["properties"];
        assert_eq!(p["hotel"]["maxLength"], 40);
        assert_eq!(p["notes"]["items"]["maxLength"], 40);
        assert_eq!(p["either"]["anyOf"][0]["maxLength"], 40);
        assert!(p["code"].get("maxLength").is_none(), "a pattern wins");
        assert!(p["room"].get("maxLength").is_none(), "an enum wins");
        assert!(p["nights"].get("maxLength").is_none());
        assert_eq!(
            args["$defs"]["Guest"]["properties"]["name"]["maxLength"], 9,
            "its own bound wins"
        );
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    struct Booking {
        /// City
        city: Option<String>,
        check_in: Option<String>,
        guests: Option<u8>,
    }

    #[test]
    fn every_field_is_required_and_nullable() {
        let s = DataSchema::of::<Booking>();
        let fields: Vec<Arc<str>> = vec!["city".into(), "check_in".into(), "guests".into()];
        let schema = s.extraction_schema(&fields, true);
        assert_eq!(schema["required"], json!(["city", "check_in", "guests"]));
        let city = &schema["properties"]["city"]["anyOf"];
        assert_eq!(city[1], json!({ "type": "null" }));
        assert_eq!(city[0]["properties"]["value"]["type"], json!("string"));
        assert_eq!(city[0]["description"], json!("City"));
        let guests = &schema["properties"]["guests"]["anyOf"][0]["properties"]["value"];
        assert_eq!(guests["type"], json!("integer"));
    }

    #[test]
    fn free_strings_the_model_writes_are_bounded() {
        let s = DataSchema::of::<Booking>().with_model_string_chars(40);
        let fields: Vec<Arc<str>> = vec!["city".into(), "guests".into()];
        let quoted = s.extraction_schema(&fields, true);
        let city = &quoted["properties"]["city"]["anyOf"][0]["properties"];
        assert_eq!(city["value"]["maxLength"], json!(40));
        assert_eq!(city["quote"]["maxLength"], json!(40));
        let bare = s.extraction_schema(&fields, false);
        assert_eq!(
            bare["properties"]["city"]["anyOf"][0]["maxLength"],
            json!(40)
        );
        assert!(
            bare["properties"]["guests"]["anyOf"][0]
                .get("maxLength")
                .is_none(),
            "numbers are not strings"
        );
        // A field's own bound (or a format, an enum, a pattern) wins.
        let own = bounded(json!({"type": "string", "maxLength": 8}), 40);
        assert_eq!(own["maxLength"], json!(8));
        let date = bounded(json!({"type": "string", "format": "date"}), 40);
        assert!(date.get("maxLength").is_none());
    }

    #[test]
    fn quoted_and_bare_values_are_read() {
        let s = DataSchema::of::<Booking>();
        let data = json!({
            "city": { "quote": "Lisbon", "value": "Lisbon" },
            "guests": 2,
            "check_in": null,
        });
        let Value::Object(m) = data else {
            unreachable!()
        };
        let got = read_extraction(&s, m);
        assert_eq!(got.len(), 2);
        assert!(got.contains(&Extracted {
            field: "city".into(),
            value: json!("Lisbon"),
            quote: Some("Lisbon".into()),
        }));
        assert!(got.contains(&Extracted {
            field: "guests".into(),
            value: json!(2),
            quote: None,
        }));
    }
}
