//! `triage` on its scripted model: three kinds of hand-over inside single turns.

#[allow(dead_code)]
#[path = "../../examples/triage.rs"]
mod triage;

use agent_core::provider::CallKind;
use agent_core::response::{DirectiveSource, Transition};

fn hop(from: &str, to: &str) -> Transition {
    Transition {
        from: Some(from.into()),
        to: to.into(),
    }
}

#[tokio::test]
async fn the_desk_hands_over_and_takes_back_within_each_turn() {
    let (model, (rs, tally), printed) = run_example!(triage);
    assert_eq!(tally.failed, 0, "{printed}");
    assert_eq!(rs.len(), 3, "{printed}");

    // The model switched to billing; billing spoke in the same turn, told what the
    // desk had written (not shown to the user).
    assert!(rs[0].transitions.contains(&hop("triage", "billing")));
    let billing = &model.requests()[1];
    assert!(
        billing
            .instructions()
            .contains("\"Let me get you to billing.\""),
        "{}",
        billing.system
    );
    assert_eq!(rs[0].flow.as_deref(), Some("billing"));
    assert_eq!(
        rs[0].message,
        "Billing here. Which invoice was charged twice?"
    );
    assert!(
        rs[0]
            .directive_chain
            .iter()
            .any(|e| e.source == DirectiveSource::ModelSwitch("billing".into()))
    );

    // The refund tool sent the user back to the desk (code decides) and wrote the
    // reply: no model call after the refund.
    assert!(rs[1].transitions.contains(&hop("billing", "triage")));
    assert_eq!(rs[1].flow.as_deref(), Some("triage"));
    assert_eq!(rs[1].tool_calls[0].name, "refund");
    assert_eq!(rs[1].data.invoice.as_deref(), Some("INV-7"));
    assert_eq!(
        rs[1].message,
        "Refunded the duplicate charge on INV-7. Anything else I can help with?"
    );
    assert_eq!(rs[1].model_calls, 1, "{printed}");

    // The desk's `when` branch, judged in its reply call, sent the user to support.
    assert!(rs[2].transitions.contains(&hop("triage", "tech")));
    assert_eq!(
        (rs[2].flow.as_deref(), rs[2].step.as_deref()),
        (Some("tech"), Some("ask_device"))
    );

    // The stream showed every hop.
    for line in [
        "transition triage -> billing",
        "transition billing -> triage",
        "transition triage -> tech",
    ] {
        assert!(printed.contains(line), "{line} missing from\n{printed}");
    }
    assert_eq!(
        model.calls_of(CallKind::Route) + model.calls_of(CallKind::Classify),
        0
    );
    assert_eq!(model.unused(), 0);
}
