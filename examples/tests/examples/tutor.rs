//! The tutor → reminder code flows of the RFC, run as the example runs them.

#[path = "../../examples/tutor.rs"]
#[allow(dead_code)]
mod tutor;

use agent_core::prelude::*;

#[tokio::test]
async fn tutor_hands_off_to_reminder_and_schedules_it() {
    let (model, (rs, tally), text) = run_example!(tutor);
    assert_eq!(tally.failed, 0, "{text}");
    assert_eq!(rs[0].message, "What's your name?");
    assert_eq!(rs[0].flow.as_deref(), Some("tutor"));
    assert_eq!(
        rs[1].message,
        "Nice to meet you, Ana.\n\nSend one sentence in English."
    );
    assert_eq!(
        rs[2].message,
        "Corrected: yesterday I went to the market\n\nWhat should I remind you about?"
    );
    assert_eq!(rs[2].flow.as_deref(), Some("reminder"));
    assert_eq!(rs[2].meta.handoff_from.as_deref(), Some("tutor"));
    assert_eq!(rs[3].step.as_deref(), Some("delay"));
    let last = &rs[4];
    assert_eq!(
        last.stopped,
        StoppedReason::FlowCompleted {
            flow: "reminder".into()
        }
    );
    assert_eq!(last.data.reminder_id.as_deref(), Some("R-27"));
    assert!(
        last.message.starts_with("Scheduled R-27"),
        "{}",
        last.message
    );
    let calls: Vec<u32> = rs.iter().map(|r| r.model_calls).collect();
    assert_eq!(
        calls,
        vec![1, 1, 0, 1, 1],
        "routing once, then one extraction per typed answer; the sentence is verbatim"
    );
    assert_eq!(model.unused(), 0);
    assert!(text.contains("agent: What should I remind you about?"));
    assert_eq!(last.meta.end_reason.as_deref(), Some("reminder_scheduled"));
    assert!(text.contains("ended: reminder_scheduled]"), "{text}");
}
