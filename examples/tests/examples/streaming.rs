//! `streaming` on its scripted model: the events of each turn, in order.

#[allow(dead_code)]
#[path = "../../examples/streaming.rs"]
mod streaming;

#[tokio::test]
async fn each_turn_streams_its_events_and_ends_with_done() {
    let (model, (turns, tally), printed) = run_example!(streaming);
    assert_eq!((tally.turns, tally.failed), (3, 0), "{printed}");
    assert_eq!(turns.len(), 3);
    for events in &turns {
        assert_eq!(events.last(), Some(&"done"), "{events:?}\n{printed}");
        assert_eq!(events.iter().filter(|e| **e == "done").count(), 1);
        // The model streams in pieces: the reply arrives in several deltas.
        assert!(
            events.iter().filter(|e| **e == "text").count() > 1,
            "{events:?}"
        );
        assert!(!events.contains(&"error"), "{printed}");
    }
    // Entering the flow: a transition, then the steps walked.
    assert_eq!(turns[0][0], "transition");
    assert!(
        turns[0].iter().filter(|e| **e == "step").count() >= 2,
        "{:?}",
        turns[0]
    );
    // The order turn: the tool call, then its result, then the text.
    let pos = |e: &str| turns[2].iter().position(|x| *x == e).unwrap();
    assert!(pos("tool_call") < pos("tool_result") && pos("tool_result") < pos("text"));

    assert!(printed.contains("place_order returned: order P-17 placed: margherita, 30 min"));
    assert!(
        printed.contains(
            "  ~ text: Ordered! Your margherita arrives in about 30 minutes. Is there anything else I can help with?\n"
        ),
        "{printed}"
    );
    assert!(printed.contains("flow `order` completed"), "{printed}");
    assert_eq!(model.unused(), 0);
}
