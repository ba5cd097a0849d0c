//! A whole Messages answer: text and `tool_use` blocks, the answer tool's input as the
//! content of a structured call, usage with the prompt cache counted in, and the HTTP
//! status each error type stands for.

use agent_core::error::ProviderError;
use agent_core::provider::{FinishReason, ModelResponse, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Messages;
use crate::vendor::no_answer;

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    content: Option<Vec<RespBlock>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum RespBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.input().unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
            cached_input_tokens: u.cache_read_input_tokens.unwrap_or(0),
        }
    }
}

impl WireUsage {
    /// The input tokens, the cached ones (read or written) included.
    fn input(&self) -> Option<u64> {
        self.input_tokens.map(|i| {
            i + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }
}

pub(super) fn map_stop(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Stop,
    }
}

/// The HTTP status an error stands for, by its type (errors inside a stream carry no
/// status).
pub(super) fn error_status(error: &Value) -> u16 {
    match error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("api_error")
    {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

/// A whole Messages answer; `answer` names the answer tool when one was sent.
pub(super) fn parse_response(
    bytes: &[u8],
    answer: Option<&str>,
) -> Result<ModelResponse, ProviderError> {
    let r: MessagesResponse = crate::http::parse_json(bytes, "the Messages answer")?;
    let Some(blocks) = r.content else {
        return Err(no_answer::<Messages>(
            r.error.as_ref(),
            "the Messages answer has no content",
            bytes,
        ));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut answered: Option<Value> = None;
    for b in blocks {
        match b {
            RespBlock::Text { text: t } => text.push_str(&t),
            RespBlock::ToolUse { id, name, input } => {
                if answer == Some(name.as_str()) {
                    answered = Some(input);
                } else {
                    let id = if id.is_empty() {
                        format!("toolu_{}", calls.len())
                    } else {
                        id
                    };
                    calls.push(ToolCall {
                        id,
                        name,
                        arguments: if input.is_null() {
                            Value::Object(Map::new())
                        } else {
                            input
                        },
                    });
                }
            }
            RespBlock::Other => {}
        }
    }
    let mut finish = map_stop(r.stop_reason.as_deref());
    let content = match answered {
        Some(v) if calls.is_empty() => {
            if finish == FinishReason::ToolCalls {
                finish = FinishReason::Stop;
            }
            v.to_string()
        }
        _ => text,
    };
    Ok(ModelResponse {
        content,
        finish: crate::stream::settle_finish(finish, !calls.is_empty()),
        tool_calls: calls,
        usage: r.usage.unwrap_or_default().into(),
        id: r.id.filter(|id| !id.is_empty()),
    })
}
