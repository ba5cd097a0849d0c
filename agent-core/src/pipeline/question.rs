//! The question a model step asks, written by code: the step's `ask` template, or, on a
//! model profile that [composes questions](crate::policy::ModelProfile::composes_questions),
//! one built from the fields the step still waits for (each field's doc and
//! constraints). The turn that reaches the step sends it instead of a model-written
//! message (`converse.rs`).
//!
//! A built question names each awaited field by the first clause of its doc comment
//! (up to the first comma, semicolon, parenthesis or sentence end), with the bounds
//! the user must respect: `/// Number of guests, 1 to 12` with `range = 1..=12` asks
//! "What is the number of guests (1 to 12)?". A field without a doc is named from its
//! identifier (`check_in`: "the check in"). Built questions are in English; a step's
//! `ask` words its question in any language.

use std::borrow::Cow;

use serde_json::Value;

use super::Turn;
use crate::command::Command;
use crate::data::ground::normalize;
use crate::data::{AgentContext, AgentData, DataSchema};
use crate::flow::Flow;

/// Words a field's doc may start with that already fit after "Could you tell me" (an
/// article, a possessive, a question word): the doc is used as written.
const LEADS: [&str; 19] = [
    "the", "a", "an", "your", "my", "his", "her", "their", "our", "its", "what", "which", "when",
    "where", "who", "whom", "whose", "how", "whether",
];

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The template of the question that asks step `j` of `flow`, written by code: its
    /// `ask`, or, on a profile that composes questions, one built from the fields it
    /// collects that are neither present nor skipped. `None`: the model writes it (a
    /// capable model's step without `ask`; a step that collects nothing still missing,
    /// or whose tools the model may call when it asks).
    pub(super) fn step_question<'f>(&self, flow: &'f Flow<D, C>, j: usize) -> Option<Cow<'f, str>> {
        let step = flow.steps.get(j)?;
        if let Some(t) = step.ask.as_deref() {
            return Some(Cow::Borrowed(t));
        }
        // A step that only picks the flow to go to, where the sorting call kept the
        // message: which of those flows the user wants.
        if self.kept_at_routing
            && let Some(to) = flow.routes_to(j)
        {
            let titles: Vec<String> = to
                .iter()
                .filter_map(|id| self.a.flow(id))
                .map(|g| {
                    if g.title.is_empty() {
                        g.id.replace('_', " ")
                    } else {
                        crate::prompt::one_line(&g.title)
                    }
                })
                .collect();
            let q = routing_question(&titles)?;
            return Some(Cow::Owned(q.replace('{', "{{").replace('}', "}}")));
        }
        if !self.a.provider.profile().composes_questions()
            || (!step.tools.is_empty() && step.proposes_by_ask().is_none())
        {
            return None;
        }
        let awaited: Vec<&str> = step
            .collect_idx
            .iter()
            .filter(|&&i| !self.is_present(i) && !self.skipped.contains(i))
            .filter_map(|&i| self.a.schema.fields().get(i).map(AsRef::as_ref))
            .collect();
        let q = built_question(&self.a.schema, &awaited)?;
        // A template: braces a doc may hold are written as text.
        Some(Cow::Owned(q.replace('{', "{{").replace('}', "}}")))
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// What this turn stored, as code says it back before what it asks or checks
    /// ("Noted: Lisbon, Wednesday 1 July, 2 guests."): a text or a day by itself (a
    /// day as people say it), any other value before its field's label. Values
    /// `shown_in` already names (a summary) are left out; `None` when nothing is
    /// left. The user sees what was understood and can correct it; the line is kept
    /// out of the history the model reads ([`Turn::ack`]).
    pub(super) fn what_changed(&self, shown_in: &str) -> Option<String> {
        let stored = self.data_now();
        let shown_in = normalize(shown_in);
        let mut items: Vec<(&str, String)> = Vec::new();
        for c in &self.commands {
            let (Command::SetValue { field, value, .. }
            | Command::CorrectValue { field, value, .. }) = c
            else {
                continue;
            };
            // Stored as read (a later correction may have replaced it).
            if stored.get(field.as_str()) != Some(value) {
                continue;
            }
            let field = field.as_str();
            if value.is_null() {
                continue;
            }
            // A day as a summary says it.
            let v = &self.spoken(field, value);
            let text = match v {
                Value::String(t) => t.clone(),
                Value::Bool(b) => (if *b { "yes" } else { "no" }).to_owned(),
                other => other.to_string(),
            };
            let said = normalize(&text);
            if said.is_empty() || contains_words(&shown_in, &said) {
                continue;
            }
            let item = match v {
                Value::String(_) => text,
                Value::Bool(_) => format!("{}: {text}", self.value_label(field)),
                _ => format!("{text} {}", self.value_label(field)),
            };
            items.retain(|(f, _)| *f != field);
            items.push((field, item));
        }
        if items.is_empty() {
            return None;
        }
        let items: Vec<String> = items.into_iter().map(|(_, i)| i).collect();
        Some(format!("Noted: {}.", items.join(", ")))
    }

    /// How a reply names `field` beside its value ("city Lisbon"): its schema title,
    /// or its identifier.
    pub(super) fn value_label(&self, field: &str) -> String {
        self.a
            .schema
            .property(field)
            .and_then(|p| p.get("title"))
            .and_then(Value::as_str)
            .map_or_else(|| field.replace('_', " "), str::to_owned)
    }
}

/// Whether the words of `part` occur in `text` as consecutive words (both normalised).
pub(super) fn contains_words(text: &str, part: &str) -> bool {
    let words: Vec<&str> = part.split_whitespace().collect();
    let text: Vec<&str> = text.split_whitespace().collect();
    !words.is_empty() && text.windows(words.len()).any(|w| w == words.as_slice())
}

/// Longest model-written statement kept before a step's question asked again.
const MAX_STATEMENT_WORDS: usize = 25;

/// The reply to an answer that did not give what the step asks for: the first
/// sentence of the model's `message` when it is a statement of at most
/// [`MAX_STATEMENT_WORDS`] words (an answer to a side question, "Canberra is the
/// capital of Australia."), then `question`. The model's own questions, and whatever
/// it wrote after its first sentence, are left out: the question is code's. A
/// sentence naming something in backticks is the engine's wording read back, not a
/// statement for the user.
pub(crate) fn after_statement(message: &str, question: String, earlier: &[&str]) -> String {
    let first = message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .and_then(|l| crate::reply::sentences(l).into_iter().next())
        .map(str::trim)
        .unwrap_or_default();
    // A sentence with a name in backticks is the engine's wording read back
    // ("Set `action.answer` accordingly."), not something to tell the user.
    // Nor is a sentence of the question or of what the agent said before (a copy),
    // also with a word or two changed (a summary said again with another weekday):
    // four in five of its words, at least three, are words of that text.
    let copied = |text: &str| {
        let (text, first) = (normalize(text), normalize(first));
        let first: Vec<&str> = first.split_whitespace().collect();
        let text: Vec<&str> = text.split_whitespace().collect();
        if first.is_empty() {
            return false;
        }
        let found = first.iter().filter(|w| text.contains(w)).count();
        contains_words(&text.join(" "), &first.join(" "))
            || (first.len() >= 3 && found * 5 >= first.len() * 4)
    };
    let statement = first.ends_with(['.', '!'])
        && !first.contains('`')
        && !copied(&question)
        && !earlier.iter().any(|e| copied(e))
        && first.split_whitespace().count() <= MAX_STATEMENT_WORDS
        && !first.eq_ignore_ascii_case(question.trim());
    if statement {
        format!("{first} {question}")
    } else {
        question
    }
}

/// The question of a step that only picks the flow to go to, from those flows'
/// titles (at least one): "What can I help you with: billing or technical support?".
/// A title is lowercased unless its first word is written in capitals ("FAQ").
pub(crate) fn routing_question(titles: &[String]) -> Option<String> {
    let spoken: Vec<String> = titles
        .iter()
        .map(|t| {
            let mut chars = t.chars();
            match (chars.next(), chars.next()) {
                (Some(a), Some(b)) if a.is_uppercase() && !b.is_uppercase() => {
                    a.to_lowercase().chain(t.chars().skip(1)).collect()
                }
                _ => t.clone(),
            }
        })
        .collect();
    let (last, rest) = spoken.split_last()?;
    Some(if rest.is_empty() {
        format!("Can I help you with {last}?")
    } else {
        format!("What can I help you with: {} or {last}?", rest.join(", "))
    })
}

/// The question for `fields` (at least one), from their docs and constraints.
pub(crate) fn built_question(schema: &DataSchema, fields: &[&str]) -> Option<String> {
    let labels: Vec<String> = fields.iter().map(|f| label(schema, f)).collect();
    let (last, rest) = labels.split_last()?;
    Some(if rest.is_empty() {
        format!("Could you tell me {last}?")
    } else {
        format!("Could you tell me {} and {last}?", rest.join(", "))
    })
}

/// How a question names `field`, with its bounds.
fn label(schema: &DataSchema, field: &str) -> String {
    match schema.index_of(field) {
        Some(i) => spoken(schema)[i].1.clone(),
        None => label_of(schema, field),
    }
}

/// How replies and questions name each field, worked out once per schema.
fn spoken(schema: &DataSchema) -> &[(String, String)] {
    schema.spoken.get_or_init(|| {
        schema
            .fields()
            .iter()
            .map(|f| (name_of(schema, f), label_of(schema, f)))
            .collect()
    })
}

/// [`label`], worked out.
fn label_of(schema: &DataSchema, field: &str) -> String {
    let mut name = name_of(schema, field);
    let prop = schema.property(field).map(|p| schema.shape(p));
    if let Some(b) = prop.and_then(|p| bounds(schema, p)) {
        name.push_str(&format!(" ({b})"));
    }
    name
}

/// How a reply names `field` ("the number of guests"): the first clause of its doc,
/// or its identifier, after an article unless the doc starts with one.
pub(crate) fn field_name(schema: &DataSchema, field: &str) -> String {
    match schema.index_of(field) {
        Some(i) => spoken(schema)[i].0.clone(),
        None => name_of(schema, field),
    }
}

/// How the field's doc names it, without an article added: the first clause of its
/// doc ("invoice number", "the patient's full name"), or its identifier as words.
pub(crate) fn field_phrase(schema: &DataSchema, field: &str) -> String {
    lower_first(&doc_name(schema, field))
}

/// The first clause of the field's doc, or its identifier as words.
fn doc_name(schema: &DataSchema, field: &str) -> String {
    // The doc sits beside an optional field's alternatives, or on its type.
    schema
        .property(field)
        .and_then(|p| {
            p.get("description")
                .or_else(|| schema.shape(p).get("description"))
        })
        .and_then(Value::as_str)
        .map(first_clause)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| field.replace(['_', '-'], " "))
}

/// [`field_name`], worked out.
fn name_of(schema: &DataSchema, field: &str) -> String {
    let doc = doc_name(schema, field);
    let first = doc
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_lowercase();
    if LEADS.contains(&first.as_str()) {
        lower_first(&doc)
    } else {
        format!("the {}", lower_first(&doc))
    }
}

/// The doc up to its first comma, semicolon, parenthesis, colon or sentence end.
fn first_clause(doc: &str) -> String {
    let line = doc.lines().next().unwrap_or_default();
    let mut end = line.len();
    for pat in [",", ";", " (", "(", ":", ". ", " - ", " — "] {
        if let Some(i) = line.find(pat) {
            end = end.min(i);
        }
    }
    line[..end].trim().trim_end_matches('.').trim().to_owned()
}

/// `text` with its first letter in lower case, unless its first word is an acronym
/// or a name written in capitals ("IBAN", "VAT number").
fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    let Some(c) = chars.next() else {
        return String::new();
    };
    let second_upper = text.chars().nth(1).is_some_and(char::is_uppercase);
    if second_upper {
        return text.to_owned();
    }
    c.to_lowercase().chain(chars).collect()
}

/// What the user must respect, in words: "1 to 12", "at least 1", "one of: a, b or c".
fn bounds(schema: &DataSchema, p: &Value) -> Option<String> {
    let enum_of = |v: &Value| -> Option<Vec<String>> {
        let e = v.get("enum")?.as_array()?;
        Some(
            e.iter()
                .filter_map(|x| match x {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect(),
        )
    };
    // The enum may sit in a referenced definition or in an `anyOf` branch.
    let mut shapes = vec![p];
    if let Some(branches) = p.get("anyOf").and_then(Value::as_array) {
        shapes.extend(branches.iter().map(|b| schema.shape(b)));
    }
    for s in &shapes {
        if let Some(mut values) = enum_of(s).filter(|v| !v.is_empty()) {
            let last = values.pop()?;
            return Some(if values.is_empty() {
                last
            } else {
                format!("one of: {} or {last}", values.join(", "))
            });
        }
    }
    // Bounds that only restate the integer type (`u8`: 0 to 255) say nothing.
    let (type_lo, type_hi) = type_range(p.get("format").and_then(Value::as_str));
    let num = |k: &str, implied: Option<f64>| {
        p.get(k)
            .and_then(Value::as_f64)
            .filter(|n| Some(*n) != implied)
    };
    let show = |n: f64| {
        if n.fract() == 0.0 && n.abs() < 1e15 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        }
    };
    match (num("minimum", type_lo), num("maximum", type_hi)) {
        (Some(lo), Some(hi)) => Some(format!("{} to {}", show(lo), show(hi))),
        (Some(lo), None) => Some(format!("at least {}", show(lo))),
        (None, Some(hi)) => Some(format!("at most {}", show(hi))),
        (None, None) => None,
    }
}

/// The bounds an integer `format` implies (schemars writes them for sized integers).
fn type_range(format: Option<&str>) -> (Option<f64>, Option<f64>) {
    let bits = |f: &str, prefix: &str| f.strip_prefix(prefix)?.parse::<i32>().ok();
    match format {
        Some(f) if f.starts_with("uint") => {
            (Some(0.0), bits(f, "uint").map(|b| 2f64.powi(b) - 1.0))
        }
        Some(f) if f.starts_with("int") => match bits(f, "int") {
            Some(b) => (Some(-(2f64.powi(b - 1))), Some(2f64.powi(b - 1) - 1.0)),
            None => (None, None),
        },
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::{built_question, first_clause, routing_question};
    use crate::data::DataSchema;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Room {
        Single,
        Double,
        Suite,
    }

    #[allow(dead_code)]
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Visit {
        /// The patient's full name
        patient: Option<String>,
        /// What the visit is for, in the patient's words (a check-up, a sore throat)
        reason: Option<String>,
        /// Day of the appointment, YYYY-MM-DD
        day: Option<String>,
        /// Number of guests, 1 to 12
        #[schemars(range(min = 1, max = 12))]
        guests: Option<u8>,
        /// Room type
        room: Option<Room>,
        /// IBAN to refund to
        iban: Option<String>,
        check_in: Option<String>,
        /// Nights: at least one
        #[schemars(range(min = 1))]
        nights: Option<u32>,
        /// Count
        count: Option<u16>,
    }

    fn ask(fields: &[&str]) -> String {
        built_question(&DataSchema::of::<Visit>(), fields).unwrap_or_default()
    }

    #[test]
    fn a_question_names_the_field_by_the_first_clause_of_its_doc() {
        assert_eq!(
            ask(&["patient"]),
            "Could you tell me the patient's full name?"
        );
        assert_eq!(
            ask(&["day"]),
            "Could you tell me the day of the appointment?"
        );
        assert_eq!(ask(&["reason"]), "Could you tell me what the visit is for?");
        assert_eq!(ask(&["iban"]), "Could you tell me the IBAN to refund to?");
        assert_eq!(ask(&["check_in"]), "Could you tell me the check in?");
    }

    #[test]
    fn a_question_states_the_bounds_the_user_must_respect() {
        assert_eq!(
            ask(&["guests"]),
            "Could you tell me the number of guests (1 to 12)?"
        );
        assert_eq!(
            ask(&["nights"]),
            "Could you tell me the nights (at least 1)?"
        );
        assert_eq!(ask(&["count"]), "Could you tell me the count?");
        assert_eq!(
            ask(&["room"]),
            "Could you tell me the room type (one of: single, double or suite)?"
        );
    }

    #[test]
    fn several_fields_are_asked_in_one_question() {
        assert_eq!(
            ask(&["patient", "reason", "day"]),
            "Could you tell me the patient's full name, what the visit is for and the day of the appointment?"
        );
        assert_eq!(ask(&[]), "");
    }

    #[test]
    fn a_question_asked_again_keeps_only_the_models_first_statement() {
        use super::after_statement;
        let q = || "What day would you like to check in?".to_owned();
        assert_eq!(
            after_statement(
                "Canberra is the capital of Australia. When do you check in? I'm here to help!",
                q(),
                &[]
            ),
            "Canberra is the capital of Australia. What day would you like to check in?"
        );
        // A question, a long sentence or nothing: the question alone.
        assert_eq!(after_statement("When do you check in?", q(), &[]), q());
        let long = format!("{}end.", "word ".repeat(30));
        assert_eq!(after_statement(&long, q(), &[]), q());
        assert_eq!(after_statement("", q(), &[]), q());
        // The engine's wording read back is no statement.
        assert_eq!(
            after_statement("Set `action.answer` accordingly.", q(), &[]),
            q()
        );
        assert_eq!(
            after_statement("\n\nSure!\nWhen?", q(), &[]),
            "Sure! What day would you like to check in?"
        );
        // A sentence copied from the agent's last message is no answer either.
        let last = "Here is your booking: a room in Lisbon. Shall I book it?";
        assert_eq!(
            after_statement(
                "Here is your booking: a room in Lisbon. Shall I?",
                q(),
                &[last]
            ),
            q()
        );
        assert_eq!(
            after_statement("Breakfast is included.", q(), &[last]),
            "Breakfast is included. What day would you like to check in?"
        );
        // Nor is the question's own statement said again with a word changed (the
        // model copied the summary with another weekday).
        let summary = || {
            "Here is your booking: a room in Lisbon from Sunday 5 July for 2 guests. Shall I book it?"
                .to_owned()
        };
        assert_eq!(
            after_statement(
                "Here is your booking: a room in Lisbon from Friday 5 July for 2 guests.",
                summary(),
                &[]
            ),
            summary()
        );
        // An answer that shares a few of the question's words is kept.
        assert_eq!(
            after_statement("You can check in from 3 pm.", q(), &[]),
            "You can check in from 3 pm. What day would you like to check in?"
        );
    }

    #[test]
    fn the_first_clause_ends_at_a_comma_a_parenthesis_or_a_sentence_end() {
        assert_eq!(first_clause("City, state or country"), "City");
        assert_eq!(first_clause("The device (a phone)"), "The device");
        assert_eq!(first_clause("The total. In euros."), "The total");
        assert_eq!(first_clause("Invoice number: INV-7"), "Invoice number");
    }

    #[test]
    fn a_routing_question_names_the_flows_by_title_lowercased_unless_in_capitals() {
        let t = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            routing_question(&t(&["Billing", "Technical support", "FAQ"])).as_deref(),
            Some("What can I help you with: billing, technical support or FAQ?")
        );
        assert_eq!(
            routing_question(&t(&["Billing"])).as_deref(),
            Some("Can I help you with billing?")
        );
        assert_eq!(routing_question(&[]), None);
    }
}
