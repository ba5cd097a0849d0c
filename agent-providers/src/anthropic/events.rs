//! A streamed Messages answer: its events (`content_block_start`, `…_delta`,
//! `message_delta`, `message_stop`, `error`) decoded into deltas; the answer tool's
//! `input_json_delta`s become the text of a structured call.

use std::collections::VecDeque;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse};
use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::Value;

use super::Messages;
use super::response::{WireUsage, map_stop};
use crate::stream::{Assembler, SseParser, StreamDelta, event_json};
use crate::vendor::{body_error, ended};

#[derive(Clone, Copy, PartialEq)]
enum BlockKind {
    Text,
    Tool,
    Answer,
    Other,
}

pub(crate) struct MessagesStream {
    asm: Assembler,
    answer: Option<String>,
    blocks: Vec<(usize, BlockKind)>,
    /// Text blocks of a structured call (kept out of the JSON text deltas).
    preamble: String,
    answered: bool,
    real_calls: bool,
    stop: Option<String>,
}

#[derive(Deserialize)]
struct StreamEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<StreamMessage>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StreamMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

impl MessagesStream {
    /// The decoder of one call; `answer` names its answer tool, if any.
    pub(super) fn new(answer: Option<String>) -> Self {
        Self {
            asm: Assembler::new("toolu_"),
            answer,
            blocks: Vec::new(),
            preamble: String::new(),
            answered: false,
            real_calls: false,
            stop: None,
        }
    }

    fn kind_of(&self, index: usize) -> BlockKind {
        self.blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(BlockKind::Other, |(_, k)| *k)
    }
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl SseParser for MessagesStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        let e: StreamEvent = event_json(ev, "Messages")?;
        let index = e.index.unwrap_or(0);
        match e.kind.as_str() {
            "message_start" => {
                if let Some(m) = e.message {
                    self.asm.response_id = m.id.filter(|id| !id.is_empty());
                    if let Some(u) = m.usage {
                        self.asm.usage = u.into();
                    }
                }
            }
            "content_block_start" => {
                let block = e.content_block.unwrap_or(Value::Null);
                let kind = match str_field(&block, "type") {
                    Some("text") => {
                        let t = str_field(&block, "text").unwrap_or_default();
                        if self.answer.is_some() {
                            self.preamble.push_str(t);
                        } else {
                            self.asm.text(t, out);
                        }
                        BlockKind::Text
                    }
                    Some("tool_use") => {
                        let name = str_field(&block, "name").unwrap_or_default();
                        if self.answer.as_deref() == Some(name) {
                            self.answered = true;
                            BlockKind::Answer
                        } else {
                            self.real_calls = true;
                            self.asm.tool_delta(
                                index,
                                str_field(&block, "id"),
                                Some(name),
                                None,
                                out,
                            );
                            BlockKind::Tool
                        }
                    }
                    _ => BlockKind::Other,
                };
                self.blocks.push((index, kind));
            }
            "content_block_delta" => {
                let d = e.delta.unwrap_or(Value::Null);
                match (self.kind_of(index), str_field(&d, "type")) {
                    (BlockKind::Text, Some("text_delta")) => {
                        let t = str_field(&d, "text").unwrap_or_default();
                        if self.answer.is_some() {
                            self.preamble.push_str(t);
                        } else {
                            self.asm.text(t, out);
                        }
                    }
                    (BlockKind::Answer, Some("input_json_delta")) => {
                        self.asm
                            .text(str_field(&d, "partial_json").unwrap_or_default(), out);
                    }
                    (BlockKind::Tool, Some("input_json_delta")) => {
                        self.asm
                            .tool_delta(index, None, None, str_field(&d, "partial_json"), out);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = e.delta.as_ref().and_then(|d| str_field(d, "stop_reason")) {
                    self.stop = Some(r.to_owned());
                }
                if let Some(n) = e.usage.and_then(|u| u.output_tokens) {
                    self.asm.usage.output_tokens = n;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let v = match e.error {
                    Some(err) => serde_json::json!({ "error": err }),
                    None => Value::Null,
                };
                return Err(body_error::<Messages>(&v));
            }
            _ => {} // ping, content_block_stop, future events
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        ended(self.stop.is_some(), "no message_stop")
    }

    fn finish(&mut self) -> ModelResponse {
        let mut finish = map_stop(self.stop.as_deref());
        if self.answered && !self.real_calls {
            if finish == FinishReason::ToolCalls {
                finish = FinishReason::Stop;
            }
            if self.asm.content.is_empty() {
                self.asm.content.push_str("{}");
            }
        } else if self.answer.is_some() && !self.answered {
            // A structured call answered in plain text: hand the text to the engine,
            // which reports or repairs it.
            self.asm.content = std::mem::take(&mut self.preamble);
        }
        self.asm.finish = Some(finish);
        self.asm.finish()
    }
}
