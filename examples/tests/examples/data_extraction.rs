//! `data_extraction` on its scripted model: a field outside the flow is dropped, an
//! invalid value is rejected, the flow completes with typed data.

#[allow(dead_code)]
#[path = "../../examples/data_extraction.rs"]
mod data_extraction;

use agent_core::prelude::*;
use agent_core::provider::CallKind;

#[tokio::test]
async fn fields_are_validated_dropped_or_rejected_and_the_signup_completes() {
    let (model, t, printed) = run_example!(data_extraction);
    assert_eq!(t.failures(), 0, "{printed}");

    // The schema printed first comes from the doc comments.
    assert!(
        printed.contains("Age in years (a whole number)"),
        "{printed}"
    );

    // `score` is not collected by the flow: dropped, never written.
    let r = t.response(0).unwrap();
    assert_eq!(r.dropped_fields, ["score"]);
    assert_eq!(r.data.score, None);
    assert_eq!(r.data.name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(r.step.as_deref(), Some("ask_email"));

    // Two fields at once, one optional.
    let r = t.response(1).unwrap();
    assert_eq!(r.data.email.as_deref(), Some("ada@example.com"));
    assert_eq!(r.data.newsletter, Some(true));
    assert_eq!((r.step.as_deref(), r.model_calls), (Some("ask_age"), 1));

    // "thirty-six" is not a u8: rejected, the step asks again.
    let r = t.response(2).unwrap();
    assert_eq!(r.rejected_data.len(), 1, "{:?}", r.rejected_data);
    assert!(r.rejected_data[0].contains("age"), "{:?}", r.rejected_data);
    assert_eq!(r.data.age, None);
    assert_eq!(r.step.as_deref(), Some("ask_age"));

    // 36 is: the verbatim reply step ends the flow.
    let r = t.response(3).unwrap();
    assert_eq!(r.data.age, Some(36));
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "You're all set. Welcome aboard!");
    assert_eq!(r.flow, None);

    assert_eq!(model.calls_of(CallKind::Extract), 2);
    assert_eq!(model.unused(), 0);
}
