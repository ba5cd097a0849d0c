//! The main example on its scripted model: the guest books in four turns.

#[allow(dead_code)]
#[path = "../../examples/concierge.rs"]
mod concierge;

use agent_core::prelude::*;
use agent_core::testing::ScriptedProvider;

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

    // Its question is code's summary of the state; the yes to it runs `book_room`
    // with no model call, which completes the flow and writes the reply.
    assert_eq!(
        r(2).message,
        format!(
            "Here is your booking: a room in Lisbon from {} for 2 guest(s). Shall I book it?",
            crate::spoken(concierge::next_july_first())
        )
    );
    assert_eq!(r(3).stopped, StoppedReason::Reply);
    assert_eq!(r(3).data.booking_id.as_deref(), Some("LISBON-2"));
    assert_eq!(r(3).tool_calls[0].name, "book_room");
    assert_eq!(r(3).model_calls, 0, "a plain yes to the summary");
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
    assert_eq!(t.model_calls(), 3);
    assert!(printed.contains("3 model calls"), "{printed}");
}

// The conversation typed in a terminal (`concierge::talk`, on `examples::repl`), driven
// by in-memory input and output.

/// Type `typed` into the concierge on `model`; what the runner returned and printed.
async fn type_in(
    model: &ScriptedProvider,
    config: AgentConfig,
    typed: &[u8],
) -> (examples::repl::ReplOutcome<concierge::Booking>, String) {
    let mut input = std::io::Cursor::new(typed);
    let mut out = Vec::new();
    let o = concierge::talk(
        std::sync::Arc::new(model.clone()),
        config,
        &mut input,
        &mut out,
    )
    .await
    .unwrap();
    (o, String::from_utf8(out).unwrap())
}

#[tokio::test]
async fn typed_messages_stream_replies_and_commands_show_state_reset_and_quit() {
    let model = concierge::scripted_chat();
    let typed = "Hi, I need a hotel\n/state\nLisbon, for the two of us\n/state\n/flow status\n/nope\n/reset\n/state\n/quit\nnever read\n";
    let (o, printed) = type_in(&model, AgentConfig::default(), typed.as_bytes()).await;

    assert_eq!(o.responses.len(), 3, "{printed}");
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(o.responses[1].step.as_deref(), Some("ask_date"));
    assert!(
        printed.contains("agent: Which city would you like to stay in?"),
        "{printed}"
    );
    // `/state`: the session's flow, step and data.
    assert!(
        printed.contains("flow: booking  step: ask_city  turns: 1"),
        "{printed}"
    );
    assert!(
        printed.contains("flow: booking  step: ask_date  turns: 2"),
        "{printed}"
    );
    assert!(
        printed.contains("data: {\"city\":\"Lisbon\",\"guests\":2}"),
        "{printed}"
    );
    // The agent's own `/flow` commands are on in the terminal.
    assert!(
        printed.contains("agent: Active flow: `booking` (at step `ask_date`)."),
        "{printed}"
    );
    assert!(printed.contains("unknown command /nope"), "{printed}");
    // `/reset`: a new session, which has no state until the next message.
    assert_eq!((o.resets, o.session.as_str()), (1, "terminal-2"));
    assert!(
        printed.contains("(new session terminal-2: the next message starts over)"),
        "{printed}"
    );
    assert!(
        printed.contains("(no session yet: say something)"),
        "{printed}"
    );
    // `/quit` ends it: the line after it is never read.
    assert!(o.quit);
    assert!(printed.trim_end().ends_with("bye"), "{printed}");
    assert_eq!(model.calls(), 2, "commands cost no model call");
}

#[tokio::test]
async fn a_new_session_after_reset_starts_the_booking_over() {
    let model = concierge::scripted_chat();
    let typed = "Hi, I need a hotel\nLisbon, for the two of us\n/reset\nJuly 1st\n/state\n";
    let (o, printed) = type_in(&model, AgentConfig::default(), typed.as_bytes()).await;
    assert_eq!(o.responses.len(), 3, "{printed}");
    // The third message went to the new session: no city, no guests there.
    let last = o.responses.last().unwrap();
    assert_eq!(last.data.city, None, "{printed}");
    assert!(printed.contains("turns: 1"), "{printed}");
}

#[tokio::test]
async fn end_of_input_quits_and_empty_lines_are_ignored() {
    let model = concierge::scripted_chat();
    // Ctrl-D arrives as the end of input; blank lines and spaces send nothing.
    let (o, printed) = type_in(&model, AgentConfig::default(), b"\n   \n\t\n/help\n\n").await;
    assert!(!o.quit, "the input ended, nobody typed /quit");
    assert!(o.responses.is_empty() && o.errors.is_empty(), "{printed}");
    assert_eq!(o.tally.turns, 0);
    assert_eq!(model.calls(), 0, "empty lines cost no model call");
    assert!(printed.contains("commands: /state"), "{printed}");
    assert!(printed.trim_end().ends_with("bye"), "{printed}");
}

#[tokio::test]
async fn an_over_limit_message_prints_the_typed_error_and_the_conversation_goes_on() {
    let model = concierge::scripted_chat();
    let config = AgentConfig {
        max_message_bytes: 64,
        ..AgentConfig::default()
    };
    let long = "a".repeat(100);
    let typed = format!("Hi, I need a hotel\n{long}\n/state\nLisbon, for the two of us\n");
    let (o, printed) = type_in(&model, config, typed.as_bytes()).await;

    let expected = agent_core::error::AgentError::MessageTooLarge {
        len: 100,
        limit: 64,
    }
    .to_string();
    assert_eq!(o.errors.len(), 1, "{printed}");
    assert_eq!(o.errors[0], expected);
    assert!(
        printed.contains(&format!("error: {expected} (the session is unchanged)")),
        "{printed}"
    );
    // The refused message changed nothing and cost no call; the next one goes on.
    assert!(printed.contains("step: ask_city  turns: 1"), "{printed}");
    assert_eq!(o.responses.len(), 2, "{printed}");
    assert_eq!(o.responses[1].step.as_deref(), Some("ask_date"));
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn input_that_is_not_utf8_does_not_end_the_conversation() {
    let model = concierge::scripted_chat();
    let (o, printed) = type_in(
        &model,
        AgentConfig::default(),
        b"Hi, I need a \xff hotel\n/state\n/quit\n",
    )
    .await;
    assert_eq!(o.responses.len(), 1, "{printed}");
    assert!(o.quit);
    assert!(printed.contains("step: ask_city"), "{printed}");
}

#[test]
fn a_terminal_talks_and_a_pipe_or_demo_flag_plays_the_demo() {
    use concierge::{Mode, mode};
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(mode(&args(&[]), true), Ok(Mode::Talk));
    assert_eq!(mode(&args(&[]), false), Ok(Mode::Demo));
    assert_eq!(mode(&args(&["--demo"]), true), Ok(Mode::Demo));
    let e = mode(&args(&["--talk"]), true).unwrap_err();
    assert!(e.contains("`--talk`") && e.contains("--demo"), "{e}");
}
