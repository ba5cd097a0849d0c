//! The respond call: the rendered request through the tool loop, then its answer
//! read (reply, data, step claim, hand-over, verdicts, an action to run), repaired
//! once when malformed.

use std::sync::Arc;

use super::answer::{CUT_SHORT, RespondOut, ask_for_repair, strip_fences};
use super::prompt::Prompt;
use super::schema::without_action;
use super::{CallOutcome, Target};
use crate::command::Command;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::pipeline::Turn;
use crate::pipeline::consent::Consent;
use crate::provider::{CallKind, FinishReason, Message};

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// A rendering call with the tool loop. `extract` adds the `data` object; `alt` is
    /// the awaiting step the model may re-ask instead of the target.
    pub(crate) async fn render_call(
        &mut self,
        target: Target<D, C>,
        extract: bool,
        alt: Option<usize>,
    ) -> Result<CallOutcome, AgentError> {
        // Rendered again (once) when the answer's action is found not agreed to.
        let again = target.clone();
        let Prompt {
            mut req,
            tools,
            live,
            flow,
            pending,
            conditions,
            intents,
            structured,
            answer_held,
            consent,
        } = self.render_prompt(target, extract, alt);
        let (resp, deltas, settled) = self
            .tool_loop(&mut req, &tools, &live, consent == Consent::Answer)
            .await?;
        if settled {
            // A tool's verbatim reply replaces whatever the model would say next; the
            // conditions this call was to judge are judged not to hold, as when an
            // answer leaves them out.
            return Ok(CallOutcome {
                // Held for approval after text went out live: that text stays.
                message: if self.paused.is_some() && self.streamed {
                    resp.content
                } else {
                    String::new()
                },
                deltas,
                verdicts: conditions.iter().map(|c| (c.clone(), false)).collect(),
                ..CallOutcome::default()
            });
        }
        if !structured {
            return Ok(CallOutcome {
                message: resp.content,
                deltas,
                ..CallOutcome::default()
            });
        }
        let mut resp = resp;
        let mut deltas = deltas;
        let mut attempts = 0;
        let mut acted = false;
        loop {
            let parsed = if resp.finish == FinishReason::Length {
                Err(CUT_SHORT.to_string())
            } else {
                serde_json::from_str::<RespondOut>(strip_fences(&resp.content))
                    .map_err(|e| format!("not valid JSON for the expected object ({e})"))
                    .and_then(|mut out| {
                        let Some(message) = out.message.take() else {
                            return Err("`message` is missing".into());
                        };
                        self.understand(
                            out,
                            message,
                            &flow,
                            &pending,
                            &intents,
                            &conditions,
                            answer_held,
                        )
                    })
            };
            match parsed {
                Ok(mut out) => {
                    // A speculative answer's action waits: it runs only if the walk
                    // accepts that answer, in a rendering that replays this answer.
                    if self.speculating && out.tool_call.is_some() {
                        out.answer = Some(resp.clone());
                    }
                    // A yes that also changes a value agrees to nothing the user read:
                    // nothing runs, and the new details are summarised again.
                    // (A speculative answer is not accepted then: `Turn::accepts`.) Its
                    // values are read again with the call held, told why.
                    if consent == Consent::Answer
                        && out.tool_call.is_some()
                        && self.answer_changes(&out.commands)
                    {
                        tracing::info!("the answer to a summary changed a value; nothing runs");
                        self.changed_now = true;
                        if !self.speculating {
                            self.deferred = conditions;
                            return Box::pin(self.render_call(again, extract, alt)).await;
                        }
                    }
                    if !self.speculating
                        && !acted
                        && let Some(call) = out.tool_call.take()
                    {
                        // An answer to a confirmation judged a yes: checked on its own
                        // before anything runs; not agreed, it is rendered again with
                        // the tools held (`Gate::unless_not_agreed`), asking again.
                        // (A summary whose values changed is shown again instead.)
                        if consent == Consent::Answer && !self.not_agreed && self.proposal_stands()
                        {
                            let tool = tools.iter().find(|t| t.name() == call.name);
                            if let Some(t) = tool
                                && !self.agrees_to(t.as_ref()).await?
                            {
                                self.not_agreed = true;
                                // The conditions this answer was to judge are judged
                                // by the next one.
                                self.deferred = conditions;
                                return Box::pin(self.render_call(again, extract, alt)).await;
                            }
                            // A yes to the summary the user read: its call may run.
                            self.agree_to_proposal();
                        }
                        // A tool asked for in the answer: run it, then ask again with
                        // its result, as a native tool round would.
                        acted = true;
                        if out.commands.contains(&Command::Agree) {
                            self.handled(Command::Agree);
                        }
                        let mut assistant = Message::assistant(String::new());
                        assistant.tool_calls = vec![call.clone()];
                        req.messages.push(assistant);
                        let since = self.post_bus.len();
                        let results = self.run_tools(&tools, std::slice::from_ref(&call)).await;
                        if self.paused.is_some() {
                            // Held for approval: the answer's message is not used
                            // (it may announce what has not happened).
                            out.message.clear();
                            out.deltas = std::mem::take(&mut deltas);
                            return Ok(out);
                        }
                        for content in results {
                            req.messages.push(Message::tool(call.id.clone(), content));
                        }
                        if self.reply_settled_since(since) {
                            out.message.clear();
                            out.deltas = std::mem::take(&mut deltas);
                            return Ok(out);
                        }
                        // The follow-up writes the message; no second action, so a
                        // model repeating itself cannot book twice.
                        if let Some(o) = req.output.as_mut() {
                            o.schema = Arc::new(without_action(&o.schema));
                        }
                        req.kind = CallKind::ToolRound;
                        let (r, d) = self.call(&req, None).await?;
                        resp = r;
                        deltas = d;
                        attempts = 0;
                        continue;
                    }
                    out.deltas = std::mem::take(&mut deltas);
                    return Ok(out);
                }
                Err(problem) if attempts < self.a.config.repair_attempts && !self.streamed => {
                    attempts += 1;
                    tracing::warn!(%problem, "malformed structured answer; asking for a repair");
                    ask_for_repair(&mut req, resp.content.clone(), &problem);
                    req.tools.clear();
                    let (r, d) = self.call(&req, None).await?;
                    resp = r;
                    deltas = d;
                }
                Err(problem) => {
                    return Err(AgentError::MalformedModelOutput {
                        kind: CallKind::Respond,
                        message: problem,
                    });
                }
            }
        }
    }
}
