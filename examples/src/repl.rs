//! The interactive terminal for any agent: type a message, watch the reply stream in.
//! The main example (`cargo run -p examples --example concierge`) runs its agent here
//! when stdin is a terminal.
//!
//! ```no_run
//! # async fn demo<D: agent_core::data::AgentData, C: agent_core::data::AgentContext>(
//! #     agent: agent_core::Agent<D, C>) -> std::io::Result<()> {
//! examples::repl::run(&agent, "terminal").await?;
//! # Ok(()) }
//! ```
//!
//! Commands: `/state` (flow, step, collected data), `/reset` (a new session: the next
//! message starts over), `/help`, `/quit`; end of input (Ctrl-D) quits too, and empty
//! lines are ignored. A message the agent refuses (over `AgentConfig::max_message_bytes`,
//! for instance) prints the error's text and the conversation goes on; input that is not
//! UTF-8 is read with replacement characters. `/flow ...` lines go to the agent, which
//! reads them as commands when its `AgentConfig::flow_commands` is on.

use std::io::{self, BufRead, Write};

use agent_core::prelude::*;
use futures::StreamExt;

use crate::exit::Tally;
use crate::show;

/// What happened during a REPL session.
#[derive(Debug)]
pub struct ReplOutcome<D> {
    /// Responses of the turns that succeeded, in order.
    pub responses: Vec<AgentResponse<D>>,
    /// Errors of the turns that failed, as printed.
    pub errors: Vec<String>,
    /// How many times the user started a new session (`/reset`).
    pub resets: usize,
    /// The session the last turn went to: the id given to [`run_with`], then
    /// `ID-2`, `ID-3`, … after each `/reset`.
    pub session: String,
    /// Whether the user typed `/quit` (rather than ending the input).
    pub quit: bool,
    /// How the turns went, for the exit status.
    pub tally: Tally,
}

const HELP: &str = "commands: /state (flow, step, data)  /reset (new session)  /help  /quit (or Ctrl-D)  /flow <id|stop|status> (agents with flow commands on)";

/// Run the REPL on the terminal (stdin, stdout).
pub async fn run<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session_id: &str,
) -> io::Result<ReplOutcome<D>> {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut out = io::stdout();
    run_with(agent, session_id, &mut input, &mut out).await
}

/// Run the REPL reading lines from `input` and writing to `out`: what [`run`] does on
/// the terminal, for tests and for front ends of your own.
pub async fn run_with<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session_id: &str,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> io::Result<ReplOutcome<D>> {
    let mut outcome = ReplOutcome {
        responses: Vec::new(),
        errors: Vec::new(),
        resets: 0,
        session: session_id.to_owned(),
        quit: false,
        tally: Tally::default(),
    };
    writeln!(out, "{} is listening. {HELP}", agent.name())?;
    let mut bytes = Vec::new();
    loop {
        write!(out, "> ")?;
        out.flush()?;
        bytes.clear();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            // End of input (Ctrl-D): the prompt line ends before the goodbye.
            writeln!(out)?;
            break;
        }
        let line = String::from_utf8_lossy(&bytes);
        let message = line.trim();
        let session = outcome.session.clone();
        match message {
            "" => continue,
            "/quit" | "/exit" => {
                outcome.quit = true;
                break;
            }
            "/help" => writeln!(out, "{HELP}")?,
            "/state" => state(agent, &session, out).await?,
            "/reset" => {
                // A new session id rather than deleting the old one: nothing can fail,
                // and a durable store keeps the earlier conversation.
                outcome.resets += 1;
                outcome.session = format!("{session_id}-{}", outcome.resets + 1);
                writeln!(
                    out,
                    "(new session {}: the next message starts over)",
                    outcome.session
                )?;
            }
            // The agent's own `/flow` commands (`AgentConfig::flow_commands`).
            m if m == "/flow" || m.starts_with("/flow ") => {
                turn(agent, &session, m, out, &mut outcome).await?
            }
            m if m.starts_with('/') => writeln!(out, "unknown command {m}; {HELP}")?,
            m => turn(agent, &session, m, out, &mut outcome).await?,
        }
    }
    writeln!(out, "bye")?;
    Ok(outcome)
}

/// One streamed turn: progress events as they happen, then the reply text, then the
/// details of the finished turn.
async fn turn<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session_id: &str,
    message: &str,
    out: &mut dyn Write,
    outcome: &mut ReplOutcome<D>,
) -> io::Result<()> {
    let mut events = agent.respond_stream(session_id, message);
    let mut speaking = false;
    let mut said = false;
    while let Some(event) = events.next().await {
        // Text may stream before the last progress events: keep those on their own line.
        if speaking && !matches!(event, Event::TextDelta(_) | Event::Done(_)) {
            writeln!(out)?;
            speaking = false;
        }
        match event {
            Event::Transition(t) => writeln!(
                out,
                "  [hop {} -> {}]",
                t.from.as_deref().unwrap_or("(no flow)"),
                t.to
            )?,
            Event::StepEntered(s) => writeln!(out, "  [step {}/{}]", s.flow, s.step)?,
            Event::ToolCall { name, arguments } => {
                writeln!(out, "  [calling {name}({arguments})]")?;
            }
            Event::ToolResult(t) => writeln!(out, "  [{} -> {}]", t.name, t.output)?,
            Event::ApprovalRequested(c) => writeln!(
                out,
                "  [{}({}) waits for a person's approval, call {}]",
                c.tool, c.arguments, c.id
            )?,
            Event::DataDropped(d) => {
                writeln!(
                    out,
                    "  [not stored: {} = {} ({})]",
                    d.field, d.value, d.reason
                )?;
            }
            Event::TextDelta(text) => {
                if !speaking {
                    write!(out, "{}", if said { "       " } else { "agent: " })?;
                    speaking = true;
                    said = true;
                }
                write!(out, "{text}")?;
                out.flush()?;
            }
            Event::Done(r) => {
                if speaking {
                    writeln!(out)?;
                } else if !r.message.is_empty() && !said {
                    writeln!(out, "agent: {}", r.message)?;
                }
                show::details(out, &*r)?;
                outcome.tally.ok();
                outcome.responses.push(*r);
            }
            Event::Error(e) => {
                writeln!(out, "error: {e} (the session is unchanged)")?;
                outcome.tally.failure(&e);
                outcome.errors.push(e.to_string());
            }
        }
    }
    Ok(())
}

/// Print where the session is and what it collected.
async fn state<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session_id: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    match agent.session(session_id).await {
        Ok(Some(s)) => {
            writeln!(
                out,
                "flow: {}  step: {}  turns: {}",
                s.flow.as_deref().unwrap_or("-"),
                s.step.as_deref().unwrap_or("-"),
                s.turns
            )?;
            writeln!(out, "data: {}", show::data(&s.data))?;
            if !s.completed_flows.is_empty() {
                writeln!(out, "completed: {}", s.completed_flows.join(", "))?;
            }
            Ok(())
        }
        Ok(None) => writeln!(out, "(no session yet: say something)"),
        Err(e) => writeln!(out, "error: {e}"),
    }
}
