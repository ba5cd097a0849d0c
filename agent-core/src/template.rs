//! Reply templates: a `reply` step's text may name data fields, `"Booked {booking_id}
//! in {city}."`, rendered by code from the session's data, so the message the user
//! reads is the state, not the model's account of it. `{{` and `}}` write braces.
//! Every placeholder must name a field that is present at that step: checked by
//! `#[flow]` at compile time (the step's `requires`, or collected on every path to the
//! step) and by `Flow::builder().build()` (those, or the flow's `required`). A placeholder
//! is a field's JSON name (`#[flow]` maps the Rust names written in the attribute).

use serde_json::Value;

/// The placeholders of `text`, in order, or why the text is malformed.
pub fn placeholders(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
            rest = t;
            continue;
        }
        if tail.starts_with('}') {
            return Err("a `}` without its `{` (write `}}` for a brace)".into());
        }
        let Some(end) = tail.find('}') else {
            return Err("a `{` without its `}` (write `{{` for a brace)".into());
        };
        let name = tail[1..end].trim();
        // A field's JSON name may be anything serde renames it to (`start-city`).
        if name.contains('{') {
            return Err("a `{` without its `}` (write `{{` for a brace)".into());
        }
        if name.is_empty() {
            return Err("`{}` names no field".into());
        }
        out.push(name);
        rest = &tail[end + 1..];
    }
    Ok(out)
}

/// Render `text` with the values of `data` (a serialized data object). A missing or
/// null field renders as nothing (build-time checks keep that from happening).
pub fn render(text: &str, data: &Value) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        if let Some(t) = tail.strip_prefix("{{") {
            out.push('{');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("}}") {
            out.push('}');
            rest = t;
        } else if let (Some(end), true) = (tail.find('}'), tail.starts_with('{')) {
            match data.get(tail[1..end].trim()) {
                Some(Value::String(s)) => out.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => out.push_str(&other.to_string()),
            }
            rest = &tail[end + 1..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_listed_and_braces_escape() {
        assert_eq!(
            placeholders("Booked {booking_id} in {city}."),
            Ok(vec!["booking_id", "city"])
        );
        assert_eq!(placeholders("{{literal}} only"), Ok(vec![]));
        assert!(placeholders("a { b").is_err());
        assert!(placeholders("a } b").is_err());
        assert!(placeholders("a {} b").is_err());
        assert!(placeholders("a {b {c} d").is_err());
        // Any JSON name serde may give a field; whether it is one is the caller's check.
        assert_eq!(
            placeholders("From {start-city} ({start city})."),
            Ok(vec!["start-city", "start city"])
        );
    }

    #[test]
    fn values_render_as_text() {
        let data = json!({ "booking_id": "GRAND-2", "city": "Lisbon", "guests": 2 });
        assert_eq!(
            render("Booked {booking_id} in {city} for {guests} {{ok}}.", &data),
            "Booked GRAND-2 in Lisbon for 2 {ok}."
        );
    }
}
