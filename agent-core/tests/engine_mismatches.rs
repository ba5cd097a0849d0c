//! Acceptance scenarios where the engine disagreed with the specs (issue 15, item 5):
//! an auto step's `prepare` seen by the predicted walk, re-entry of a completed flow,
//! data-only pending directives and routing, the auto-step cap's message, and
//! configuration errors found by `build()`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest, ModelResponse};
use agent_core::testing::{Answer, ScriptedProvider};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the shop agent collects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Shop {
    /// Customer tier
    tier: Option<String>,
    /// The customer's name
    name: Option<String>,
    /// What the customer searches for
    query: Option<String>,
    /// Free-text feedback
    feedback: Option<String>,
}

type Ctx<'a> = Cx<'a, Shop, ()>;
type Pre = PreDirective<Shop, ()>;

fn patch(v: Value) -> Patch {
    v.as_object().cloned().unwrap_or_default()
}

fn kinds(p: &ScriptedProvider) -> Vec<CallKind> {
    p.requests().iter().map(|r| r.kind).collect()
}

/// A respond answer naming the step the request renders (`Step `id``), with `data`.
fn echo_step(steps: &'static [&'static str], data: Value) -> Answer {
    Answer::from_fn(move |req: &ModelRequest| {
        let step = steps
            .iter()
            .find(|s| req.instructions().contains(&format!("Step `{s}`")))
            .copied()
            .unwrap_or("none");
        Ok(ModelResponse {
            content: json!({ "message": format!("at {step}"), "data": data }).to_string(),
            ..ModelResponse::default()
        })
    })
}

// ---------------------------------------------------------------------------------
// The predicted walk sees what an auto step's prepare wrote
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn an_auto_steps_prepare_output_decides_the_predicted_step() {
    let p = ScriptedProvider::new();
    let f =
        Flow::builder("welcome")
            .step(Step::auto("a1").prepare(|_cx: &Ctx<'_>| -> Pre {
                Pre::new().data(patch(json!({ "tier": "gold" })))
            }))
            .step(
                Step::auto("a2")
                    .branch(
                        Branch::to_step("s_gold")
                            .if_(|cx: &Ctx<'_>| cx.data().tier.as_deref() == Some("gold")),
                    )
                    .branch(Branch::to_step("s_basic")),
            )
            .step(
                Step::model("s_gold")
                    .prompt("Greet the gold customer by name.")
                    .collect(["name"])
                    .end(),
            )
            .step(
                Step::model("s_basic")
                    .prompt("Greet the customer.")
                    .collect(["name"])
                    .end(),
            )
            .build()
            .unwrap();
    p.default_answer(
        CallKind::Respond,
        echo_step(&["s_gold", "s_basic"], json!({})),
    );
    let a: Agent<Shop, ()> = Agent::builder()
        .provider(p.clone())
        .flow(f)
        .build()
        .unwrap();

    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(
        (kinds(&p), r.step.as_deref(), r.message.as_str()),
        (vec![CallKind::Respond], Some("s_gold"), "at s_gold"),
        "(calls, step, message)"
    );
    let req = p.last_request().unwrap();
    assert!(
        req.instructions().contains("gold"),
        "the one call sees the tier prepare wrote"
    );
    assert_eq!(r.data.tier.as_deref(), Some("gold"));
    let steps: Vec<&str> = r.executed_steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, ["a1", "a2", "s_gold"]);
}

// ---------------------------------------------------------------------------------
// Re-entering a completed flow
// ---------------------------------------------------------------------------------

/// `search` (reentrant) owns `query`; `name` is also collected by `profile`, so
/// `search` does not own it.
fn search_agent(p: &ScriptedProvider) -> Agent<Shop, ()> {
    let search = Flow::builder("search")
        .title("Search")
        .when("the user wants to search")
        .reentrant()
        .required(["query"])
        .optional(["name"])
        .step(
            Step::model("ask_query")
                .prompt("Ask what to search for.")
                .collect(["query"]),
        )
        .step(Step::reply("show", "Results for {query}.").end())
        .build()
        .unwrap();
    let profile = Flow::builder("profile")
        .title("Profile")
        .when("the user wants to update the profile")
        .required(["name"])
        .step(
            Step::model("ask_name")
                .prompt("Ask the name.")
                .collect(["name"]),
        )
        .build()
        .unwrap();
    Agent::builder()
        .provider(p.clone())
        .flow(search)
        .flow(profile)
        .build()
        .unwrap()
}

#[tokio::test]
async fn re_entering_a_completed_flow_clears_only_the_fields_it_owns() {
    let p = ScriptedProvider::new();
    let a = search_agent(&p);
    p.default_answer(CallKind::Route, Answer::route("search"));

    p.respond(Answer::message("What should I look for?").with_data(json!({
        "query": "cats", "name": "Ann"
    })));
    let r = a.respond("s", "I am Ann, find cats").await.unwrap();
    assert_eq!(r.message, "Results for cats.");
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.flow, None, "search completed");

    p.clear_requests();
    p.respond(echo_step(&["ask_query", "show"], json!({})));
    let r = a.respond("s", "search again").await.unwrap();
    assert_eq!(
        (kinds(&p), r.step.as_deref(), r.message.as_str()),
        (
            vec![CallKind::Route, CallKind::Respond],
            Some("ask_query"),
            "at ask_query"
        ),
        "(calls, step, message): the flow starts over instead of jumping to its end"
    );
    assert_eq!(r.data.query, None, "search's own field is cleared");
    assert_eq!(
        r.data.name.as_deref(),
        Some("Ann"),
        "a field another flow collects is kept"
    );
}

#[tokio::test]
async fn a_directive_re_entering_a_completed_flow_keeps_the_data_it_carries() {
    let p = ScriptedProvider::new();
    let a = search_agent(&p);
    p.default_answer(CallKind::Route, Answer::route("search"));
    p.respond(Answer::message("What should I look for?").with_data(json!({ "query": "cats" })));
    let r = a.respond("s", "find cats").await.unwrap();
    assert_eq!(r.message, "Results for cats.");

    a.dispatch(
        "s",
        Directive::go_to_with("search", patch(json!({ "query": "dogs" }))),
    )
    .await
    .unwrap();
    p.clear_requests();
    p.default_answer(CallKind::Extract, Answer::data(json!({})));
    let r = a.respond("s", "hello").await.unwrap();
    assert_eq!(
        (r.message.as_str(), kinds(&p)),
        ("Results for dogs.", vec![CallKind::Extract]),
        "the flow's old value is cleared before the directive writes its own"
    );
}

// ---------------------------------------------------------------------------------
// Pending directives that only write data
// ---------------------------------------------------------------------------------

fn two_flows(p: &ScriptedProvider) -> Agent<Shop, ()> {
    let fa = Flow::builder("a")
        .title("Profile")
        .when("the user wants to update the profile")
        .step(
            Step::model("ask_name")
                .prompt("Ask the name.")
                .collect(["name"]),
        )
        .build()
        .unwrap();
    let fb = Flow::builder("b")
        .title("Feedback")
        .when("the user wants to leave feedback")
        .step(
            Step::model("ask_feedback")
                .prompt("Ask for feedback.")
                .collect(["feedback"]),
        )
        .build()
        .unwrap();
    Agent::builder()
        .provider(p.clone())
        .flow(fa)
        .flow(fb)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_data_only_pending_directive_does_not_suppress_routing() {
    let p = ScriptedProvider::new();
    let a = two_flows(&p);
    p.default_answer(CallKind::Route, Answer::route("b"));
    p.default_answer(CallKind::Respond, echo_step(&["ask_feedback"], json!({})));

    a.dispatch("s", Directive::new().data(patch(json!({ "tier": "gold" }))))
        .await
        .unwrap();
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(
        (kinds(&p), r.flow.as_deref(), r.step.as_deref()),
        (
            vec![CallKind::Route, CallKind::Respond],
            Some("b"),
            Some("ask_feedback")
        ),
        "(calls, flow, step)"
    );
    assert_eq!(
        r.data.tier.as_deref(),
        Some("gold"),
        "the pending write applied"
    );
}

#[tokio::test]
async fn a_pending_directive_with_a_position_still_skips_routing() {
    let p = ScriptedProvider::new();
    let a = two_flows(&p);
    p.default_answer(CallKind::Route, Answer::route("b"));
    p.default_answer(CallKind::Respond, echo_step(&["ask_name"], json!({})));

    a.dispatch(
        "s",
        Directive::go_to_with("a", patch(json!({ "tier": "gold" }))),
    )
    .await
    .unwrap();
    let r = a.respond("s", "I want to leave feedback").await.unwrap();
    assert_eq!(
        (kinds(&p), r.flow.as_deref()),
        (vec![CallKind::Respond], Some("a")),
    );
}

// ---------------------------------------------------------------------------------
// The auto-step cap
// ---------------------------------------------------------------------------------

// `y` may leave the flow (its branch back is conditional), so `build()` accepts the
// cycle; at run time the predicate always holds and only the cap stops the walk.
#[tokio::test]
async fn the_auto_step_cap_tells_the_user_something_and_says_why_it_stopped() {
    let p = ScriptedProvider::new();
    let f = Flow::builder("loop")
        .step(Step::auto("x").branch(Branch::to_step("y")))
        .step(Step::auto("y").branch(Branch::to_step("x").if_(|_: &Ctx<'_>| true)))
        .build()
        .unwrap();
    let config = AgentConfig {
        max_auto_steps_per_turn: 4,
        flow_error_reply: "Something went wrong on our side.".into(),
        ..AgentConfig::default()
    };
    let a: Agent<Shop, ()> = Agent::builder()
        .provider(p.clone())
        .config(config)
        .flow(f)
        .build()
        .unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert!(
        matches!(r.stopped, StoppedReason::AutoStepCap { .. }),
        "{:?}",
        r.stopped
    );
    assert_eq!(r.message, "Something went wrong on our side.");
    assert_eq!(p.calls(), 0);

    let a: Agent<Shop, ()> = Agent::builder()
        .provider(p.clone())
        .flow(
            Flow::builder("loop")
                .step(Step::auto("x").branch(Branch::to_step("y")))
                .step(Step::auto("y").branch(Branch::to_step("x").if_(|_: &Ctx<'_>| true)))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let r = a.respond("s", "hi").await.unwrap();
    assert_eq!(r.message, AgentConfig::default().flow_error_reply);
    assert!(!r.message.is_empty());
}

// ---------------------------------------------------------------------------------
// Configuration errors
// ---------------------------------------------------------------------------------

fn one_step() -> Step<Shop, ()> {
    Step::model("ask_name")
        .prompt("Ask the name.")
        .collect(["name"])
}

/// The problems `build()` reported (empty when it built).
fn problems<T>(r: Result<T, ConfigErrors>) -> Vec<FlowConfigurationError> {
    match r {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

#[test]
fn a_classifier_batch_size_of_zero_is_a_build_error() {
    let p = ScriptedProvider::new();
    let build = |n: usize| {
        Agent::<Shop, ()>::builder()
            .provider(p.clone())
            .config(AgentConfig {
                classifier_batch_size: n,
                ..AgentConfig::default()
            })
            .flow(Flow::builder("f").step(one_step()).build())
            .build()
    };
    let errs = problems(build(0));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].flow, "", "an agent-level problem");
    assert!(
        errs[0].problem.contains("classifier_batch_size"),
        "{errs:?}"
    );
    assert!(problems(build(1)).is_empty());
}

#[test]
fn on_complete_together_with_on_complete_hook_is_a_build_error() {
    let errs = problems(
        Flow::<Shop, ()>::builder("f")
            .on_complete(Directive::go_to("g"))
            .on_complete_hook(|_cx: &Ctx<'_>| Directive::new())
            .step(one_step())
            .build(),
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].flow, "f");
    assert!(
        errs[0].problem.contains("on_complete") && errs[0].problem.contains("on_complete_hook"),
        "{errs:?}"
    );
    // Each alone is fine.
    assert!(
        problems(
            Flow::<Shop, ()>::builder("f")
                .on_complete_hook(|_cx: &Ctx<'_>| Directive::new())
                .step(one_step())
                .build()
        )
        .is_empty()
    );
}

// ---------------------------------------------------------------------------------
// Injected tools: first position, latest definition
// ---------------------------------------------------------------------------------

fn shop_tool(name: &str, description: &str) -> std::sync::Arc<dyn Tool<Shop, ()>> {
    FnTool::<Shop, ()>::raw(
        name,
        description,
        json!({ "type": "object", "properties": {} }),
        |_cx, _args| async { Ok(ToolOutput::text("ok")) },
    )
    .into_arc()
}

#[tokio::test]
async fn a_tool_injected_again_keeps_its_place_in_the_turns_tool_list() {
    let p = ScriptedProvider::new();
    let f = Flow::builder("f")
        .on_enter(|_cx: &Ctx<'_>| -> Pre {
            Pre::new()
                .inject_tool(shop_tool("t", "old"))
                .inject_tool(shop_tool("u", "u"))
        })
        .step(
            Step::model("ask_name")
                .prompt("Ask the name.")
                .collect(["name"])
                .prepare(|_cx: &Ctx<'_>| -> Pre { Pre::new().inject_tool(shop_tool("t", "new")) }),
        )
        .build()
        .unwrap();
    p.default_answer(CallKind::Respond, Answer::message("Your name?"));
    let a: Agent<Shop, ()> = Agent::builder()
        .provider(p.clone())
        .flow(f)
        .build()
        .unwrap();
    a.respond("s", "hi").await.unwrap();
    let req = p.last_request().unwrap();
    let tools: Vec<(&str, &str)> = req
        .tools
        .iter()
        .filter(|t| t.name == "t" || t.name == "u")
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    assert_eq!(tools, [("t", "new"), ("u", "u")]);
}
