//! Reply text shared by every path that writes one: parts joined into one message,
//! and the `max_reply_chars` cut.

/// Non-empty parts of a reply, in order, as paragraphs.
pub(super) fn join(parts: &[String]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The first `max` characters of `text`: `max_reply_chars` holds for every reply,
/// whatever wrote it (a model ignoring `maxLength`, a verbatim reply, a code flow).
/// A hard cut, the same one live streaming applies, so streamed text still equals
/// the final message.
pub(super) fn cap_chars(mut text: String, max: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
    }
    text
}
