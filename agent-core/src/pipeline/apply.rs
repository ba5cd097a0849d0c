//! Applying a directive to the turn: state writes first, then the position; and the
//! pre-LLM emissions of hooks and signals, recorded in the directive chain and applied
//! with their prompt additions and tools.

use std::sync::Arc;

use serde_json::Value;

use super::reentry::Reentry;
use super::{Phase, Turn, guard};
use crate::data::{AgentContext, AgentData, Patch, apply_unchecked};
use crate::directive::{Directive, Position, PreDirective, merge};
use crate::error::{AgentError, DirectiveError};
use crate::response::{ChainEntry, DirectiveSource, StoppedReason};
use crate::tool::Tool;

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Apply one (already merged) directive.
    pub(crate) async fn apply(
        &mut self,
        source: DirectiveSource,
        d: Directive,
        phase: Phase,
    ) -> Result<(), AgentError> {
        // A hook whose result could not be converted (see `__private::pre_hook_result`)
        // returned an empty directive in its place: the turn fails here, naming it.
        if let Some(e) = self.dispatcher.take_rejected() {
            return Err(AgentError::directive(&source, e));
        }
        if d.is_empty() {
            return Ok(());
        }
        self.a
            .check_targets(&d, self.s.flow.as_deref())
            .map_err(|e| AgentError::directive(&source, e))?;
        // A completed flow entered again starts over before the directive writes the
        // data it carries for it.
        let reentry = match self.reentered_by(&d) {
            Some(f) => {
                self.start_over(&f, &source)?;
                Reentry::Keep
            }
            None => Reentry::StartOver,
        };
        if let Some(p) = &d.data {
            self.write_data(&source, p).await?;
        }
        if let Some(p) = &d.context {
            self.write_context(&source, p).await?;
        }
        if let Some(r) = d.reply {
            match phase {
                Phase::Pre => self.reply = Some(r),
                Phase::Post => self.post_reply = Some(r),
            }
        }
        let Some(position) = d.position else {
            return Ok(());
        };
        self.pos_gen += 1;
        match position {
            Position::GoTo(g) => {
                if let Some(p) = &g.data {
                    self.write_data(&source, p).await?;
                }
                self.enter_flow_as(&g.flow, None, source, reentry).await?;
            }
            Position::GoToStep(g) => {
                if let Some(p) = &g.data {
                    self.write_data(&source, p).await?;
                }
                let current = self.s.flow.clone();
                match g.flow {
                    Some(f) if current.as_deref() != Some(f.as_str()) => {
                        self.enter_flow_as(&f, Some(&g.step), source, reentry)
                            .await?;
                    }
                    _ => {
                        self.s.step = Some(g.step);
                        self.awaiting = false;
                    }
                }
                self.landed = self.s.flow.clone().zip(self.s.step.clone());
            }
            Position::Complete(c) => {
                self.complete_flow(phase, &source).await?;
                if let Some(next) = c.next {
                    let moves = next.position.is_some();
                    Box::pin(self.apply(source, *next, phase)).await?;
                    if phase == Phase::Post && moves && self.s.flow.is_some() {
                        self.resumed = self.s.flow.clone();
                    }
                }
            }
            Position::Abort(a) => {
                self.exit_flow().await;
                self.s.stack.clear();
                self.s.cancelling = None;
                self.s.flow = None;
                self.s.step = None;
                self.awaiting = false;
                self.clear_session = a.clear_session;
                self.stopped = Some(StoppedReason::Aborted { reason: a.reason });
                self.next_pending = None;
            }
            Position::Reset(r) => {
                let Some(flow) = self.flow() else {
                    return Err(AgentError::directive(
                        &source,
                        DirectiveError::NoActiveFlow { field: "reset" },
                    ));
                };
                if r.clear_data {
                    let patch: Patch = flow
                        .declared_fields()
                        .iter()
                        .map(|f| (f.to_string(), Value::Null))
                        .collect();
                    self.write_data(&source, &patch).await?;
                }
                self.s.step = Some(flow.steps[flow.entry()].id.to_string());
                self.awaiting = false;
            }
        }
        Ok(())
    }

    pub(crate) fn arm_pending(&mut self, d: Directive) {
        self.next_pending = Some(match self.next_pending.take() {
            Some(p) => merge(p, d),
            None => d,
        });
    }

    pub(crate) async fn write_data(
        &mut self,
        source: &DirectiveSource,
        patch: &Patch,
    ) -> Result<(), AgentError> {
        if patch.is_empty() {
            return Ok(());
        }
        let next = self
            .a
            .schema
            .apply(&self.s.data, patch)
            .map_err(|e| AgentError::data(source, e))?;
        self.s.data = next;
        self.refresh_present();
        if let Some(flow) = self.flow()
            && let Some(h) = flow.hooks.on_data_update.clone()
        {
            let cx = self.cx();
            let what = || format!("on_data_update hook of flow `{}`", flow.id);
            guard::hook(h.call(&cx), what).await?;
        }
        Ok(())
    }

    async fn write_context(
        &mut self,
        source: &DirectiveSource,
        patch: &Patch,
    ) -> Result<(), AgentError> {
        if patch.is_empty() {
            return Ok(());
        }
        self.s.context =
            apply_unchecked(&self.s.context, patch).map_err(|e| AgentError::data(source, e))?;
        if let Some(flow) = self.flow()
            && let Some(h) = flow.hooks.on_context_update.clone()
        {
            let cx = self.cx();
            let what = || format!("on_context_update hook of flow `{}`", flow.id);
            guard::hook(h.call(&cx), what).await?;
        }
        Ok(())
    }

    pub(crate) async fn leave_flow(&mut self) {
        self.exit_flow().await;
    }

    /// Run the active flow's `on_exit` hook. A panic is remembered on the dispatcher
    /// (callers go on to change the position; the turn fails before the next model
    /// call or the save).
    async fn exit_flow(&mut self) {
        if let Some(flow) = self.flow()
            && let Some(h) = flow.hooks.on_exit.clone()
        {
            let cx = self.cx();
            let what = || format!("on_exit hook of flow `{}`", flow.id);
            if let Err(e) = guard::hook(h.call(&cx), what).await {
                self.dispatcher.fault(e);
            }
        }
    }

    /// Enter a flow (at `step` or its entry). Hops to a different flow count against
    /// `max_transitions_per_turn`; a flow that completed before starts over.
    pub(crate) async fn enter_flow(
        &mut self,
        flow_id: &str,
        step: Option<&str>,
        source: DirectiveSource,
    ) -> Result<(), AgentError> {
        self.enter_flow_as(flow_id, step, source, Reentry::StartOver)
            .await
    }

    /// [`Turn::enter_flow`], saying what re-entry does to the flow's own fields.
    pub(crate) async fn enter_flow_as(
        &mut self,
        flow_id: &str,
        step: Option<&str>,
        source: DirectiveSource,
        reentry: Reentry,
    ) -> Result<(), AgentError> {
        if self.a.code_flow(flow_id).is_some() {
            return self.start_code(flow_id, None, &source).await;
        }
        let Some(flow) = self.a.flow(flow_id).cloned() else {
            return Err(AgentError::directive(
                &source,
                DirectiveError::UnknownFlow {
                    flow: flow_id.to_owned(),
                    known: self.a.flow_ids(),
                },
            ));
        };
        let start_over = reentry == Reentry::StartOver && self.reenters(flow_id);
        // Entering a declarative flow leaves an active code flow.
        let from = match &self.s.code {
            Some(c) => Some(c.flow.clone()),
            None => self.s.flow.clone(),
        };
        if from.as_deref() != Some(flow_id) {
            if self.hops >= self.a.config.max_transitions_per_turn {
                tracing::warn!(blocked = flow_id, "transition cap reached");
                self.stopped = Some(StoppedReason::TransitionCap {
                    blocked: flow_id.to_owned(),
                });
                return Ok(());
            }
            if from.is_some() {
                self.hops += 1;
                if self.s.code.take().is_none() {
                    self.exit_flow().await;
                }
            }
            self.note_transition(from, flow_id, &source);
        }
        if start_over {
            self.start_over(flow_id, &source)?;
        }
        // A flow waiting on the dialogue stack, entered again by any means, waits no
        // longer (nor do the flows stacked above it).
        if let Some(i) = self.s.stack.iter().position(|f| f.flow == flow_id) {
            self.s.stack.truncate(i);
        }
        self.pos_gen += 1;
        self.s.flow = Some(flow_id.to_owned());
        self.s.step = Some(match step {
            Some(s) => s.to_owned(),
            None => flow.steps[flow.entry()].id.to_string(),
        });
        self.awaiting = false;
        if let Some(p) = &flow.initial_data {
            self.write_data(&source, p).await?;
        }
        if let Some(h) = flow.hooks.on_enter.clone() {
            let d = {
                let cx = self.cx();
                let what = || format!("on_enter hook of flow `{}`", flow.id);
                guard::hook(h.call(&cx), what).await?
            };
            self.emit_pre(DirectiveSource::FlowOnEnter(flow.id.as_ref().to_owned()), d)
                .await?;
        }
        Ok(())
    }

    /// Complete the active flow if its required fields are present; otherwise move to
    /// the first step that collects a missing one (a flow never completes with required
    /// fields missing).
    pub(crate) async fn complete_flow(
        &mut self,
        phase: Phase,
        source: &DirectiveSource,
    ) -> Result<(), AgentError> {
        let Some(flow) = self.flow() else {
            return Err(AgentError::directive(
                source,
                DirectiveError::NoActiveFlow { field: "complete" },
            ));
        };
        if let Some(missing) = flow.required_idx.iter().find(|&&i| !self.is_present(i)) {
            let field = self.a.schema.fields()[*missing].clone();
            tracing::warn!(flow = %flow.id, %field, "completion refused: required field missing");
            if let Some(step) = flow.steps.iter().find(|s| s.collect.contains(&field)) {
                self.s.step = Some(step.id.as_ref().to_owned());
                self.awaiting = false;
                self.pos_gen += 1;
            }
            return Ok(());
        }
        let fid = flow.id.as_ref().to_owned();
        let mut then = flow.on_complete.clone().unwrap_or_default();
        // The flow's own `on_complete` may move the conversation; otherwise the flow it
        // interrupted resumes (below).
        let mut moves = then.position.is_some();
        if let Some(h) = flow.hooks.on_complete.clone() {
            let d = {
                let cx = self.cx();
                let what = || format!("on_complete hook of flow `{}`", flow.id);
                guard::hook(h.call(&cx), what).await?
            };
            then = merge(then, d);
            moves = then.position.is_some();
        }
        self.exit_flow().await;
        self.completed.push(fid.clone());
        self.forget_skipped(&fid);
        self.s.completed_flows.push(fid.clone());
        self.s.last_completed = Some(crate::session::CompletedFlow {
            flow: fid.clone(),
            turn: self.s.turns,
        });
        self.s.flow = None;
        self.s.step = None;
        self.awaiting = false;
        self.pos_gen += 1;
        if !matches!(self.stopped, Some(StoppedReason::Aborted { .. })) {
            self.stopped = None;
        }
        if self.s.cancelling.as_deref() == Some(fid.as_str()) {
            self.s.cancelling = None;
        }
        let src = DirectiveSource::OnComplete(fid.clone());
        self.record(&src, &then, &[], &[], false);
        match phase {
            Phase::Pre => Box::pin(self.apply(src, then, Phase::Pre)).await?,
            // After the model answered: the flow it hands back to takes over in this
            // turn, and asks its question after the completing flow's message.
            Phase::Post => {
                Box::pin(self.apply(src, then, Phase::Post)).await?;
                if moves && self.s.flow.is_some() {
                    self.resumed = self.s.flow.clone();
                }
            }
        }
        if self.resume_interrupted(&fid, moves).is_none() {
            self.s.stack.retain(|f| f.by != fid);
        }
        Ok(())
    }

    /// Record a pre-LLM emission and apply it.
    pub(crate) async fn emit_pre(
        &mut self,
        source: DirectiveSource,
        d: PreDirective<D, C>,
    ) -> Result<(), AgentError> {
        self.record(&source, &d.base, &d.append_prompt, &d.inject_tools, d.halt);
        self.absorb_pre(source, d).await
    }

    /// Apply a pre-LLM emission (already recorded): augmentation, then the directive,
    /// then anything hooks dispatched.
    pub(crate) async fn absorb_pre(
        &mut self,
        source: DirectiveSource,
        d: PreDirective<D, C>,
    ) -> Result<(), AgentError> {
        d.base
            .validate()
            .map_err(|e| AgentError::directive(&source, e))?;
        if !d.append_prompt.is_empty() || !d.inject_tools.is_empty() || d.halt {
            self.aug.generation += 1;
        }
        self.aug.append.extend(d.append_prompt);
        for t in d.inject_tools {
            crate::directive::add_tool(&mut self.aug.tools, t);
        }
        self.aug.halt |= d.halt;
        Box::pin(self.apply(source.clone(), d.base, Phase::Pre)).await?;
        for queued in self.dispatcher.drain() {
            let src = DirectiveSource::HookDispatch(source.to_string());
            self.record(&src, &queued, &[], &[], false);
            Box::pin(self.apply(src, queued, Phase::Pre)).await?;
        }
        Ok(())
    }

    pub(crate) fn record(
        &mut self,
        source: &DirectiveSource,
        d: &Directive,
        append: &[String],
        tools: &[Arc<dyn Tool<D, C>>],
        halt: bool,
    ) {
        if d.is_empty() && append.is_empty() && tools.is_empty() && !halt {
            return;
        }
        self.chain.push(ChainEntry {
            source: source.clone(),
            directive: d.clone(),
            append_prompt: append.to_vec(),
            inject_tools: tools.iter().map(|t| t.name().to_owned()).collect(),
            halt,
        });
    }
}
