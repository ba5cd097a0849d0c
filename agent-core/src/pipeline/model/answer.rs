//! The answers of structured calls: the respond call's fields as the model writes
//! them, the action an answer asks for, and the one repair rule for an answer that
//! cannot be used (shared with the code flows' answer extraction).

use serde_json::{Map, Value, json};

use crate::command::Command;
use crate::flow::Flow;
use crate::pipeline::consent::{ANSWER, NOT_YES, YES};
use crate::pipeline::judged::Judged;
use crate::provider::{Message, ModelRequest, ToolCall};

/// The respond call's answer, parsed straight into its fields (unknown keys ignored:
/// compatible servers add some).
#[derive(serde::Deserialize)]
pub(super) struct RespondOut {
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) data: Option<Value>,
    /// A step id (scripted answers, older prompts); `answered` is what the schema asks.
    #[serde(default)]
    pub(super) step: Option<String>,
    /// What the message asks for: a step's label (`prompt::reply_labels`).
    #[serde(default)]
    pub(super) reply_asks_for: Option<String>,
    /// One yes/no per other flow (what the schema asks).
    #[serde(default)]
    pub(super) handoff: Option<Map<String, Value>>,
    /// A flow id (scripted answers written by hand, older prompts).
    #[serde(default)]
    pub(super) switch_flow: Option<String>,
    #[serde(default)]
    pub(super) intent: Option<String>,
    #[serde(default)]
    pub(super) conditions: Option<Judged>,
    #[serde(default)]
    pub(super) action: Option<Value>,
    /// The user asks to stop the active flow (scripted answers in the older shape).
    #[serde(default)]
    pub(super) cancel: Option<bool>,
    /// What else the user asks for (what the schema asks): `a_person`,
    /// `your_last_message_again` or `nothing_else`.
    #[serde(default)]
    pub(super) is_asking_for: Option<String>,
    /// Commands written out (scripted answers; [`crate::command`] documents how the
    /// other keys read as commands).
    #[serde(default)]
    pub(super) commands: Option<Vec<Command>>,
}

impl RespondOut {
    /// The flows this answer starts, each once: those of `ids` (the order the
    /// prompt lists them) judged true in `handoff`, then a `switch_flow` id and the
    /// `start_flow` commands as written.
    pub(super) fn handoff_targets(&self, ids: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(h) = &self.handoff {
            out.extend(
                ids.iter()
                    .filter(|id| h.get(id.as_str()) == Some(&Value::Bool(true)))
                    .cloned(),
            );
        }
        let written =
            self.switch_flow
                .iter()
                .cloned()
                .chain(self.commands.iter().flatten().filter_map(|c| match c {
                    Command::StartFlow { flow } => Some(flow.clone()),
                    _ => None,
                }));
        for f in written {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }

    /// Whether the answer asks for any hand-over at all.
    pub(super) fn hands_over(&self) -> bool {
        self.switch_flow.is_some()
            || self
                .handoff
                .as_ref()
                .is_some_and(|h| h.values().any(|v| v == &Value::Bool(true)))
            || self
                .commands
                .iter()
                .flatten()
                .any(|c| matches!(c, Command::StartFlow { .. }))
    }

    /// Whether the answer read the message for values: a `data` object (its values
    /// may all be null) or value commands.
    pub(super) fn values_read(&self) -> bool {
        matches!(self.data, Some(Value::Object(_)))
            || self.commands.iter().flatten().any(|c| c.field().is_some())
    }

    /// The values the answer reads, as the `data` object screening takes: `data`,
    /// then the value commands written out (a later one for the same field wins),
    /// taken out of the answer. `Err` when `data` is not an object.
    pub(super) fn values(&mut self) -> Result<Option<Map<String, Value>>, String> {
        let mut data = match self.data.take() {
            None | Some(Value::Null) => None,
            Some(Value::Object(d)) => Some(d),
            Some(_) => return Err("`data` is not an object".into()),
        };
        for c in self.commands.iter().flatten() {
            put_value(&mut data, c);
        }
        Ok(data)
    }
}

/// Put a value command's value into a `data` object (made when `None`), as the
/// object holds it: `{"quote", "value"}` when the user's words are cited, else bare.
/// `false` for a command of another kind.
pub(in crate::pipeline) fn put_value(data: &mut Option<Map<String, Value>>, c: &Command) -> bool {
    let (Command::SetValue {
        field,
        value,
        words,
    }
    | Command::CorrectValue {
        field,
        value,
        words,
    }) = c
    else {
        return false;
    };
    let entry = match words {
        Some(w) => json!({ "quote": w, "value": value }),
        None => value.clone(),
    };
    data.get_or_insert_with(Map::new)
        .insert(field.clone(), entry);
    true
}

/// The step a speculative reply was written for: a `step` id naming the target or the
/// pending step (scripted answers), else the step whose label the answer gives in
/// `reply_asks_for` (any step of the flow: a reply that asks for a third thing fits
/// neither). `None` when it says neither.
pub(super) fn claimed_step<'a, D, C>(
    step: Option<&'a str>,
    asks_for: Option<&str>,
    flow: &'a Flow<D, C>,
    target: &str,
    pending: &str,
) -> Option<&'a str> {
    if let Some(s) = step.filter(|s| *s == target || *s == pending) {
        return Some(s);
    }
    let label = asks_for?;
    flow.reply_labels
        .iter()
        .position(|l| l.as_deref() == Some(label))
        .map(|j| flow.steps[j].id.as_ref())
}

/// The answer's `action`: a call the tool loop can run (in a consent form that agrees,
/// or without one), nothing (null), or a consent form that does not agree
/// (`"agreed": false`, or an `answer` other than "yes"; whatever else it holds).
pub(super) fn read_action(v: Value, n: u32) -> Result<Action, String> {
    let Value::Object(mut o) = v else {
        return match v {
            Value::Null => Ok(Action::None),
            _ => Err("`action` is not an object".into()),
        };
    };
    let mut agreed = false;
    match o.get("agreed") {
        None => {}
        Some(Value::Bool(true)) => agreed = true,
        Some(Value::Bool(false)) => return Ok(Action::Declined),
        Some(_) => return Err("`action.agreed` is not true or false".into()),
    }
    match o.get(ANSWER) {
        None => {}
        Some(Value::String(a)) if a == YES => agreed = true,
        Some(Value::String(a)) if NOT_YES.contains(&a.as_str()) => return Ok(Action::Declined),
        Some(_) => {
            return Err(format!(
                "`action.answer` is not one of \"{YES}\", \"{}\"",
                NOT_YES.join("\", \"")
            ));
        }
    }
    let Some(Value::String(name)) = o.remove("tool") else {
        return Err("`action` has no `tool`".into());
    };
    Ok(Action::Call(
        ToolCall {
            id: format!("answer-{n}"),
            name,
            arguments: o.remove("with").unwrap_or_else(|| json!({})),
        },
        agreed,
    ))
}

/// What an answer's `action` says.
pub(super) enum Action {
    /// `null`: nothing to do.
    None,
    /// `{"agreed": false}` or an `answer` other than "yes": the user did not agree or ask.
    Declined,
    /// A call; `true` when a consent form agreed to it (the user said yes).
    Call(ToolCall, bool),
}

pub(in crate::pipeline) fn strip_fences(content: &str) -> &str {
    let t = content.trim();
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map_or(t, |r| r.trim_end().trim_end_matches("```"))
        .trim()
}

pub(in crate::pipeline) fn parse_json_object(content: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(strip_fences(content)) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "expected a JSON object, got {}",
            crate::data::json_kind(&other)
        )),
        Err(e) => Err(format!("not valid JSON ({e})")),
    }
}

/// Why a structured answer that stopped at the token limit is not used (complete-
/// looking JSON may still be cut).
pub(crate) const CUT_SHORT: &str = "the answer was cut by the token limit";

/// How much of an unusable answer a repair request shows the model.
const REPAIR_ECHO_CHARS: usize = 2000;

/// Ask again for a structured answer that could not be used: the answer and the
/// problem go at the end of the request (the one repair rule of every call kind).
pub(crate) fn ask_for_repair(req: &mut ModelRequest, mut answer: String, problem: &str) {
    // A runaway answer is shown cut: echoing it whole could overflow the context.
    if let Some((end, _)) = answer.char_indices().nth(REPAIR_ECHO_CHARS) {
        answer.truncate(end);
        answer.push('…');
    }
    req.messages.push(Message::assistant(answer));
    req.messages.push(Message::user(format!(
        "Your previous answer could not be used: {problem}. Answer again with only the JSON object the schema describes."
    )));
}
