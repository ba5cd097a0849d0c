//! The Messages request: system prompt, history as blocks (tool results merged into
//! user messages, prompt-cache breakpoints), tools, and the output schema as an answer
//! tool or as `output_config`, in the order the API caches a prompt in.

use std::borrow::Cow;

use agent_core::error::ProviderError;
use agent_core::provider::{Message, ModelRequest, Role, STATE_MARKER};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{DEFAULT_MAX_TOKENS, Messages};
use crate::vendor::{Defaults, encode};

/// The JSON body of a call.
pub(super) fn body(
    messages: &Messages,
    model: &str,
    defaults: Defaults,
    req: &ModelRequest,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let answer = messages.answer_tool(req);
    let mut tools: Vec<WireTool<'_>> = req
        .tools
        .iter()
        .map(|t| WireTool {
            name: Cow::Borrowed(&t.name),
            description: Cow::Borrowed(&t.description),
            input_schema: &t.parameters,
        })
        .collect();
    let mut tool_choice = None;
    let mut output_config = None;
    if let (Some(name), Some(out)) = (&answer, &req.output) {
        tool_choice = Some(if tools.is_empty() {
            ToolChoice::Tool { name }
        } else {
            ToolChoice::Any
        });
        tools.push(WireTool {
                name: Cow::Borrowed(name),
                description: Cow::Borrowed(
                    "Give your answer by calling this tool: its input is your complete answer and must follow the schema.",
                ),
                input_schema: &out.schema,
            });
    } else if let Some(out) = &req.output {
        output_config = Some(OutputConfig {
            format: OutputFormat {
                kind: "json_schema",
                schema: &out.schema,
            },
        });
    }
    let body = MessagesRequest {
        model,
        max_tokens: req
            .max_tokens
            .or(defaults.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS),
        system: if req.system.is_empty() {
            None
        } else if messages.prompt_cache {
            Some(System::Blocks([SystemBlock {
                kind: "text",
                text: &req.system,
                cache_control: Some(CacheControl::EPHEMERAL),
            }]))
        } else {
            Some(System::Plain(&req.system))
        },
        messages: wire_messages(&req.messages, messages.prompt_cache),
        tools,
        tool_choice,
        temperature: req.temperature.or(defaults.temperature),
        stream,
        output_config,
    };
    encode(&body)
}

/// History as Messages: tool results become `tool_result` blocks of a user message,
/// consecutive messages of one role merge (parallel tool results must share a message),
/// empty texts are left out (the API rejects empty text blocks).
/// The messages as blocks. The latest user message's own words and the engine's notes
/// appended to it ([`STATE_MARKER`]) become two text blocks; with `cache`, a breakpoint
/// closes the first.
pub(super) fn wire_messages(msgs: &[Message], cache: bool) -> Vec<WireMessage<'_>> {
    let mut out: Vec<WireMessage<'_>> = Vec::with_capacity(msgs.len());
    let latest_user = msgs.iter().rposition(|m| m.role == Role::User);
    for (i, m) in msgs.iter().enumerate() {
        let mut blocks = Vec::with_capacity(2 + m.tool_calls.len());
        let role = match m.role {
            Role::User => {
                let (own, notes) = match m.content.find(STATE_MARKER) {
                    Some(at) => (m.content[..at].trim_end(), Some(&m.content[at..])),
                    None => (&*m.content, None),
                };
                let mark = (cache && Some(i) == latest_user).then_some(CacheControl::EPHEMERAL);
                if !own.trim().is_empty() {
                    blocks.push(Block::Text {
                        text: own,
                        cache_control: mark,
                    });
                }
                if let Some(notes) = notes {
                    blocks.push(Block::Text {
                        text: notes,
                        cache_control: None,
                    });
                }
                "user"
            }
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    blocks.push(Block::Text {
                        text: &m.content,
                        cache_control: None,
                    });
                }
                for c in &m.tool_calls {
                    blocks.push(Block::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        input: match &c.arguments {
                            v @ Value::Object(_) => Cow::Borrowed(v),
                            _ => Cow::Owned(Value::Object(Map::new())),
                        },
                    });
                }
                "assistant"
            }
            Role::Tool => {
                blocks.push(Block::ToolResult {
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or_default(),
                    content: &m.content,
                });
                "user"
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// Field order is the order the API caches a prompt in (tools, system, messages), the
/// per-call settings after them, so equal requests share the longest byte prefix.
#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    messages: Vec<WireMessage<'a>>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
}

#[derive(Serialize)]
pub(super) struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// The system prompt: a string, or one text block carrying a cache breakpoint.
#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Plain(&'a str),
    Blocks([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A prompt-cache breakpoint: the prefix up to here may be cached.
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl CacheControl {
    const EPHEMERAL: Self = Self { kind: "ephemeral" };
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: Cow<'a, str>,
    description: Cow<'a, str>,
    input_schema: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ToolChoice<'a> {
    Any,
    Tool { name: &'a str },
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Serialize)]
struct OutputFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a Value,
}
