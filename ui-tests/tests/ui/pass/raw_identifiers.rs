//! Raw identifiers work everywhere, and the id is the name without `r#`: a flow module
//! (`mod r#match`), step fns (`fn r#loop`), data fields and tool parameters (`r#type`,
//! whose JSON key is `"type"`), a tool (`r#move`) and a code flow (`async fn r#while`).
use agent_core::__private::serde_json;
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Order {
    /// Kind of order
    pub r#type: String,
    /// How many rounds
    pub r#loop: u8,
}

#[flow(data = Order, required(r#type))]
mod r#match {
    #[step(prompt = "Ask the kind of order.", collect(r#type), branches(
        if |v| v.r#type.is_some_and(|t| t == "again") => r#loop,
        else => Step::r#loop,
    ))]
    fn r#ask() {}

    #[step(
        end,
        prompt = "Ask how many rounds.",
        collect(r#loop),
        requires(r#type),
        tools(r#move)
    )]
    fn r#loop(v: r#loop::View<'_>) -> PreDirective<Order, ()> {
        PreDirective::new().append_prompt(format!("Kind: {}", v.r#type))
    }
}

/// Move the order.
#[tool]
async fn r#move(
    /// Where to
    r#type: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(r#type))
}

/// A code flow with a keyword name.
#[flow(title = "Loop")]
async fn r#while(ctx: FlowCx<Order, ()>) -> FlowResult {
    ctx.end("done")
}

fn main() {
    assert_eq!(Order::FIELDS, ["type", "loop"]);
    assert_eq!(OrderField::r#type.name(), "type");
    let patch = Order::patch().r#type("x").r#loop(2).into_patch();
    assert_eq!(patch.get("type"), Some(&serde_json::json!("x")));
    assert!(patch.get("r#type").is_none());
    let schema = Order::json_schema();
    assert!(schema["properties"]["type"].is_object(), "{schema}");

    assert_eq!(<MatchFlow as FlowDef>::ID, "match");
    // Not ambiguous between `FlowDef::ID` and `FlowRef::ID`.
    assert_eq!(MatchFlow::ID, "match");
    assert_eq!(r#match::ID, "match");
    let f = r#match::flow().expect("valid");
    assert_eq!(f.id(), "match");
    let ids: Vec<&str> = f.steps().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["ask", "loop"]);
    assert_eq!(
        &*f.step("loop").expect("loop").collected_fields()[0],
        "loop"
    );
    assert_eq!(&*f.step("ask").expect("ask").collected_fields()[0], "type");
    assert_eq!(r#match::Step::r#loop.id(), "loop");
    let d = r#match::DIAGRAM;
    assert!(
        d.contains("%% flow `match`") && d.contains("loop[\"loop · collect loop\"]"),
        "{d}"
    );

    let t = r#move;
    assert_eq!(Tool::<Order, ()>::name(&t), "move");
    let p = Tool::<Order, ()>::parameters(&t);
    assert!(p["properties"]["type"].is_object(), "{p}");
    assert_eq!(p["required"], serde_json::json!(["type"]));

    assert_eq!(<WhileFlow as agent_core::codeflow::FlowRef>::ID, "while");
}
