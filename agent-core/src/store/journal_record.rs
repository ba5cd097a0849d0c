//! The once-tool journal's record as the store sees it: defined here, in the lower
//! layer, so that the store trait needs nothing from `journal`, which builds on it.

/// What [`SessionStore::journal_begin`](super::SessionStore::journal_begin) found for
/// a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalBegin {
    /// No record existed: the intent is written now; run the call.
    Started,
    /// An intent without a result: an earlier run stopped between the two writes.
    Pending {
        /// When that intent was written (ms since the Unix epoch).
        intent_ms: u64,
    },
    /// The recorded result (the bytes given to
    /// [`SessionStore::journal_finish`](super::SessionStore::journal_finish)).
    Done(Vec<u8>),
}
