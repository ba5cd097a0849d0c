//! Streaming first-delta latency (row 6): an instant provider that streams its answer
//! in chunks and stamps its first one ([`Probe`]), and the measurement of the time from
//! that chunk to the consumer's first text delta.

use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use agent_core::error::ProviderError;
use agent_core::prelude::*;
use agent_core::provider::{ModelRequest, ModelResponse, StreamChunk};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;

use super::measure::current_thread;
use super::options::Sizes;
use super::report::Streaming;
use super::stats::{micros, stats};
use super::{BoxError, TURNS_PER_SESSION, USER_MESSAGE, script};

/// Timestamps taken inside the streaming provider, read by the consumer.
#[derive(Default)]
struct Probe {
    /// When the provider's stream yielded its first chunk this turn.
    first_chunk: Mutex<Option<Instant>>,
    /// Whether the provider's stream has yielded its final answer this turn.
    finished: AtomicBool,
    /// Whether the consumer has received the first text delta this turn.
    delta_seen: AtomicBool,
}

impl Probe {
    fn reset(&self) {
        *self.first_chunk.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.finished.store(false, Ordering::SeqCst);
        self.delta_seen.store(false, Ordering::SeqCst);
    }
    fn mark_first_chunk(&self) {
        let mut first = self.first_chunk.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(Instant::now());
        }
    }
    fn first_chunk(&self) -> Option<Instant> {
        *self.first_chunk.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The instant provider, streaming: its answer in three chunks, the first ending inside
/// the message. After the first chunk the stream waits, as a model still writing, until
/// the consumer has the first delta (or, when no text streams live, for a bounded
/// number of polls), so the consumer sees the first delta as soon as the engine
/// releases it and the rest of the answer is not in the measured time.
struct StreamingProvider {
    probe: Arc<Probe>,
}

#[async_trait]
impl Provider for StreamingProvider {
    fn name(&self) -> &str {
        "instant-streaming"
    }
    async fn generate(&self, req: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        Ok(script::instant_response(req.kind))
    }
    fn generate_stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        Box::pin(ChunkStream::new(
            script::instant_response(req.kind),
            self.probe.clone(),
        ))
    }
}

/// A scripted answer as a stream of chunks.
struct ChunkStream {
    parts: std::collections::VecDeque<String>,
    done: Option<ModelResponse>,
    sent_first: bool,
    /// Polls spent waiting after the first chunk.
    waits: u32,
    probe: Arc<Probe>,
}

/// Most polls the stream waits after its first chunk for a delta that never comes.
const MAX_WAITS: u32 = 64;

impl ChunkStream {
    fn new(resp: ModelResponse, probe: Arc<Probe>) -> Self {
        const KEY: &str = "\"message\":\"";
        let content = resp.content.as_str();
        // The first chunk ends a few characters into the message value.
        let cut = content
            .find(KEY)
            .map_or(content.len() / 2, |i| i + KEY.len() + 6)
            .min(content.len());
        let mut parts = std::collections::VecDeque::new();
        match content.split_at_checked(cut) {
            Some((head, rest)) => {
                parts.push_back(head.to_owned());
                let half = rest.len() / 2;
                match rest.split_at_checked(half) {
                    Some((a, b)) => {
                        parts.push_back(a.to_owned());
                        parts.push_back(b.to_owned());
                    }
                    None => parts.push_back(rest.to_owned()),
                }
            }
            None => parts.push_back(content.to_owned()),
        }
        parts.retain(|p| !p.is_empty());
        Self {
            parts,
            done: Some(resp),
            sent_first: false,
            waits: 0,
            probe,
        }
    }
}

impl futures::Stream for ChunkStream {
    type Item = Result<StreamChunk, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.sent_first
            && this.waits < MAX_WAITS
            && !this.probe.delta_seen.load(Ordering::SeqCst)
        {
            // The next tokens have not "arrived" yet: let the consumer run.
            this.waits += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if this.sent_first {
            this.waits = MAX_WAITS; // released: no more waiting this answer
        }
        if let Some(part) = this.parts.pop_front() {
            if !this.sent_first {
                this.sent_first = true;
                this.probe.mark_first_chunk();
            }
            return Poll::Ready(Some(Ok(StreamChunk::Text(part))));
        }
        if let Some(done) = this.done.take() {
            this.probe.finished.store(true, Ordering::SeqCst);
            return Poll::Ready(Some(Ok(StreamChunk::Done(done))));
        }
        Poll::Ready(None)
    }
}

/// Row 6: time from the provider's stream yielding its first chunk to the consumer of
/// `respond_stream` receiving the first text delta (the 1-flow script, one thread).
pub(crate) fn streaming(sizes: &Sizes) -> Result<Streaming, BoxError> {
    let rt = current_thread()?;
    let probe = Arc::new(Probe::default());
    let store = Arc::new(MemoryStore::new());
    let agent = script::agent(
        StreamingProvider {
            probe: probe.clone(),
        },
        store.clone(),
        1,
        false,
    )?;
    let per_batch = sizes
        .stream_turns_per_batch
        .next_multiple_of(TURNS_PER_SESSION as usize);
    rt.block_on(async {
        let mut samples = Vec::new();
        let mut turns = 0;
        let mut live_turns = 0;
        let mut next = 0u64;
        for b in 0..sizes.warmup + sizes.batches {
            for _ in 0..per_batch {
                let id = format!("s{}", next / TURNS_PER_SESSION);
                next += 1;
                probe.reset();
                let mut events = agent.respond_stream(&id, USER_MESSAGE);
                let mut first: Option<(Instant, bool)> = None;
                while let Some(event) = events.next().await {
                    match event {
                        Event::TextDelta(_) if first.is_none() => {
                            let now = Instant::now();
                            probe.delta_seen.store(true, Ordering::SeqCst);
                            first = Some((now, !probe.finished.load(Ordering::SeqCst)));
                        }
                        Event::Error(e) => return Err(BoxError::from(e)),
                        other => {
                            black_box(other);
                        }
                    }
                }
                if b < sizes.warmup {
                    continue;
                }
                turns += 1;
                if let (Some((at, true)), Some(chunk)) = (first, probe.first_chunk()) {
                    live_turns += 1;
                    samples.push(micros(at.saturating_duration_since(chunk)));
                }
            }
            store.prune(u64::MAX).await?;
        }
        Ok(Streaming {
            first_delta_us: stats(samples),
            turns,
            live_turns,
        })
    })
}
