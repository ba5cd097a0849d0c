//! The scripted model: it reads the user's message with simple rules (a city, a date,
//! a number of guests, a yes) and answers like a concierge would, so the server works
//! offline and gives the same conversation every time.

use agent_core::provider::{
    CallKind, FinishReason, ModelRequest, ModelResponse, Role, ToolCall, Usage,
};
use agent_core::testing::{Answer, ScriptedProvider};
use serde_json::{Map, Value, json};

use super::booking::{ANOTHER_DATE, Booking};

const CITIES: &[&str] = &[
    "Amsterdam",
    "Barcelona",
    "Berlin",
    "Copenhagen",
    "Dublin",
    "Lisbon",
    "London",
    "Madrid",
    "New York",
    "Paris",
    "Porto",
    "Prague",
    "Rome",
    "Tokyo",
    "Vienna",
];

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const NUMBERS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn find_city(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    CITIES
        .iter()
        .find(|c| {
            let c = c.to_lowercase();
            lower.match_indices(&c).any(|(i, _)| {
                let before = lower[..i].chars().next_back();
                let after = lower[i + c.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
        })
        .map(|c| (*c).to_owned())
}

/// `2026-07-01`, `July 1st`, `1 July`, `jul 1` (the year defaults to 2026).
fn find_date(text: &str) -> Option<String> {
    let w = words(text);
    for t in &w {
        let parts: Vec<&str> = t.split('-').collect();
        if let [y, m, d] = parts.as_slice()
            && y.len() == 4
            && let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>())
            && (1..=12).contains(&m)
            && (1..=31).contains(&d)
        {
            return Some(format!("{y:04}-{m:02}-{d:02}"));
        }
    }
    let month_of = |t: &str| {
        MONTHS
            .iter()
            .position(|m| t.len() >= 3 && m.starts_with(t))
            .map(|i| i as u32 + 1)
    };
    let day_of = |t: &str| {
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
        let rest = &t[digits.len()..];
        let ok_suffix = matches!(rest, "" | "st" | "nd" | "rd" | "th");
        digits
            .parse::<u32>()
            .ok()
            .filter(|d| ok_suffix && (1..=31).contains(d))
    };
    for (i, t) in w.iter().enumerate() {
        if let Some(m) = month_of(t) {
            let next = w.get(i + 1).and_then(|t| day_of(t));
            let prev = i.checked_sub(1).and_then(|j| day_of(&w[j]));
            if let Some(d) = next.or(prev) {
                return Some(format!("2026-{m:02}-{d:02}"));
            }
        }
    }
    None
}

/// A number of guests: `2 guests`, `for two`, `the three of us`, `just me`, or a bare
/// number as the whole answer.
fn find_guests(text: &str) -> Option<u8> {
    let w = words(text);
    let number = |t: &str| -> Option<u8> {
        t.parse::<u8>()
            .ok()
            .or_else(|| NUMBERS.iter().position(|n| *n == t).map(|n| n as u8))
            .filter(|n| (1..=20).contains(n))
    };
    if w.len() == 1 {
        return number(&w[0]);
    }
    for (i, t) in w.iter().enumerate() {
        let Some(n) = number(t) else { continue };
        let next = w.get(i + 1).map(String::as_str);
        let prev = i.checked_sub(1).map(|j| w[j].as_str());
        let counts_people = matches!(
            next,
            Some("guest" | "guests" | "people" | "persons" | "adults" | "of" | "pax")
        );
        let for_n = prev == Some("for") && next.is_none_or(|n| month_of_word(n).is_none());
        if counts_people || for_n {
            return Some(n);
        }
    }
    if w.iter().any(|t| t == "alone") || text.to_lowercase().contains("just me") {
        return Some(1);
    }
    if w.iter().any(|t| t == "couple") {
        return Some(2);
    }
    None
}

fn month_of_word(t: &str) -> Option<usize> {
    MONTHS.iter().position(|m| t.len() >= 3 && m.starts_with(t))
}

fn affirmative(text: &str) -> bool {
    let w = words(text);
    let yes = [
        "yes",
        "yep",
        "yeah",
        "sure",
        "ok",
        "okay",
        "book",
        "confirm",
        "confirmed",
        "please",
        "perfect",
        "great",
    ];
    let no = ["no", "not", "don", "cancel", "wait"];
    w.iter().any(|t| yes.contains(&t.as_str())) && !w.iter().any(|t| no.contains(&t.as_str()))
}

/// The scripted verdict on a condition.
fn judge(condition: &str, user: &str) -> bool {
    let u = user.to_lowercase();
    match condition {
        ANOTHER_DATE => [
            "another date",
            "different date",
            "change the date",
            "other date",
        ]
        .iter()
        .any(|p| u.contains(p)),
        _ => false,
    }
}

/// Verdicts on the conditions the engine lists in the system prompt (`- cN: text`).
fn judged(system: &str, user: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for line in system.lines() {
        if let Some(rest) = line.strip_prefix("- c")
            && let Some((n, text)) = rest.split_once(": ")
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
        {
            out.insert(format!("c{n}"), Value::Bool(judge(text, user)));
        }
    }
    out
}

fn schema_prop<'a>(req: &'a ModelRequest, key: &str) -> Option<&'a Value> {
    req.output
        .as_ref()
        .and_then(|o| o.schema.get("properties"))
        .and_then(|p| p.get(key))
}

/// The data the engine says it has ("Collected so far: city = Lisbon. Not given yet:
/// check_in, guests"; text values hold no ", " or ". " in this example; with nothing
/// known the line is a JSON object of nulls, which reads as nothing here).
fn collected(system: &str) -> Booking {
    let Some(line) = system
        .lines()
        .find_map(|l| l.strip_prefix("Collected so far: "))
    else {
        return Booking::default();
    };
    let line = line.split(". Not given yet: ").next().unwrap_or_default();
    let known: serde_json::Map<String, Value> = line
        .split(", ")
        .filter_map(|pair| pair.split_once(" = "))
        .map(|(k, v)| {
            let value = v
                .parse::<u64>()
                .map_or_else(|_| Value::String(v.to_owned()), Value::from);
            (k.to_owned(), value)
        })
        .collect();
    serde_json::from_value(Value::Object(known)).unwrap_or_default()
}

fn reply(content: String) -> Result<ModelResponse, agent_core::error::ProviderError> {
    Ok(ModelResponse {
        usage: Usage {
            input_tokens: 0,
            output_tokens: (content.len() / 4) as u64,
            cached_input_tokens: 0,
        },
        content,
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        id: None,
    })
}

/// One answer of the scripted concierge.
fn scripted_answer(req: &ModelRequest) -> Result<ModelResponse, agent_core::error::ProviderError> {
    let user = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.authored())
        .unwrap_or("");
    match req.kind {
        CallKind::Classify | CallKind::Route => {
            let flow = (req.kind == CallKind::Route).then(|| "booking".to_owned());
            reply(
                json!({ "conditions": judged(&req.instructions(), user), "flow": flow })
                    .to_string(),
            )
        }
        CallKind::Summarize => reply("The guest is booking a hotel room.".into()),
        CallKind::Agreement => {
            // The engine quotes the user's answer as a JSON string on this line.
            let answer = user
                .lines()
                .find_map(|l| l.strip_prefix("The user replied: "))
                .and_then(|q| serde_json::from_str::<String>(q).ok())
                .unwrap_or_default();
            reply(json!({ "agrees": affirmative(&answer) }).to_string())
        }
        CallKind::Extract => reply(json!({ "data": extract(user) }).to_string()),
        CallKind::Respond | CallKind::ToolRound => respond(req, user),
    }
}

/// What the user's message states, as a data object.
fn extract(user: &str) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(c) = find_city(user) {
        m.insert("city".into(), json!(c));
    }
    if let Some(d) = find_date(user) {
        m.insert("check_in".into(), json!(d));
    }
    if let Some(g) = find_guests(user) {
        m.insert("guests".into(), json!(g));
    }
    m
}

fn respond(
    req: &ModelRequest,
    user: &str,
) -> Result<ModelResponse, agent_core::error::ProviderError> {
    // After a tool round, also one a person's decision resumed (that answer offers no
    // tools): report the booking, or that it did not happen.
    if let Some(last) = req.messages.last()
        && last.role == Role::Tool
    {
        let message = after_booking(&collected(&req.instructions()), &last.content);
        return reply(if req.output.is_some() {
            structured(req, user, Map::new(), None, message)
        } else {
            message
        });
    }
    let Some(_) = req.output else {
        // No active flow: plain text.
        return reply(
            "Your booking is complete. Reload the page to start a new conversation.".into(),
        );
    };
    let said = req.instructions();
    let known = collected(&said);
    let extracting = schema_prop(req, "data").is_some();
    let data = if extracting {
        extract(user)
    } else {
        Map::new()
    };
    let mut b = known.clone();
    if let Some(c) = data.get("city").and_then(Value::as_str) {
        b.city = Some(c.to_owned());
    }
    if let Some(d) = data.get("check_in").and_then(Value::as_str) {
        b.check_in = Some(d.to_owned());
    }
    if let Some(g) = data.get("guests").and_then(Value::as_u64) {
        b.guests = u8::try_from(g).ok();
    }

    let closing = said.contains("The task is finishing");
    let offers_booking = req.tools.iter().any(|t| t.name == "book_room");
    let complete = b.city.is_some() && b.check_in.is_some() && b.guests.is_some();
    if closing {
        if offers_booking && complete && affirmative(user) && !judge(ANOTHER_DATE, user) {
            let hotel = format!("Grand Hotel {}", b.city.as_deref().unwrap_or(""));
            return Ok(ModelResponse {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_book".into(),
                    name: "book_room".into(),
                    arguments: json!({ "hotel": hotel }),
                }],
                usage: Usage::default(),
                finish: FinishReason::ToolCalls,
                id: None,
            });
        }
        let message =
            "No problem, I have not booked anything. Write again whenever you want to book.";
        return reply(structured(req, user, data, None, message.into()));
    }

    // Speak for the step the engine asks for ("Now, Step `x`: ..."), or re-ask the
    // pending question when the message does not answer it (the engine offers both).
    let target = between(&said, "Now, Step `", "`");
    let pending = between(&said, "instead Step `", "`");
    let answers = |step: &str| match step {
        "ask_city" => data.contains_key("city"),
        "ask_date" => data.contains_key("check_in"),
        "ask_guests" => data.contains_key("guests"),
        _ => true,
    };
    let speak = match pending {
        Some(p) if !answers(p) => Some(p),
        _ => target,
    };
    let mut ack = String::new();
    if judge(ANOTHER_DATE, user) {
        ack.push_str("Sure, let's change the date. ");
    }
    if let Some(c) = data.get("city").and_then(Value::as_str) {
        ack.push_str(&format!("{c}, lovely choice! "));
    }
    if let Some(d) = data.get("check_in").and_then(Value::as_str) {
        ack.push_str(&format!("Checking in on {d}, noted. "));
    }
    if let Some(g) = data.get("guests").and_then(Value::as_u64) {
        ack.push_str(&format!("{g} guest(s), got it. "));
    }
    let ask = match speak {
        Some("ask_city") => {
            let hello = if known == Booking::default() && data.is_empty() {
                "Happy to help you book a hotel! "
            } else {
                ""
            };
            format!("{hello}Which city would you like to stay in?")
        }
        Some("ask_date") => "What date would you like to check in (for example July 1)?".into(),
        Some("ask_guests") => "How many guests will be staying?".into(),
        Some("confirm") => format!(
            "Here is your booking: a room in {} from {} for {} guest(s). Shall I book it?",
            b.city.as_deref().unwrap_or("?"),
            b.check_in.as_deref().unwrap_or("?"),
            b.guests.unwrap_or(1),
        ),
        _ => "How can I help you with your hotel booking?".into(),
    };
    reply(structured(req, user, data, speak, format!("{ack}{ask}")))
}

/// The answer to `book_room`'s result: the confirmation number, or why nothing was
/// booked (a person denied the call, or it failed).
fn after_booking(b: &Booking, result: &str) -> String {
    if let Some(reason) = result.strip_prefix("ERROR: denied by a person: ") {
        return format!(
            "I'm sorry, the room was not booked: the booking was declined ({reason}). Write again whenever you want to book."
        );
    }
    if let Some(problem) = result.strip_prefix("ERROR: ") {
        return format!(
            "I'm sorry, the room was not booked: {problem}. Write again whenever you want to try again."
        );
    }
    let id = result.rsplit(' ').next().unwrap_or("");
    format!(
        "All set! Your room in {} is booked from {} for {} guest(s). Your confirmation number is {id}. Have a lovely stay!",
        b.city.as_deref().unwrap_or("the city"),
        b.check_in.as_deref().unwrap_or("the date you chose"),
        b.guests.unwrap_or(1),
    )
}

/// The text between `start` and the next `end` in `text`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// The respond call's JSON object, with only the keys its schema has.
fn structured(
    req: &ModelRequest,
    user: &str,
    data: Map<String, Value>,
    claim: Option<&str>,
    message: String,
) -> String {
    let mut m = Map::new();
    if schema_prop(req, "data").is_some() {
        m.insert("data".into(), Value::Object(data));
    }
    if schema_prop(req, "conditions").is_some() {
        m.insert(
            "conditions".into(),
            Value::Object(judged(&req.instructions(), user)),
        );
    }
    // What the message asks for, named as the schema lists it (a step's fields).
    if let Some(Value::Array(allowed)) =
        schema_prop(req, "reply_asks_for").and_then(|s| s.get("enum"))
    {
        let label = match claim {
            Some("ask_city") => Some("city"),
            Some("ask_date") => Some("check_in"),
            Some("ask_guests") => Some("guests"),
            other => other,
        };
        if let Some(l) = label.filter(|l| allowed.iter().any(|a| a.as_str() == Some(l))) {
            m.insert("reply_asks_for".into(), Value::String(l.to_owned()));
        }
    }
    if let Some(flows) = schema_prop(req, "handoff")
        .and_then(|h| h.get("properties"))
        .and_then(Value::as_object)
    {
        let stay = flows.keys().map(|k| (k.clone(), Value::Bool(false)));
        m.insert("handoff".into(), Value::Object(stay.collect()));
    }
    m.insert("message".into(), Value::String(message));
    Value::Object(m).to_string()
}

/// The scripted concierge: every call kind answered by [`scripted_answer`].
pub fn scripted_model() -> ScriptedProvider {
    let p = ScriptedProvider::new();
    for kind in [
        CallKind::Respond,
        CallKind::ToolRound,
        CallKind::Classify,
        CallKind::Route,
        CallKind::Extract,
        CallKind::Summarize,
        CallKind::Agreement,
    ] {
        p.default_answer(kind, Answer::from_fn(scripted_answer));
    }
    p
}
