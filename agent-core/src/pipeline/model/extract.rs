//! The calls that write no reply: extraction only (no message is needed this turn),
//! and the summary that replaces history older than the kept messages.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::answer::parse_json_object;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::pipeline::Turn;
use crate::provider::{CallKind, Message, OutputSchema};

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Extraction only (no message is needed this turn).
    pub(crate) async fn extract_call(
        &mut self,
        flow: &Arc<Flow<D, C>>,
    ) -> Result<Option<Map<String, Value>>, AgentError> {
        let mut sys = String::from(
            "Extract structured data from the user's latest message into `data`, for these fields:\n",
        );
        let fields = self.readable(&flow.collectable);
        for field in &fields {
            let _ = writeln!(sys, "- {field}");
        }
        sys.push_str(if self.a.config.cite_quotes {
            "Write each as {\"quote\": the user's exact words that state it, \"value\": the value}; null when the message does not state it. Never guess a value.\n"
        } else {
            "Write null for a field the message does not state. Never guess a value.\n"
        });
        self.push_today(&mut sys);
        let make = || {
            let mut schema = json!({
                "type": "object",
                "properties": { "data": self.a.schema.extraction_schema(&fields, self.a.config.cite_quotes) },
                "required": ["data"],
                "additionalProperties": false,
            });
            if let (Some(defs), Value::Object(o)) = (self.a.schema.defs(), &mut schema) {
                o.insert("$defs".into(), defs.clone());
            }
            schema
        };
        let schema = if fields.len() == flow.collectable.len() {
            self.a.cached_schema(2 | (flow.index as u64) << 4, make)
        } else {
            Arc::new(make())
        };
        let mut req = self.request(CallKind::Extract, sys, self.history_messages());
        req.output = Some(OutputSchema {
            name: "extraction".into(),
            schema,
        });
        let (resp, _) = self.call(&req, None).await?;
        let mut m = parse_json_object(&resp.content).map_err(|message| {
            AgentError::MalformedModelOutput {
                kind: CallKind::Extract,
                message,
            }
        })?;
        match m.remove("data") {
            Some(Value::Object(d)) => Ok(Some(d)),
            _ => Ok(None),
        }
    }

    /// Summarise history older than the last `keep_last_messages` once it exceeds the
    /// token budget.
    pub(crate) async fn compact_history(&mut self) -> Result<(), AgentError> {
        let cfg = &self.a.config;
        let keep = cfg.keep_last_messages;
        if self.s.history.len() <= keep {
            return Ok(());
        }
        let tokens: usize = self
            .s
            .history
            .iter()
            .map(|m| crate::prompt::estimate_tokens(&m.content))
            .sum();
        if tokens <= cfg.history_token_budget {
            return Ok(());
        }
        let cut = self.s.history.len() - keep;
        let old: Vec<Message> = self.s.history[..cut].to_vec();
        let mut sys = String::from(
            "Summarise the conversation so far in a few sentences. Keep every fact, value and decision the user gave.",
        );
        if let Some(prev) = &self.s.summary {
            let _ = write!(sys, " Earlier summary to fold in: {prev}");
        }
        let req = self.request(CallKind::Summarize, sys, old);
        let (resp, _) = self.call(&req, None).await?;
        self.s.summary = Some(resp.content.trim().to_owned());
        self.s.history.drain(..cut);
        Ok(())
    }
}
