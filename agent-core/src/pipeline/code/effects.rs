//! What a code flow's fn asks of the turn: the user's answer to its open question,
//! extracted by one model call, and its tool calls, under the same gates as the
//! model's and with their data writes applied.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::fxhash::FxHasher;
use crate::pipeline::Turn;
use crate::pipeline::approve::Gate;
use crate::pipeline::model::answer::{CUT_SHORT, ask_for_repair, parse_json_object};
use crate::provider::{CallKind, FinishReason, Message, OutputSchema};
use crate::response::{DirectiveSource, Event, ToolCallRecord};
use crate::tool::{Tool, ToolCxParts, ToolError};

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// One extraction call: the user's answer to an open question, against the
    /// answer type's schema (`None` when the message does not answer it).
    pub(super) async fn extract_answer(
        &mut self,
        flow: &str,
        key: &str,
        question: &str,
        mut schema: Value,
    ) -> Result<Option<Value>, AgentError> {
        let mut sys = String::with_capacity(256 + question.len());
        sys.push_str(&self.a.section);
        let _ = write!(
            sys,
            "You asked the user: \"{question}\"\nExtract their answer from their latest message into `answer`, following the schema. If the message does not answer the question, set `answer` to null. Answer with JSON only."
        );
        let defs = match &mut schema {
            Value::Object(o) => {
                o.remove("$schema");
                o.remove("title");
                o.remove("$defs")
            }
            _ => None,
        };
        let schema_text = schema.to_string();
        let cache_key = {
            let mut h = FxHasher::default();
            (flow, key, &schema_text).hash(&mut h);
            (h.finish() & !0xf) | 5
        };
        let out_schema = self.a.cached_schema(cache_key, || {
            let mut s = json!({
                "type": "object",
                "properties": { "answer": { "anyOf": [schema, { "type": "null" }] } },
                "required": ["answer"],
                "additionalProperties": false,
            });
            if let (Some(d), Value::Object(o)) = (defs, &mut s) {
                o.insert("$defs".into(), d);
            }
            s
        });
        // The question (in the system prompt) and the user's latest message are what
        // the answer depends on: the call's cost stays flat however long the
        // conversation is, and small local models are not led astray by earlier turns.
        let latest = vec![Message::user(self.msg)];
        let mut req = self.request(CallKind::Extract, sys, latest);
        // An answer is the message's content in the schema's shape, so it is never much
        // longer than both: a bound keeps a model that rambles (small local ones fill
        // their context with whitespace) from spending minutes on it.
        let bound = u32::try_from(self.msg.chars().count() / 2 + schema_text.len() / 4 + 64)
            .unwrap_or(u32::MAX);
        req.max_tokens = Some(req.max_tokens.map_or(bound, |m| m.min(bound)));
        req.output = Some(OutputSchema {
            name: "answer".into(),
            schema: out_schema,
        });
        let mut attempts = 0;
        loop {
            let (resp, _) = self.call(&req, None).await?;
            let parsed = if resp.finish == FinishReason::Length {
                Err(CUT_SHORT.to_owned())
            } else {
                parse_json_object(&resp.content)
            };
            match parsed {
                Ok(mut m) => return Ok(m.remove("answer").filter(|v| !v.is_null())),
                Err(problem) if attempts < self.a.config.repair_attempts => {
                    attempts += 1;
                    tracing::warn!(%problem, flow, key, "malformed answer extraction; asking for a repair");
                    ask_for_repair(&mut req, resp.content, &problem);
                }
                Err(message) => {
                    return Err(AgentError::MalformedModelOutput {
                        kind: CallKind::Extract,
                        message,
                    });
                }
            }
        }
    }

    /// A tool call from a code flow: the same gates as the model's tool calls; errors
    /// and panics come back as failed results; data writes apply.
    pub(super) async fn code_tool(
        &mut self,
        flow: &str,
        tool: Result<Arc<dyn Tool<D, C>>, String>,
        name: String,
        args: Value,
        held: Option<(Gate, String)>,
    ) -> Result<(bool, String), AgentError> {
        self.emit(Event::ToolCall {
            name: name.clone(),
            arguments: args.clone(),
        });
        let parts = ToolCxParts {
            turn: self.turn_tag.clone(),
            session_id: Arc::from(self.s.id.as_str()),
            flow: Some(Arc::from(flow)),
            step: None,
            data: Arc::new(self.s.data.clone()),
            context: Arc::new(self.s.context.clone()),
        };
        let r = match (tool, held) {
            (_, Some((Gate::Fail(e), _))) => Err(e),
            (Ok(t), held) => {
                let span = crate::telemetry::tool_span(
                    &name,
                    None,
                    Some(t.description()),
                    &args,
                    Some(flow),
                    false,
                );
                // The call's position among the turn's live calls: a replay of the
                // flow does not call recorded tools again, so a retried turn numbers
                // its calls the same way. A call held for approval keeps its key.
                let cx = match held {
                    Some((_, key)) => parts.keyed(key),
                    None => {
                        let cx = parts.cx(self.tool_seq, &name, &args);
                        self.tool_seq += 1;
                        cx
                    }
                };
                let limit = self.a.config.tool_timeout;
                let call =
                    crate::journal::call(self.journal_cx(), t.as_ref(), cx, args.clone(), limit);
                let r = tracing::Instrument::instrument(call, span.clone()).await;
                crate::telemetry::record_tool(&span, &r);
                // A reused result that cannot be applied fails the turn.
                self.faulted()?;
                r
            }
            (Err(msg), _) => Err(ToolError::Failed(msg)),
        };
        let (ok, content) = match r {
            Ok(out) => {
                let src = DirectiveSource::Tool(name.clone());
                // A write the data type refuses fails the call (the flow sees why)
                // rather than the turn: the same call would fail every turn.
                let refused = match &out.directive.data {
                    Some(p) => match self.write_data(&src, p).await {
                        Err(AgentError::Data { error, .. }) => Some(error),
                        other => other.map(|()| None)?,
                    },
                    None => None,
                };
                if out.directive.position.is_some() || out.directive.reply.is_some() {
                    tracing::warn!(tool = %name, "directive positions from tools called by code flows are ignored; return a handoff from the flow instead");
                }
                match refused {
                    None => (true, out.content),
                    Some(e) => {
                        tracing::warn!(tool = %name, error = %e, "code flow tool's data write refused");
                        (false, format!("the tool's data write was refused: {e}"))
                    }
                }
            }
            Err(e) => {
                tracing::warn!(tool = %name, error = %e, "code flow tool call failed");
                (false, e.to_string())
            }
        };
        let rec = ToolCallRecord {
            name,
            arguments: args,
            output: content.clone(),
            ok,
        };
        self.emit(Event::ToolResult(rec.clone()));
        self.tool_calls.push(rec);
        Ok((ok, content))
    }
}
