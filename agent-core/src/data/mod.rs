//! Typed session data (the agent's `TData`), the JSON patches that write it, and the
//! field bookkeeping the engine uses to decide which steps still need input.
//!
//! Sessions keep the user's typed value; writes arrive as [`Patch`]es (shallow JSON
//! objects) from the model, hooks, tools and signals. A patch is applied by merging it
//! into the serialized value and deserializing the result, so every write is checked by
//! the data type itself and either applies whole or not at all.

use crate::fxhash::FxHashMap;
use std::fmt::Debug;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{DataError, FieldRejection};

pub mod custom;
pub(crate) mod date;
pub(crate) mod extract;
pub(crate) mod ground;
pub(crate) mod spot;
pub(crate) mod validate;

pub use date::{CalendarValue, Date, DateTime};
pub(crate) use extract::{Extracted, read_extraction};
pub(crate) use validate::parse_date;

/// A shallow write to session data or context: top-level keys replace, nested values are
/// not deep-merged. `null` clears an optional field.
pub type Patch = Map<String, Value>;

/// The agent's collected data (`TData`). Blanket-implemented: any serde + schemars type
/// with a `Default` qualifies. Use `Option<T>` for fields the conversation collects; a
/// field counts as present when it serializes to something other than `null`.
pub trait AgentData:
    Serialize + DeserializeOwned + JsonSchema + Default + Clone + Debug + Send + Sync + 'static
{
}
impl<T> AgentData for T where
    T: Serialize + DeserializeOwned + JsonSchema + Default + Clone + Debug + Send + Sync + 'static
{
}

/// The agent's session-scoped context (`TContext`): persisted with the session and
/// written by `Directive::context`. Keep live resources (API clients) in tools and hooks,
/// which can capture them; the context must round-trip through JSON.
pub trait AgentContext:
    Serialize + DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static
{
}
impl<T> AgentContext for T where
    T: Serialize + DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static
{
}

/// Build a [`Patch`] from any serializable value that serializes to an object
/// (a typed partial struct, a `json!({...})`). `None` fields should be skipped by the
/// caller's serde attributes, or they clear the field.
pub fn patch_of<T: Serialize>(value: &T) -> Result<Patch, DataError> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(DataError::NotAnObject {
            found: json_kind(&other),
        }),
        Err(e) => Err(DataError::Serialize(e.to_string())),
    }
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The fields of a data type, read once from its JSON schema.
#[derive(Debug, Clone)]
pub struct DataSchema {
    fields: Vec<Arc<str>>,
    index: FxHashMap<Arc<str>, usize>,
    properties: Map<String, Value>,
    defs: Option<Value>,
    patterns: validate::Patterns,
    /// Per field, the search that finds a possible value in a message ([`spot`]).
    spotters: Vec<Option<regex::Regex>>,
    max_value_bytes: usize,
    model_string_chars: usize,
    checks: Vec<custom::FieldCheck>,
    calendar: crate::clock::Calendar,
    /// Per field, how replies name it and how a question names it with its bounds
    /// ("the number of guests", "the number of guests (1 to 12)"), worked out on first
    /// use (`pipeline/question.rs`); cleared when a constraint changes.
    pub(crate) spoken: std::sync::OnceLock<Vec<(String, String)>>,
}

/// Largest serialized value one field may hold unless configured otherwise.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 4096;

/// Longest string the model may write for one field (or its quote) in a structured
/// answer unless configured otherwise.
pub const DEFAULT_MODEL_STRING_CHARS: usize = 256;

impl DataSchema {
    /// Read the schema of `D` (its top-level properties are the fields).
    pub fn of<D: JsonSchema>() -> Self {
        let schema = schemars::schema_for!(D);
        let root = schema.as_value();
        let properties = root
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let defs = root.get("$defs").cloned();
        let fields: Vec<Arc<str>> = properties.keys().map(|k| Arc::from(k.as_str())).collect();
        let index = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.clone(), i))
            .collect();
        let mut patterns = validate::Patterns::default();
        validate::Patterns::collect(root, &mut patterns);
        let spotters = fields
            .iter()
            .map(|f| {
                properties
                    .get(f.as_ref())
                    .and_then(|p| spot::spotter(p, defs.as_ref()))
            })
            .collect();
        Self {
            fields,
            index,
            properties,
            defs,
            patterns,
            spotters,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            model_string_chars: DEFAULT_MODEL_STRING_CHARS,
            checks: Vec::new(),
            calendar: crate::clock::Calendar::default(),
            spoken: std::sync::OnceLock::new(),
        }
    }

    /// The clock and time zone that say what "today" is for `x-not-past` (default:
    /// the system clock in UTC; an agent gives its own).
    pub fn with_calendar(mut self, calendar: crate::clock::Calendar) -> Self {
        self.calendar = calendar;
        self
    }

    /// Cap the serialized size of each stored value.
    pub fn with_max_value_bytes(mut self, max: usize) -> Self {
        self.max_value_bytes = max;
        self
    }

    /// Bound the strings the model writes for a field in a structured answer (a
    /// field's own `maxLength`, `enum`, `format` or `pattern` takes precedence).
    pub fn with_model_string_chars(mut self, max: usize) -> Self {
        self.model_string_chars = max.max(1);
        self
    }

    /// Add constraints to a field's schema (`minimum`, `pattern`, `enum`, ...): they
    /// are sent to the model and checked on every write. Unknown fields are an error.
    pub fn constrain(&mut self, field: &str, constraints: &Value) -> Result<(), DataError> {
        self.spoken = std::sync::OnceLock::new();
        let Some(Value::Object(p)) = self.properties.get_mut(field) else {
            return Err(DataError::UnknownField {
                field: field.to_owned(),
                known: self.fields.iter().map(|f| f.to_string()).collect(),
            });
        };
        if let Value::Object(c) = constraints {
            for (k, v) in c {
                // Synonyms add up value by value (the builder declares them one at a time).
                if let (Some(Value::Object(old)), Value::Object(more)) = (p.get_mut(k), v)
                    && k == "x-synonyms"
                {
                    old.extend(more.iter().map(|(k, v)| (k.clone(), v.clone())));
                    continue;
                }
                p.insert(k.clone(), v.clone());
            }
        }
        validate::Patterns::collect(constraints, &mut self.patterns);
        if let (Some(i), Some(prop)) = (self.index_of(field), self.properties.get(field)) {
            self.spotters[i] = spot::spotter(prop, self.defs.as_ref());
        }
        Ok(())
    }

    /// The fields no value of which the user has stated in `texts` (their messages):
    /// those with a `pattern` that matches none of them ([`spot`]).
    pub(crate) fn unsaid<'t>(&self, texts: impl Iterator<Item = &'t str> + Clone) -> FieldSet {
        let mut set = FieldSet::with_capacity(self.fields.len());
        for (i, re) in self.spotters.iter().enumerate() {
            if let Some(re) = re
                && !texts.clone().any(|t| spot::spots(re, t))
            {
                set.insert(i);
            }
        }
        set
    }

    /// Patterns in the schema that do not compile (`pattern`, reason).
    pub fn invalid_patterns(&self) -> Vec<(String, String)> {
        self.patterns
            .invalid()
            .map(|(p, e)| (p.to_owned(), e.to_owned()))
            .collect()
    }

    /// Add a custom check (validator or normaliser) to a field; it runs after the
    /// schema's constraints, in the order checks were added. Unknown fields are an error.
    pub fn add_check(&mut self, check: custom::FieldCheck) -> Result<(), DataError> {
        if self.index_of(&check.field).is_none() {
            return Err(DataError::UnknownField {
                field: check.field.clone(),
                known: self.fields.iter().map(|f| f.to_string()).collect(),
            });
        }
        self.checks.push(check);
        Ok(())
    }

    /// The value `field` may store for `value` (normalised by the field's custom
    /// checks), or why it may not be stored (its schema's constraints, the size cap, a
    /// custom check). The one check every write passes.
    pub fn admit(&self, field: &str, value: &Value) -> Result<Value, String> {
        self.check_rules(field, value)?;
        if value.is_null() {
            return Ok(Value::Null);
        }
        let mut out = value.clone();
        for c in self.checks.iter().filter(|c| c.field == field) {
            let next = (c.check)(&out).map_err(|m| custom::refusal(&m))?;
            if next != out {
                // A normaliser's output must itself be a valid value.
                self.check_rules(field, &next)
                    .map_err(|why| format!("was normalised to {next}, which {why}"))?;
                out = next;
            }
        }
        Ok(out)
    }

    /// Why `value` may not be stored in `field`; `None` when it may (see [`Self::admit`]).
    pub fn check_value(&self, field: &str, value: &Value) -> Option<String> {
        self.admit(field, value).err()
    }

    /// The schema's constraints and the size cap.
    fn check_rules(&self, field: &str, value: &Value) -> Result<(), String> {
        let size = serde_json::to_string(value).map_or(0, |s| s.len());
        if size > self.max_value_bytes {
            return Err(format!(
                "is too long ({size} bytes; at most {} allowed)",
                self.max_value_bytes
            ));
        }
        let Some(prop) = self.properties.get(field) else {
            return Ok(());
        };
        match (validate::Rules {
            defs: self.defs.as_ref(),
            patterns: &self.patterns,
            today: self.calendar.today(),
        })
        .check(prop, value)
        {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Field names in schema order.
    pub fn fields(&self) -> &[Arc<str>] {
        &self.fields
    }

    /// Index of a field, if the type has it.
    pub fn index_of(&self, field: &str) -> Option<usize> {
        self.index.get(field).copied()
    }

    /// The JSON schema of one field.
    pub fn property(&self, field: &str) -> Option<&Value> {
        self.properties.get(field)
    }

    /// Whether `field` holds a calendar date (`"format": "date"`, as
    /// [`crate::data::Date`] and `Option<Date>` fields do).
    pub(crate) fn is_date(&self, field: &str) -> bool {
        fn dated(s: &Value, defs: Option<&Value>, depth: u32) -> bool {
            if depth > 4 {
                return false;
            }
            if s.get("format").and_then(Value::as_str) == Some("date") {
                return true;
            }
            let by_ref = s
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs?.get(name))
                .is_some_and(|t| dated(t, defs, depth + 1));
            by_ref
                || ["anyOf", "oneOf"].iter().any(|k| {
                    s.get(*k)
                        .and_then(Value::as_array)
                        .is_some_and(|b| b.iter().any(|b| dated(b, defs, depth + 1)))
                })
        }
        self.property(field)
            .is_some_and(|p| dated(p, self.defs.as_ref(), 0))
    }

    /// Shared `$defs` that field schemas may reference (`#/$defs/...`).
    pub fn defs(&self) -> Option<&Value> {
        self.defs.as_ref()
    }

    /// The schema a value of `prop` has: see [`value_shape`].
    pub(crate) fn shape<'v>(&'v self, prop: &'v Value) -> &'v Value {
        value_shape(prop, self.defs())
    }

    /// An object schema limited to `fields`, every one optional.
    pub fn object_schema(&self, fields: &[Arc<str>]) -> Value {
        let mut props = Map::new();
        for f in fields {
            if let Some(p) = self.properties.get(f.as_ref()) {
                props.insert(f.to_string(), p.clone());
            }
        }
        serde_json::json!({ "type": "object", "properties": props, "additionalProperties": false })
    }

    /// Which fields of `value` are present (serialize to a non-null value).
    pub fn present<D: Serialize>(&self, value: &D) -> FieldSet {
        let mut set = FieldSet::with_capacity(self.fields.len());
        if let Ok(Value::Object(map)) = serde_json::to_value(value) {
            for (k, v) in &map {
                if !v.is_null()
                    && let Some(i) = self.index_of(k)
                {
                    set.insert(i);
                }
            }
        }
        set
    }

    /// Apply a patch to a typed value atomically: unknown fields and values the type
    /// rejects fail the whole patch and leave `value` untouched.
    pub fn apply<D: Serialize + DeserializeOwned>(
        &self,
        value: &D,
        patch: &Patch,
    ) -> Result<D, DataError> {
        if let Some(unknown) = patch.keys().find(|k| self.index_of(k).is_none()) {
            return Err(DataError::UnknownField {
                field: unknown.clone(),
                known: self.fields.iter().map(|f| f.to_string()).collect(),
            });
        }
        let mut admitted = Patch::new();
        let mut rejected: Vec<FieldRejection> = Vec::new();
        for (k, v) in patch {
            match self.admit(k, v) {
                Ok(v) => {
                    admitted.insert(k.clone(), v);
                }
                Err(reason) => rejected.push(FieldRejection {
                    field: k.clone(),
                    reason,
                }),
            }
        }
        if !rejected.is_empty() {
            return Err(DataError::Rejected(rejected));
        }
        apply_unchecked(value, &admitted)
    }
}

/// Merge `patch` into the serialized `value` and deserialize the result.
pub(crate) fn apply_unchecked<D: Serialize + DeserializeOwned>(
    value: &D,
    patch: &Patch,
) -> Result<D, DataError> {
    let mut map = match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(DataError::NotAnObject {
                found: json_kind(&other),
            });
        }
        Err(e) => return Err(DataError::Serialize(e.to_string())),
    };
    for (k, v) in patch {
        map.insert(k.clone(), v.clone());
    }
    match serde_json::from_value::<D>(Value::Object(map.clone())) {
        Ok(d) => Ok(d),
        Err(e) => {
            // Name the offending fields: try each key alone on the original value.
            let mut bad = Vec::new();
            if let Ok(Value::Object(orig)) = serde_json::to_value(value) {
                for (k, v) in patch {
                    let mut one = orig.clone();
                    one.insert(k.clone(), v.clone());
                    if serde_json::from_value::<D>(Value::Object(one)).is_err() {
                        bad.push(k.clone());
                    }
                }
            }
            Err(DataError::Invalid {
                fields: bad,
                message: e.to_string(),
            })
        }
    }
}

/// A set of field indices (bitset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    words: Vec<u64>,
}

impl FieldSet {
    /// An empty set sized for `n` fields.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            words: vec![0; n.div_ceil(64).max(1)],
        }
    }

    /// Add a field index.
    pub fn insert(&mut self, i: usize) {
        let w = i / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (i % 64);
    }

    /// Whether the set holds no index.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Whether the index is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The schema a value of the field schema `prop` has: an optional field's one
/// alternative besides `null` (`anyOf` / `oneOf`, as schemars writes `Option<T>`),
/// with local `$ref`s (`#/$defs/...`) followed. Annotations written beside the
/// alternatives (a field's doc, `x-synonyms`, `x-inferred`) stay on `prop`: read
/// them there. A schema with several non-null alternatives is returned as it is.
pub(crate) fn value_shape<'v>(prop: &'v Value, defs: Option<&'v Value>) -> &'v Value {
    let mut p = prop;
    // A few hops: an optional field of a referenced type is `anyOf` [`$ref`, null].
    for _ in 0..4 {
        let branches = p
            .get("anyOf")
            .or_else(|| p.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(branches) = branches {
            let mut others = branches
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
            if let (Some(one), None) = (others.next(), others.next()) {
                p = one;
                continue;
            }
        }
        if let Some(d) = p
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| defs?.get(name))
        {
            p = d;
            continue;
        }
        break;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
    struct Booking {
        city: Option<String>,
        guests: Option<u8>,
    }

    #[test]
    fn a_values_shape_is_read_through_null_alternatives_and_refs() {
        use serde_json::json;
        let defs = json!({ "Room": { "type": "string", "enum": ["single", "double"] } });
        let opt_ref = json!({ "description": "Room", "anyOf": [{ "$ref": "#/$defs/Room" }, { "type": "null" }] });
        assert_eq!(value_shape(&opt_ref, Some(&defs)), &defs["Room"]);
        let one_of = json!({ "oneOf": [{ "type": "null" }, { "type": "integer", "minimum": 1 }] });
        assert_eq!(value_shape(&one_of, None), &one_of["oneOf"][1]);
        // Several alternatives, or a reference to nothing: the schema as it is.
        let two = json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] });
        assert_eq!(value_shape(&two, None), &two);
        let dangling = json!({ "$ref": "#/$defs/Nope" });
        assert_eq!(value_shape(&dangling, Some(&defs)), &dangling);
    }

    #[test]
    fn patch_with_wrong_type_fails_whole_and_names_field() {
        let s = DataSchema::of::<Booking>();
        let b = Booking::default();
        let mut p = Patch::new();
        p.insert("city".into(), "Lisbon".into());
        p.insert("guests".into(), "many".into());
        let err = s.apply(&b, &p).unwrap_err();
        match err {
            DataError::Rejected(r) => {
                assert_eq!(r.len(), 1);
                assert_eq!(r[0].field, "guests");
                assert_eq!(r[0].reason, "must be a whole number");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unknown_field_is_rejected_with_known_fields() {
        let s = DataSchema::of::<Booking>();
        let mut p = Patch::new();
        p.insert("citty".into(), "Lisbon".into());
        let err = s.apply(&Booking::default(), &p).unwrap_err();
        assert!(err.to_string().contains("city"), "{err}");
    }

    #[test]
    fn presence_ignores_nulls() {
        let s = DataSchema::of::<Booking>();
        let b = Booking {
            city: Some("Lisbon".into()),
            guests: None,
        };
        let set = s.present(&b);
        assert!(set.contains(s.index_of("city").unwrap()));
        assert!(!set.contains(s.index_of("guests").unwrap()));
    }
}
