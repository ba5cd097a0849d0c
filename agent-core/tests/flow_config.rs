//! Configuration checks at `build()`: `Flow::builder(..).build()` and
//! `Agent::builder()...build()` reject invalid definitions with `ConfigErrors` whose
//! entries name the flow, the step, the bad value and the valid choices, and report
//! every problem of a definition at once.
//!
//! One file over 600 lines: one case per configuration error at `build()`, all on the same small flow fixtures; the file is the catalogue of those errors.

mod common;

use agent_core::AgentBuilder;
use agent_core::flow::FlowBuilder;
use agent_core::prelude::*;
use agent_core::signal::SignalCx;
use agent_core::step::StepKind;
use agent_core::testing::ScriptedProvider;
use common::*;
use serde_json::json;
use std::sync::Arc;

const BOOKING_FIELDS: [&str; 5] = ["city", "check_in", "guests", "booking_id", "feedback"];

fn flow(id: &str) -> FlowBuilder<Booking, Concierge> {
    Flow::builder(id)
}

fn agent_builder() -> AgentBuilder<Booking, Concierge> {
    Agent::builder().provider(ScriptedProvider::new())
}

/// The errors of a failed build; empty when the build succeeded (so every assertion on
/// the errors fails loudly instead of the helper panicking).
fn flow_errors(r: Result<Flow<Booking, Concierge>, ConfigErrors>) -> Vec<FlowConfigurationError> {
    match r {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

fn agent_errors(r: Result<Agent<Booking, Concierge>, ConfigErrors>) -> Vec<FlowConfigurationError> {
    match r {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

/// The single error of a build (asserting there is exactly one).
fn only(errs: Vec<FlowConfigurationError>) -> FlowConfigurationError {
    assert_eq!(errs.len(), 1, "expected exactly one error, got {errs:#?}");
    errs.into_iter()
        .next()
        .unwrap_or_else(|| FlowConfigurationError {
            flow: String::new(),
            step: None,
            problem: String::new(),
            help: String::new(),
        })
}

fn tool(name: &str, description: &str) -> Arc<dyn Tool<Booking, Concierge>> {
    FnTool::raw(
        name,
        description,
        json!({"type": "object", "properties": {}}),
        |_cx: ToolCx<Booking, Concierge>, _args| async { Ok(ToolOutput::text("ok")) },
    )
    .into_arc()
}

fn handled_signal(id: &str) -> Signal<Booking, Concierge> {
    Signal::new(id).handle(|_cx: &SignalCx<'_, Booking, Concierge>| SignalDirective::default())
}

fn assert_lists_known_fields(help: &str) {
    assert!(help.contains("known fields:"), "{help}");
    for f in BOOKING_FIELDS {
        assert!(
            help.contains(&format!("`{f}`")),
            "`{f}` missing from: {help}"
        );
    }
}

fn ask() -> Step<Booking, Concierge> {
    Step::model("ask")
        .prompt("Ask for the city.")
        .collect(["city"])
}

fn confirm() -> Step<Booking, Concierge> {
    Step::model("confirm").prompt("Confirm.").end()
}

// ---------------------------------------------------------------- flow structure

#[test]
fn flow_without_steps_is_rejected() {
    let e = only(flow_errors(flow("empty").build()));
    assert_eq!(e.flow, "empty");
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "flow has no steps");
    assert!(e.help.contains(".step("), "{}", e.help);
}

#[test]
fn flow_with_empty_id_is_rejected() {
    let e = only(flow_errors(flow("  ").step(ask()).build()));
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "flow id is empty");
    assert!(!e.help.is_empty());
}

#[test]
fn duplicate_step_ids_are_rejected_naming_the_step() {
    let errs = flow_errors(
        flow("booking")
            .step(ask())
            .step(confirm())
            .step(ask())
            .build(),
    );
    let e = only(errs);
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "duplicate step id `ask`");
    assert!(e.help.contains("unique"), "{}", e.help);
}

#[test]
fn empty_step_id_is_rejected_with_its_position() {
    let errs = flow_errors(
        flow("booking")
            .step(ask())
            .step(Step::model(" ").prompt("?"))
            .build(),
    );
    let e = only(errs);
    assert_eq!(e.flow, "booking");
    assert_eq!(e.problem, "step #1 has an empty id");
    assert!(e.help.contains("id"), "{}", e.help);
}

// ---------------------------------------------------------------- unknown fields

#[test]
fn collect_naming_an_unknown_field_suggests_the_closest_field() {
    let e = only(flow_errors(
        flow("booking")
            .step(Step::model("ask").prompt("Ask.").collect(["cty"]))
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "`collect` names unknown field `cty`");
    assert!(e.help.starts_with("did you mean `city`?"), "{}", e.help);
    assert_lists_known_fields(&e.help);
}

#[test]
fn requires_naming_an_unknown_field_suggests_the_closest_field() {
    let e = only(flow_errors(
        flow("booking")
            .step(ask())
            .step(
                Step::model("confirm")
                    .prompt("Confirm.")
                    .requires(["city", "gusets"]),
            )
            .build(),
    ));
    assert_eq!(e.step.as_deref(), Some("confirm"));
    assert_eq!(e.problem, "`requires` names unknown field `gusets`");
    assert!(e.help.starts_with("did you mean `guests`?"), "{}", e.help);
    assert_lists_known_fields(&e.help);
}

#[test]
fn required_naming_an_unknown_field_suggests_the_closest_field() {
    let e = only(flow_errors(
        flow("booking")
            .required(["city", "citty"])
            .step(ask())
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step, None, "a flow-level key names no step");
    assert_eq!(e.problem, "`required` names unknown field `citty`");
    assert!(e.help.starts_with("did you mean `city`?"), "{}", e.help);
    assert_lists_known_fields(&e.help);
}

#[test]
fn optional_naming_an_unknown_field_suggests_the_closest_field() {
    let e = only(flow_errors(
        flow("booking").optional(["feedbak"]).step(ask()).build(),
    ));
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "`optional` names unknown field `feedbak`");
    assert!(e.help.starts_with("did you mean `feedback`?"), "{}", e.help);
    assert_lists_known_fields(&e.help);
}

#[test]
fn initial_data_naming_an_unknown_field_suggests_the_closest_field() {
    let patch = json!({"city": "Lisbon", "bookingid": "BK-1"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let e = only(flow_errors(
        flow("booking").initial_data(patch).step(ask()).build(),
    ));
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "`initial_data` names unknown field `bookingid`");
    assert!(
        e.help.starts_with("did you mean `booking_id`?"),
        "{}",
        e.help
    );
    assert_lists_known_fields(&e.help);
}

#[test]
fn unknown_field_far_from_every_field_lists_known_fields_without_a_guess() {
    let e = only(flow_errors(
        flow("booking")
            .step(
                Step::model("ask")
                    .prompt("Ask.")
                    .collect(["loyalty_number"]),
            )
            .build(),
    ));
    assert_eq!(e.problem, "`collect` names unknown field `loyalty_number`");
    assert!(!e.help.contains("did you mean"), "{}", e.help);
    assert!(e.help.starts_with("known fields:"), "{}", e.help);
    assert_lists_known_fields(&e.help);
}

// ---------------------------------------------------------------- step shapes

/// The single error of a flow `ask → step → confirm`.
fn lone_problem_of(step: Step<Booking, Concierge>) -> FlowConfigurationError {
    only(flow_errors(
        flow("booking")
            .step(ask())
            .step(step)
            .step(confirm())
            .build(),
    ))
}

#[test]
fn auto_step_with_prompt_is_rejected() {
    let e = lone_problem_of(Step::auto("route").prompt("Decide."));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("route"));
    assert_eq!(e.problem, "an `auto` step cannot have `prompt`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn auto_step_with_collect_is_rejected() {
    let e = lone_problem_of(Step::auto("route").collect(["guests"]));
    assert_eq!(e.step.as_deref(), Some("route"));
    assert_eq!(e.problem, "an `auto` step cannot have `collect`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn auto_step_with_tools_is_rejected() {
    let e = lone_problem_of(Step::auto("route").tool(book_room()));
    assert_eq!(e.step.as_deref(), Some("route"));
    assert_eq!(e.problem, "an `auto` step cannot have `tools`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn reply_step_with_prompt_is_rejected() {
    let e = lone_problem_of(Step::reply("bye", "Goodbye.").prompt("Say goodbye."));
    assert_eq!(e.step.as_deref(), Some("bye"));
    assert_eq!(e.problem, "a `reply` step cannot have `prompt`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn reply_step_with_collect_is_rejected() {
    let e = lone_problem_of(Step::reply("bye", "Goodbye.").collect(["feedback"]));
    assert_eq!(e.step.as_deref(), Some("bye"));
    assert_eq!(e.problem, "a `reply` step cannot have `collect`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn reply_step_with_tools_is_rejected() {
    let e = lone_problem_of(Step::reply("bye", "Goodbye.").tool(book_room()));
    assert_eq!(e.step.as_deref(), Some("bye"));
    assert_eq!(e.problem, "a `reply` step cannot have `tools`");
    assert!(e.help.contains("model step"), "{}", e.help);
}

#[test]
fn auto_step_with_when_branch_is_rejected() {
    let e = lone_problem_of(
        Step::auto("route")
            .branch(Branch::to_step("confirm").when("the user is in a hurry"))
            .branch(Branch::to_step("ask")),
    );
    assert_eq!(e.step.as_deref(), Some("route"));
    assert_eq!(e.problem, "an `auto` step cannot have `when` branches");
    assert!(e.help.contains("`if`"), "{}", e.help);
}

#[test]
fn auto_step_with_only_if_branches_is_accepted() {
    let built = flow("booking")
        .step(ask())
        .step(
            Step::auto("route")
                .branch(
                    Branch::to_step("confirm")
                        .if_(|cx: &Cx<'_, Booking, Concierge>| cx.data().city.is_some()),
                )
                .branch(Branch::to_step("ask")),
        )
        .step(confirm())
        .build();
    assert_eq!(flow_errors(built), Vec::new());
}

// ---------------------------------------------------------------- branch tables

#[test]
fn empty_branch_table_is_rejected() {
    let e = only(flow_errors(
        flow("booking")
            .step(ask().branches(vec![]))
            .step(confirm())
            .build(),
    ));
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "empty branch table");
    assert!(e.help.contains("branches"), "{}", e.help);
}

#[test]
fn unconditional_branch_entry_that_is_not_last_is_rejected() {
    let e = only(flow_errors(
        flow("booking")
            .step(
                ask()
                    .branch(Branch::to_step("confirm").when("the user is done"))
                    .branch(Branch::to_step("confirm"))
                    .branch(Branch::to_step("ask").when("the user wants to start over")),
            )
            .step(confirm())
            .build(),
    ));
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "unconditional branch #2 is not last");
    assert!(e.help.contains("move it to the end"), "{}", e.help);
}

#[test]
fn branch_to_unknown_step_suggests_the_closest_step() {
    let e = only(flow_errors(
        flow("booking")
            .step(ask().branch(Branch::to_step("confrm")))
            .step(confirm())
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "branch targets unknown step `confrm`");
    assert_eq!(
        e.help,
        "did you mean `confirm`? known steps: `ask`, `confirm`"
    );
}

#[test]
fn bare_id_naming_a_local_step_resolves_to_that_step() {
    // `feedback` is both a registered flow and a local step: the local step wins.
    let f = flow("booking")
        .step(ask().branch(Branch::to_id("feedback").when("the user has feedback")))
        .step(Step::model("feedback").prompt("Ask for feedback.").end())
        .build();
    let Ok(f) = f else {
        panic!(
            "flow should build: {}",
            f.err().map(|e| e.to_string()).unwrap_or_default()
        );
    };
    let ask = f.step("ask").map(|s| s.branch_table()[0].target().clone());
    assert_eq!(ask, Some(Target::Step("feedback".into())));
    let a = agent_errors(agent_builder().flow(f).flow(feedback_flow()).build());
    assert_eq!(a, Vec::new());
}

#[test]
fn bare_id_naming_no_local_step_resolves_to_a_registered_flow() {
    let f = flow("booking")
        .step(ask().branch(Branch::to_id("feedback").when("the user has feedback")))
        .step(confirm())
        .build();
    let Ok(f) = f else {
        panic!(
            "flow should build: {}",
            f.err().map(|e| e.to_string()).unwrap_or_default()
        );
    };
    assert_eq!(
        f.steps()[0].branch_table()[0].target(),
        &Target::Id("feedback".into()),
        "an id that is not a local step is left for the agent to resolve as a flow"
    );
    let a = agent_errors(agent_builder().flow(f).flow(feedback_flow()).build());
    assert_eq!(a, Vec::new());
}

#[test]
fn bare_id_naming_neither_a_step_nor_a_flow_is_rejected_by_the_agent() {
    let f = flow("booking")
        .step(ask().branch(Branch::to_id("feedbak").when("the user has feedback")))
        .step(confirm())
        .build();
    let a = agent_errors(agent_builder().flow_opt(f).flow(feedback_flow()).build());
    let e = only(a);
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(
        e.problem,
        "target `feedbak` is neither a step of this flow nor a registered flow"
    );
    assert!(
        e.help
            .contains("did you mean `feedback`? known flows: `booking`, `feedback`"),
        "{}",
        e.help
    );
    assert!(
        e.help.contains("steps of `booking`: ask, confirm"),
        "{}",
        e.help
    );
}

#[test]
fn branch_directive_to_unknown_local_step_suggests_the_closest_step() {
    let e = only(flow_errors(
        flow("booking")
            .step(ask().branch(Branch::to_directive(Directive::go_to_step("confirn"))))
            .step(confirm())
            .build(),
    ));
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(e.problem, "branch directive targets unknown step `confirn`");
    assert_eq!(
        e.help,
        "did you mean `confirm`? known steps: `ask`, `confirm`"
    );
}

#[test]
fn reply_with_abort_as_branch_target_is_rejected() {
    let bad = Directive::abort("the user left").reply("Goodbye.");
    let e = only(flow_errors(
        flow("booking")
            .step(ask().branch(Branch::to_directive(bad).when("the user wants to leave")))
            .step(confirm())
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert!(e.problem.starts_with("branch directive: "), "{}", e.problem);
    assert!(
        e.problem
            .contains("`reply` cannot be combined with `abort`"),
        "{}",
        e.problem
    );
}

#[test]
fn reply_with_abort_as_on_complete_is_rejected() {
    let e = only(flow_errors(
        flow("booking")
            .on_complete(Directive::abort("done").reply("Bye."))
            .step(ask())
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step, None);
    assert!(
        e.problem.starts_with("on_complete directive: "),
        "{}",
        e.problem
    );
    assert!(
        e.problem
            .contains("`reply` cannot be combined with `abort`"),
        "{}",
        e.problem
    );
}

#[test]
fn flow_tool_with_invalid_name_is_rejected_naming_the_flow() {
    let e = only(flow_errors(
        flow("booking")
            .tool(tool("look up", "Look something up."))
            .step(ask())
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "invalid tool name `look up`");
    assert!(e.help.contains("ASCII letters, digits"), "{}", e.help);
}

#[test]
fn step_tool_with_invalid_name_is_rejected_naming_the_flow_and_the_step() {
    let e = only(flow_errors(
        flow("booking")
            .step(ask())
            .step(confirm().tool(tool("book room", "Book the room.")))
            .build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.problem, "invalid tool name `book room`");
    assert_eq!(
        e.step.as_deref(),
        Some("confirm"),
        "a tool declared on a step should be reported at that step"
    );
}

// ---------------------------------------------------------------- agent registry

/// Register a flow that must have built (asserting it did, so a broken fixture cannot
/// make an agent-level test pass by leaving the flow out).
trait FlowOpt {
    fn flow_opt(self, f: Result<Flow<Booking, Concierge>, ConfigErrors>) -> Self;
}

impl FlowOpt for AgentBuilder<Booking, Concierge> {
    fn flow_opt(self, f: Result<Flow<Booking, Concierge>, ConfigErrors>) -> Self {
        assert_eq!(f.as_ref().err(), None, "the flow itself should build");
        match f {
            Ok(f) => self.flow(f),
            Err(_) => self,
        }
    }
}

#[test]
fn duplicate_flow_ids_are_rejected_by_the_agent() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .flow(booking_flow(false))
            .flow(feedback_flow())
            .build(),
    ));
    assert_eq!(e.flow, "feedback");
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "duplicate flow id `feedback`");
    assert!(e.help.contains("unique"), "{}", e.help);
}

#[test]
fn branch_to_unregistered_flow_lists_registered_flows() {
    // booking_flow(true)'s confirm step branches to the `feedback` flow.
    let booking = booking_flow(true);
    let e = only(agent_errors(
        agent_builder().flow(booking_flow(true)).build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("confirm"));
    assert_eq!(
        e.problem,
        "target `feedback` is neither a step of this flow nor a registered flow"
    );
    assert!(e.help.contains("known flows: `booking`"), "{}", e.help);
    let steps: Vec<&str> = booking.steps().iter().map(|s| s.id()).collect();
    assert!(steps.len() > 1, "{steps:?}");
    let listing = format!("steps of `booking`: {}", steps.join(", "));
    assert!(
        e.help.contains(&listing),
        "{listing} missing from: {}",
        e.help
    );
}

#[test]
fn branch_to_misspelt_flow_suggests_the_registered_flow() {
    let f = flow("booking")
        .step(ask().branch(Branch::to_flow("feedbak").when("the user has feedback")))
        .step(confirm())
        .build();
    let e = only(agent_errors(
        agent_builder().flow_opt(f).flow(feedback_flow()).build(),
    ));
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert!(e.problem.contains("`feedbak`"), "{}", e.problem);
    assert!(
        e.help
            .starts_with("did you mean `feedback`? known flows: `booking`, `feedback`"),
        "{}",
        e.help
    );
}

#[test]
fn on_complete_to_unregistered_flow_lists_registered_flows() {
    let f = flow("booking")
        .on_complete(Directive::go_to("survey"))
        .step(ask())
        .build();
    let e = only(agent_errors(
        agent_builder().flow_opt(f).flow(feedback_flow()).build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step, None);
    assert_eq!(
        e.problem,
        "target `survey` is neither a step of this flow nor a registered flow"
    );
    assert!(
        e.help.contains("known flows: `booking`, `feedback`"),
        "{}",
        e.help
    );
}

#[test]
fn directive_branch_to_unregistered_flow_is_rejected() {
    let f = flow("booking")
        .step(
            ask()
                .branch(Branch::to_directive(Directive::go_to("survey")).when("the user is done"))
                .branch(Branch::to_directive(Directive::complete_then(
                    Directive::go_to("faq"),
                ))),
        )
        .step(confirm())
        .build();
    let errs = agent_errors(agent_builder().flow_opt(f).flow(feedback_flow()).build());
    assert_eq!(errs.len(), 2, "{errs:#?}");
    for (e, target) in errs.iter().zip(["survey", "faq"]) {
        assert_eq!(e.flow, "booking");
        assert_eq!(e.step.as_deref(), Some("ask"));
        assert_eq!(
            e.problem,
            format!("target `{target}` is neither a step of this flow nor a registered flow")
        );
        assert!(
            e.help.contains("known flows: `booking`, `feedback`"),
            "{}",
            e.help
        );
    }
}

#[test]
fn cross_flow_go_to_step_naming_a_missing_step_suggests_that_flows_steps() {
    let f = flow("booking")
        .step(
            ask().branch(
                Branch::to_directive(Directive::go_to_step_in("feedback", "ask_feedbak"))
                    .when("the user has feedback"),
            ),
        )
        .step(confirm())
        .build();
    let e = only(agent_errors(
        agent_builder().flow_opt(f).flow(feedback_flow()).build(),
    ));
    assert_eq!(e.flow, "booking");
    assert_eq!(e.step.as_deref(), Some("ask"));
    assert_eq!(
        e.problem,
        "target step `ask_feedbak` does not exist in flow `feedback`"
    );
    assert_eq!(
        e.help,
        "did you mean `ask_feedback`? known steps: `ask_feedback`"
    );
}

#[test]
fn cross_flow_go_to_step_naming_an_existing_step_builds() {
    let f = flow("booking")
        .step(
            ask().branch(
                Branch::to_directive(Directive::go_to_step_in("feedback", "ask_feedback"))
                    .when("the user has feedback"),
            ),
        )
        .step(confirm())
        .on_complete(Directive::go_to("feedback"))
        .build();
    let errs = agent_errors(agent_builder().flow_opt(f).flow(feedback_flow()).build());
    assert_eq!(errs, Vec::new());
}

#[test]
fn agent_tool_with_invalid_name_is_rejected() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .tool(tool("book room", "Book the room."))
            .build(),
    ));
    assert_eq!(e.flow, "", "agent-level problems name no flow");
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "invalid tool name `book room`");
    assert!(
        e.help.contains("1 to 64 ASCII letters, digits"),
        "{}",
        e.help
    );
}

#[test]
fn agent_tool_without_description_is_rejected() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .tool(tool("lookup", "   "))
            .build(),
    ));
    assert_eq!(e.flow, "");
    assert_eq!(e.problem, "tool `lookup` has no description");
    assert!(e.help.contains("description"), "{}", e.help);
}

#[test]
fn duplicate_agent_tool_names_are_rejected() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .tool(tool("lookup", "Look up a hotel."))
            .tool(tool("lookup", "Look up a city."))
            .build(),
    ));
    assert_eq!(e.flow, "");
    assert_eq!(e.problem, "duplicate agent tool `lookup`");
    assert!(e.help.contains("unique"), "{}", e.help);
}

#[test]
fn duplicate_signal_ids_are_rejected() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .signal(handled_signal("frustration"))
            .signal(handled_signal("frustration"))
            .build(),
    ));
    assert_eq!(e.flow, "");
    assert_eq!(e.problem, "duplicate signal id `frustration`");
    assert!(e.help.contains("unique"), "{}", e.help);
}

#[test]
fn signal_without_handler_is_rejected() {
    let e = only(agent_errors(
        agent_builder()
            .flow(feedback_flow())
            .signal(Signal::new("frustration").when("the user is frustrated"))
            .build(),
    ));
    assert_eq!(e.flow, "");
    assert_eq!(e.problem, "signal `frustration` has no handler");
    assert!(e.help.contains(".handle("), "{}", e.help);
}

#[test]
fn agent_without_provider_is_rejected() {
    let e = only(agent_errors(
        Agent::<Booking, Concierge>::builder()
            .flow(feedback_flow())
            .build(),
    ));
    assert_eq!(e.flow, "");
    assert_eq!(e.step, None);
    assert_eq!(e.problem, "no provider");
    assert!(e.help.contains(".provider("), "{}", e.help);
    assert!(e.help.contains("ScriptedProvider"), "{}", e.help);
}

// ---------------------------------------------------------------- all at once

#[test]
fn all_problems_of_a_flow_are_reported_at_once() {
    let errs = flow_errors(
        flow("booking")
            .required(["city", "citty"])
            .on_complete(Directive::abort("done").reply("Bye."))
            .step(ask())
            .step(Step::model("ask").prompt("Again."))
            .step(Step::model("dates").prompt("Dates?").collect(["chek_in"]))
            .step(
                Step::auto("route")
                    .prompt("Route.")
                    .branch(Branch::to_step("confrm")),
            )
            .step(confirm())
            .build(),
    );
    let got: Vec<(Option<&str>, &str)> = errs
        .iter()
        .map(|e| (e.step.as_deref(), e.problem.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (None, "`required` names unknown field `citty`"),
            (Some("ask"), "duplicate step id `ask`"),
            (Some("dates"), "`collect` names unknown field `chek_in`"),
            (Some("route"), "an `auto` step cannot have `prompt`"),
            (Some("route"), "branch targets unknown step `confrm`"),
            (
                None,
                "on_complete directive: `reply` cannot be combined with `abort`: an aborted conversation delivers no reply"
            ),
        ],
        "{errs:#?}"
    );
    assert!(errs.iter().all(|e| e.flow == "booking"), "{errs:#?}");
    assert!(errs[0].help.starts_with("did you mean `city`?"));
    assert!(errs[2].help.starts_with("did you mean `check_in`?"));
    assert!(errs[4].help.starts_with("did you mean `confirm`?"));
}

#[test]
fn all_problems_of_an_agent_are_reported_at_once() {
    let errs = agent_errors(
        agent_builder()
            .flow(booking_flow(true))
            .flow(booking_flow(false))
            .tool(tool("book room", ""))
            .signal(Signal::new("frustration"))
            .build(),
    );
    let got: Vec<(&str, Option<&str>, &str)> = errs
        .iter()
        .map(|e| (e.flow.as_str(), e.step.as_deref(), e.problem.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("booking", None, "duplicate flow id `booking`"),
            (
                "booking",
                Some("confirm"),
                "target `feedback` is neither a step of this flow nor a registered flow"
            ),
            ("", None, "invalid tool name `book room`"),
            ("", None, "tool `book room` has no description"),
            ("", None, "signal `frustration` has no handler"),
        ],
        "{errs:#?}"
    );
}

#[test]
fn display_lists_each_error_on_its_own_line_with_flow_and_step() {
    let errs = ConfigErrors(flow_errors(
        flow("booking")
            .required(["citty"])
            .step(ask().branch(Branch::to_step("confrm")))
            .step(confirm())
            .build(),
    ));
    assert_eq!(errs.0.len(), 2, "{errs:#?}");
    let text = errs.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], "2 configuration error(s):");
    assert!(
        lines[1].starts_with(
            "  - flow `booking`: `required` names unknown field `citty` (did you mean `city`?"
        ),
        "{text}"
    );
    assert_eq!(
        lines[2],
        "  - flow `booking`, step `ask`: branch targets unknown step `confrm` (did you mean `confirm`? known steps: `ask`, `confirm`)"
    );

    let agent = ConfigErrors(agent_errors(Agent::<Booking, Concierge>::builder().build()));
    assert!(
        agent.to_string().ends_with("\n  - agent: no provider (call `.provider(..)`; `agent_core::testing::ScriptedProvider` works offline)"),
        "{agent}"
    );
}

// ---------------------------------------------------------------- valid definitions

#[test]
fn valid_flow_builds_with_steps_required_and_collectable_as_declared() {
    let f = flow("booking")
        .required(["check_in", "city"])
        .optional(["feedback", "city"])
        .step(Step::model("ask_city").prompt("City?").collect(["city"]))
        .step(
            Step::model("ask_more")
                .prompt("Dates and guests?")
                .collect(["guests", "check_in"])
                .requires(["city"]),
        )
        .step(
            Step::auto("route")
                .requires(["city", "check_in"])
                .branch(
                    Branch::to_step("big")
                        .if_(|cx: &Cx<'_, Booking, Concierge>| cx.data().guests > Some(8)),
                )
                .branch(Branch::to_step("confirm")),
        )
        .step(
            Step::model("confirm")
                .prompt("Confirm.")
                .collect(["booking_id", "guests"])
                .tool(book_room())
                .end(),
        )
        .step(Step::reply("big", "A specialist will call you.").end())
        .build();
    let Ok(f) = f else {
        panic!(
            "flow should build: {}",
            f.err().map(|e| e.to_string()).unwrap_or_default()
        );
    };
    assert_eq!(f.id(), "booking");
    assert_eq!(f.title(), "booking", "the title defaults to the id");
    let ids: Vec<&str> = f.steps().iter().map(|s| s.id()).collect();
    assert_eq!(ids, ["ask_city", "ask_more", "route", "confirm", "big"]);
    let kinds: Vec<&StepKind> = f.steps().iter().map(|s| s.kind()).collect();
    assert_eq!(
        kinds,
        [
            &StepKind::Model,
            &StepKind::Model,
            &StepKind::Auto,
            &StepKind::Model,
            &StepKind::Reply("A specialist will call you.".into()),
        ]
    );
    let names = |v: &[Arc<str>]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(names(f.required()), ["check_in", "city"]);
    assert_eq!(names(f.optional()), ["feedback", "city"]);
    assert_eq!(
        names(f.collectable()),
        ["check_in", "city", "feedback", "guests", "booking_id"],
        "required, then optional, then every step's collect, deduplicated, in that order"
    );
    assert_eq!(f.step("route").map(|s| s.branch_table().len()), Some(2));
    assert!(f.step("confirm").is_some_and(|s| s.is_end()));
    assert!(f.step("nowhere").is_none());
}

#[test]
fn valid_agent_with_cross_flow_targets_builds() {
    let r = agent_builder()
        .flow(booking_flow(true))
        .flow(feedback_flow())
        .tool(tool("lookup", "Look up a hotel."))
        .signal(handled_signal("frustration"))
        .build();
    let Ok(a) = r else {
        panic!(
            "agent should build: {}",
            r.err().map(|e| e.to_string()).unwrap_or_default()
        );
    };
    let ids: Vec<&str> = a.flows().map(|f| f.id()).collect();
    assert_eq!(ids, ["booking", "feedback"]);
}
