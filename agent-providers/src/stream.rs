//! Streaming, vendor-neutral: every client turns its SSE events into [`StreamDelta`]s
//! (text, tool-call starts and argument fragments, then the assembled answer), and
//! `Provider::generate_stream` reduces them to the engine's [`StreamChunk`]s.

use std::collections::VecDeque;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse, StreamChunk, ToolCall, Usage};
use eventsource_stream::Event;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::time::Instant;

use crate::timeouts::{Timeouts, deadline, within};

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// More text content, in order (for structured calls: raw JSON text).
    Text(String),
    /// The model started a tool call. `index` counts the answer's tool calls from 0.
    ToolCallStart {
        /// Position of the call in the answer's `tool_calls`.
        index: usize,
        /// Call id (empty when the vendor sends none; the final answer has one).
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments; the fragments of one call concatenate
    /// to its arguments.
    ToolCallArguments {
        /// Position of the call in the answer's `tool_calls`.
        index: usize,
        /// The fragment.
        fragment: String,
    },
    /// The complete answer; always the last item of a successful stream.
    Done(ModelResponse),
}

/// Reduce deltas to the engine's chunks: text and the final answer.
pub fn into_chunks<'a>(
    deltas: BoxStream<'a, Result<StreamDelta, ProviderError>>,
) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
    deltas
        .filter_map(|d| {
            futures::future::ready(match d {
                Ok(StreamDelta::Text(t)) => Some(Ok(StreamChunk::Text(t))),
                Ok(StreamDelta::Done(r)) => Some(Ok(StreamChunk::Done(r))),
                Ok(StreamDelta::ToolCallStart { .. } | StreamDelta::ToolCallArguments { .. }) => {
                    None
                }
                Err(e) => Some(Err(e)),
            })
        })
        .boxed()
}

/// Tool-call arguments from the wire: JSON when they parse, `{}` when empty, and the raw
/// text as a JSON string otherwise (so the tool's validation can report it).
pub(crate) fn parse_arguments(raw: &str) -> Value {
    let t = raw.trim();
    if t.is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(t).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// The finish reason, adjusted: tool calls with a natural stop mean `ToolCalls` (several
/// compatible servers say `stop`).
pub(crate) fn settle_finish(finish: FinishReason, has_calls: bool) -> FinishReason {
    match finish {
        FinishReason::Stop if has_calls => FinishReason::ToolCalls,
        f => f,
    }
}

struct PartialCall {
    /// The vendor's index or block number (matched against later deltas).
    key: usize,
    id: String,
    name: String,
    args: String,
}

/// Builds the final answer from deltas, and emits the deltas.
#[derive(Default)]
pub(crate) struct Assembler {
    pub(crate) content: String,
    calls: Vec<PartialCall>,
    pub(crate) usage: Usage,
    pub(crate) finish: Option<FinishReason>,
    /// Prefix for ids of calls the vendor sent without one.
    pub(crate) id_prefix: &'static str,
    /// The vendor's id of the answer, once an event has carried it.
    pub(crate) response_id: Option<String>,
}

impl Assembler {
    pub(crate) fn new(id_prefix: &'static str) -> Self {
        Self {
            id_prefix,
            ..Self::default()
        }
    }

    pub(crate) fn text(&mut self, t: &str, out: &mut VecDeque<StreamDelta>) {
        if !t.is_empty() {
            self.content.push_str(t);
            out.push_back(StreamDelta::Text(t.to_owned()));
        }
    }

    /// Whether a call with this vendor key was started.
    pub(crate) fn has_call(&self, key: usize) -> bool {
        self.calls.iter().any(|c| c.key == key)
    }

    /// The most recently started call's key.
    pub(crate) fn last_call_key(&self) -> Option<usize> {
        self.calls.last().map(|c| c.key)
    }

    /// A tool-call delta: starts the call the first time `key` is seen, fills in a late
    /// id or name, appends argument text.
    pub(crate) fn tool_delta(
        &mut self,
        key: usize,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
        out: &mut VecDeque<StreamDelta>,
    ) {
        let pos = match self.calls.iter().position(|c| c.key == key) {
            Some(p) => {
                let c = &mut self.calls[p];
                if let Some(id) = id.filter(|s| !s.is_empty())
                    && c.id.is_empty()
                {
                    c.id = id.to_owned();
                }
                if let Some(n) = name.filter(|s| !s.is_empty())
                    && c.name.is_empty()
                {
                    c.name = n.to_owned();
                }
                p
            }
            None => {
                let index = self.calls.len();
                let c = PartialCall {
                    key,
                    id: id.unwrap_or_default().to_owned(),
                    name: name.unwrap_or_default().to_owned(),
                    args: String::new(),
                };
                out.push_back(StreamDelta::ToolCallStart {
                    index,
                    id: c.id.clone(),
                    name: c.name.clone(),
                });
                self.calls.push(c);
                index
            }
        };
        if let Some(a) = args.filter(|a| !a.is_empty()) {
            self.calls[pos].args.push_str(a);
            out.push_back(StreamDelta::ToolCallArguments {
                index: pos,
                fragment: a.to_owned(),
            });
        }
    }

    /// The assembled answer.
    pub(crate) fn finish(&mut self) -> ModelResponse {
        let prefix = self.id_prefix;
        let tool_calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("{prefix}{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: parse_arguments(&c.args),
            })
            .collect();
        let finish = settle_finish(
            self.finish.unwrap_or(FinishReason::Stop),
            !tool_calls.is_empty(),
        );
        ModelResponse {
            content: std::mem::take(&mut self.content),
            tool_calls,
            usage: self.usage,
            finish,
            id: self.response_id.take(),
        }
    }
}

/// A vendor's SSE protocol.
pub(crate) trait SseParser: Send {
    /// Handle one event with data, pushing deltas; `Ok(true)` when the vendor marked the
    /// end.
    fn event(&mut self, ev: &Event, out: &mut VecDeque<StreamDelta>)
    -> Result<bool, ProviderError>;
    /// The connection closed without the end marker: `Ok` if the answer is complete
    /// anyway (it carried its finish reason), an error if the stream was cut.
    fn end_of_stream(&mut self) -> Result<(), ProviderError>;
    /// The assembled answer.
    fn finish(&mut self) -> ModelResponse;
}

/// The events of a connection.
pub(crate) type Events = BoxStream<'static, Result<Event, ProviderError>>;

enum Phase<'a> {
    Connect(BoxFuture<'a, Result<Events, ProviderError>>),
    Events(Events),
    Finished,
}

struct Drive<'a, P> {
    phase: Phase<'a>,
    parser: P,
    queue: VecDeque<StreamDelta>,
    /// When the first poll opened the connection (the first-byte limit counts from it).
    started: Option<Instant>,
    /// Whether an event arrived (from then on, the idle limit applies).
    seen: bool,
}

/// Run a vendor parser over the events of a connection: deltas in order, exactly one
/// `Done` or one error at the end. The connection and its first event must come within
/// the first-byte timeout (counted from the first poll); from then on, each wait for the
/// next event is limited by the idle timeout.
pub(crate) fn drive<'a, P: SseParser + 'a>(
    connect: BoxFuture<'a, Result<Events, ProviderError>>,
    parser: P,
    timeouts: Timeouts,
) -> BoxStream<'a, Result<StreamDelta, ProviderError>> {
    let state = Drive {
        phase: Phase::Connect(connect),
        parser,
        queue: VecDeque::new(),
        started: None,
        seen: false,
    };
    futures::stream::unfold(state, move |mut st| async move {
        loop {
            if let Some(d) = st.queue.pop_front() {
                return Some((Ok(d), st));
            }
            let started = *st.started.get_or_insert_with(Instant::now);
            let (by, limit) = if st.seen {
                (deadline(Instant::now(), timeouts.idle), timeouts.idle)
            } else {
                (deadline(started, timeouts.first_byte), timeouts.first_byte)
            };
            let timed_out = ProviderError::Timeout(limit);
            match std::mem::replace(&mut st.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Connect(fut) => match within(by, fut).await {
                    Some(Ok(events)) => st.phase = Phase::Events(events),
                    Some(Err(e)) => return Some((Err(e), st)),
                    None => return Some((Err(timed_out), st)),
                },
                Phase::Events(mut events) => match within(by, events.next()).await {
                    None => return Some((Err(timed_out), st)),
                    Some(Some(Ok(ev))) => {
                        st.seen = true;
                        // An event without data (a keep-alive) means nothing to any vendor.
                        let parsed = if ev.data.trim().is_empty() {
                            Ok(false)
                        } else {
                            st.parser.event(&ev, &mut st.queue)
                        };
                        match parsed {
                            Ok(true) => match crate::vendor::answered(st.parser.finish()) {
                                Ok(r) => st.queue.push_back(StreamDelta::Done(r)),
                                Err(e) => return Some((Err(e), st)),
                            },
                            Ok(false) => st.phase = Phase::Events(events),
                            Err(e) => return Some((Err(e), st)),
                        }
                    }
                    Some(Some(Err(e))) => return Some((Err(e), st)),
                    Some(None) => match st.parser.end_of_stream() {
                        Ok(()) => match crate::vendor::answered(st.parser.finish()) {
                            Ok(r) => st.queue.push_back(StreamDelta::Done(r)),
                            Err(e) => return Some((Err(e), st)),
                        },
                        Err(e) => return Some((Err(e), st)),
                    },
                },
            }
        }
    })
    .boxed()
}

/// Longest error body kept in an error message.
pub(crate) const MAX_ERROR_BODY: usize = 600;

/// At most [`MAX_ERROR_BODY`] bytes of a body, cut at a character boundary.
pub(crate) fn snippet(s: &str) -> String {
    let s = s.trim();
    if s.len() <= MAX_ERROR_BODY {
        return s.to_owned();
    }
    let mut end = MAX_ERROR_BODY;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Parse one event's JSON data.
pub(crate) fn event_json<T: serde::de::DeserializeOwned>(
    ev: &Event,
    vendor: &str,
) -> Result<T, ProviderError> {
    serde_json::from_str(&ev.data).map_err(|e| {
        ProviderError::InvalidResponse(format!(
            "malformed {vendor} stream event ({e}): {}",
            snippet(&ev.data)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_stay_raw() {
        assert_eq!(parse_arguments(""), serde_json::json!({}));
        assert_eq!(
            parse_arguments(r#"{"hotel":"Grand"}"#),
            serde_json::json!({"hotel":"Grand"})
        );
        assert_eq!(
            parse_arguments("{\"hotel\": \"Gra"),
            Value::String("{\"hotel\": \"Gra".into())
        );
    }

    #[test]
    fn the_assembler_joins_argument_fragments_and_names_calls() {
        let mut a = Assembler::new("call_");
        let mut out = VecDeque::new();
        a.text("Hi", &mut out);
        a.tool_delta(0, Some("c1"), Some("book_room"), Some("{\"ho"), &mut out);
        a.tool_delta(0, None, None, Some("tel\":\"X\"}"), &mut out);
        a.tool_delta(3, None, Some("other"), None, &mut out);
        let r = a.finish();
        assert_eq!(r.content, "Hi");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[0].arguments, serde_json::json!({"hotel":"X"}));
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(out.len(), 5);
        assert_eq!(
            out[1],
            StreamDelta::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "book_room".into()
            }
        );
    }
}
