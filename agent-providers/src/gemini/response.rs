//! A Gemini answer, whole (`generateContent`) or streamed (`streamGenerateContent`,
//! whose events are partial answers of the same shape): text and function-call parts
//! (thoughts skipped), usage, blocked prompts, finish reasons.

use std::collections::VecDeque;

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse, ToolCall, Usage};
use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Generate;
use super::ids::{SYNTHETIC_ID, join_id};
use crate::stream::{Assembler, SseParser, StreamDelta, event_json};
use crate::vendor::{body_error, ended, no_answer};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateResponse {
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<RespContent>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct RespContent {
    #[serde(default)]
    parts: Option<Vec<RespPart>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RespPart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<RespFunctionCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct RespFunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}

impl From<UsageMetadata> for Usage {
    fn from(u: UsageMetadata) -> Self {
        Usage {
            input_tokens: u.prompt_token_count.unwrap_or(0),
            output_tokens: u.candidates_token_count.unwrap_or(0)
                + u.thoughts_token_count.unwrap_or(0),
            cached_input_tokens: u.cached_content_token_count.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

fn map_finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "LANGUAGE"
            | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

pub(super) fn parse_response(bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
    let r: GenerateResponse = crate::http::parse_json(bytes, "the generateContent answer")?;
    if let Some(e) = &r.error {
        return Err(body_error::<Generate>(e));
    }
    let usage = r.usage_metadata.map(Usage::from).unwrap_or_default();
    let Some(candidate) = r.candidates.and_then(|c| c.into_iter().next()) else {
        if r.prompt_feedback.and_then(|f| f.block_reason).is_some() {
            return Ok(ModelResponse {
                content: String::new(),
                tool_calls: Vec::new(),
                usage,
                finish: FinishReason::ContentFilter,
                id: r.response_id.filter(|id| !id.is_empty()),
            });
        }
        return Err(no_answer::<Generate>(
            None,
            "the generateContent answer has no candidates",
            bytes,
        ));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for p in candidate.content.and_then(|c| c.parts).unwrap_or_default() {
        if p.thought == Some(true) {
            continue;
        }
        if let Some(f) = p.function_call {
            let i = tool_calls.len();
            tool_calls.push(ToolCall {
                id: join_id(f.id.as_deref(), i, p.thought_signature.as_deref()),
                name: f.name.unwrap_or_default(),
                arguments: f.args.unwrap_or_else(|| Value::Object(Map::new())),
            });
        } else if let Some(t) = p.text {
            content.push_str(&t);
        }
    }
    Ok(ModelResponse {
        content,
        finish: crate::stream::settle_finish(
            map_finish(candidate.finish_reason.as_deref()),
            !tool_calls.is_empty(),
        ),
        tool_calls,
        usage,
        id: r.response_id.filter(|id| !id.is_empty()),
    })
}

/// The decoder of a streamed answer.
pub(crate) struct GenerateStream {
    asm: Assembler,
    calls: usize,
    blocked: bool,
}

impl GenerateStream {
    pub(super) fn new() -> Self {
        Self {
            asm: Assembler::new(SYNTHETIC_ID),
            calls: 0,
            blocked: false,
        }
    }
}

/// The status of an error inside a body: its `code`.
pub(super) fn error_status(error: &Value) -> u16 {
    error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500)
}

impl SseParser for GenerateStream {
    fn event(
        &mut self,
        ev: &Event,
        out: &mut VecDeque<StreamDelta>,
    ) -> Result<bool, ProviderError> {
        let r: GenerateResponse = event_json(ev, "streamGenerateContent")?;
        if let Some(e) = &r.error {
            return Err(body_error::<Generate>(e));
        }
        if self.asm.response_id.is_none() {
            self.asm.response_id = r.response_id.filter(|id| !id.is_empty());
        }
        if let Some(u) = r.usage_metadata {
            self.asm.usage = u.into();
        }
        if r.prompt_feedback.and_then(|f| f.block_reason).is_some() {
            self.blocked = true;
            self.asm.finish = Some(FinishReason::ContentFilter);
        }
        if let Some(c) = r.candidates.and_then(|c| c.into_iter().next()) {
            for p in c.content.and_then(|c| c.parts).unwrap_or_default() {
                if p.thought == Some(true) {
                    continue;
                }
                if let Some(f) = p.function_call {
                    let i = self.calls;
                    self.calls += 1;
                    let id = join_id(f.id.as_deref(), i, p.thought_signature.as_deref());
                    let args = f
                        .args
                        .unwrap_or_else(|| Value::Object(Map::new()))
                        .to_string();
                    self.asm
                        .tool_delta(i, Some(&id), f.name.as_deref(), Some(&args), out);
                } else if let Some(t) = p.text {
                    self.asm.text(&t, out);
                }
            }
            if let Some(f) = c.finish_reason.as_deref() {
                self.asm.finish = Some(map_finish(Some(f)));
            }
        }
        Ok(false)
    }

    fn end_of_stream(&mut self) -> Result<(), ProviderError> {
        ended(self.asm.finish.is_some() || self.blocked, "no finishReason")
    }

    fn finish(&mut self) -> ModelResponse {
        self.asm.finish()
    }
}
