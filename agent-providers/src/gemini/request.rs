//! The `generateContent` request (the same body for both endpoints): history as
//! `contents` with `functionCall` / `functionResponse` parts, function declarations,
//! and the generation config (limits, seed, the answer schema).

use std::borrow::Cow;
use std::collections::HashMap;

use agent_core::error::ProviderError;
use agent_core::provider::{Message, ModelRequest, Role};
use serde::Serialize;
use serde_json::{Map, Value};

use super::ids::split_id;
use crate::vendor::{Defaults, encode};

/// The JSON body of a call.
pub(super) fn body(defaults: Defaults, req: &ModelRequest) -> Result<Vec<u8>, ProviderError> {
    let tools = if req.tools.is_empty() {
        Vec::new()
    } else {
        vec![ToolDecl {
            function_declarations: req
                .tools
                .iter()
                .map(|t| FunctionDecl {
                    name: &t.name,
                    description: &t.description,
                    parameters_json_schema: &t.parameters,
                })
                .collect(),
        }]
    };
    let max_output_tokens = req.max_tokens.or(defaults.max_tokens);
    let temperature = req.temperature.or(defaults.temperature);
    let schema = req.output.as_ref().map(|o| &*o.schema);
    let generation_config = (max_output_tokens.is_some()
        || temperature.is_some()
        || req.seed.is_some()
        || schema.is_some())
    .then_some(GenerationConfig {
        max_output_tokens,
        temperature,
        seed: req.seed,
        response_mime_type: schema.map(|_| "application/json"),
        response_json_schema: schema,
    });
    let body = GenerateRequest {
        contents: wire_contents(&req.messages),
        system_instruction: (!req.system.is_empty()).then(|| Content {
            role: None,
            parts: vec![Part::text(&req.system)],
        }),
        tools,
        generation_config,
    };
    encode(&body)
}

/// History as `contents`: the model's turns are `model`, tool results are
/// `functionResponse` parts (named after the call they answer) in a user turn, and
/// consecutive turns of one role merge (parallel results share a turn).
pub(super) fn wire_contents(msgs: &[Message]) -> Vec<Content<'_>> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<Content<'_>> = Vec::with_capacity(msgs.len());
    for m in msgs {
        let mut parts = Vec::with_capacity(1 + m.tool_calls.len());
        let role = match m.role {
            Role::User => {
                if !m.content.is_empty() {
                    parts.push(Part::text(&m.content));
                }
                "user"
            }
            Role::Assistant => {
                if !m.content.is_empty() {
                    parts.push(Part::text(&m.content));
                }
                for c in &m.tool_calls {
                    names.insert(&c.id, &c.name);
                    let (id, sig) = split_id(&c.id);
                    parts.push(Part {
                        function_call: Some(FunctionCall {
                            id,
                            name: &c.name,
                            args: match &c.arguments {
                                v @ Value::Object(_) => Cow::Borrowed(v),
                                _ => Cow::Owned(Value::Object(Map::new())),
                            },
                        }),
                        thought_signature: sig,
                        ..Part::default()
                    });
                }
                "model"
            }
            Role::Tool => {
                let call_id = m.tool_call_id.as_deref().unwrap_or_default();
                let name = names.get(call_id).copied().unwrap_or("tool");
                let response = match serde_json::from_str::<Value>(&m.content) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => serde_json::json!({ "result": m.content.as_str() }),
                };
                parts.push(Part {
                    function_response: Some(FunctionResponse {
                        id: split_id(call_id).0,
                        name,
                        response,
                    }),
                    ..Part::default()
                });
                "user"
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.extend(parts),
            _ => out.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateRequest<'a> {
    // Wire order: what stays the same across calls first (the prefix implicit caching
    // reuses), the conversation after it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDecl<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content<'a>>,
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig<'a>>,
}

#[derive(Serialize)]
pub(super) struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<Part<'a>>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

impl<'a> Part<'a> {
    fn text(t: &'a str) -> Self {
        Self {
            text: Some(t),
            ..Self::default()
        }
    }
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: Cow<'a, Value>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolDecl<'a> {
    function_declarations: Vec<FunctionDecl<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDecl<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: &'a Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
}
