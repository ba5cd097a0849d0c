//! `signals` on its scripted model: a code signal that replies and halts, a judged
//! signal that extracts and writes data, and a once-only signal.

#[allow(dead_code)]
#[path = "../../examples/signals.rs"]
mod signals;

use agent_core::prelude::*;
use agent_core::provider::CallKind;

#[tokio::test]
async fn signals_reply_extract_augment_and_fire_once() {
    let (model, t, printed) = run_example!(signals);
    assert_eq!(t.failures(), 0, "{printed}");

    // Code signal: verbatim reply, no reply call, no flow entered.
    let r = t.response(0).unwrap();
    assert_eq!(r.signals, ["opening_hours"]);
    assert_eq!(r.stopped, StoppedReason::Reply);
    assert_eq!(r.message, "We answer every day from 8:00 to 20:00.");
    assert_eq!(r.flow, None);

    // Both judged signals fire from one classifier call; the order number is written
    // before the flow runs, so its step is skipped.
    let r = t.response(1).unwrap();
    assert_eq!(r.signals, ["order_number", "frustrated"]);
    assert_eq!(r.data.order_id.as_deref(), Some("A-1042"));
    assert_eq!(r.step.as_deref(), Some("ask_problem"));
    assert_eq!(r.model_calls, 2, "classify + respond");
    let respond = model
        .requests()
        .into_iter()
        .find(|q| q.kind == CallKind::Respond)
        .unwrap();
    assert!(
        respond
            .instructions()
            .contains("apologise first, once, briefly")
    );

    // Still upset, but `frustrated` fires once per session.
    let r = t.response(2).unwrap();
    assert!(r.signals.is_empty(), "{:?}", r.signals);
    assert_eq!(r.data.problem.as_deref(), Some("never arrived"));
    assert_eq!(r.step.as_deref(), Some("resolve"));

    assert_eq!(model.calls_of(CallKind::Classify), 3, "one per turn");
    assert_eq!(model.unused(), 0);
}
