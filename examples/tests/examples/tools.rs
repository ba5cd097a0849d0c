//! `tools` on its scripted model: parallel calls, a failing tool, a tool writing data
//! and the flow completing.

#[allow(dead_code)]
#[path = "../../examples/tools.rs"]
mod tools;

use agent_core::prelude::*;

#[tokio::test]
async fn tools_run_report_errors_write_data_and_the_trip_completes() {
    let (model, t, printed) = run_example!(tools);
    assert_eq!(t.failures(), 0, "{printed}");

    // Two weather calls in one answer: one works, one fails; the model sees both.
    let r = t.response(0).unwrap();
    assert_eq!(r.tool_calls.len(), 2);
    assert!(r.tool_calls[0].ok && r.tool_calls[0].output.contains("sunny"));
    assert!(!r.tool_calls[1].ok && r.tool_calls[1].output.contains("no forecast for Atlantis"));
    assert_eq!(r.model_calls, 2, "respond + tool round");
    let fed_back = &model.requests()[1];
    assert!(
        fed_back
            .messages
            .iter()
            .any(|m| m.content.as_str().contains("no forecast for Atlantis")),
        "the error went back to the model"
    );

    let r = t.response(1).unwrap();
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.step.as_deref(), Some("price"));

    // The quote tool read the city from the session and wrote the price.
    let r = t.response(2).unwrap();
    assert_eq!(r.tool_calls[0].output, "3 nights in Lisbon: 270 EUR");
    assert_eq!(r.data.quote, Some(270));
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "trip".into()
        }
    );

    assert_eq!(model.unused(), 0);
}
