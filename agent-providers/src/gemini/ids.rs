//! Gemini's function calls may carry a `thoughtSignature` that must be sent back with
//! the call in later requests. The engine's `ToolCall` has no place for it, so it
//! travels in the call id (`ID#sig=SIGNATURE`), which the engine stores and echoes
//! unchanged; calls Gemini sent without an id get a made-up one, never sent back.

/// Ids this client made up for calls Gemini sent without one (never sent back).
pub(super) const SYNTHETIC_ID: &str = "gemini_call_";
/// Separates a call id from its thought signature.
const SIGNATURE_SEP: &str = "#sig=";

/// A call id as the engine holds it: (id to send back, thought signature).
pub(super) fn split_id(id: &str) -> (Option<&str>, Option<&str>) {
    let (base, sig) = match id.split_once(SIGNATURE_SEP) {
        Some((b, s)) => (b, Some(s)),
        None => (id, None),
    };
    let wire = (!base.is_empty() && !base.starts_with(SYNTHETIC_ID)).then_some(base);
    (wire, sig)
}

/// A call id from Gemini's parts: its id (or a made-up one) and its signature.
pub(super) fn join_id(id: Option<&str>, index: usize, signature: Option<&str>) -> String {
    let mut s = match id.filter(|i| !i.is_empty()) {
        Some(i) => i.to_owned(),
        None => format!("{SYNTHETIC_ID}{index}"),
    };
    if let Some(sig) = signature.filter(|s| !s.is_empty()) {
        s.push_str(SIGNATURE_SEP);
        s.push_str(sig);
    }
    s
}
