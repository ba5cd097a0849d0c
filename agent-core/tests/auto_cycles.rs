//! `Flow::builder().build()` rejects `auto` steps that only lead to each other (the
//! check `#[flow]` makes at compile time), and accepts a cycle with a way out: a model
//! step, an `end`, another flow, or a hook that may move the position.

use agent_core::flow::FlowBuilder;
use agent_core::hook::PreHook;
use agent_core::prelude::*;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Order {
    item: Option<String>,
}

fn ping_pong() -> FlowBuilder<Order, ()> {
    Flow::builder("order").step(Step::auto("ping").branch(Branch::to_step("pong")))
}

#[test]
fn a_closed_auto_cycle_is_a_build_error_naming_it() {
    let Err(e) = ping_pong()
        .step(Step::auto("pong").branch(Branch::to_step("ping")))
        .build()
    else {
        panic!("a closed auto cycle must not build");
    };
    let text = e.to_string();
    assert!(
        text.contains("`auto` cycle with no exit: `ping` → `pong`"),
        "{text}"
    );
}

#[test]
fn a_cycle_closed_through_a_directive_jump_is_a_build_error() {
    // `ping` jumps to `pong` by a directive (`go_to_step`, this flow or unnamed).
    for d in [
        Directive::go_to_step("pong"),
        Directive::go_to_step_in("order", "pong").reply("Again."),
    ] {
        let Err(e) = Flow::<Order, ()>::builder("order")
            .step(Step::auto("ping").branch(Branch::to_directive(d)))
            .step(Step::auto("pong").branch(Branch::to_step("ping")))
            .build()
        else {
            panic!("a closed auto cycle must not build");
        };
        let text = e.to_string();
        assert!(
            text.contains("`auto` cycle with no exit: `ping` → `pong`"),
            "{text}"
        );
    }
    // A jump to a step of another flow is a way out.
    let out = Flow::<Order, ()>::builder("order")
        .step(
            Step::auto("ping").branch(Branch::to_directive(Directive::go_to_step_in(
                "checkout", "pong",
            ))),
        )
        .step(Step::auto("pong").branch(Branch::to_step("ping")))
        .build();
    assert!(out.is_ok(), "{:?}", out.err());
}

#[test]
fn a_cycle_through_a_model_step_or_out_of_the_flow_builds() {
    let via_model = Flow::<Order, ()>::builder("order")
        .step(Step::auto("ping").branch(Branch::to_step("ask")))
        .step(
            Step::model("ask")
                .collect(["item"])
                .branch(Branch::to_step("ping")),
        )
        .build();
    assert!(via_model.is_ok(), "{:?}", via_model.err());
    let conditional_exit = ping_pong()
        .step(
            Step::auto("pong")
                .branch(
                    Branch::to_step("ping").if_(|cx: &Cx<'_, Order, ()>| cx.data().item.is_none()),
                )
                .branch(Branch::to_flow("checkout")),
        )
        .build();
    assert!(conditional_exit.is_ok(), "{:?}", conditional_exit.err());
}

#[test]
fn a_hook_that_may_move_on_opens_the_cycle() {
    struct MoveOn;
    #[async_trait::async_trait]
    impl PreHook<Order, ()> for MoveOn {
        async fn call(&self, _cx: &Cx<'_, Order, ()>) -> PreDirective<Order, ()> {
            PreDirective::from(Directive::complete())
        }
    }
    let flow = ping_pong()
        .step(
            Step::auto("pong")
                .prepare(MoveOn)
                .branch(Branch::to_step("ping")),
        )
        .build();
    assert!(flow.is_ok(), "{:?}", flow.err());
}
