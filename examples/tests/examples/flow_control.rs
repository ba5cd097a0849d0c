//! `flow_control` on its scripted model: directives from outside, from hooks, from a
//! tool and from `on_complete`, all in the directive chain.

#[allow(dead_code)]
#[path = "../../examples/flow_control.rs"]
mod flow_control;

use agent_core::directive::Directive;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::response::DirectiveSource;

#[tokio::test]
async fn every_emitter_steers_the_recovery_and_the_survey_follows() {
    let (model, t, printed) = run_example!(flow_control);
    assert_eq!(t.failures(), 0, "{printed}");
    let sources = |i: usize| -> Vec<DirectiveSource> {
        t.response(i)
            .unwrap()
            .directive_chain
            .iter()
            .map(|e| e.source.clone())
            .collect()
    };

    // The dispatched directive decides the first turn: no routing call.
    let r = t.response(0).unwrap();
    assert_eq!(r.flow.as_deref(), Some("recover"));
    assert!(sources(0).contains(&DirectiveSource::Pending));
    assert!(sources(0).contains(&DirectiveSource::Prepare("ask_email".into())));
    assert!(
        model.requests()[0]
            .instructions()
            .contains("Never say whether an account exists.")
    );
    assert_eq!(model.calls_of(CallKind::Route), 0);

    // A wrong code: the tool counts it, the loop branch keeps the user at `verify`.
    let r = t.response(2).unwrap();
    assert_eq!(r.step.as_deref(), Some("verify"));
    assert_eq!(r.data.attempts, Some(1));
    assert_eq!(r.tool_calls[0].output, "wrong code");

    // The right code: the tool's `complete` outranks the branch; on_complete starts
    // the survey, which asks in the same turn.
    let r = t.response(3).unwrap();
    assert_eq!(r.data.verified, Some(true));
    assert!(sources(3).contains(&DirectiveSource::Tool("check_code".into())));
    assert!(r.directive_chain.iter().any(|e| e.source
        == DirectiveSource::OnComplete("recover".into())
        && e.directive == Directive::go_to("survey")));
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("survey"), Some("ask_rating"))
    );
    assert_eq!(
        r.message,
        "You're verified: you can log in again.\n\nHow helpful was this, from 1 to 5?"
    );

    // The next message answers the survey, which completes.
    let r = t.response(4).unwrap();
    assert_eq!(r.data.rating, Some(4));
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "survey".into()
        }
    );

    assert_eq!(model.calls_of(CallKind::Route), 0);
    assert_eq!(model.unused(), 0);
}
