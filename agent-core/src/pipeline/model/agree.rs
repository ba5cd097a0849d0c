//! The agreement check: before a tool with effects runs on the user's answer to a
//! confirmation ([`crate::config::AgentConfig::check_agreement`]), and when the user
//! answers values shown back to them (`pipeline/tentative.rs`), a short call of its
//! own asks whether that answer agrees.
//!
//! Inside the full reply call a small model judges a hesitation a yes too often:
//! Qwen2.5-Coder 1.5B at temperature 0.7 booked on "Let me think about it for a
//! moment", "Not yet, thanks" and "Ainda não, obrigado" (about a third of such
//! judgements, 4 of 168 concierge runs). Asked with nothing but the question and the
//! answer, the same model gave 19 hesitations, refusals and digressions a
//! yes-probability of at most 0.18 (most under 0.01) and 23 yeses in five languages
//! at least 0.96, after a short question; after the concierge's own summary ("Here is
//! your booking: a room in Lisbon from 2026-07-01 for 2 guest(s). Shall I book it?")
//! at most 0.17 and at least 0.90 (token probabilities at temperature 0.7,
//! 2026-11-28).

use std::sync::Arc;
use std::sync::LazyLock;

use serde_json::{Value, json};

use super::answer::strip_fences;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::pipeline::Turn;
use crate::pipeline::consent::{asked_before, plainly_agrees};
use crate::provider::{CallKind, FinishReason, Message, OutputSchema};
use crate::tool::{Effect, Tool, action_words};

/// The answer's one field.
const AGREES: &str = "agrees";

/// The agent's question is quoted up to this many characters, from its end (where
/// the question is).
const MAX_QUESTION_CHARS: usize = 400;

static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
    Arc::new(json!({
        "type": "object",
        "properties": { AGREES: { "type": "boolean" } },
        "required": [AGREES],
        "additionalProperties": false,
    }))
});

/// `text` as a JSON string: quoted, with its own quotes escaped.
fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> &str {
    let n = text.chars().count();
    match text.char_indices().nth(n.saturating_sub(max)) {
        Some((i, _)) if n > max => &text[i..],
        _ => text,
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Whether the user's latest message agrees to `tool` running, for an answer to a
    /// confirmation that named it. A pure tool, a plain yes ([`plainly_agrees`]) and
    /// an agent with the check off need no call. An answer that cannot be read does
    /// not agree: nothing runs, and the user is asked again.
    pub(super) async fn agrees_to(&mut self, tool: &dyn Tool<D, C>) -> Result<bool, AgentError> {
        if !self.a.config.check_agreement
            || tool.effect() == Effect::Pure
            || plainly_agrees(self.msg, &action_words(tool))
        {
            return Ok(true);
        }
        let agrees = self.agrees_with_last_question().await?;
        tracing::debug!(tool = tool.name(), agrees, "agreement checked");
        Ok(agrees)
    }

    /// Whether the user's latest message agrees to the agent's last question, asked
    /// of the model in a call of its own (the question and the answer, nothing else).
    /// An answer that cannot be read does not agree.
    pub(crate) async fn agrees_with_last_question(&mut self) -> Result<bool, AgentError> {
        let asked = asked_before(&self.s.history)
            .map_or("Shall I go ahead?", |m| tail(m, MAX_QUESTION_CHARS));
        let reply = tail(self.msg, MAX_QUESTION_CHARS);
        let user = format!(
            "The assistant asked: {}\nThe user replied: {}\nDoes the reply agree to go ahead now? Set `{AGREES}` to true or false.",
            quoted(asked),
            quoted(reply)
        );
        let mut req = self.request(
            CallKind::Agreement,
            "You judge whether a user's reply agrees to go ahead. Answer in JSON.".into(),
            vec![Message::user(user)],
        );
        req.output = Some(OutputSchema {
            name: "agreement".into(),
            schema: SCHEMA.clone(),
        });
        let (resp, _) = self.call(&req, None).await?;
        let agrees = (resp.finish != FinishReason::Length)
            .then(|| serde_json::from_str::<Value>(strip_fences(&resp.content)).ok())
            .flatten()
            .and_then(|v| v.get(AGREES).and_then(Value::as_bool));
        if agrees.is_none() {
            tracing::warn!(answer = %resp.content, "agreement answer unreadable; read as no");
        }
        Ok(agrees.unwrap_or(false))
    }
}
