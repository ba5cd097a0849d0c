//! `quickstart` on its scripted model: the name is collected, the greeting flow
//! completes.

#[allow(dead_code)]
#[path = "../../examples/quickstart.rs"]
mod quickstart;

use agent_core::prelude::*;

#[tokio::test]
async fn the_user_is_asked_their_name_greeted_and_the_flow_completes() {
    let (model, t, printed) = run_example!(quickstart);
    assert_eq!(t.failures(), 0, "{printed}");

    let r = t.response(0).unwrap();
    assert_eq!(
        (r.flow.as_deref(), r.step.as_deref()),
        (Some("greeting"), Some("ask_name"))
    );
    assert_eq!(r.stopped, StoppedReason::NeedsInput);

    let r = t.response(1).unwrap();
    assert_eq!(r.step.as_deref(), Some("greet"));
    assert_eq!(r.data.name.as_deref(), Some("Ada"));
    assert_eq!(r.model_calls, 1, "extraction and reply in one call");

    let r = t.response(2).unwrap();
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "greeting".into()
        }
    );
    assert_eq!(r.flow, None);

    assert_eq!(t.model_calls(), 3);
    assert_eq!(model.unused(), 0);
    assert!(
        printed.contains("agent: Nice to meet you, Ada!"),
        "{printed}"
    );
}
