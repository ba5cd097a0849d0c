//! Scenarios: user turns and what must hold after each turn and at the end.

use regex::Regex;
use serde_json::{Map, Value};

use super::score::ReplyBounds;
use crate::response::{AgentResponse, StoppedReason};

/// One conversation to run: what the user says, turn by turn, and what must hold.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Scenario {
    /// Unique within its suite.
    pub name: String,
    /// Free labels; the suites use `quick` (development subset) and `smoke` (CI).
    pub tags: Vec<String>,
    /// The agent clock, fixed for the whole run (ms since the Unix epoch), so relative
    /// dates ("next Friday") have one right answer.
    pub clock_ms: Option<u64>,
    /// The agent context for this run (JSON of the agent's context type).
    pub context: Option<Value>,
    /// What the user says, in order.
    pub turns: Vec<Turn>,
    /// What must hold after the last turn (tool counts are over the whole run).
    pub end: Vec<Expect>,
    /// Bounds on every reply of the scenario's runs.
    pub bounds: ReplyBounds,
}

/// One user message and what must hold right after it.
///
/// A turn may list other phrasings of the same message ([`Turn::or`]): run `i` of a
/// scenario says phrasing `i` of each turn (the last one where a turn has fewer), and
/// the scenario passes only if the runs of every phrasing pass.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Turn {
    /// The user's message (its first phrasing).
    pub user: String,
    /// Other phrasings of the same message, which must pass as well.
    pub alternatives: Vec<String>,
    /// Checked against this turn's response (tool counts: this turn's calls).
    pub expect: Vec<Expect>,
}

/// Something that must hold after a turn or at the end of a run.
///
/// Values compare leniently where a model's wording may vary but the meaning may not:
/// strings ignore case and surrounding spaces, numbers compare by value (`2` = `2.0`).
#[derive(Debug, Clone)]
pub enum Expect {
    /// A data field equals a value.
    Data {
        /// Field (JSON name).
        field: String,
        /// Expected value.
        value: Value,
    },
    /// A data field is set (any value other than `null`).
    Present {
        /// Field (JSON name).
        field: String,
    },
    /// A data field is not set (`null`): nobody said it.
    Absent {
        /// Field (JSON name).
        field: String,
    },
    /// The active flow (`None`: no flow is active).
    Flow(Option<String>),
    /// The current step (`None`: no step).
    Step(Option<String>),
    /// Why the turn stopped, by kind (`needs_input`, `flow_completed`, `reply`, …).
    Stopped(String),
    /// A tool was called exactly `times` times with arguments containing `args`.
    Tool {
        /// Tool name.
        name: String,
        /// A subset the arguments must contain (empty: any arguments).
        args: Map<String, Value>,
        /// Exact number of matching calls (0: never called so).
        times: u32,
    },
    /// The reply matches the pattern.
    Reply(Regex),
    /// The reply does not match the pattern.
    NotReply(Regex),
}

impl Scenario {
    /// A scenario with no turns yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
    /// Tag the scenario (for filtering and the report's grouping).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
    /// Fix the agent clock for the run.
    pub fn clock_ms(mut self, ms: u64) -> Self {
        self.clock_ms = Some(ms);
        self
    }
    /// The agent context for the run (JSON of the context type).
    pub fn context(mut self, context: Value) -> Self {
        self.context = Some(context);
        self
    }
    /// Append a turn: what the user says and what must hold after it.
    pub fn turn(mut self, turn: Turn) -> Self {
        self.turns.push(turn);
        self
    }
    /// Add an expectation checked after the last turn.
    pub fn end(mut self, e: Expect) -> Self {
        self.end.push(e);
        self
    }
    /// Bound every reply of the scenario's runs.
    pub fn bounds(mut self, bounds: ReplyBounds) -> Self {
        self.bounds = bounds;
        self
    }
    /// Whether the scenario carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
    /// How many phrasings its runs go through: the most any turn lists.
    pub fn variants(&self) -> usize {
        self.turns
            .iter()
            .map(|t| 1 + t.alternatives.len())
            .max()
            .unwrap_or(1)
    }
}

impl Turn {
    /// The user says `text`.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            user: text.into(),
            alternatives: Vec::new(),
            expect: Vec::new(),
        }
    }
    /// Another phrasing of the same message.
    pub fn or(mut self, text: impl Into<String>) -> Self {
        self.alternatives.push(text.into());
        self
    }
    /// Phrasing `variant` (0: [`Turn::user`]; the last one when there are fewer).
    pub fn phrasing(&self, variant: usize) -> &str {
        match variant.checked_sub(1) {
            None => &self.user,
            Some(i) => self
                .alternatives
                .get(i)
                .or(self.alternatives.last())
                .map_or(&self.user, String::as_str),
        }
    }
    /// Add an expectation for this turn.
    pub fn expect(mut self, e: Expect) -> Self {
        self.expect.push(e);
        self
    }
}

impl Expect {
    /// Expect the stored field `field` to equal `value` after the turn.
    pub fn data(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Expect::Data {
            field: field.into(),
            value: value.into(),
        }
    }
    /// `field` is set, to any value.
    pub fn present(field: impl Into<String>) -> Self {
        Expect::Present {
            field: field.into(),
        }
    }
    /// `field` is not set.
    pub fn absent(field: impl Into<String>) -> Self {
        Expect::Absent {
            field: field.into(),
        }
    }
    /// The active flow is `flow`.
    pub fn flow(flow: impl Into<String>) -> Self {
        Expect::Flow(Some(flow.into()))
    }
    /// No flow is active.
    pub fn no_flow() -> Self {
        Expect::Flow(None)
    }
    /// The current step is `step`.
    pub fn step(step: impl Into<String>) -> Self {
        Expect::Step(Some(step.into()))
    }
    /// The turn stopped for this reason kind (`needs_input`, `flow_completed`, …).
    pub fn stopped(kind: impl Into<String>) -> Self {
        Expect::Stopped(kind.into())
    }
    /// `name` was called exactly `times` times (any arguments).
    pub fn tool(name: impl Into<String>, times: u32) -> Self {
        Expect::Tool {
            name: name.into(),
            args: Map::new(),
            times,
        }
    }
    /// `name` was called exactly `times` times with arguments containing `args`.
    pub fn tool_with(name: impl Into<String>, args: Map<String, Value>, times: u32) -> Self {
        Expect::Tool {
            name: name.into(),
            args,
            times,
        }
    }
    /// The reply matches `pattern` (a regular expression; `(?i)` for any case).
    pub fn reply(pattern: &str) -> Result<Self, regex::Error> {
        Ok(Expect::Reply(Regex::new(pattern)?))
    }
    /// The reply does not match `pattern`.
    pub fn not_reply(pattern: &str) -> Result<Self, regex::Error> {
        Ok(Expect::NotReply(Regex::new(pattern)?))
    }

    /// `Ok` when it holds, else why not, in one line.
    pub fn check(&self, seen: &Observed) -> Result<(), String> {
        match self {
            Expect::Data { field, value } => {
                let found = seen.data.get(field).unwrap_or(&Value::Null);
                if same(value, found) {
                    Ok(())
                } else {
                    Err(format!("data.{field}: expected {value}, found {found}"))
                }
            }
            Expect::Present { field } => match seen.data.get(field) {
                None | Some(Value::Null) => {
                    Err(format!("data.{field}: expected a value, found none"))
                }
                Some(_) => Ok(()),
            },
            Expect::Absent { field } => match seen.data.get(field) {
                None | Some(Value::Null) => Ok(()),
                Some(found) => Err(format!(
                    "data.{field}: expected unset (nobody said it), found {found}"
                )),
            },
            Expect::Flow(want) => expect_eq("flow", want.as_deref(), seen.flow.as_deref()),
            Expect::Step(want) => expect_eq("step", want.as_deref(), seen.step.as_deref()),
            Expect::Stopped(kind) => {
                if seen.stopped == *kind {
                    Ok(())
                } else {
                    Err(format!("stopped: expected {kind}, found {}", seen.stopped))
                }
            }
            Expect::Tool { name, args, times } => {
                let n = seen
                    .tool_calls
                    .iter()
                    .filter(|(n, a)| n == name && contains(a, args))
                    .count();
                if n == *times as usize {
                    return Ok(());
                }
                let with = if args.is_empty() {
                    String::new()
                } else {
                    format!(" with {}", Value::Object(args.clone()))
                };
                let calls: Vec<String> = seen
                    .tool_calls
                    .iter()
                    .map(|(n, a)| format!("{n}({a})"))
                    .collect();
                Err(format!(
                    "tool {name}{with}: expected {times} call(s), found {n} (calls: {})",
                    if calls.is_empty() {
                        "none".to_owned()
                    } else {
                        calls.join(", ")
                    }
                ))
            }
            Expect::Reply(re) => {
                if re.is_match(&seen.reply) {
                    Ok(())
                } else {
                    Err(format!(
                        "reply: expected to match /{re}/, was {:?}",
                        seen.reply
                    ))
                }
            }
            Expect::NotReply(re) => {
                if re.is_match(&seen.reply) {
                    Err(format!(
                        "reply: must not match /{re}/, was {:?}",
                        seen.reply
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }
}

fn expect_eq(what: &str, want: Option<&str>, found: Option<&str>) -> Result<(), String> {
    if want == found {
        Ok(())
    } else {
        let show = |v: Option<&str>| v.map_or("none".to_owned(), |s| format!("`{s}`"));
        Err(format!(
            "{what}: expected {}, found {}",
            show(want),
            show(found)
        ))
    }
}

/// What an expectation is checked against: one turn's response, or (at the end) the
/// last response with the tool calls of the whole run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Observed {
    /// The collected data as JSON.
    pub data: Map<String, Value>,
    /// The id of the flow the conversation is in after the turn.
    pub flow: Option<String>,
    /// The id of the step the conversation is at after the turn.
    pub step: Option<String>,
    /// Stopped reason kind (`needs_input`, …).
    pub stopped: String,
    /// Tool calls (name, arguments).
    pub tool_calls: Vec<(String, Value)>,
    /// Tool calls of the turn (name, whether it succeeded).
    pub tool_results: Vec<(String, bool)>,
    /// The reply the user read.
    pub reply: String,
}

impl Observed {
    /// What a response shows.
    pub fn of<D: serde::Serialize>(r: &AgentResponse<D>) -> Self {
        let data = match serde_json::to_value(&r.data) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        Self {
            data,
            flow: r.flow.clone(),
            step: r.step.clone(),
            stopped: stopped_kind(&r.stopped),
            tool_calls: r
                .tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect(),
            tool_results: r
                .tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.ok))
                .collect(),
            reply: r.message.clone(),
        }
    }
}

/// The snake_case kind of a stopped reason, as suite files name it.
pub fn stopped_kind(r: &StoppedReason) -> String {
    match r {
        StoppedReason::NeedsInput => "needs_input",
        StoppedReason::FlowCompleted { .. } => "flow_completed",
        StoppedReason::FlowCancelled { .. } => "flow_cancelled",
        StoppedReason::HumanHandoff => "human_handoff",
        StoppedReason::Reply => "reply",
        StoppedReason::Halt => "halt",
        StoppedReason::Aborted { .. } => "aborted",
        StoppedReason::AutoStepCap { .. } => "auto_step_cap",
        StoppedReason::TransitionCap { .. } => "transition_cap",
        StoppedReason::Responded => "responded",
        StoppedReason::FlowFailed { .. } => "flow_failed",
        StoppedReason::AwaitingApproval { .. } => "awaiting_approval",
    }
    .to_owned()
}

/// Every stopped kind a suite may name.
pub const STOPPED_KINDS: [&str; 12] = [
    "needs_input",
    "human_handoff",
    "flow_completed",
    "flow_cancelled",
    "reply",
    "halt",
    "aborted",
    "auto_step_cap",
    "transition_cap",
    "responded",
    "flow_failed",
    "awaiting_approval",
];

/// Lenient equality: strings ignore case and surrounding spaces, numbers compare by
/// value, arrays and objects element-wise.
pub fn same(want: &Value, found: &Value) -> bool {
    match (want, found) {
        (Value::String(a), Value::String(b)) => a.trim().to_lowercase() == b.trim().to_lowercase(),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => want == found,
    }
}

/// Whether the arguments contain every key of `subset` with the same value.
fn contains(args: &Value, subset: &Map<String, Value>) -> bool {
    subset
        .iter()
        .all(|(k, v)| args.get(k).is_some_and(|a| same(v, a)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn seen() -> Observed {
        Observed {
            data: json!({ "city": "Lisbon", "guests": 2, "check_in": null })
                .as_object()
                .unwrap()
                .clone(),
            flow: Some("booking".into()),
            step: Some("ask_date".into()),
            stopped: "needs_input".into(),
            tool_calls: vec![("book_room".into(), json!({ "hotel": "Grand" }))],
            tool_results: vec![("book_room".into(), true)],
            reply: "Which date?".into(),
        }
    }

    #[test]
    fn values_compare_by_meaning_not_spelling() {
        assert!(Expect::data("city", " lisbon").check(&seen()).is_ok());
        assert!(Expect::data("guests", 2.0).check(&seen()).is_ok());
        let e = Expect::data("guests", 3).check(&seen()).unwrap_err();
        assert_eq!(e, "data.guests: expected 3, found 2");
    }

    #[test]
    fn absent_fields_and_positions_are_checked() {
        assert!(Expect::absent("check_in").check(&seen()).is_ok());
        assert!(Expect::absent("nights").check(&seen()).is_ok());
        assert!(Expect::absent("city").check(&seen()).is_err());
        assert!(Expect::step("ask_date").check(&seen()).is_ok());
        assert_eq!(
            Expect::no_flow().check(&seen()).unwrap_err(),
            "flow: expected none, found `booking`"
        );
        assert!(Expect::stopped("reply").check(&seen()).is_err());
    }

    #[test]
    fn tools_count_matching_calls_only() {
        assert!(Expect::tool("book_room", 1).check(&seen()).is_ok());
        let args = json!({ "hotel": "grand" }).as_object().unwrap().clone();
        assert!(
            Expect::tool_with("book_room", args, 1)
                .check(&seen())
                .is_ok()
        );
        let other = json!({ "hotel": "Ritz" }).as_object().unwrap().clone();
        let e = Expect::tool_with("book_room", other, 1)
            .check(&seen())
            .unwrap_err();
        assert!(e.contains("found 0"), "{e}");
        assert!(Expect::tool("refund", 0).check(&seen()).is_ok());
    }

    #[test]
    fn reply_patterns_match_or_must_not() {
        assert!(
            Expect::reply("(?i)which date")
                .unwrap()
                .check(&seen())
                .is_ok()
        );
        assert!(
            Expect::not_reply("(?i)confirmed")
                .unwrap()
                .check(&seen())
                .is_ok()
        );
        assert!(Expect::not_reply("date").unwrap().check(&seen()).is_err());
    }
}
