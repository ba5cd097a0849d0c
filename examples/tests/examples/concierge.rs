//! The main example on its scripted model: the guest books in four turns.

#[allow(dead_code)]
#[path = "../../examples/concierge.rs"]
mod concierge;

use agent_core::prelude::*;

#[tokio::test]
async fn the_guest_books_a_room_in_lisbon_in_four_turns() {
    let (model, t, printed) = run_example!(concierge, AgentConfig::default());
    assert_eq!(t.failures(), 0, "{printed}");
    let r = |i: usize| t.response(i).unwrap();

    assert_eq!(r(0).flow.as_deref(), Some("booking"));
    assert_eq!(r(0).step.as_deref(), Some("ask_city"));
    assert_eq!(r(0).stopped, StoppedReason::NeedsInput);

    // City and guests in one message: the date is asked next, in one call.
    assert_eq!(r(1).step.as_deref(), Some("ask_date"));
    assert_eq!(r(1).data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r(1).data.guests, Some(2));
    assert_eq!(r(1).model_calls, 1);

    // The date: ask_guests is already satisfied, route needs no model: confirm.
    assert_eq!(r(2).step.as_deref(), Some("confirm"));
    let steps: Vec<&str> = r(2)
        .executed_steps
        .iter()
        .map(|s| s.step.as_str())
        .collect();
    assert!(steps.ends_with(&["route", "confirm"]), "{steps:?}");
    assert_eq!(r(2).model_calls, 1);

    // The tool books, completes the flow and writes the reply from the state: the
    // model is not called after it.
    assert_eq!(r(3).stopped, StoppedReason::Reply);
    assert_eq!(r(3).data.booking_id.as_deref(), Some("LISBON-2"));
    assert_eq!(r(3).tool_calls[0].name, "book_room");
    assert_eq!(
        r(3).model_calls,
        1,
        "the tool's reply replaces the tool round"
    );
    assert_eq!(r(3).flow, None);
    // "July 1st" is the next July 1st on today's clock (`check_in` is `not_past`).
    assert_eq!(
        r(3).message,
        format!(
            "Done: a room in Lisbon, 2 guests, checking in {}. Booking reference LISBON-2.",
            concierge::next_july_first()
        )
    );

    assert_eq!(model.unused(), 0, "every scripted answer was used");
    assert_eq!(t.model_calls(), 4);
    assert!(printed.contains("4 model calls"), "{printed}");
}
