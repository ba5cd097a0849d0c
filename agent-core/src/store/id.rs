//! The session-id rule: which ids an agent accepts, checked before a turn (or any
//! other call of the agent on a session) touches the store, so every store is given
//! only ids it can keep.
//!
//! A session id is valid when it
//!
//! - is not empty;
//! - is at most [`MAX_SESSION_ID_BYTES`] (4096) bytes of UTF-8;
//! - has no control character (Unicode category Cc: U+0000–U+001F and
//!   U+007F–U+009F; NUL, tab and newline included).
//!
//! Every store of this crate keeps every valid id under the id itself, except the
//! PostgreSQL store for ids longer than [`HASHED_ABOVE_BYTES`] (2560) bytes: an index
//! row of PostgreSQL holds at most 2704 bytes, so such an id is kept under a key made
//! of its SHA-256 (see `store::postgres`). Shorter ids, which PostgreSQL always
//! accepted, keep their stored key.

use crate::error::SessionIdError;

/// Longest session id, in bytes (UTF-8).
pub const MAX_SESSION_ID_BYTES: usize = 4096;

/// Session ids longer than this (in bytes) are kept by the PostgreSQL store under a
/// hash of the id: with the tool journal's call key beside it, a longer id could
/// exceed the 2704 bytes of a PostgreSQL index row. Every id up to this length keeps
/// its stored key in every store.
pub const HASHED_ABOVE_BYTES: usize = 2560;

/// Check `id` against the session-id rule: `Ok` when it is non-empty, at most
/// [`MAX_SESSION_ID_BYTES`] bytes of UTF-8 and free of control characters (Unicode
/// category Cc: U+0000–U+001F, U+007F–U+009F). Every store of this crate takes every
/// such id; the agent refuses any other before touching its store.
///
/// ```
/// use agent_core::store::check_session_id;
/// assert!(check_session_id("user-42/web").is_ok());
/// assert!(check_session_id("").is_err());
/// assert!(check_session_id("a\0b").is_err());
/// assert!(check_session_id(&"x".repeat(4097)).is_err());
/// ```
pub fn check_session_id(id: &str) -> Result<(), SessionIdError> {
    if id.is_empty() {
        return Err(SessionIdError::Empty);
    }
    if id.len() > MAX_SESSION_ID_BYTES {
        return Err(SessionIdError::TooLong {
            len: id.len(),
            limit: MAX_SESSION_ID_BYTES,
        });
    }
    if let Some((at, c)) = id.char_indices().find(|(_, c)| c.is_control()) {
        return Err(SessionIdError::ControlCharacter {
            at,
            code: u32::from(c),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_takes_ids_up_to_the_limit_and_refuses_empty_long_and_control() {
        assert_eq!(check_session_id("a"), Ok(()));
        assert_eq!(check_session_id("é ✨ id with spaces/and:colons"), Ok(()));
        assert_eq!(check_session_id(&"x".repeat(MAX_SESSION_ID_BYTES)), Ok(()));
        assert_eq!(check_session_id(""), Err(SessionIdError::Empty));
        assert_eq!(
            check_session_id(&"x".repeat(MAX_SESSION_ID_BYTES + 1)),
            Err(SessionIdError::TooLong {
                len: MAX_SESSION_ID_BYTES + 1,
                limit: MAX_SESSION_ID_BYTES
            })
        );
        // A multi-byte character past the limit counts in bytes.
        let long = format!("{}é", "x".repeat(MAX_SESSION_ID_BYTES - 1));
        assert!(matches!(
            check_session_id(&long),
            Err(SessionIdError::TooLong { .. })
        ));
        for (id, at, code) in [
            ("a\0b", 1, 0),
            ("\tx", 0, 9),
            ("x\n", 1, 10),
            ("é\u{7f}", 2, 0x7f),
            ("x\u{85}", 1, 0x85),
        ] {
            assert_eq!(
                check_session_id(id),
                Err(SessionIdError::ControlCharacter { at, code }),
                "{id:?}"
            );
        }
        // Not control characters: format and separator characters are taken.
        assert_eq!(check_session_id("a\u{200b}b\u{2028}"), Ok(()));
    }

    #[test]
    fn errors_say_what_is_wrong_and_how_to_fix_it() {
        let m = SessionIdError::ControlCharacter { at: 3, code: 0 }.to_string();
        assert!(m.contains("U+0000") && m.contains("byte 3"), "{m}");
        let m = SessionIdError::TooLong {
            len: 5000,
            limit: 4096,
        }
        .to_string();
        assert!(m.contains("5000") && m.contains("4096"), "{m}");
        assert!(SessionIdError::Empty.to_string().contains("non-empty"));
    }
}
