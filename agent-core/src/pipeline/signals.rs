//! Signal phases. The pre phase shares one classifier call with routing and with the
//! `when` conditions of the awaiting step's branches and successors.

use super::model::classify::{Question, Verdicts};
use super::{Turn, guard};
use crate::data::{AgentContext, AgentData};
use crate::directive::{PreDirective, merge_pre};
use crate::error::AgentError;
use crate::response::{DirectiveSource, StoppedReason};
use crate::signal::{Phase as SignalPhase, SignalCx};
use crate::signal::{ReplyWith, SignalDirective};
use crate::step::StepKind;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Indices of signals that may fire in this phase: frequency allows and `if` holds.
    fn candidate_signals(&self, post: bool) -> Vec<usize> {
        if self.a.signals.is_empty() {
            return Vec::new();
        }
        let now = self.a.clock.now_ms();
        let cx = self.cx();
        self.a
            .signals
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                if post {
                    s.phase.runs_post()
                } else {
                    s.phase.runs_pre()
                }
            })
            .filter(|(_, s)| s.allowed(self.s.signals.get(&s.id), now))
            .filter(|(_, s)| {
                s.if_.as_ref().is_none_or(|p| {
                    guard::test(p, &cx, || format!("`if` predicate of signal `{}`", s.id))
                })
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Run matched handlers in priority order; returns the merged directive.
    async fn fire_signals(
        &mut self,
        candidates: &[usize],
        questions_of: &[Option<usize>],
        verdicts: &Verdicts,
        phase: SignalPhase,
        reply: Option<&str>,
    ) -> Result<Option<PreDirective<D, C>>, AgentError> {
        let now = self.a.clock.now_ms();
        let mut merged: Option<PreDirective<D, C>> = None;
        for (n, &i) in candidates.iter().enumerate() {
            let sig = &self.a.signals[i];
            let matched = sig
                .when
                .as_ref()
                .is_none_or(|w| self.judged.get(w.as_str()) == Some(&true));
            if !matched {
                continue;
            }
            let Some(handler) = sig.handler.clone() else {
                continue;
            };
            let extracted = questions_of[n]
                .and_then(|q| verdicts.extracted.iter().find(|(k, _)| *k == q))
                .map(|(_, v)| v.clone());
            let sd: SignalDirective<D, C> = {
                let cx = self.cx();
                let scx = SignalCx {
                    cx: &cx,
                    extracted: extracted.as_ref(),
                    phase,
                    reply,
                };
                let what = || format!("signal handler `{}`", sig.id);
                let mut sd = guard::hook(handler.call(&scx), what).await?;
                if let Some(rw) = sd.reply_with.take() {
                    sd.pre.base.reply = Some(match rw {
                        ReplyWith::Text(t) => t,
                        ReplyWith::Fn(f) => guard::call(
                            || format!("reply function of signal `{}`", sig.id),
                            || f(&scx),
                        )?,
                    });
                }
                sd
            };
            let id = sig.id.clone();
            let source = if phase == SignalPhase::Post {
                DirectiveSource::PostSignal(id.clone())
            } else {
                DirectiveSource::PreSignal(id.clone())
            };
            sd.pre
                .base
                .validate()
                .map_err(|e| AgentError::directive(&source, e))?;
            self.record(
                &source,
                &sd.pre.base,
                &sd.pre.append_prompt,
                &sd.pre.inject_tools,
                sd.pre.halt,
            );
            self.signals_fired.push(id.clone());
            let state = self.s.signals.entry(id).or_default();
            state.fired += 1;
            state.last_fired_ms = now;
            let stop = sd.stop_other_signals;
            merged = Some(match merged {
                Some(m) => merge_pre(m, sd.pre),
                None => sd.pre,
            });
            if stop {
                break;
            }
        }
        Ok(merged)
    }

    /// Pre phase: signals and routing (and the awaiting step's conditions) judged in
    /// one classifier call; a signal position beats routing.
    pub(crate) async fn pre_phase(&mut self) -> Result<(), AgentError> {
        let candidates = self.candidate_signals(false);
        let mut questions: Vec<Question> = Vec::new();
        let mut questions_of = Vec::with_capacity(candidates.len());
        for &i in &candidates {
            let sig = &self.a.signals[i];
            questions_of.push(sig.when.as_ref().map(|w| {
                questions.push(Question {
                    condition: w.clone(),
                    extract: sig.extract.clone(),
                });
                questions.len() - 1
            }));
        }
        if self.awaiting
            && let Some(flow) = self.flow()
            && let Some(idx) = self.s.step.as_deref().and_then(|s| flow.step_pos(s))
        {
            let step = &flow.steps[idx];
            let mut conds = self.due_branch_conditions(step, 0);
            if !step.end && !matches!(step.kind, StepKind::Auto) {
                let cx = self.cx();
                for s in flow.steps.iter().skip(idx + 1) {
                    let what = || guard::of_step("`if` predicate", &flow.id, &s.id);
                    if s.if_.as_ref().is_none_or(|p| guard::test(p, &cx, what))
                        && let Some(w) = &s.when
                        && !conds.contains(w)
                    {
                        conds.push(w.clone());
                    }
                    if s.if_.is_none() && s.when.is_none() {
                        break;
                    }
                }
            }
            let classifier_due = !questions.is_empty() || self.routing_due();
            if classifier_due {
                for c in conds {
                    if !questions.iter().any(|q| q.condition == c) {
                        questions.push(Question {
                            condition: c,
                            extract: None,
                        });
                    }
                }
            } else {
                // No classifier call is due: the respond call judges them for free.
                self.deferred = conds;
            }
        }
        let routing = self.routing_due();
        let routes: Vec<(&str, &str)> = if routing {
            let a = self.a;
            let cx = self.cx();
            let code = a
                .code_flows
                .iter()
                .zip(&a.code_route_descs)
                .map(|(f, d)| (f.id.as_ref(), d.as_str()));
            a.flows
                .iter()
                .zip(&a.route_descs)
                .filter(|(f, _)| f.is_eligible(&cx))
                .filter(|(f, _)| {
                    f.reentrant
                        || !self
                            .s
                            .completed_flows
                            .iter()
                            .any(|c| c.as_str() == f.id.as_ref())
                })
                .map(|(f, d)| (f.id.as_ref(), d.as_str()))
                .chain(code)
                .collect()
        } else {
            Vec::new()
        };
        let verdicts = if questions.is_empty() && routes.is_empty() {
            Verdicts::default()
        } else {
            self.classify(&questions, &routes).await?
        };
        let merged = self
            .fire_signals(
                &candidates,
                &questions_of,
                &verdicts,
                SignalPhase::Pre,
                None,
            )
            .await?;
        let signal_position = merged.as_ref().is_some_and(|m| m.base.position.is_some());
        if let Some(m) = merged {
            self.absorb_pre(DirectiveSource::PreSignal("merged".into()), m)
                .await?;
        }
        let picked = match verdicts.flow {
            Some(f) => Some(f),
            None if routing => match self.a.router.fallback() {
                crate::codeflow::Fallback::Flow(f) => Some(f.clone()),
                crate::codeflow::Fallback::Classic => None,
            },
            None => None,
        };
        if !signal_position
            && !self.turn_over()
            && let Some(f) = picked
        {
            self.enter_flow(&f, None, DirectiveSource::Routing(f.clone()))
                .await?;
        }
        Ok(())
    }

    /// Post phase: after the message exists. Positions arm the next turn's pending
    /// directive; pre-LLM-only fields are dropped; a reply replaces the message.
    pub(crate) async fn post_signals(
        &mut self,
        message: &mut String,
        stopped: &mut StoppedReason,
    ) -> Result<(), AgentError> {
        if matches!(stopped, StoppedReason::Aborted { .. }) {
            return Ok(());
        }
        let candidates = self.candidate_signals(true);
        if candidates.is_empty() {
            return Ok(());
        }
        let mut questions: Vec<Question> = Vec::new();
        let mut questions_of = Vec::with_capacity(candidates.len());
        for &i in &candidates {
            let sig = &self.a.signals[i];
            // Judged again even if the pre phase judged the same text: the post phase
            // sees the reply.
            questions_of.push(sig.when.as_ref().map(|w| {
                questions.push(Question {
                    condition: w.clone(),
                    extract: sig.extract.clone(),
                });
                questions.len() - 1
            }));
        }
        let verdicts = if questions.is_empty() {
            Verdicts::default()
        } else {
            self.s
                .history
                .push(crate::provider::Message::assistant(message.clone()));
            let v = self.classify(&questions, &[]).await;
            self.s.history.pop();
            v?
        };
        let reply = message.clone();
        let merged = self
            .fire_signals(
                &candidates,
                &questions_of,
                &verdicts,
                SignalPhase::Post,
                Some(&reply),
            )
            .await?;
        if let Some(m) = merged {
            if m.has_pre_only_fields() {
                tracing::debug!("post-phase signal emitted pre-LLM-only fields; dropped");
            }
            let mut base = m.base;
            if let Some(r) = base.reply.take() {
                *message = r;
                *stopped = StoppedReason::Reply;
            }
            let position = base.position.take();
            let src = DirectiveSource::PostSignal("merged".into());
            self.apply(src.clone(), base, super::Phase::Post).await?;
            if let Some(p) = position {
                let d = crate::directive::Directive {
                    position: Some(p),
                    ..Default::default()
                };
                self.a
                    .check_targets(&d, self.s.flow.as_deref())
                    .map_err(|e| AgentError::directive(&src, e))?;
                self.arm_pending(d);
            }
        }
        Ok(())
    }
}
