//! The Chat Completions request: the body built from a `ModelRequest` (history, tools,
//! the answer schema, the client's defaults and extras), in the field order that keeps
//! equal requests' byte prefixes equal.

use std::borrow::Cow;

use agent_core::error::ProviderError;
use agent_core::provider::{Message, ModelRequest, Role, ToolCall};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Chat, Dialect};
use crate::vendor::{Defaults, encode};

/// The JSON body of a call.
pub(super) fn body(
    chat: &Chat,
    model: &str,
    defaults: Defaults,
    req: &ModelRequest,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(WireMessage {
            role: "system",
            content: Some(&req.system),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
    }
    messages.extend(req.messages.iter().map(wire_message));
    let tools = req
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: WireFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        })
        .collect();
    let response_format = req.output.as_ref().map(|o| ResponseFormat {
        kind: "json_schema",
        json_schema: JsonSchemaFormat {
            name: schema_name(&o.name),
            schema: &o.schema,
            strict: chat.strict,
        },
    });
    let max = req.max_tokens.or(defaults.max_tokens);
    let (max_completion_tokens, max_tokens) = match chat.dialect {
        Dialect::OpenAi => (max, None),
        Dialect::Compatible => (None, max),
    };
    let filtered: Map<String, Value>;
    let extra = if chat.extra.is_empty() {
        &chat.extra
    } else {
        filtered = chat
            .extra
            .iter()
            // A seed in the request (the eval's runs) beats a configured one.
            .filter(|(k, _)| {
                let seed_overridden = k.as_str() == "seed" && req.seed.is_some();
                !(RESERVED_FIELDS.contains(&k.as_str()) || seed_overridden)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        &filtered
    };
    let body = ChatRequest {
        model,
        messages,
        tools,
        response_format,
        max_completion_tokens,
        max_tokens,
        temperature: req.temperature.or(defaults.temperature),
        seed: req.seed,
        stream,
        stream_options: (stream && chat.stream_usage).then_some(StreamOptions {
            include_usage: true,
        }),
        extra,
    };
    encode(&body)
}

/// Body fields the client writes itself (extras cannot override them).
const RESERVED_FIELDS: [&str; 9] = [
    "model",
    "messages",
    "tools",
    "response_format",
    "max_completion_tokens",
    "max_tokens",
    "temperature",
    "stream",
    "stream_options",
];

/// OpenAI's schema names: `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn schema_name(name: &str) -> Cow<'_, str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 64 && name.chars().all(ok) {
        return Cow::Borrowed(name);
    }
    let mut s: String = name
        .chars()
        .map(|c| if ok(c) { c } else { '_' })
        .take(64)
        .collect();
    if s.is_empty() {
        s.push_str("answer");
    }
    Cow::Owned(s)
}

fn wire_message(m: &Message) -> WireMessage<'_> {
    match m.role {
        Role::User => WireMessage {
            role: "user",
            content: Some(&m.content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        },
        Role::Assistant => WireMessage {
            role: "assistant",
            content: if m.content.is_empty() && !m.tool_calls.is_empty() {
                None
            } else {
                Some(&m.content)
            },
            tool_calls: m.tool_calls.iter().map(wire_tool_call).collect(),
            tool_call_id: None,
        },
        Role::Tool => WireMessage {
            role: "tool",
            content: Some(&m.content),
            tool_calls: Vec::new(),
            tool_call_id: Some(m.tool_call_id.as_deref().unwrap_or_default()),
        },
    }
}

fn wire_tool_call(c: &ToolCall) -> WireToolCall<'_> {
    WireToolCall {
        id: &c.id,
        kind: "function",
        function: WireFunctionCall {
            name: &c.name,
            arguments: arguments_text(&c.arguments),
        },
    }
}

/// Arguments back on the wire: JSON text; a JSON string is the model's own unparsable
/// text and goes back verbatim.
pub(crate) fn arguments_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// Field order is wire order: the parts that stay the same across a conversation's
/// calls (tools, the answer schema) come before the messages, as the server renders
/// them into the prompt, so equal requests share the longest byte prefix.
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: Cow<'a, str>,
    schema: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}
