use super::ids::{join_id, split_id};
use super::request::wire_contents;
use agent_core::provider::{Message, ToolCall};

#[test]
fn ids_carry_signatures_and_synthetic_ids_stay_home() {
    let id = join_id(None, 2, Some("c2ln"));
    assert_eq!(id, "gemini_call_2#sig=c2ln");
    assert_eq!(split_id(&id), (None, Some("c2ln")));
    assert_eq!(split_id("abc"), (Some("abc"), None));
    assert_eq!(
        split_id(&join_id(Some("abc"), 0, None)),
        (Some("abc"), None)
    );
}

#[test]
fn tool_results_are_named_after_their_call() {
    let mut a = Message::assistant("");
    a.tool_calls = vec![ToolCall {
        id: "gemini_call_0#sig=XYZ".into(),
        name: "book_room".into(),
        arguments: serde_json::json!({"hotel": "Grand"}),
    }];
    let msgs = vec![
        Message::user("book"),
        a,
        Message::tool("gemini_call_0#sig=XYZ", "booked BK-5"),
    ];
    let w = serde_json::to_value(wire_contents(&msgs)).unwrap();
    assert_eq!(w[1]["role"], "model");
    assert_eq!(w[1]["parts"][0]["functionCall"]["name"], "book_room");
    assert_eq!(w[1]["parts"][0]["thoughtSignature"], "XYZ");
    assert!(w[1]["parts"][0]["functionCall"].get("id").is_none());
    assert_eq!(w[2]["parts"][0]["functionResponse"]["name"], "book_room");
    assert_eq!(
        w[2]["parts"][0]["functionResponse"]["response"]["result"],
        "booked BK-5"
    );
}
