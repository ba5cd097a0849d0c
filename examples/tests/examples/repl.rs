//! The `repl` example driven by an in-memory terminal.

#[allow(dead_code)]
#[path = "../../examples/repl.rs"]
mod repl;

use std::io::Cursor;
use std::sync::Arc;

use agent_core::AgentConfig;

#[tokio::test]
async fn the_repl_streams_turns_shows_state_resets_and_quits() {
    let model = repl::scripted();
    let typed = "Hi, I need a hotel\n/state\nLisbon, for the two of us\n\n/state\n/flow status\n/nope\n/reset\n/state\n/quit\nnever read\n";
    let mut input = Cursor::new(typed.as_bytes());
    let mut out = Vec::new();
    let o = repl::run(
        Arc::new(model.clone()),
        AgentConfig::default(),
        &mut input,
        &mut out,
    )
    .await
    .unwrap();
    let printed = String::from_utf8(out).unwrap();

    assert_eq!(o.responses.len(), 3, "{printed}");
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    assert_eq!(o.responses[1].step.as_deref(), Some("ask_date"));
    assert!(
        printed.contains("agent: Active flow: `booking` (at step `ask_date`)."),
        "the agent's own /flow command: {printed}"
    );
    assert_eq!(o.resets, 1);
    assert!(o.quit);
    assert_eq!(
        model.calls(),
        2,
        "commands and empty lines cost no model call"
    );

    assert!(
        printed.contains("agent: Which city would you like to stay in?"),
        "{printed}"
    );
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
    assert!(printed.contains("unknown command /nope"), "{printed}");
    assert!(
        printed.contains("(no session yet: say something)"),
        "{printed}"
    );
    assert!(printed.trim_end().ends_with("bye"), "{printed}");
}

#[tokio::test]
async fn end_of_input_ends_the_repl_without_quit() {
    let mut input = Cursor::new(&b"/help\n"[..]);
    let mut out = Vec::new();
    let o = repl::run(
        Arc::new(repl::scripted()),
        AgentConfig::default(),
        &mut input,
        &mut out,
    )
    .await
    .unwrap();
    assert!(!o.quit);
    assert!(o.responses.is_empty());
    assert!(String::from_utf8(out).unwrap().contains("commands: /state"));
}
