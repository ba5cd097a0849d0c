//! The flat JSON shape of a directive (the spec's object literal), used for persisted
//! pending directives and for directives that arrive as data.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Abort, Complete, Directive, GoTo, GoToStep, Position, Reset, validate};
use crate::data::{Patch, json_kind};
use crate::error::DirectiveError;

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Raw {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    go_to: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    go_to_step: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    complete: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    abort: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reset: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data_update: Option<Patch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_update: Option<Patch>,
}

fn shape(field: &'static str, expected: &'static str, found: &Value) -> DirectiveError {
    DirectiveError::Shape {
        field,
        expected,
        found: json_kind(found),
    }
}

/// An optional string key of an object form; present with another type is an error.
fn obj_str(
    o: &serde_json::Map<String, Value>,
    field: &'static str,
    key: &'static str,
) -> Result<Option<String>, DirectiveError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(DirectiveError::Shape {
            field,
            expected: "a string",
            found: json_kind(other),
        }),
    }
}

/// An optional boolean key of an object form; present with another type is an error.
fn obj_bool(
    o: &serde_json::Map<String, Value>,
    field: &'static str,
    key: &'static str,
) -> Result<bool, DirectiveError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(DirectiveError::Shape {
            field,
            expected: "a boolean",
            found: json_kind(other),
        }),
    }
}

/// Parse the flat JSON shape, keeping the typed error.
pub(super) fn from_value(v: Value) -> Result<Directive, DirectiveError> {
    if !v.is_object() {
        return Err(DirectiveError::Malformed(format!(
            "a directive is a JSON object, found {}",
            json_kind(&v)
        )));
    }
    let raw: Raw =
        serde_json::from_value(v).map_err(|e| DirectiveError::Malformed(e.to_string()))?;
    Directive::try_from(raw)
}

fn obj_patch(
    o: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<Option<Patch>, DirectiveError> {
    match o.get("data") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(other) => Err(shape(field, "an object for `data`", other)),
    }
}

fn check_keys(
    o: &serde_json::Map<String, Value>,
    field: &'static str,
    allowed: &'static [&'static str],
) -> Result<(), DirectiveError> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(DirectiveError::UnknownKey {
            field,
            key: k.clone(),
            allowed,
        }),
        None => Ok(()),
    }
}

impl TryFrom<Raw> for Directive {
    type Error = DirectiveError;

    fn try_from(raw: Raw) -> Result<Self, Self::Error> {
        let mut positions: Vec<Position> = Vec::new();
        let mut names: Vec<&'static str> = Vec::new();
        if let Some(v) = raw.go_to {
            names.push("goTo");
            positions.push(Position::GoTo(match &v {
                Value::String(s) => GoTo {
                    flow: s.clone(),
                    ..GoTo::default()
                },
                Value::Object(o) => {
                    check_keys(o, "goTo", &["flow", "data", "reason"])?;
                    let flow = obj_str(o, "goTo", "flow")?.ok_or(DirectiveError::EmptyTarget {
                        field: "goTo",
                        what: "flow id",
                    })?;
                    GoTo {
                        flow,
                        data: obj_patch(o, "goTo")?,
                        reason: obj_str(o, "goTo", "reason")?,
                    }
                }
                other => return Err(shape("goTo", "a flow id or an object", other)),
            }));
        }
        if let Some(v) = raw.go_to_step {
            names.push("goToStep");
            positions.push(Position::GoToStep(match &v {
                Value::String(s) => GoToStep {
                    step: s.clone(),
                    ..GoToStep::default()
                },
                Value::Object(o) => {
                    check_keys(o, "goToStep", &["step", "flow", "data", "reason"])?;
                    let step =
                        obj_str(o, "goToStep", "step")?.ok_or(DirectiveError::EmptyTarget {
                            field: "goToStep",
                            what: "step id",
                        })?;
                    GoToStep {
                        step,
                        flow: obj_str(o, "goToStep", "flow")?,
                        data: obj_patch(o, "goToStep")?,
                        reason: obj_str(o, "goToStep", "reason")?,
                    }
                }
                other => return Err(shape("goToStep", "a step id or an object", other)),
            }));
        }
        if let Some(v) = raw.complete {
            match &v {
                Value::Bool(false) | Value::Null => {}
                Value::Bool(true) => {
                    names.push("complete");
                    positions.push(Position::Complete(Complete::default()));
                }
                Value::Object(o) => {
                    check_keys(o, "complete", &["next", "reason"])?;
                    names.push("complete");
                    let next = match o.get("next") {
                        None | Some(Value::Null) => None,
                        Some(n) => Some(Box::new(from_value(n.clone())?)),
                    };
                    positions.push(Position::Complete(Complete {
                        next,
                        reason: obj_str(o, "complete", "reason")?,
                    }));
                }
                other => return Err(shape("complete", "true or an object", other)),
            }
        }
        if let Some(v) = raw.abort {
            match &v {
                Value::Bool(false) | Value::Null => {}
                Value::Bool(true) => {
                    names.push("abort");
                    positions.push(Position::Abort(Abort::default()));
                }
                Value::String(s) => {
                    names.push("abort");
                    positions.push(Position::Abort(Abort {
                        reason: Some(s.clone()),
                        clear_session: false,
                    }));
                }
                Value::Object(o) => {
                    check_keys(o, "abort", &["reason", "clearSession"])?;
                    names.push("abort");
                    positions.push(Position::Abort(Abort {
                        reason: obj_str(o, "abort", "reason")?,
                        clear_session: obj_bool(o, "abort", "clearSession")?,
                    }));
                }
                other => return Err(shape("abort", "true, a reason or an object", other)),
            }
        }
        if let Some(v) = raw.reset {
            match &v {
                Value::Bool(false) | Value::Null => {}
                Value::Bool(true) => {
                    names.push("reset");
                    positions.push(Position::Reset(Reset::default()));
                }
                Value::Object(o) => {
                    check_keys(o, "reset", &["clearData", "reason"])?;
                    names.push("reset");
                    positions.push(Position::Reset(Reset {
                        clear_data: obj_bool(o, "reset", "clearData")?,
                        reason: obj_str(o, "reset", "reason")?,
                    }));
                }
                other => return Err(shape("reset", "true or an object", other)),
            }
        }
        if positions.len() > 1 {
            return Err(DirectiveError::MultiplePositions {
                fields: names.iter().map(|s| s.to_string()).collect(),
            });
        }
        let d = Directive {
            position: positions.pop(),
            reply: raw.reply,
            data: raw.data_update,
            context: raw.context_update,
        };
        validate(&d)?;
        Ok(d)
    }
}

fn reason_obj(mut o: serde_json::Map<String, Value>, reason: &Option<String>) -> Value {
    if let Some(r) = reason {
        o.insert("reason".into(), Value::String(r.clone()));
    }
    Value::Object(o)
}

impl From<&Directive> for Raw {
    fn from(d: &Directive) -> Self {
        let mut raw = Raw {
            reply: d.reply.clone(),
            data_update: d.data.clone(),
            context_update: d.context.clone(),
            ..Raw::default()
        };
        match &d.position {
            None => {}
            Some(Position::GoTo(g)) => {
                let mut o = serde_json::Map::new();
                o.insert("flow".into(), Value::String(g.flow.clone()));
                if let Some(data) = &g.data {
                    o.insert("data".into(), Value::Object(data.clone()));
                }
                raw.go_to = Some(reason_obj(o, &g.reason));
            }
            Some(Position::GoToStep(g)) => {
                let mut o = serde_json::Map::new();
                o.insert("step".into(), Value::String(g.step.clone()));
                if let Some(f) = &g.flow {
                    o.insert("flow".into(), Value::String(f.clone()));
                }
                if let Some(data) = &g.data {
                    o.insert("data".into(), Value::Object(data.clone()));
                }
                raw.go_to_step = Some(reason_obj(o, &g.reason));
            }
            Some(Position::Complete(c)) => {
                let mut o = serde_json::Map::new();
                if let Some(next) = &c.next {
                    o.insert("next".into(), next.to_json());
                }
                raw.complete = Some(reason_obj(o, &c.reason));
            }
            Some(Position::Abort(a)) => {
                let mut o = serde_json::Map::new();
                if a.clear_session {
                    o.insert("clearSession".into(), Value::Bool(true));
                }
                raw.abort = Some(reason_obj(o, &a.reason));
            }
            Some(Position::Reset(r)) => {
                let mut o = serde_json::Map::new();
                if r.clear_data {
                    o.insert("clearData".into(), Value::Bool(true));
                }
                raw.reset = Some(reason_obj(o, &r.reason));
            }
        }
        raw
    }
}

impl Serialize for Directive {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Raw::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Directive {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        let v = Value::deserialize(d)?;
        from_value(v).map_err(serde::de::Error::custom)
    }
}
