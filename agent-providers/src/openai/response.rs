//! A whole Chat Completions answer, read tolerantly: every field optional, because
//! compatible servers omit and add fields.

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Chat;
use crate::http;
use crate::stream::{parse_arguments, settle_finish};
use crate::vendor::no_answer;

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<RespMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct RespMessage {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<RespToolCall>>,
    #[serde(default)]
    refusal: Option<String>,
}

/// Content as a string, or as an array of parts (some servers).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
pub(super) struct ContentPart {
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    pub(super) fn into_text(self) -> String {
        match self {
            Content::Text(s) => s,
            Content::Parts(p) => p.into_iter().filter_map(|p| p.text).collect(),
        }
    }
}

#[derive(Deserialize)]
struct RespToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<RespFunction>,
}

#[derive(Deserialize)]
struct RespFunction {
    #[serde(default)]
    name: Option<String>,
    /// A JSON string by the spec; some servers send the object itself.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize, Clone, Copy)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        }
    }
}

pub(super) fn map_finish(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("length" | "max_tokens") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

/// The status of an error inside a body: its `code` when that is an HTTP error status.
pub(super) fn error_status(error: &Value) -> u16 {
    error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500)
}

/// Parse a whole (non-streamed) Chat Completions response body, tolerantly (what
/// [`OpenAi`](super::OpenAi) and [`crate::OpenAiCompatible`] do with every answer).
pub fn parse_response(bytes: &[u8]) -> Result<ModelResponse, ProviderError> {
    let r: ChatResponse = http::parse_json(bytes, "the chat completion")?;
    let Some(choice) = r.choices.and_then(|c| c.into_iter().next()) else {
        return Err(no_answer::<Chat>(
            r.error.as_ref(),
            "the chat completion has no choices",
            bytes,
        ));
    };
    let msg = choice.message.unwrap_or_default();
    let mut content = msg.content.map(Content::into_text).unwrap_or_default();
    let mut finish = map_finish(choice.finish_reason.as_deref());
    if content.is_empty()
        && let Some(refusal) = msg.refusal.filter(|r| !r.is_empty())
    {
        content = refusal;
        finish = FinishReason::ContentFilter;
    }
    let tool_calls: Vec<ToolCall> = msg
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter_map(|(i, tc)| {
            let f = tc.function?;
            Some(ToolCall {
                id: tc
                    .id
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name: f.name.unwrap_or_default(),
                arguments: match f.arguments {
                    Some(Value::String(s)) => parse_arguments(&s),
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(v) => v,
                },
            })
        })
        .collect();
    Ok(ModelResponse {
        content,
        finish: settle_finish(finish, !tool_calls.is_empty()),
        tool_calls,
        usage: r.usage.map(Usage::from).unwrap_or_default(),
        id: r.id.filter(|id| !id.is_empty()),
    })
}
