//! Session state: everything that survives between turns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::data::{AgentContext, AgentData};
use crate::directive::Directive;
use crate::error::StoreError;
use crate::provider::Message;
use crate::signal::SignalState;
use crate::store::StoredSession;

/// A processed inbound event and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessedEvent {
    /// The event id.
    pub id: String,
    /// The response, as JSON.
    pub response: serde_json::Value,
}

/// The persisted state of one conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "D: Serialize, C: Serialize",
    deserialize = "D: AgentData, C: AgentContext"
))]
pub struct Session<D, C> {
    /// Session id.
    pub id: String,
    /// Store version (compare-and-swap); 0 = never saved.
    pub version: u64,
    /// Collected data.
    pub data: D,
    /// Session context.
    pub context: C,
    /// Active flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The step that spoke last and awaits the user's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Flows that completed in this session (order of completion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_flows: Vec<String>,
    /// Conversation history (after compaction: the recent part).
    #[serde(default)]
    pub history: Vec<Message>,
    /// Summary of compacted history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Directive applied at the start of the next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Directive>,
    /// Signal trigger bookkeeping.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub signals: BTreeMap<String, SignalState>,
    /// Completed turns.
    #[serde(default)]
    pub turns: u64,
    /// Version (structural hash) of the active flow's definition when last saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_version: Option<String>,
    /// Recent turns that carried an inbound event id, with their responses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ProcessedEvent>,
    /// Creation time (ms since the Unix epoch, agent clock).
    #[serde(default)]
    pub created_ms: u64,
    /// Last save time (ms since the Unix epoch, agent clock).
    #[serde(default)]
    pub updated_ms: u64,
}

impl<D: AgentData, C: AgentContext> Session<D, C> {
    /// A fresh session.
    pub fn new(id: impl Into<String>, context: C, now_ms: u64) -> Self {
        Self {
            id: id.into(),
            version: 0,
            data: D::default(),
            context,
            flow: None,
            step: None,
            completed_flows: Vec::new(),
            history: Vec::new(),
            summary: None,
            pending: None,
            signals: BTreeMap::new(),
            turns: 0,
            flow_version: None,
            events: Vec::new(),
            created_ms: now_ms,
            updated_ms: now_ms,
        }
    }

    /// The stored response of an inbound event already processed.
    pub fn processed_event(&self, id: &str) -> Option<&serde_json::Value> {
        self.events.iter().find(|e| e.id == id).map(|e| &e.response)
    }

    /// Encode for a store (JSON).
    pub fn encode(&self) -> Result<StoredSession, StoreError> {
        // Sized for the history so the buffer does not regrow while writing.
        let hint = 256
            + self
                .history
                .iter()
                .map(|m| m.content.len() + 48)
                .sum::<usize>();
        let mut bytes = Vec::with_capacity(hint);
        serde_json::to_writer(&mut bytes, self).map_err(|e| StoreError::Corrupt {
            session_id: self.id.clone(),
            message: e.to_string(),
        })?;
        Ok(StoredSession {
            id: self.id.clone(),
            version: self.version,
            updated_ms: self.updated_ms,
            bytes,
        })
    }

    /// Decode from a store.
    pub fn decode(stored: &StoredSession) -> Result<Self, StoreError> {
        let mut s: Self =
            serde_json::from_slice(&stored.bytes).map_err(|e| StoreError::Corrupt {
                session_id: stored.id.clone(),
                message: e.to_string(),
            })?;
        s.version = stored.version;
        Ok(s)
    }
}
