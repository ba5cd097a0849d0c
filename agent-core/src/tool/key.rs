//! Idempotency keys: the same call of the same turn gets the same key on every re-run
//! (a retried turn, a redelivered event), in every process and version.

use std::sync::Arc;

use serde_json::Value;

/// The turn's identity in call keys: the inbound event id when the turn has one (a
/// redelivered event is the same turn), else the turn's number and a hash of the
/// message (a turn re-run after a crash or a conflict, with the same message at the
/// same point of the session, is the same turn).
pub(crate) fn turn_tag(event_id: Option<&str>, turns: u64, message: &str) -> Arc<str> {
    match event_id {
        Some(id) => Arc::from(format!("event:{id}")),
        None => {
            // `turn:{n}:{hash:016x}`, written without the formatting machinery: every
            // turn makes one.
            let n = turns.saturating_add(1);
            let mut tag = [0u8; 5 + 20 + 1 + 16];
            tag[..5].copy_from_slice(b"turn:");
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            let mut rest = n;
            loop {
                at -= 1;
                digits[at] = b'0' + (rest % 10) as u8;
                rest /= 10;
                if rest == 0 {
                    break;
                }
            }
            let mut len = 5;
            for &d in &digits[at..] {
                tag[len] = d;
                len += 1;
            }
            tag[len] = b':';
            len += 1;
            let h = hash(&[message.as_bytes()]);
            for i in (0..16).rev() {
                tag[len] = b"0123456789abcdef"[((h >> (i * 4)) & 0xf) as usize];
                len += 1;
            }
            Arc::from(std::str::from_utf8(&tag[..len]).unwrap_or_default())
        }
    }
}

/// A call's idempotency key: the session and the turn, the call's position in the
/// turn, its tool name and its arguments (canonical JSON: object keys sorted).
pub(crate) fn call_key(
    session_id: &str,
    turn: &str,
    index: usize,
    name: &str,
    args: &Value,
) -> String {
    let mut canonical = String::new();
    write_canonical(args, &mut canonical);
    let place = hash(&[session_id.as_bytes(), turn.as_bytes()]);
    let place2 = hash(&[turn.as_bytes(), session_id.as_bytes()]);
    let call = hash(&[name.as_bytes(), canonical.as_bytes()]);
    format!("{place:016x}{place2:016x}-{index}-{call:016x}")
}

/// A fixed hash over length-prefixed parts: it is stored and compared across
/// processes and versions, so it must not depend on `std`'s `Hash` impls.
fn hash(parts: &[&[u8]]) -> u64 {
    use std::hash::Hasher;
    let mut h = crate::fxhash::FxHasher::default();
    for p in parts {
        h.write_u64(p.len() as u64);
        h.write(p);
    }
    h.finish()
}

/// JSON with object keys sorted (the model may order them differently on a re-run).
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    write_canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_stable_and_separate_calls() {
        for (turns, message) in [
            (0, ""),
            (4, "pay 5"),
            (9, "é"),
            (u64::MAX - 1, "x"),
            (u64::MAX, "y"),
        ] {
            let n = turns.saturating_add(1);
            let h = hash(&[message.as_bytes()]);
            assert_eq!(
                turn_tag(None, turns, message).as_ref(),
                format!("turn:{n}:{h:016x}")
            );
        }
        let t = turn_tag(None, 4, "pay 5");
        assert_eq!(t, turn_tag(None, 4, "pay 5"));
        assert_ne!(t, turn_tag(None, 5, "pay 5"));
        assert_ne!(t, turn_tag(None, 4, "pay 6"));
        assert_eq!(turn_tag(Some("m1"), 4, "a"), turn_tag(Some("m1"), 9, "b"));
        let a = json!({"amount": 5, "to": "x"});
        let reordered = json!({"to": "x", "amount": 5});
        let k = call_key("s", &t, 0, "pay", &a);
        assert_eq!(k, call_key("s", &t, 0, "pay", &reordered));
        assert_ne!(k, call_key("s", &t, 1, "pay", &a));
        assert_ne!(k, call_key("s2", &t, 0, "pay", &a));
        assert_ne!(k, call_key("s", &t, 0, "refund", &a));
        assert_ne!(
            k,
            call_key("s", &t, 0, "pay", &json!({"amount": 6, "to": "x"}))
        );
        assert!(k.len() <= 70 && k.chars().all(|c| c.is_ascii_hexdigit() || c == '-'));
    }
}
