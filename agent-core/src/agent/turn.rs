//! What a turn needs around the pipeline: attempts under the conflict policy, the
//! session lease, loading (and upgrading) the stored session.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::data::{AgentContext, AgentData};
use crate::error::{AgentError, ConfigErrors, FlowConfigurationError, StoreError};
use crate::pipeline::Loaded;
use crate::pipeline::deadline::{Deadline, within};
use crate::pipeline::{Sink, Turn, guard};
use crate::provider::Provider;
use crate::response::AgentResponse;
use crate::session::Session;

use super::{Agent, ConflictPolicy, FlowVersionChange, Input, TurnOptions, replayed};

impl<D: AgentData, C: AgentContext> Agent<D, C> {
    /// The turn, re-run on fresh state after a save conflict (as `conflict` says).
    pub(super) async fn attempts(
        &self,
        session_id: &str,
        input: Input<'_>,
        options: &TurnOptions,
        sink: Option<&Sink<D>>,
        deadline: Option<Deadline>,
        lease: Option<&Arc<crate::store::HeldLease>>,
    ) -> Result<AgentResponse<D>, AgentError> {
        let inner = &self.inner;
        let mut attempt = 0;
        // The turn's identity in tool call keys, fixed by its first attempt: a re-run
        // after a conflict is the same turn, and its once-tool calls are not repeated.
        let mut turn_tag: Option<Arc<str>> = None;
        // The once-tool effects of every attempt: a conflict after them says so.
        let effects = crate::journal::EffectLog::default();
        loop {
            let mut load = within(deadline, self.load_for_turn(session_id)).await?;
            let loaded = load.session.version;
            if let Some(id) = options.event_id.as_deref()
                && let Some(done) = load.session.processed_event(id)
            {
                return replayed(done, sink);
            }
            self.check_flow_version(&mut load.session)?;
            // A resolution answers the held round's message, with its decision.
            let resumed: Option<crate::approval::PendingApproval>;
            let held_message: String;
            let message = match input {
                Input::Message(m) => {
                    resumed = None;
                    m
                }
                Input::Resolve(r) => {
                    let mut p = load.session.approval.clone().ok_or_else(|| {
                        AgentError::NoPendingApproval {
                            session_id: session_id.to_owned(),
                            call_id: r.call_id.clone(),
                            waiting: Vec::new(),
                        }
                    })?;
                    p.decide(&r.call_id, r.decision.clone())
                        .map_err(|waiting| AgentError::NoPendingApproval {
                            session_id: session_id.to_owned(),
                            call_id: r.call_id.clone(),
                            waiting,
                        })?;
                    held_message = p.message.clone();
                    resumed = Some(p);
                    &held_message
                }
            };
            let mut turn = Turn::new(inner, load, message, sink, options.event_id.clone());
            turn.resume = resumed;
            turn.deadline = deadline;
            turn.lease = lease.cloned();
            turn.once_effects = effects.clone();
            turn.turn_tag = turn_tag
                .get_or_insert_with(|| turn.turn_tag.clone())
                .clone();
            let span = crate::telemetry::turn_span(session_id, &inner.name, inner.provider.name());
            let started = crate::telemetry::Started::now();
            crate::telemetry::record_turn_input(&span, message);
            // Callbacks are caught where they are called (naming them); this catches
            // whatever else panics, so no panic unwinds out of `respond`.
            // Pinned in place: the turn's future is large, and moving it into the
            // wrappers (span, unwind guard) would copy it.
            let work = std::pin::pin!(turn.run());
            let run = AssertUnwindSafe(work.instrument(span.clone())).catch_unwind();
            let result = run.await.unwrap_or_else(|p| {
                Err(AgentError::HookPanicked {
                    what: "code called during the turn (a provider, store or data type)".into(),
                    message: crate::tool::panic_message(p.as_ref()),
                })
            });
            crate::telemetry::record_turn(
                &span,
                &inner.name,
                inner.provider.name(),
                started,
                &result,
            );
            match result {
                Err(AgentError::Store(StoreError::Conflict { .. }))
                    if options.event_id.is_some()
                        && attempt == 0
                        && sink.is_none_or(|s| !s.text_sent()) =>
                {
                    // A concurrent writer may have processed this very event: reload and
                    // answer from the store if so, otherwise apply the policy.
                    attempt += 1;
                    let fresh = self.load_for_turn(session_id).await?.session;
                    if let Some(done) = options
                        .event_id
                        .as_deref()
                        .and_then(|id| fresh.processed_event(id))
                    {
                        return replayed(done, sink);
                    }
                    if !matches!(inner.config.conflict, ConflictPolicy::Retry(n) if n > 0) {
                        return Err(after_effects(
                            StoreError::Conflict {
                                session_id: session_id.to_owned(),
                                expected: loaded,
                                found: fresh.version,
                            },
                            &effects,
                        ));
                    }
                    let backoff = inner.config.conflict_backoff;
                    backoff.pause(session_id, attempt).await;
                    continue;
                }
                Err(AgentError::Store(StoreError::Conflict { .. }))
                    if matches!(inner.config.conflict, ConflictPolicy::Retry(n) if attempt < n)
                        && sink.is_none_or(|s| !s.text_sent()) =>
                {
                    attempt += 1;
                    tracing::debug!(
                        session = session_id,
                        attempt,
                        "save conflict; re-running the turn on fresh state"
                    );
                    let backoff = inner.config.conflict_backoff;
                    backoff.pause(session_id, attempt).await;
                    continue;
                }
                Err(AgentError::Store(conflict @ StoreError::Conflict { .. })) => {
                    return Err(after_effects(conflict, &effects));
                }
                other => return other,
            }
        }
    }

    /// Hold session `session_id` for a turn (or a dispatch): first its lease in the
    /// store (`None` when leases are off or the store keeps none), waiting in the
    /// session's queue, first come, first served, then this agent's in-process lock.
    /// The whole wait is bounded by `lease.max_wait` and by the turn's `deadline`
    /// (which the wait counts toward), whichever comes first; past it the turn fails
    /// with [`AgentError::SessionBusy`].
    pub(super) async fn hold_session(
        &self,
        session_id: &str,
        deadline: Option<Deadline>,
    ) -> Result<Held, AgentError> {
        use crate::store::AcquireFailure;
        let started = tokio::time::Instant::now();
        let inner = &self.inner;
        let lease_config = inner
            .config
            .lease
            .as_ref()
            .filter(|_| inner.store.supports_leases());
        // The whole wait is bounded by `max_wait` (with a lease) and by what is left
        // of the turn's deadline, whichever is shorter.
        let left = deadline.map(|d| d.left());
        let limit = match (lease_config.map(|c| c.max_wait), left) {
            (Some(w), Some(l)) => Some(w.min(l)),
            (w, l) => w.or(l),
        };
        let slot = inner.session_lock(session_id);
        let lease = match lease_config {
            None => None,
            Some(config) => {
                let got = crate::store::acquire_lease(
                    &inner.store,
                    session_id,
                    &inner.lease_holder,
                    config,
                    started,
                    limit.unwrap_or(std::time::Duration::MAX),
                    &slot.released,
                )
                .await;
                match got {
                    Ok(l) => Some(Arc::new(crate::store::HeldLease::new(
                        inner.store.clone(),
                        l,
                        slot.released.clone(),
                    ))),
                    Err(AcquireFailure::Busy { waited, holder }) => {
                        return Err(AgentError::SessionBusy {
                            session_id: session_id.to_owned(),
                            waited,
                            holder,
                        });
                    }
                    Err(AcquireFailure::Store(e)) => return Err(e.into()),
                    Err(AcquireFailure::NoTimer) => {
                        return Err(AgentError::Config(ConfigErrors(vec![
                            FlowConfigurationError {
                                flow: String::new(),
                                step: None,
                                problem: "waiting for a busy session's lease needs a Tokio runtime with timers"
                                    .into(),
                                help: "build the runtime with `enable_time()` or `enable_all()`, or set `AgentConfig::lease` to `None`".into(),
                            },
                        ])));
                    }
                }
            }
        };
        // Behind the lease this lock is normally free; without one, turns of this
        // agent queue here (first come, first served: Tokio's mutex is fair).
        let left = limit.map(|l| l.saturating_sub(started.elapsed()));
        let Some(guard) = crate::store::bounded(left, slot.lock.lock_owned()).await else {
            if let Some(held) = &lease {
                release(held).await;
            }
            return Err(AgentError::SessionBusy {
                session_id: session_id.to_owned(),
                waited: started.elapsed(),
                holder: None,
            });
        };
        Ok(Held {
            lease,
            _lock: guard,
        })
    }

    /// Detect a session whose active flow changed incompatibly since it was saved; let
    /// the migration hook upgrade it, or report it.
    pub(super) fn check_flow_version(&self, session: &mut Session<D, C>) -> Result<(), AgentError> {
        let Some(fid) = session.flow.as_deref() else {
            return Ok(());
        };
        let registered = self.inner.flow(fid);
        if registered.is_some_and(|f| session.flow_version.as_deref() == Some(f.version.as_str())) {
            return Ok(());
        }
        let fid = fid.to_owned();
        let current = registered.map(|f| f.version.clone());
        let problem = match self.inner.flow(&fid) {
            None => Some(format!("flow `{fid}` is no longer registered")),
            Some(f) => session
                .step
                .as_deref()
                .filter(|s| f.step(s).is_none())
                .map(|s| format!("step `{s}` no longer exists in flow `{fid}`")),
        };
        let Some(problem) = problem else {
            // Changed, but the session's position still exists: carry on.
            session.flow_version = current;
            return Ok(());
        };
        let change = FlowVersionChange {
            flow: fid.clone(),
            stored: session.flow_version.clone(),
            current: current.clone(),
            problem: problem.clone(),
        };
        if let Some(m) = &self.inner.migrate {
            let migrated = guard::call(|| "migration hook".into(), || m(session, &change))?;
            migrated.map_err(|reason| AgentError::IncompatibleSession {
                session_id: session.id.clone(),
                problem: format!("{problem}; migration failed: {reason}"),
            })?;
            let still_broken = match session.flow.as_deref() {
                None => false,
                Some(f) => match self.inner.flow(f) {
                    None => true,
                    Some(flow) => session
                        .step
                        .as_deref()
                        .is_some_and(|s| flow.step(s).is_none()),
                },
            };
            if !still_broken {
                session.flow_version = session
                    .flow
                    .as_deref()
                    .and_then(|f| self.inner.flow(f))
                    .map(|f| f.version.clone());
                return Ok(());
            }
        }
        Err(AgentError::IncompatibleSession {
            session_id: session.id.clone(),
            problem,
        })
    }

    /// Load for a turn: from the decoded cache when the stored bytes are the ones this
    /// process saved last (with the presence set), else decoded.
    pub(super) async fn load_for_turn(&self, id: &str) -> Result<Loaded<D, C>, AgentError> {
        let session = match self.inner.store.load(id).await? {
            Some(stored) => match self.inner.recall(&stored) {
                Some(hit) => return Ok(hit),
                None => Session::decode(&stored)?,
            },
            None => {
                return Ok(Loaded {
                    session: Session::new(
                        id,
                        self.inner.context.clone(),
                        self.inner.clock.now_ms(),
                    ),
                    present: Some(self.inner.fresh_present.clone()),
                    prev: None,
                });
            }
        };
        Ok(Loaded {
            session,
            present: None,
            prev: None,
        })
    }

    pub(super) async fn load_or_new(&self, id: &str) -> Result<Session<D, C>, AgentError> {
        match self.inner.store.load(id).await? {
            Some(stored) => Ok(Session::decode(&stored)?),
            None => Ok(Session::new(
                id,
                self.inner.context.clone(),
                self.inner.clock.now_ms(),
            )),
        }
    }
}

/// The error of a turn that ends with a save `conflict`: it says which once-tool
/// effects happened in its attempts, if any.
fn after_effects(conflict: StoreError, effects: &crate::journal::EffectLog) -> AgentError {
    let effects = effects.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if effects.is_empty() {
        AgentError::Store(conflict)
    } else {
        AgentError::ConflictAfterEffects { conflict, effects }
    }
}

/// Release a turn's lease; a failure only delays the next turn until it expires.
pub(super) async fn release(held: &crate::store::HeldLease) {
    if let Err(e) = held.release().await {
        tracing::warn!(session = %held.lease().session_id, error = %e, "releasing the session lease failed; it expires after its ttl");
    }
}

/// A session held for a turn: its lease (when leases are on) and this agent's
/// in-process lock, both given up when dropped (the lease in the background, unless
/// released first).
pub(super) struct Held {
    pub(super) lease: Option<Arc<crate::store::HeldLease>>,
    _lock: tokio::sync::OwnedMutexGuard<()>,
}
