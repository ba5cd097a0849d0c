//! A fake model behind the fixture server that speaks each vendor's wire format: it reads
//! the request the way the vendor would (history, tools, schema, stream flag) and answers
//! the booking conversation in that vendor's response or SSE format.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};

use super::server::{FixtureServer, Recorded, Reply};

/// Which wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    OpenAi,
    Anthropic,
    Gemini,
}

/// The request as the fake model understands it.
#[derive(Debug, Default)]
pub struct View {
    pub last_user: String,
    pub after_tool_result: bool,
    pub tools: Vec<String>,
    pub schema: Option<Value>,
    pub answer_tool: Option<String>,
    pub stream: bool,
}

/// What the fake model says.
pub enum Say {
    Answer { message: String, data: Value },
    Call { name: String, args: Value },
}

/// The booking conversation's script, by what the user said.
pub fn decide(v: &View) -> Say {
    if v.after_tool_result {
        Say::Answer {
            message: "Booked! Your id is BK-5.".into(),
            data: json!({}),
        }
    } else if v.tools.iter().any(|t| t == "book_room") && v.last_user.contains("yes") {
        Say::Call {
            name: "book_room".into(),
            args: json!({ "hotel": "Grand" }),
        }
    } else if v.last_user.contains("Lisbon") {
        Say::Answer {
            message: "Lisbon from 2026-07-01 for 2 guests. Shall I book?".into(),
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2 }),
        }
    } else {
        Say::Answer {
            message: "Which city would you like to stay in?".into(),
            data: json!({}),
        }
    }
}

/// The answer as JSON following the schema's properties (like the scripted provider).
fn structured(schema: &Value, message: &str, data: &Value) -> String {
    let props = schema.get("properties").and_then(Value::as_object);
    let has = |k: &str| props.is_some_and(|p| p.contains_key(k));
    let mut m = Map::new();
    if has("data") {
        m.insert("data".into(), data.clone());
    }
    if has("step") {
        let first = schema["properties"]["step"]["enum"][0].clone();
        m.insert("step".into(), first);
    }
    if has("handoff") {
        let flows = schema["properties"]["handoff"]["properties"]
            .as_object()
            .map(|o| o.keys().map(|k| (k.clone(), Value::Bool(false))).collect())
            .unwrap_or_default();
        m.insert("handoff".into(), Value::Object(flows));
    }
    if has("conditions") {
        let keys = schema["properties"]["conditions"]["properties"]
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let c: Map<String, Value> = keys.into_iter().map(|k| (k, Value::Bool(false))).collect();
        m.insert("conditions".into(), Value::Object(c));
    }
    if has("message") {
        m.insert("message".into(), Value::String(message.into()));
    }
    Value::Object(m).to_string()
}

fn text_of(say: &Say, v: &View) -> Option<String> {
    match say {
        Say::Answer { message, data } => Some(match &v.schema {
            Some(s) => structured(s, message, data),
            None => message.clone(),
        }),
        Say::Call { .. } => None,
    }
}

/// Three pieces, for streamed text.
fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len().div_ceil(3).max(1);
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

// ---- OpenAI ----

pub fn openai_view(r: &Recorded) -> View {
    let b = &r.body;
    let msgs = b["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    View {
        last_user: msgs
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned(),
        after_tool_result: last["role"] == "tool",
        tools: b["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect(),
        schema: b["response_format"]["json_schema"]["schema"]
            .is_object()
            .then(|| b["response_format"]["json_schema"]["schema"].clone()),
        answer_tool: None,
        stream: b["stream"] == true,
    }
}

pub fn openai_reply(v: &View) -> Reply {
    let say = decide(v);
    if !v.stream {
        let message = match (&say, text_of(&say, v)) {
            (_, Some(t)) => json!({ "role": "assistant", "content": t }),
            (Say::Call { name, args }, None) => json!({
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "call_fake_1", "type": "function",
                    "function": { "name": name, "arguments": args.to_string() } }]
            }),
            _ => unreachable!(),
        };
        let finish = if matches!(say, Say::Call { .. }) {
            "tool_calls"
        } else {
            "stop"
        };
        return Reply::json(
            200,
            &json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish }],
                "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 }
            })
            .to_string(),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                    "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }] })
        )
    };
    let mut sse = chunk(json!({ "role": "assistant", "content": "" }), Value::Null);
    let finish = match (&say, text_of(&say, v)) {
        (_, Some(t)) => {
            for p in pieces(&t) {
                sse.push_str(&chunk(json!({ "content": p }), Value::Null));
            }
            "stop"
        }
        (Say::Call { name, args }, None) => {
            sse.push_str(&chunk(
                json!({ "tool_calls": [{ "index": 0, "id": "call_fake_1", "type": "function",
                                         "function": { "name": name, "arguments": "" } }] }),
                Value::Null,
            ));
            for p in pieces(&args.to_string()) {
                sse.push_str(&chunk(
                    json!({ "tool_calls": [{ "index": 0, "function": { "arguments": p } }] }),
                    Value::Null,
                ));
            }
            "tool_calls"
        }
        _ => unreachable!(),
    };
    sse.push_str(&chunk(json!({}), json!(finish)));
    sse.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
                "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 } })
    ));
    Reply::sse(&sse)
}

// ---- Anthropic ----

pub fn anthropic_view(r: &Recorded) -> View {
    let b = &r.body;
    let msgs = b["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or(Value::Null);
    let blocks = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
    let answer_tool = b["tool_choice"]["name"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            // With tools of its own, the answer tool is the last one and the choice is `any`.
            (b["tool_choice"]["type"] == "any")
                .then(|| {
                    b["tools"]
                        .as_array()
                        .and_then(|t| t.last())
                        .and_then(|t| t["name"].as_str())
                })
                .flatten()
                .map(str::to_owned)
        });
    let schema = match &answer_tool {
        Some(name) => b["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == name.as_str())
            .map(|t| t["input_schema"].clone()),
        None => b["output_config"]["format"]["schema"]
            .is_object()
            .then(|| b["output_config"]["format"]["schema"].clone()),
    };
    View {
        last_user: msgs
            .iter()
            .rev()
            .filter(|m| m["role"] == "user")
            // The user's own words are the first text block; the engine's notes follow.
            .flat_map(|m| blocks(m).into_iter())
            .find(|bl| bl["type"] == "text")
            .and_then(|bl| bl["text"].as_str().map(str::to_owned))
            .unwrap_or_default(),
        after_tool_result: last["role"] == "user"
            && blocks(&last).iter().any(|bl| bl["type"] == "tool_result"),
        tools: b["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .filter(|n| Some(n) != answer_tool.as_ref())
            .collect(),
        schema,
        answer_tool,
        stream: b["stream"] == true,
    }
}

pub fn anthropic_reply(v: &View) -> Reply {
    let say = decide(v);
    // The block the answer takes: text, the answer tool, or a real tool call.
    let (block, stop) = match &say {
        Say::Answer { message, data } => match (&v.answer_tool, &v.schema) {
            (Some(tool), Some(schema)) => {
                let input: Value =
                    serde_json::from_str(&structured(schema, message, data)).unwrap();
                (
                    json!({ "type": "tool_use", "id": "toolu_answer", "name": tool, "input": input }),
                    "tool_use",
                )
            }
            _ => (
                json!({ "type": "text", "text": text_of(&say, v).unwrap() }),
                "end_turn",
            ),
        },
        Say::Call { name, args } => (
            json!({ "type": "tool_use", "id": "toolu_fake_1", "name": name, "input": args }),
            "tool_use",
        ),
    };
    if !v.stream {
        return Reply::json(
            200,
            &json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [block], "stop_reason": stop, "stop_sequence": null,
                "usage": { "input_tokens": 100, "output_tokens": 20 }
            })
            .to_string(),
        );
    }
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut sse = ev(
        "message_start",
        json!({ "type": "message_start", "message": { "id": "msg_fake", "type": "message", "role": "assistant",
            "content": [], "model": "claude-haiku-4-5", "stop_reason": null,
            "usage": { "input_tokens": 100, "output_tokens": 1 } } }),
    );
    if block["type"] == "text" {
        sse.push_str(&ev(
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "text", "text": "" } }),
        ));
        for p in pieces(block["text"].as_str().unwrap()) {
            sse.push_str(&ev(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0,
                "delta": { "type": "text_delta", "text": p } }),
            ));
        }
    } else {
        sse.push_str(&ev("content_block_start", json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "tool_use", "id": block["id"], "name": block["name"], "input": {} } })));
        for p in pieces(&block["input"].to_string()) {
            sse.push_str(&ev(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0,
                "delta": { "type": "input_json_delta", "partial_json": p } }),
            ));
        }
    }
    sse.push_str(&ev(
        "content_block_stop",
        json!({ "type": "content_block_stop", "index": 0 }),
    ));
    sse.push_str(&ev("message_delta", json!({ "type": "message_delta",
        "delta": { "stop_reason": stop, "stop_sequence": null }, "usage": { "output_tokens": 20 } })));
    sse.push_str(&ev("message_stop", json!({ "type": "message_stop" })));
    Reply::sse(&sse)
}

// ---- Gemini ----

pub fn gemini_view(r: &Recorded) -> View {
    let b = &r.body;
    let contents = b["contents"].as_array().cloned().unwrap_or_default();
    let last = contents.last().cloned().unwrap_or(Value::Null);
    let parts = |c: &Value| c["parts"].as_array().cloned().unwrap_or_default();
    View {
        last_user: contents
            .iter()
            .rev()
            .filter(|c| c["role"] == "user")
            .flat_map(|c| parts(c).into_iter().rev())
            .find_map(|p| p["text"].as_str().map(str::to_owned))
            .unwrap_or_default(),
        after_tool_result: parts(&last)
            .iter()
            .any(|p| p.get("functionResponse").is_some()),
        tools: b["tools"][0]["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["name"].as_str().map(str::to_owned))
            .collect(),
        schema: b["generationConfig"]["responseJsonSchema"]
            .is_object()
            .then(|| b["generationConfig"]["responseJsonSchema"].clone()),
        answer_tool: None,
        stream: r.path.ends_with(":streamGenerateContent"),
    }
}

pub fn gemini_reply(v: &View) -> Reply {
    let say = decide(v);
    let candidate = |parts: Value, finish: Option<&str>| {
        let mut c = json!({ "content": { "parts": parts, "role": "model" }, "index": 0 });
        if let Some(f) = finish {
            c["finishReason"] = json!(f);
        }
        json!({ "candidates": [c],
                "usageMetadata": { "promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120 },
                "modelVersion": "gemini-2.5-flash" })
    };
    let text = text_of(&say, v);
    if !v.stream {
        let parts = match (&say, &text) {
            (_, Some(t)) => json!([{ "text": t }]),
            (Say::Call { name, args }, None) => {
                json!([{ "functionCall": { "name": name, "args": args }, "thoughtSignature": "c2lnbmF0dXJl" }])
            }
            _ => unreachable!(),
        };
        return Reply::json(200, &candidate(parts, Some("STOP")).to_string());
    }
    let mut sse = String::new();
    match (&say, &text) {
        (_, Some(t)) => {
            let ps = pieces(t);
            let n = ps.len();
            for (i, p) in ps.into_iter().enumerate() {
                let fin = (i + 1 == n).then_some("STOP");
                sse.push_str(&format!(
                    "data: {}\r\n\r\n",
                    candidate(json!([{ "text": p }]), fin)
                ));
            }
        }
        (Say::Call { name, args }, None) => {
            let parts = json!([{ "functionCall": { "name": name, "args": args }, "thoughtSignature": "c2lnbmF0dXJl" }]);
            sse.push_str(&format!("data: {}\r\n\r\n", candidate(parts, Some("STOP"))));
        }
        _ => unreachable!(),
    }
    Reply::sse(&sse)
}

/// Serve the booking conversation for `vendor` on the paths its client calls.
pub fn install(server: &FixtureServer, vendor: Vendor) {
    match vendor {
        Vendor::OpenAi => {
            server.always(
                "/v1/chat/completions",
                Reply::dynamic(|r| openai_reply(&openai_view(r))),
            );
        }
        Vendor::Anthropic => {
            server.always(
                "/v1/messages",
                Reply::dynamic(|r| anthropic_reply(&anthropic_view(r))),
            );
        }
        Vendor::Gemini => {
            for p in [
                "/v1beta/models/gemini-2.5-flash:generateContent",
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            ] {
                server.always(p, Reply::dynamic(|r| gemini_reply(&gemini_view(r))));
            }
        }
    }
}
