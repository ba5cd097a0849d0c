//! One provider call: the request with the configured limits, counted and traced,
//! streamed to the consumer when a sink is attached (live once `live.rs` says the
//! reply is final).

use futures::StreamExt;
use tracing::Instrument;

use super::live::LiveTarget;
use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, ProviderError};
use crate::pipeline::Turn;
use crate::pipeline::stream::MessageExtractor;
use crate::pipeline::text::cap_chars;
use crate::provider::{CallKind, Message, ModelRequest, ModelResponse, StreamChunk};
use crate::response::Event;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    pub(in crate::pipeline) fn request(
        &self,
        kind: CallKind,
        system: String,
        messages: Vec<Message>,
    ) -> ModelRequest {
        ModelRequest {
            kind,
            system,
            messages,
            tools: Vec::new(),
            output: None,
            max_tokens: Some(
                self.a
                    .config
                    .max_tokens
                    .unwrap_or_else(|| self.a.config.token_limits.of(kind, self.s.flow.is_some())),
            ),
            temperature: self.a.config.temperature,
            seed: self.a.config.seed,
        }
    }

    pub(super) fn history_messages(&self) -> Vec<Message> {
        self.s.history.clone()
    }

    /// Today's date, weekday and time zone on the agent's clock (when configured).
    pub(super) fn push_today(&self, sys: &mut String) {
        if self.a.config.date_in_prompt {
            sys.push_str(&self.a.config.time_zone.today_line(self.a.clock.now_ms()));
            sys.push('\n');
        }
    }

    /// One provider call, streamed when a sink is attached; counts calls and usage.
    /// With `live`, the reply's text goes to the consumer as it arrives once
    /// [`Turn::live_ok`] decides (when the message starts) that it is final.
    pub(in crate::pipeline) async fn call(
        &mut self,
        req: &ModelRequest,
        live: Option<&LiveTarget>,
    ) -> Result<(ModelResponse, Vec<String>), AgentError> {
        self.faulted()?;
        let kind = req.kind;
        if kind == CallKind::Respond
            && let Some(resp) = self.replay.take()
        {
            return Ok((resp, Vec::new()));
        }
        self.calls += 1;
        if kind == CallKind::Respond {
            // The state part was kept as the prompt was rendered.
            self.prompt.clone_from(&req.system);
        }
        let a = self.a;
        let target = crate::telemetry::CallTarget {
            provider: a.provider.name(),
            server: a.provider.server(),
            stream: self.sink.is_some(),
        };
        let flow = self.s.flow.as_deref().unwrap_or("");
        let span = crate::telemetry::chat_span(target, req, &self.s.id, flow);
        let started = crate::telemetry::Started::now();
        let result = self.call_inner(req, live).instrument(span.clone()).await;
        crate::telemetry::record_chat(&span, target, started, &result);
        let (resp, deltas) = result?;
        tracing::trace!(
            kind = ?kind,
            prompt = %req.instructions(),
            answer = %resp.content,
            tool_calls = resp.tool_calls.len(),
            "model call"
        );
        self.usage.add(resp.usage);
        Ok((resp, deltas))
    }

    async fn call_inner(
        &mut self,
        req: &ModelRequest,
        live: Option<&LiveTarget>,
    ) -> Result<(ModelResponse, Vec<String>), AgentError> {
        let kind = req.kind;
        let err = |source: ProviderError| AgentError::Provider { kind, source };
        let a = self.a;
        let Some(sink) = self.sink else {
            return Ok((a.provider.generate(req).await.map_err(err)?, Vec::new()));
        };
        let structured = req.output.is_some();
        // Text of a round that also offers tools may turn out not to be the reply.
        let mut undecided = live.is_some_and(|l| !l.held) && req.tools.is_empty();
        let mut is_live = false;
        let mut extractor = MessageExtractor::new();
        let mut deltas: Vec<String> = Vec::new();
        let mut stream = a.provider.generate_stream(req);
        let mut done = None;
        while let Some(chunk) = stream.next().await {
            match chunk.map_err(err)? {
                StreamChunk::Text(t) => {
                    let piece = if structured { extractor.push(&t) } else { t };
                    if undecided && let Some(lt) = live {
                        let head = if structured {
                            extractor.take_head()
                        } else {
                            None
                        };
                        if head.is_some() || (!structured && !piece.is_empty()) {
                            undecided = false;
                            // Boxed: the dry walk can reach the classifier, which calls back here.
                            is_live = Box::pin(self.live_ok(lt, head.as_deref())).await;
                        }
                    }
                    let piece = if is_live {
                        // Live text stops at `max_reply_chars`, where the final
                        // message is cut too.
                        let budget = self
                            .a
                            .config
                            .max_reply_chars
                            .saturating_sub(self.live_chars);
                        let cut = cap_chars(piece, budget);
                        self.live_chars += cut.chars().count();
                        cut
                    } else {
                        piece
                    };
                    if !piece.is_empty() {
                        let sent = is_live;
                        if sent {
                            sink.send(Event::TextDelta(piece.clone()));
                            self.streamed = true;
                        }
                        deltas.push(piece);
                        if sent {
                            // Let the consumer have it now, even when the provider's
                            // chunks are all ready at once.
                            tokio::task::yield_now().await;
                        }
                    }
                }
                StreamChunk::Done(r) => {
                    done = Some(r);
                    break;
                }
            }
        }
        let resp = done.ok_or_else(|| {
            err(ProviderError::InvalidResponse(
                "stream ended without a final answer".into(),
            ))
        })?;
        Ok((resp, deltas))
    }
}
