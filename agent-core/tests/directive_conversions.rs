//! Directives that break the rules where they are converted into a tool's result:
//! a typed `ToolOutput` given two position fields and a runtime `Directive` with
//! `reply` and `abort` are errors (`ToolError::InvalidDirective`), not silently merged;
//! `complete_then(abort)` with a `reply` fails validation instead of losing the abort.

use agent_core::__private::{IntoToolResult, RtDirective};
use agent_core::error::DirectiveError;
use agent_core::tool::ToolError;
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Notes {
    /// Topic
    pub topic: String,
}

#[flow(data = Notes)]
mod feedback {
    #[step(prompt = "Ask for feedback.")]
    fn ask() {}
}

fn tool_result(o: ToolOutput) -> Result<agent_core::tool::ToolOutput, ToolError> {
    Ok::<_, ToolError>(o).into_tool_result()
}

#[test]
fn a_typed_tool_output_with_two_positions_is_an_error_not_a_merge() {
    let out = ToolOutput::text("done")
        .directive(Directive::complete())
        .directive(Directive::go_to::<FeedbackFlow>());
    match tool_result(out) {
        Err(ToolError::InvalidDirective(DirectiveError::MultiplePositions { fields })) => {
            assert_eq!(fields, ["complete", "goTo"]);
        }
        other => panic!("expected two positions, got {other:?}"),
    }
}

#[test]
fn one_position_and_state_writes_convert() {
    let out = ToolOutput::text("done")
        .data(Notes::patch().topic("rooms"))
        .directive(Directive::complete())
        .directive(Directive::reply("Thanks!"));
    let rt = tool_result(out).expect("valid");
    assert!(rt.directive.position.is_some());
    assert_eq!(rt.directive.reply.as_deref(), Some("Thanks!"));
}

#[test]
fn a_runtime_directive_with_reply_and_abort_is_an_error_where_the_tool_result_converts() {
    let out = ToolOutput::text("bye").directive(RtDirective::abort("spam").reply("bye"));
    assert!(matches!(
        tool_result(out),
        Err(ToolError::InvalidDirective(DirectiveError::ReplyWithAbort))
    ));
    let raw = agent_core::tool::ToolOutput::text("bye")
        .directive(RtDirective::abort("spam").reply("bye"));
    assert!(matches!(
        Ok::<_, ToolError>(raw).into_tool_result(),
        Err(ToolError::InvalidDirective(DirectiveError::ReplyWithAbort))
    ));
}

#[test]
fn complete_then_abort_with_a_reply_fails_validation() {
    let d = RtDirective::complete_then(RtDirective::abort("spam")).reply("bye");
    assert_eq!(d.validate(), Err(DirectiveError::ReplyWithAbort));
    let nested = RtDirective::complete_then(RtDirective::complete_then(RtDirective::abort("x")))
        .reply("bye");
    assert_eq!(nested.validate(), Err(DirectiveError::ReplyWithAbort));
    let fine = RtDirective::complete_then(RtDirective::reset()).reply("again");
    assert_eq!(fine.validate(), Ok(()));
}
