//! A streamed Chat Completions answer: its chunks decoded into deltas, tolerant of
//! compatible servers (no `index` on tool calls, arguments as objects, no `[DONE]`
//! after a finish reason), and a whole JSON answer replayed as a stream for servers
//! that ignore `stream: true`.

use std::collections::VecDeque;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse};
use eventsource_stream::Event;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::Chat;
use super::response::{Content, WireUsage, map_finish};
use crate::http;
use crate::stream::{Assembler, Events, SseParser, StreamDelta, event_json};
use crate::vendor::{body_error, ended};

/// The events of a streamed answer: SSE, or a whole JSON answer replayed.
pub(super) fn events(resp: reqwest::Response) -> BoxFuture<'static, Result<Events, ProviderError>> {
    async move {
        if is_json(&resp) {
            // A server that ignored `stream: true` and answered whole.
            let bytes = http::body(resp).await?;
            return whole_as_events(&bytes);
        }
        Ok(http::sse_events(resp))
    }
    .boxed()
}

fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// A whole completion replayed as one stream chunk (`message` becomes `delta`) and
/// `[DONE]`.
fn whole_as_events(bytes: &[u8]) -> Result<Events, ProviderError> {
    let mut v: Value = http::parse_json(bytes, "the chat completion")?;
    if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
        for c in choices.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(mut m) = c.remove("message") {
                if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    for (i, tc) in calls.iter_mut().enumerate() {
                        if let Some(o) = tc.as_object_mut() {
                            o.entry("index").or_insert(Value::from(i));
                        }
                    }
                }
                c.insert("delta".into(), m);
            }
        }
    }
    let events = [v.to_string(), "[DONE]".to_owned()].map(|data| {
        Ok(Event {
            data,
            ..Event::default()
        })
    });
    Ok(futures::stream::iter(events).boxed())
}

#[derive(Deserialize)]
struct ChatChunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<ChunkDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Keys for calls streamed without an `index` (tolerance): far from real indexes.
const UNINDEXED: usize = 1 << 20;

pub(crate) struct ChatStream {
    pub(super) asm: Assembler,
}

impl SseParser for ChatStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        if ev.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: ChatChunk = event_json(ev, "chat completion")?;
        if let Some(e) = &chunk.error {
            return Err(body_error::<Chat>(e));
        }
        if self.asm.response_id.is_none() {
            self.asm.response_id = chunk.id.filter(|id| !id.is_empty());
        }
        if let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) {
            if let Some(d) = choice.delta {
                if let Some(c) = d.content {
                    self.asm.text(&c.into_text(), out);
                }
                if let Some(r) = d.refusal.filter(|r| !r.is_empty()) {
                    self.asm.text(&r, out);
                    self.asm.finish = Some(FinishReason::ContentFilter);
                }
                for tc in d.tool_calls.unwrap_or_default() {
                    let key = match tc.index {
                        Some(i) => i,
                        None if tc.id.is_some() => UNINDEXED + self.asm_calls(),
                        None => self.asm.last_call_key().unwrap_or(UNINDEXED),
                    };
                    let (name, args) = match tc.function {
                        Some(f) => (
                            f.name,
                            f.arguments.map(|a| match a {
                                Value::String(s) => s,
                                other => other.to_string(),
                            }),
                        ),
                        None => (None, None),
                    };
                    self.asm.tool_delta(
                        key,
                        tc.id.as_deref(),
                        name.as_deref(),
                        args.as_deref(),
                        out,
                    );
                }
            }
            if let Some(f) = choice.finish_reason.as_deref()
                && self.asm.finish != Some(FinishReason::ContentFilter)
            {
                self.asm.finish = Some(map_finish(Some(f)));
            }
        }
        if let Some(u) = chunk.usage {
            self.asm.usage = u.into();
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        ended(self.asm.finish.is_some(), "no finish_reason, no [DONE]")
    }

    fn finish(&mut self) -> ModelResponse {
        self.asm.finish()
    }
}

impl ChatStream {
    fn asm_calls(&self) -> usize {
        let mut n = 0;
        while self.asm.has_call(UNINDEXED + n) {
            n += 1;
        }
        n
    }
}
