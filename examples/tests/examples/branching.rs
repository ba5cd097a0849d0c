//! `branching` on its scripted model: a code branch, a model-judged branch into another
//! flow, and an urgent ticket escalated without a reply call.

#[allow(dead_code)]
#[path = "../../examples/branching.rs"]
mod branching;

use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::response::DirectiveSource;

#[tokio::test]
async fn code_and_model_branches_route_each_ticket() {
    let (model, t, printed) = run_example!(branching);
    assert_eq!(t.failures(), 0, "{printed}");

    // Severity 2: the auto step's code branch picks self-help.
    let r = t.response(0).unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("support"), Some("self_help"))
    );
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::Branch("triage".into()))
    );
    assert_eq!(
        r.message,
        "E42 is a paper jam: open tray 2 and pull the sheet out."
    );

    // "Talk to a person": judged in the reply call, the branch leaves for `callback`.
    let r = t.response(1).unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("callback"), Some("ask_phone"))
    );
    assert_eq!(
        r.transitions.last().map(|h| h.to.as_str()),
        Some("callback")
    );
    assert_eq!(r.message, "Of course. Which number should we call?");

    // Severity 5: the labelled code branch escalates with the verbatim reply.
    let r = t.response(2).unwrap();
    assert_eq!(r.session_id, "fire");
    assert_eq!(r.data.severity, Some(5));
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "An engineer will call you within the hour.");
    assert!(
        r.directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::Branch("triage:urgent".into()))
    );

    assert_eq!(
        model.calls_of(CallKind::Classify),
        0,
        "when branches are judged while replying"
    );
    assert_eq!(model.calls_of(CallKind::Route), 2, "one per new ticket");
    assert_eq!(model.unused(), 0);
}
