//! The digression check ([`ModelProfile::checks_digressions`]): on a small model,
//! before the active flow's call reads an answer to its question, a short call of its
//! own asks whether the message answers that question or asks for one of the other
//! flows the active flow hands over to ("Wait, are you open on Saturdays?" while the
//! booking asks what the visit is for). When it names another flow, the turn starts
//! that flow as if the respond answer had (the stack keeps the interrupted flow, which
//! resumes when the other ends), and the active flow's call is not made.
//!
//! Inside the full respond call, with the conversation and the fields to read, a
//! small model does not judge hand-overs in a flow: Qwen2.5-Coder 1.5B judged every
//! other flow false for the clinic's four digressions, whatever the order of the
//! answer's keys, the length of the history or a note that asked for it first. Asked
//! with nothing but the flow, what its step asks for (the fields' descriptions) and
//! the other flows' `when`, the same model sorted 17 of 20 messages right (all four
//! digressions of the suite, eight answers of other wordings), and its three misses
//! read a digression as an answer, which leaves the turn as it was without the check
//! (temperature 0, 2026-11-29).
//!
//! [`ModelProfile::checks_digressions`]: crate::policy::ModelProfile::checks_digressions

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use super::answer::strip_fences;
use crate::data::{AgentContext, AgentData};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::pipeline::Turn;
use crate::pipeline::consent::plainly_agrees;
use crate::pipeline::patterns::plainly_asks_for_person;
use crate::prompt::{field_desc, one_line, step_task};
use crate::provider::{CallKind, FinishReason, Message, OutputSchema};

/// The answer's one field.
const ABOUT: &str = "about";

/// The user's message is quoted up to this many characters.
const MAX_MESSAGE_CHARS: usize = 600;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The flow the user's message asks for instead of answering `flow`'s question,
    /// when the model profile checks digressions and the message is the answer to a
    /// question of `flow`'s that code cannot read as an answer by itself (a plain yes
    /// needs no check, nor a message that speaks of stopping, which the flow's
    /// call reads as a cancel). A step whose branches judge conditions, or whose
    /// `prepare` hook may route in code, decides for itself. `None`: the message is
    /// read by `flow` as usual.
    pub(in crate::pipeline) async fn digression(
        &mut self,
        flow: &Arc<Flow<D, C>>,
    ) -> Result<Option<String>, AgentError> {
        if !self.a.provider.profile().checks_digressions() {
            return Ok(None);
        }
        let Some(j) = self.awaiting_model_step(flow) else {
            return Ok(None);
        };
        // Only the message as first read: once a flow was started or resumed this
        // turn, the message is that flow's.
        if self.transitions.len() != self.read_from
            || plainly_agrees(self.msg, &[])
            || crate::pipeline::stack::mentions_stopping(self.msg)
        {
            return Ok(None);
        }
        // A plain request for a person is code's to read (the human handoff): no
        // other flow starts for it.
        if plainly_asks_for_person(self.msg) {
            self.sorted = Some(flow.index);
            return Ok(None);
        }
        // The agent's own step decides where its answers go: a condition of its
        // branches (or of a step after it), or its `prepare` hook, which may route in
        // code. The built-in check does not run there.
        let step = &flow.steps[j];
        if step.prepare.is_some()
            || step.branch_table().iter().any(|b| !b.when.is_empty())
            || flow
                .successors(j)
                .iter()
                .any(|&k| flow.steps[k].when.is_some())
        {
            return Ok(None);
        }
        let others: Vec<(&str, &str, String)> = self.a.switch_ids[flow.index]
            .iter()
            .filter(|id| self.may_switch_to(id))
            .filter_map(|id| {
                let g = self.a.flow(id)?;
                Some((g.id.as_ref(), g.when.as_deref()?, label(&g.title, &g.id)))
            })
            .collect();
        if others.is_empty() {
            return Ok(None);
        }
        // The labels the model picks from name what each option is: a small model
        // reads a flow's title better than its id ("technical_support" was picked for
        // "my app keeps crashing" where "tech" never was). Ids stand in for titles
        // that are missing or would give two options one label.
        let mut labels: Vec<String> = others.iter().map(|(_, _, l)| l.clone()).collect();
        let unique = |ls: &[String]| {
            ls.iter()
                .enumerate()
                .all(|(i, l)| !l.is_empty() && !ls[..i].contains(l))
        };
        if !unique(&labels) {
            labels = others.iter().map(|(id, _, _)| (*id).to_owned()).collect();
        }
        // Fields the step asks for that code sees the message cannot give (a pattern
        // nothing said matches): the message is then something else than an answer.
        let unsaid = !step.collect.is_empty() && self.readable(&step.collect).is_empty();
        // The label of the current task's option, unless a flow is called that.
        let own = if unsaid {
            ["other", "something_else", "this_task"].as_slice()
        } else {
            ["answer", "answer_to_this", "this_task"].as_slice()
        };
        let answer = own
            .iter()
            .find(|l| !labels.iter().any(|x| x == *l))
            .copied()
            .unwrap_or("this_task");
        let title = if flow.title.is_empty() {
            flow.id.replace('_', " ")
        } else {
            one_line(&flow.title)
        };
        let mut sys =
            format!("You sort the user's latest message. The assistant is helping with: {title}. ");
        if step.collect.is_empty() {
            let _ = writeln!(sys, "Its current step: {}", one_line(&step_task(step)));
        } else {
            let asked: Vec<String> = step
                .collect
                .iter()
                .map(|f| {
                    let desc = field_desc(&self.a.schema, f);
                    if desc.is_empty() {
                        f.to_string()
                    } else {
                        format!("{f}: {desc}")
                    }
                })
                .collect();
            if unsaid {
                let _ = writeln!(
                    sys,
                    "It asked the user for {}; the message does not give it.",
                    asked.join("; ")
                );
            } else {
                let _ = writeln!(sys, "It just asked the user for {}", asked.join("; "));
            }
        }
        let _ = writeln!(sys, "Options for `{ABOUT}`:");
        if !unsaid {
            let _ = writeln!(
                sys,
                "- {answer}: the message gives that, or goes on with {title}"
            );
        }
        for ((_, when, _), l) in others.iter().zip(&labels) {
            let _ = writeln!(sys, "- {l}: {}", one_line(when));
        }
        if unsaid {
            let _ = writeln!(sys, "- {answer}: something else");
        }
        sys.push_str("Answer with JSON only.");
        let mut ids: Vec<Value> = labels.iter().map(|l| Value::String(l.clone())).collect();
        if unsaid {
            ids.push(Value::String(answer.to_owned()));
        } else {
            ids.insert(0, Value::String(answer.to_owned()));
        }
        let schema = json!({
            "type": "object",
            "properties": { ABOUT: { "enum": ids } },
            "required": [ABOUT],
            "additionalProperties": false,
        });
        let said: String = self.msg.chars().take(MAX_MESSAGE_CHARS).collect();
        let mut req = self.request(CallKind::Route, sys, vec![Message::user(said)]);
        req.output = Some(OutputSchema {
            name: "digression".into(),
            schema: Arc::new(schema),
        });
        let (resp, _) = self.call(&req, None).await?;
        let picked = (resp.finish != FinishReason::Length)
            .then(|| serde_json::from_str::<Value>(strip_fences(&resp.content)).ok())
            .flatten()
            .and_then(|v| {
                // `flow` too: the scripted provider's `Answer::route(..)`.
                match v.get(ABOUT).or_else(|| v.get("flow")) {
                    Some(Value::String(p)) => Some(p.clone()),
                    Some(Value::Null) => Some(answer.to_owned()),
                    _ => None,
                }
            });
        // A label, or a flow's id (the scripted provider's `Answer::route(..)`).
        let target = picked.as_deref().and_then(|p| {
            others
                .iter()
                .zip(&labels)
                .find(|((id, _, _), l)| p != answer && (l.as_str() == p || *id == p))
                .map(|((id, _, _), _)| (*id).to_owned())
        });
        match (picked, target) {
            (_, Some(p)) => {
                tracing::info!(flow = %flow.id, to = %p, "the message asks for another flow (digression check)");
                Ok(Some(p))
            }
            (Some(_), None) => {
                self.sorted = Some(flow.index);
                Ok(None)
            }
            (None, None) => {
                tracing::warn!(answer = %resp.content, "digression answer unreadable; the message is read as an answer");
                Ok(None)
            }
        }
    }
}

/// A flow's title as an option's label: lower case, words joined by `_`, nothing
/// but letters and digits ("Technical support" → `technical_support`). Empty for an
/// empty title (the id stands in).
fn label(title: &str, id: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        id.to_owned()
    } else {
        words.join("_")
    }
}
