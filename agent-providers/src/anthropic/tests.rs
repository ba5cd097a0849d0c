use super::request::wire_messages;
use super::*;
use agent_core::provider::{CallKind, Message, ToolCall};

#[test]
fn history_merges_tool_results_and_skips_empty_texts() {
    let mut a = Message::assistant("");
    a.tool_calls = vec![
        ToolCall {
            id: "t1".into(),
            name: "x".into(),
            arguments: serde_json::json!({"a": 1}),
        },
        ToolCall {
            id: "t2".into(),
            name: "y".into(),
            arguments: Value::String("not json".into()),
        },
    ];
    let msgs = vec![
        Message::user("hi"),
        a,
        Message::tool("t1", "one"),
        Message::tool("t2", "two"),
        Message::user("and?"),
    ];
    let w = serde_json::to_value(wire_messages(&msgs, false)).unwrap();
    assert_eq!(w.as_array().unwrap().len(), 3);
    assert_eq!(
        w[1]["content"].as_array().unwrap().len(),
        2,
        "no empty text"
    );
    assert_eq!(w[1]["content"][1]["input"], serde_json::json!({}));
    assert_eq!(w[2]["role"], "user");
    assert_eq!(w[2]["content"][0]["type"], "tool_result");
    assert_eq!(w[2]["content"][1]["tool_use_id"], "t2");
    assert_eq!(w[2]["content"][2]["text"], "and?");
}

#[test]
fn the_answer_tool_avoids_name_clashes() {
    let p = Anthropic::new("k");
    let mut req = ModelRequest {
        kind: CallKind::Respond,
        system: String::new(),
        messages: vec![],
        tools: vec![agent_core::provider::ToolSpec {
            name: "turn".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }],
        output: Some(agent_core::provider::OutputSchema {
            name: "turn".into(),
            schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
        }),
        max_tokens: None,
        temperature: None,
        seed: None,
    };
    assert_eq!(p.answer_tool(&req).as_deref(), Some("turn_answer"));
    req.tools.clear();
    assert_eq!(p.answer_tool(&req).as_deref(), Some("turn"));
    let native = p.structured(StructuredMode::Native);
    assert_eq!(native.answer_tool(&req), None);
}
