//! Printing what a turn did: the reply, where the conversation is, the collected data,
//! the model calls, tool calls, flow hops and the directive chain.

use std::io::{self, Write};

use agent_core::error::AgentError;
use agent_core::prelude::*;
use agent_core::response::ChainEntry;
use serde::Serialize;
use serde_json::Value;

use crate::exit::{Outcome, Tally};

/// The data as compact JSON without the fields still missing (`null`).
pub fn data<D: Serialize>(data: &D) -> String {
    match serde_json::to_value(data) {
        Ok(Value::Object(mut map)) => {
            map.retain(|_, v| !v.is_null());
            Value::Object(map).to_string()
        }
        Ok(other) => other.to_string(),
        Err(e) => format!("<unprintable: {e}>"),
    }
}

/// Why a turn stopped, in words.
pub fn stopped(reason: &StoppedReason) -> String {
    match reason {
        StoppedReason::NeedsInput => "needs input".into(),
        StoppedReason::FlowCompleted { flow } => format!("flow `{flow}` completed"),
        StoppedReason::FlowCancelled { flow } => format!("flow `{flow}` cancelled"),
        StoppedReason::HumanHandoff => "handed over to a person".into(),
        StoppedReason::Reply => "verbatim reply".into(),
        StoppedReason::Halt => "halted".into(),
        StoppedReason::Aborted { reason } => match reason {
            Some(r) => format!("aborted ({r})"),
            None => "aborted".into(),
        },
        StoppedReason::AutoStepCap { step } => format!("auto-step cap at `{step}`"),
        StoppedReason::TransitionCap { blocked } => format!("transition cap (blocked `{blocked}`)"),
        StoppedReason::Responded => "replied outside any flow".into(),
        StoppedReason::AwaitingApproval { calls } => {
            format!("awaiting approval ({})", calls.join(", "))
        }
        StoppedReason::FlowFailed {
            flow,
            message,
            cleared,
            ..
        } => format!(
            "code flow `{flow}` failed ({message}){}",
            if *cleared { "; cleared" } else { "" }
        ),
        // Reasons added by later versions of the engine.
        other => format!("{other:?}"),
    }
}

/// One directive-chain entry: who emitted what.
pub fn chain_entry(e: &ChainEntry) -> String {
    let mut s = format!("{} -> {}", e.source, e.directive.to_json());
    if !e.append_prompt.is_empty() {
        s.push_str(&format!(" +prompt {:?}", e.append_prompt));
    }
    if !e.inject_tools.is_empty() {
        s.push_str(&format!(" +tools {:?}", e.inject_tools));
    }
    if e.halt {
        s.push_str(" +halt");
    }
    s
}

/// Print a turn: the user's message, the reply and what happened.
pub fn turn<D: Serialize>(out: &mut dyn Write, user: &str, r: &AgentResponse<D>) -> io::Result<()> {
    writeln!(out, "user:  {user}")?;
    response(out, r)
}

/// Print a response (the reply and what happened), without the user's message.
pub fn response<D: Serialize>(out: &mut dyn Write, r: &AgentResponse<D>) -> io::Result<()> {
    writeln!(out, "agent: {}", r.message)?;
    details(out, r)
}

/// Print what happened in a turn, indented, without the reply.
pub fn details<D: Serialize>(out: &mut dyn Write, r: &AgentResponse<D>) -> io::Result<()> {
    const PAD: &str = "       ";
    let calls = if r.model_calls == 1 { "call" } else { "calls" };
    writeln!(
        out,
        "{PAD}at {}/{} | {} | {} model {calls}",
        r.flow.as_deref().unwrap_or("-"),
        r.step.as_deref().unwrap_or("-"),
        stopped(&r.stopped),
        r.model_calls
    )?;
    writeln!(out, "{PAD}data {}", data(&r.data))?;
    if let Some(reason) = &r.meta.end_reason {
        writeln!(out, "{PAD}ended ({reason})")?;
    }
    for t in &r.transitions {
        writeln!(
            out,
            "{PAD}hop  {} -> {}",
            t.from.as_deref().unwrap_or("(no flow)"),
            t.to
        )?;
    }
    for t in &r.tool_calls {
        let ok = if t.ok { "" } else { " (failed)" };
        writeln!(
            out,
            "{PAD}tool {}({}) -> {}{ok}",
            t.name, t.arguments, t.output
        )?;
    }
    if !r.signals.is_empty() {
        writeln!(out, "{PAD}signals {}", r.signals.join(", "))?;
    }
    for e in &r.directive_chain {
        writeln!(out, "{PAD}directive {}", chain_entry(e))?;
    }
    if !r.dropped_fields.is_empty() {
        writeln!(
            out,
            "{PAD}dropped (not collected here): {}",
            r.dropped_fields.join(", ")
        )?;
    }
    for why in &r.rejected_data {
        writeln!(out, "{PAD}rejected: {why}")?;
    }
    writeln!(out)
}

/// Print a failed turn. The engine left the session as it was before the turn.
pub fn error(out: &mut dyn Write, user: &str, e: &AgentError) -> io::Result<()> {
    writeln!(out, "user:  {user}")?;
    writeln!(out, "error: {e}")?;
    writeln!(
        out,
        "       (the session is unchanged; the conversation goes on)\n"
    )
}

/// One turn of a scripted conversation.
#[derive(Debug)]
pub struct Turn<D> {
    /// What the user said.
    pub user: String,
    /// What the agent answered, or why the turn failed.
    pub outcome: Result<AgentResponse<D>, AgentError>,
}

/// A conversation, turn by turn.
#[derive(Debug)]
pub struct Transcript<D> {
    /// The turns, in order.
    pub turns: Vec<Turn<D>>,
}

impl<D> Default for Transcript<D> {
    fn default() -> Self {
        Self { turns: Vec::new() }
    }
}

impl<D> Transcript<D> {
    /// The response of turn `i` (`None` if it failed or does not exist).
    pub fn response(&self, i: usize) -> Option<&AgentResponse<D>> {
        self.turns.get(i).and_then(|t| t.outcome.as_ref().ok())
    }
    /// The last turn's response.
    pub fn last(&self) -> Option<&AgentResponse<D>> {
        self.turns.last().and_then(|t| t.outcome.as_ref().ok())
    }
    /// How many turns failed.
    pub fn failures(&self) -> usize {
        self.turns.iter().filter(|t| t.outcome.is_err()).count()
    }
    /// Model calls over all successful turns.
    pub fn model_calls(&self) -> u32 {
        self.turns
            .iter()
            .filter_map(|t| t.outcome.as_ref().ok())
            .map(|r| r.model_calls)
            .sum()
    }
}

/// Send one message, print what happened (or the error), and keep it in `transcript`.
/// A failed turn is printed, not returned: the conversation goes on.
pub async fn say<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session: &str,
    user: &str,
    transcript: &mut Transcript<D>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let outcome = agent.respond(session, user).await;
    match &outcome {
        Ok(r) => turn(out, user, r)?,
        Err(e) => error(out, user, e)?,
    }
    transcript.turns.push(Turn {
        user: user.to_owned(),
        outcome,
    });
    Ok(())
}

/// Send each message in order on one session, printing every turn. Stops early when
/// the model cannot be reached (other failures are printed and the conversation goes
/// on); the example then exits with 1 ([`crate::exit`]).
pub async fn converse<D: AgentData, C: AgentContext>(
    agent: &Agent<D, C>,
    session: &str,
    messages: &[&str],
    out: &mut dyn Write,
) -> io::Result<Transcript<D>> {
    let mut t = Transcript::default();
    for m in messages {
        say(agent, session, m, &mut t, out).await?;
        if stop_if_unreachable(&t.tally(), out)? {
            break;
        }
    }
    Ok(t)
}

/// Whether a conversation should stop: a turn failed because the model could not be
/// reached, and every later turn would wait out the same retries. Says so on `out`.
pub fn stop_if_unreachable(tally: &Tally, out: &mut dyn Write) -> io::Result<bool> {
    if tally.unreachable == 0 {
        return Ok(false);
    }
    writeln!(out, "(the model cannot be reached: stopping here)")?;
    Ok(true)
}
