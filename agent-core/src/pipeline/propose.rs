//! An action on a yes to the summary the user just read: the one way a tool waits for
//! the user's agreement ([`Tool::needs_agreement`]).
//!
//! A call of such a tool does not run when the model names it. Code writes a summary
//! of the call from its arguments ([`Tool::summary_template`], or the tool's
//! description and the values), asks whether to go ahead, and keeps the call with
//! its arguments as the session's [`Proposal`]. A step with an `ask` that offers such
//! a tool (and the tool needs no argument the model would have to write) proposes
//! its call through that question: the `ask` is the summary, written by code from
//! the stored values.
//!
//! The user's next message settles it:
//! - a yes runs exactly the call summarised, with no model call to write its
//!   arguments again: a plain yes ([`plainly_agrees`]) before any model call, any
//!   other wording when the turn's answer judges it a yes and, on a profile that
//!   checks it, a call of its own agrees ([`Turn::agrees_to`]);
//! - a message that changes a stored value runs nothing: the new details are
//!   summarised again;
//! - anything else runs nothing, and the proposal is gone: a yes counts only as the
//!   answer to the summary the user read last (not to a later question, and not after
//!   any other turn).
//!
//! A person's approval ([`crate::approval`]) is separate: an agreed call that also
//! needs one is held for it as any call is.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Turn;
use super::consent::plainly_agrees;
use crate::command::Command;
use crate::data::{AgentContext, AgentData};
use crate::directive::{Directive, DirectiveSource};
use crate::error::AgentError;
use crate::provider::ToolCall;
use crate::session::Proposal;
use crate::step::Step;
use crate::tool::{Tool, action_words};

/// What the summary of a call asks after it, when no template ends with a question.
const GO_AHEAD: &str = "Shall I go ahead?";

/// The result the model reads for a call summarised instead of run.
pub(super) const SUMMARISED: &str = "Not run yet: the user now reads a summary of this call and is asked whether to go ahead; it runs only on their yes. Do not say it was done.";

/// The result the model reads for a second call in the same round that waits for a
/// yes: one summary at a time.
const ONE_AT_A_TIME: &str =
    "Not run: another action is waiting for the user's yes first. Do not say it was done.";

impl<D, C> Step<D, C> {
    /// The tool this step proposes through its `ask`: a step with an `ask` that offers
    /// a tool waiting for the user's yes, which needs no argument the model would
    /// write. Its question is the summary, written by code.
    pub(crate) fn proposes_by_ask(&self) -> Option<&Arc<dyn Tool<D, C>>> {
        self.ask.as_ref()?;
        self.tools.iter().find(|t| {
            t.needs_agreement()
                && t.parameters()
                    .get("required")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty)
        })
    }

    /// Whether this step offers a tool that waits for the user's yes.
    pub(crate) fn offers_agreed_tool(&self) -> bool {
        self.tools.iter().any(|t| t.needs_agreement())
    }
}

/// The summary of a call of `tool` with `args`: its template rendered over the
/// arguments, or its description and the values given; then the question.
pub(crate) fn summary_of<D, C>(tool: &dyn Tool<D, C>, args: &Value) -> String {
    let what = match tool.summary_template() {
        Some(t) => crate::template::render(t, args),
        None => {
            let description = tool.description().trim().trim_end_matches('.');
            let values: Vec<String> = args
                .as_object()
                .into_iter()
                .flat_map(|o| o.values())
                .filter_map(|v| match v {
                    Value::Null | Value::Object(_) => None,
                    Value::String(s) if s.trim().is_empty() => None,
                    Value::String(s) => Some(s.clone()),
                    Value::Array(items) => Some(
                        items
                            .iter()
                            .map(|i| match i {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    other => Some(other.to_string()),
                })
                .collect();
            if values.is_empty() {
                description.to_owned()
            } else {
                format!("{description}: {}", values.join(", "))
            }
        }
    };
    with_go_ahead(&what)
}

/// `summary` followed by the question whether to go ahead, unless it asks already.
pub(crate) fn with_go_ahead(summary: &str) -> String {
    let what = summary.trim();
    if what.ends_with(['?', '？']) {
        return what.to_owned();
    }
    let stop = if what.is_empty() || what.ends_with(['.', '!', '。']) {
        ""
    } else {
        "."
    };
    format!("{what}{stop} {GO_AHEAD}").trim_start().to_owned()
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// The data as JSON, as a summary was written from it.
    pub(super) fn data_now(&self) -> Value {
        serde_json::to_value(&self.s.data).unwrap_or_default()
    }

    /// The values a summary shows: dates as people say them ("Wednesday 1 July",
    /// with the year when it is not this year's on the agent's clock), the others as
    /// stored.
    pub(super) fn summary_values(&self) -> Value {
        let mut data = self.data_now();
        if let Some(o) = data.as_object_mut() {
            for (k, v) in o.iter_mut() {
                if self.a.schema.is_date(k) {
                    *v = self.spoken(k, v);
                }
            }
        }
        data
    }

    /// A value of `field` as a summary says it: a day of a date field as people say
    /// it, any other value as it is.
    pub(super) fn spoken(&self, field: &str, v: &Value) -> Value {
        v.as_str()
            .filter(|_| self.a.schema.is_date(field))
            .and_then(crate::data::parse_date)
            .map_or_else(
                || v.clone(),
                |d| Value::String(spoken_date(d, self.today())),
            )
    }

    /// The values step `j` of `flow` renders its question with: a step that proposes
    /// a call through its `ask` shows a summary ([`Turn::summary_values`]).
    pub(super) fn question_values(&self, flow: &crate::flow::Flow<D, C>, j: usize) -> Value {
        if flow
            .steps
            .get(j)
            .is_some_and(|s| s.proposes_by_ask().is_some())
        {
            self.summary_values()
        } else {
            self.data_now()
        }
    }

    /// Whether the summary the user answers still shows the stored values.
    pub(super) fn proposal_stands(&self) -> bool {
        self.proposal
            .as_ref()
            .is_some_and(|p| p.data == self.data_now() && !self.changed_now)
    }

    /// A plain yes to the summary the user read last runs its call now, before any
    /// model call. Any other message goes on to the turn's call, which reads it (a
    /// yes in other words, a changed detail, a question).
    pub(super) async fn settle_proposal(&mut self) -> Result<(), AgentError> {
        let Some(p) = self.proposal.as_ref() else {
            return Ok(());
        };
        let Some(tool) = self.registered_tool(&p.tool) else {
            self.proposal = None;
            return Ok(());
        };
        if !plainly_agrees(self.msg, &action_words(tool.as_ref())) || !self.proposal_stands() {
            return Ok(());
        }
        self.handled(Command::Agree);
        self.agreed = true;
        let name = tool.name().to_owned();
        let said = self.run_proposal(&tool).await;
        if !self.reply_settled_since(0)
            && let Some(out) = said.first()
        {
            // The call's result reaches the reply the model writes next.
            self.notes.push(format!(
                "The user agreed to the summary, and `{name}` ran: {out}. Tell the user the outcome."
            ));
        }
        if self.paused.is_none() {
            // What the tool wrote and said applies now, as a directive at the start of
            // a turn would: its reply is the turn's, with no model call.
            let bus = std::mem::take(&mut self.post_bus);
            let mut merged = Directive::default();
            let mut last = None;
            for (src, d) in bus {
                d.validate().map_err(|e| AgentError::directive(&src, e))?;
                self.record(&src, &d, &[], &[], false);
                merged = crate::directive::merge(merged, d);
                last = Some(src);
            }
            if let Some(src) = last {
                self.apply(src, merged, super::Phase::Pre).await?;
            }
        }
        if self.paused.is_some()
            && let Some(flow) = self.flow()
        {
            // Held for a person's approval: the turn resumes here once decided.
            let j = self.step_idx(&flow);
            let stop = if flow.steps[j].end {
                super::walk::Stop::Closing(flow.id.clone(), j)
            } else {
                super::walk::Stop::Render(flow.id.clone(), j)
            };
            self.note_paused_at(&stop);
        }
        Ok(())
    }

    /// Run the proposal's call, with its arguments, through the approval gate.
    async fn run_proposal(&mut self, tool: &Arc<dyn Tool<D, C>>) -> Vec<String> {
        let Some(p) = self.proposal.take() else {
            return Vec::new();
        };
        tracing::info!(tool = %p.tool, "the user agreed to the summary; running the call");
        let call = ToolCall {
            id: format!("agreed-{}", p.turn),
            name: p.tool,
            arguments: p.arguments,
        };
        let tools = [tool.clone()];
        let calls = [call];
        match self.gate_round(&tools, &calls, None) {
            None => Vec::new(),
            Some(gates) => {
                self.run_round(&tools, &calls, Some((gates, Vec::new())))
                    .await
            }
        }
    }

    /// What becomes of a model's call of a tool that waits for the user's yes: the
    /// call the user just agreed to (the proposal's tool, with no argument other than
    /// the summary's) runs with the summary's arguments; any other is summarised and
    /// runs nothing (`Err`: the result the model reads).
    pub(super) fn agreement(
        &mut self,
        tool: &dyn Tool<D, C>,
        call: &ToolCall,
    ) -> Result<ToolCall, String> {
        if self.agreed
            && self.proposal_stands()
            && let Some(p) = self.proposal.as_ref()
            && p.tool == call.name
            && within(&call.arguments, &p.arguments, |v| self.says(v))
        {
            // (Taken once the call has run: `Turn::ran_agreed`.)
            let mut fixed = call.clone();
            fixed.arguments = p.arguments.clone();
            return Ok(fixed);
        }
        if self.proposed_now() {
            return Err(ONE_AT_A_TIME.to_owned());
        }
        // The step that proposes this call through its `ask` shows that question
        // again, with the values as they are now.
        let summary = self
            .ask_summary(&call.name, &call.arguments)
            .unwrap_or_else(|| summary_of(tool, &call.arguments));
        self.propose(call.name.clone(), call.arguments.clone(), summary.clone());
        self.post_bus.push((
            DirectiveSource::Summary(call.name.clone()),
            Directive::new().reply(summary),
        ));
        Err(SUMMARISED.to_owned())
    }

    /// Keep the summary the user answered for the next message: this turn's reply is
    /// code's, and asks about that same summary (nothing changed).
    pub(super) fn renew_proposal(&mut self) {
        if self.proposed_now() || !self.proposal_stands() {
            return;
        }
        if let Some(p) = self.proposal.clone() {
            self.s.proposal = Some(Proposal {
                turn: self.s.turns,
                ..p
            });
        }
    }

    /// Whether this turn summarised a call for the user's yes.
    pub(super) fn proposed_now(&self) -> bool {
        self.s
            .proposal
            .as_ref()
            .is_some_and(|p| p.turn == self.s.turns)
    }

    /// Keep a call summarised in this turn's reply for the user's yes.
    fn propose(&mut self, tool: String, arguments: Value, summary: String) {
        tracing::info!(%tool, %summary, "call summarised; waiting for the user's yes");
        self.s.proposal = Some(Proposal {
            tool,
            arguments,
            summary,
            turn: self.s.turns,
            flow: self.s.flow.clone(),
            data: self.data_now(),
        });
    }

    /// The summary of a call of `tool` with `args` by the `ask` of the step the
    /// conversation is at, when that step proposes it ([`Step::proposes_by_ask`]).
    fn ask_summary(&self, tool: &str, args: &Value) -> Option<String> {
        if !within(args, &json!({}), |_| true) {
            return None;
        }
        self.asked_summary()
            .filter(|(t, _)| t.name() == tool)
            .map(|(_, summary)| summary)
    }

    /// The tool the step the conversation is at proposes through its `ask`
    /// ([`Step::proposes_by_ask`]), with that question rendered over the values as
    /// they are now.
    fn asked_summary(&self) -> Option<(Arc<dyn Tool<D, C>>, String)> {
        let flow = self.flow()?;
        let step = &flow.steps[self.s.step.as_deref().and_then(|s| flow.step_pos(s))?];
        let tool = step.proposes_by_ask()?.clone();
        let summary = crate::template::render(step.ask.as_deref()?, &self.summary_values());
        (!summary.trim().is_empty()).then_some((tool, summary))
    }

    /// The turn's reply asks the question of a step that proposes its call through
    /// its `ask` ([`Step::proposes_by_ask`]): that call waits for the user's yes.
    pub(super) fn propose_by_ask(&mut self, message: &str) {
        if self.proposed_now() {
            return;
        }
        let Some((tool, summary)) = self.asked_summary() else {
            return;
        };
        if message.contains(summary.trim()) {
            self.propose(tool.name().to_owned(), json!({}), summary);
        }
    }

    /// Whether an answer's values (`commands`) change what the summary showed: a
    /// value other than the one it was written from.
    pub(super) fn answer_changes(&self, commands: &[Command]) -> bool {
        let Some(p) = self.proposal.as_ref() else {
            return false;
        };
        commands.iter().any(|c| {
            let (Command::SetValue { field, value, .. }
            | Command::CorrectValue { field, value, .. }) = c
            else {
                return false;
            };
            let shown = p.data.get(field.as_str()).unwrap_or(&Value::Null);
            !same(shown, value)
        })
    }

    /// Whether a raw answer that calls tools natively also carries a `data` object
    /// whose values change what the summary showed (read before the calls run).
    pub(super) fn raw_answer_changes(&self, content: &str) -> bool {
        let Some(p) = self.proposal.as_ref() else {
            return false;
        };
        let Ok(v) = serde_json::from_str::<Value>(super::model::answer::strip_fences(content))
        else {
            return false;
        };
        let Some(data) = v.get("data").and_then(Value::as_object) else {
            return false;
        };
        data.iter().any(|(k, v)| {
            let v = v.get("value").unwrap_or(v);
            !v.is_null() && !same(p.data.get(k.as_str()).unwrap_or(&Value::Null), v)
        })
    }

    /// Whether the user's message this turn states `v` (its words, in order).
    pub(in crate::pipeline) fn says(&self, v: &Value) -> bool {
        let text = match v {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        let v = crate::data::ground::normalize(&text);
        super::question::contains_words(self.said(), &v)
    }

    /// A call of a tool waiting for the user's yes ran: the yes is used up.
    pub(super) fn ran_agreed(&mut self) {
        self.agreed = false;
        self.proposal = None;
    }

    /// The answer to the summary was judged a yes (and, where the profile checks it,
    /// agreed): its call may run this turn.
    pub(super) fn agree_to_proposal(&mut self) {
        if self.proposal_stands() {
            self.agreed = true;
        }
    }
}

/// A day as a summary says it: "Wednesday 1 July", and the year when it is not
/// `today`'s ("Friday 1 January 2027").
fn spoken_date(d: time::Date, today: time::Date) -> String {
    let day = format!("{} {} {}", d.weekday(), d.day(), d.month());
    if d.year() == today.year() {
        day
    } else {
        format!("{day} {}", d.year())
    }
}

/// Whether the model's `args` name nothing beyond the summary's `fixed` that the
/// user `said` this turn (each value it gives is the summary's, or one the message
/// does not state: the model's own addition, which the summarised call does not
/// take): the call agreed to.
fn within(args: &Value, fixed: &Value, said: impl Fn(&Value) -> bool) -> bool {
    let Some(args) = args.as_object() else {
        return true;
    };
    args.iter()
        .all(|(k, v)| v.is_null() || fixed.get(k).is_some_and(|f| same(f, v)) || !said(v))
}

/// The same value, text compared case and spacing aside.
fn same(a: &Value, b: &Value) -> bool {
    a == b
        || matches!((a, b), (Value::String(x), Value::String(y))
            if crate::data::ground::normalize(x) == crate::data::ground::normalize(y))
}

#[cfg(test)]
mod tests {
    use super::within;
    use serde_json::json;

    #[test]
    fn a_summary_says_a_day_with_its_weekday_and_the_year_only_when_another() {
        use time::macros::date;
        let today = date!(2026 - 06 - 15);
        assert_eq!(
            super::spoken_date(date!(2026 - 07 - 01), today),
            "Wednesday 1 July"
        );
        assert_eq!(
            super::spoken_date(date!(2027 - 01 - 01), today),
            "Friday 1 January 2027"
        );
    }

    #[test]
    fn a_call_within_the_summary_is_the_one_agreed_to() {
        let fixed = json!({"invoice": "INV-7"});
        let said = |_: &serde_json::Value| true;
        assert!(within(&json!({}), &fixed, said));
        assert!(within(&json!({"invoice": "inv-7"}), &fixed, said));
        assert!(within(&json!({"invoice": null}), &fixed, said));
        assert!(!within(&json!({"invoice": "INV-8"}), &fixed, said));
        assert!(!within(&json!({"hotel": "Marriott"}), &json!({}), said));
        // A value the message does not state is the model's addition: still the call
        // agreed to (it runs with the summary's arguments).
        let unsaid = |_: &serde_json::Value| false;
        assert!(within(&json!({"hotel": "Madrid"}), &json!({}), unsaid));
    }
}
