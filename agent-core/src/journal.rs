//! The once-tool journal: how a tool declared [`Effect::Once`] runs at most once per
//! call although turns are retried (save conflicts), redelivered (an inbound event
//! sent twice) and cut short (a crash).
//!
//! Each call of a once-tool is a durable record in the session store, apart from the
//! session itself (a turn's session is saved only at its end, too late for a payment
//! made in its middle). The record is keyed by the session and the call's key
//! ([`ToolCx::idempotency_key`]: the turn, the call's position in it, and a hash of
//! the tool's name and arguments) and written twice:
//!
//! 1. **intent**, before the call, with an insert that fails when the record exists;
//! 2. **result**, after the call, before the result is used.
//!
//! A run that finds the record with a result replays it (the tool is not called); a
//! run that finds an intent without a result cannot know whether the first run's
//! effect happened (it stopped in between), so the call goes to the agent's
//! [`on_unknown_outcome`](crate::agent::AgentBuilder::on_unknown_outcome) hook as an
//! [`UnknownOutcome`] and is never silently run again. A retried turn whose call
//! differs in name or arguments has another key: a new call.
//!
//! # A reused result on data that moved on
//!
//! A result's writes (its directive's data and context patches, and the directives
//! the tool dispatched) were computed on the data the call saw. The record keeps,
//! beside the result, the value each written field had then (its *base*). When the
//! result is reused, on a session another turn saved since (a redelivered event after
//! this holder lost its lease, a re-run after a save conflict), a written field whose
//! value is neither its base nor the value the result writes was changed by someone
//! else, and applying the result would erase that change. Such a result is not
//! applied: the agent's [`on_stale_once_result`](crate::agent::AgentBuilder::on_stale_once_result)
//! hook may merge it ([`StaleOnceResult`]), otherwise the turn fails with
//! [`AgentError::OnceResultStale`], which says the effect happened and carries the
//! journaled output; nothing is saved. A record journaled before bases were kept is
//! reused as it is.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::data::Patch;
use crate::directive::Directive;
use crate::error::AgentError;
use crate::hook::Dispatcher;
use crate::store::SessionStore;
use crate::tool::{Effect, Tool, ToolCx, ToolError, ToolOutput, execute};

pub use crate::store::JournalBegin;

/// A once-tool call's recorded result, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Recorded {
    /// Whether the call succeeded.
    ok: bool,
    /// The output text, or the failure as the model saw it.
    content: String,
    /// The output's directive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    directive: Option<Directive>,
    /// Directives the tool dispatched during the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dispatched: Vec<Directive>,
    /// The value each field the writes touch had in the data (and context) the call
    /// saw; `None` in records journaled before bases were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<Base>,
}

/// The values a result's writes were computed on, by field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Base {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    data: Patch,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    context: Patch,
}

/// The prefix of context fields in [`StaleOnceResult`]'s maps.
const CONTEXT: &str = "context.";

impl Recorded {
    fn of<D: Serialize, C: Serialize>(
        r: &Result<ToolOutput, ToolError>,
        dispatched: &[Directive],
        data: &D,
        context: &C,
    ) -> Self {
        let mut rec = match r {
            Ok(out) => Self {
                ok: true,
                content: out.content.clone(),
                directive: (!out.directive.is_empty()).then(|| out.directive.clone()),
                dispatched: dispatched.to_vec(),
                base: None,
            },
            // A failed call's writes are dropped by the pipeline: none kept.
            Err(e) => Self {
                ok: false,
                content: e.to_string(),
                directive: None,
                dispatched: Vec::new(),
                base: None,
            },
        };
        let (d, c) = rec.writes();
        if !d.is_empty() || !c.is_empty() {
            rec.base = Some(Base {
                data: values(data, d.keys()),
                context: values(context, c.keys()),
            });
        }
        rec
    }

    /// Every directive of the result, in the order the pipeline merges them.
    fn directives(&self) -> impl Iterator<Item = &Directive> {
        self.directive.iter().chain(&self.dispatched)
    }

    /// The value each data and context field ends up written with (shallow merge in
    /// emit order: the last write of a field wins).
    fn writes(&self) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
        let (mut data, mut context) = (BTreeMap::new(), BTreeMap::new());
        for d in self.directives() {
            for p in d.data_patches() {
                data.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            if let Some(p) = &d.context {
                context.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        (data, context)
    }

    /// The fields another writer changed since the call (a value that is neither the
    /// base nor the one this result writes), with their base and current values.
    fn changed<D: Serialize, C: Serialize>(&self, data: &D, context: &C) -> Option<Changed> {
        let base = self.base.as_ref()?;
        let (wd, wc) = self.writes();
        let now_data = values(data, wd.keys());
        let now_context = values(context, wc.keys());
        let mut out = Changed::default();
        let sides = [
            ("", &wd, &base.data, &now_data),
            (CONTEXT, &wc, &base.context, &now_context),
        ];
        for (prefix, written, then, now) in sides {
            for (field, value) in written {
                let was = then.get(field).unwrap_or(&Value::Null);
                let is = now.get(field).unwrap_or(&Value::Null);
                let name = format!("{prefix}{field}");
                if is != was && is != value {
                    out.fields.push(name.clone());
                }
                out.base.insert(name.clone(), was.clone());
                out.current.insert(name, is.clone());
            }
        }
        (!out.fields.is_empty()).then_some(out)
    }

    /// The effect as reported to the application.
    fn effect(&self, tool: &str, args: &Value, key: &str, reused: bool) -> OnceEffect {
        OnceEffect {
            tool: tool.to_owned(),
            arguments: args.clone(),
            key: key.to_owned(),
            output: self.content.clone(),
            directive: self.directive.clone().unwrap_or_default(),
            dispatched: self.dispatched.clone(),
            reused,
        }
    }
}

/// What [`Recorded::changed`] found.
#[derive(Default)]
struct Changed {
    fields: Vec<String>,
    base: Patch,
    current: Patch,
}

/// The values of `fields` in `value`'s JSON object (`null` for a missing one; none
/// when it does not serialize to an object).
fn values<'k, T: Serialize>(value: &T, fields: impl Iterator<Item = &'k String>) -> Patch {
    let Ok(Value::Object(all)) = serde_json::to_value(value) else {
        return Patch::new();
    };
    fields
        .map(|f| (f.clone(), all.get(f).cloned().unwrap_or(Value::Null)))
        .collect()
}

/// A once-tool call whose effect happened: its result is journaled (or an
/// [`on_unknown_outcome`](crate::agent::AgentBuilder::on_unknown_outcome) hook
/// recorded one). Carried by the errors of a turn that ends unsaved after such a
/// call ([`AgentError::OnceResultStale`], [`AgentError::ConflictAfterEffects`]), so
/// the application can tell the user what was done although the turn failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OnceEffect {
    /// The name of the once-tool that ran.
    pub tool: String,
    /// The arguments the tool ran with, as the model gave them after validation.
    pub arguments: Value,
    /// The call's idempotency key.
    pub key: String,
    /// The journaled output, as the model saw it.
    pub output: String,
    /// The journaled output's directive (its data and context writes, its position).
    pub directive: Directive,
    /// Directives the tool dispatched during the call, as journaled.
    pub dispatched: Vec<Directive>,
    /// Whether this turn reused the journaled result (`false`: the tool ran in it).
    pub reused: bool,
}

/// A once-tool's journaled result reused on a session that changed since the result
/// was computed: applying its writes would erase what another turn saved in between.
/// Given to the agent's
/// [`on_stale_once_result`](crate::agent::AgentBuilder::on_stale_once_result) hook;
/// without one (or when it declines) the turn fails with
/// [`AgentError::OnceResultStale`].
///
/// `base` and `current` hold every field the result writes (data fields by name,
/// context fields as `context.{name}`): its value when the tool ran and its value
/// now; `changed` names those another writer changed. For a list the tool appended
/// to, the merge is `current` plus what the result's write adds to `base`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StaleOnceResult {
    /// The id of the session whose turn reused the stale result.
    pub session_id: String,
    /// The call and its journaled result (its effect happened).
    pub effect: OnceEffect,
    /// The written fields another writer changed since the call.
    pub changed: Vec<String>,
    /// Each written field's value in the state the result was computed on.
    pub base: Patch,
    /// Each written field's value now.
    pub current: Patch,
}

/// The hook merging stale once-results.
pub(crate) type StaleHook = Arc<dyn Fn(&StaleOnceResult) -> Option<ToolOutput> + Send + Sync>;

/// The once-tool effects of one `respond` call (all its attempts), by key.
pub(crate) type EffectLog = Arc<Mutex<Vec<OnceEffect>>>;

/// Add `effect` to `log` unless its call is there.
fn log_effect(log: &EffectLog, effect: OnceEffect) {
    let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
    if !l.iter().any(|e| e.key == effect.key) {
        l.push(effect);
    }
}

/// A once-tool call whose earlier run journaled its intent but no result: the
/// process stopped (or lost the store) between the two writes, so whether its effect
/// happened is unknown. Given to the agent's `on_unknown_outcome` hook.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownOutcome {
    /// The id of the session whose turn found the unresolved call.
    pub session_id: String,
    /// The name of the once-tool whose outcome is unknown.
    pub tool: String,
    /// The arguments the earlier run was called with (the same call is being made again).
    pub arguments: Value,
    /// The call's idempotency key (the one the first run saw): ask the system the
    /// tool changes whether it saw this key.
    pub key: String,
    /// When the intent was written (ms since the Unix epoch).
    pub intent_ms: u64,
}

/// What the application decides about a once-tool call whose outcome is unknown: the
/// return value of the `on_unknown_outcome` hook given an [`UnknownOutcome`]. Check the
/// system the tool changes (by the call's key) before choosing to run it again.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "made once per unknown outcome, and boxing would change the public variant"
)]
pub enum Resolution {
    /// Do not run it: the call fails with this message (the model sees it). Nothing
    /// is recorded, so a later retry of the same call asks again.
    Fail(String),
    /// The application found out what happened: this is the call's result. It is
    /// journaled as the call's result and used as if the tool had returned it.
    Record(ToolOutput),
    /// The application checked that the effect did not happen: run the tool now
    /// (same key) and journal its result.
    RunAgain,
}

/// The hook deciding unknown outcomes.
pub(crate) type UnknownOutcomeHook =
    Arc<dyn Fn(UnknownOutcome) -> BoxFuture<'static, Resolution> + Send + Sync>;

/// What a once-call needs besides the tool: where the journal is, who decides
/// unknown outcomes and merges stale results, the turn (failed through its
/// dispatcher when a stale result cannot be applied) and the log of effects.
pub(crate) struct JournalCx<'a> {
    pub(crate) store: &'a dyn SessionStore,
    pub(crate) hook: Option<&'a UnknownOutcomeHook>,
    pub(crate) merge: Option<&'a StaleHook>,
    pub(crate) turn: &'a Dispatcher,
    pub(crate) effects: &'a EffectLog,
}

/// Wall-clock milliseconds since the Unix epoch (journal records are compared across
/// processes).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Run one call by its effect class: [`Effect::Once`] through the journal, the others
/// straight through [`execute`].
pub(crate) async fn call<D: Serialize, C: Serialize>(
    j: JournalCx<'_>,
    tool: &dyn Tool<D, C>,
    cx: ToolCx<D, C>,
    args: Value,
    default_limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    if tool.effect() != Effect::Once {
        return execute(tool, cx, args, default_limit).await;
    }
    let name = tool.name().to_owned();
    if !j.store.supports_journal() {
        return Err(ToolError::Failed(format!(
            "`{name}` runs at most once (`effect = once`) and this session store keeps no tool journal; it was not run"
        )));
    }
    let session = cx.session_id.clone();
    let key = cx.key.clone();
    let begun = j.store.journal_begin(&session, &key, &name, now_ms()).await;
    match begun {
        Err(e) => Err(ToolError::Failed(format!(
            "the call was not run: its intent could not be journaled ({e})"
        ))),
        Ok(JournalBegin::Started) => run_and_record(j, tool, cx, args, default_limit).await,
        Ok(JournalBegin::Done(bytes)) => match serde_json::from_slice::<Recorded>(&bytes) {
            Ok(rec) => {
                if let Some(changed) = rec.changed(cx.data.as_ref(), cx.context.as_ref()) {
                    return stale(&j, rec, changed, &cx, &name, &args);
                }
                tracing::debug!(tool = %name, key = %key, "once-tool call replayed from the journal");
                if rec.ok {
                    log_effect(j.effects, rec.effect(&name, &args, &key, true));
                }
                replay(rec, &cx)
            }
            Err(e) => Err(ToolError::OutcomeUnknown(format!(
                "the journaled result of this call is unreadable ({e}); it was not run again"
            ))),
        },
        Ok(JournalBegin::Pending { intent_ms }) => {
            let Some(hook) = j.hook else {
                tracing::warn!(tool = %name, key = %key, "once-tool call with an unknown outcome; not run again");
                return Err(ToolError::OutcomeUnknown(format!(
                    "an earlier attempt of this `{name}` call was interrupted and its outcome is unknown; it was not run again"
                )));
            };
            let question = UnknownOutcome {
                session_id: session.to_string(),
                tool: name.clone(),
                arguments: args.clone(),
                key: key.to_string(),
                intent_ms,
            };
            let answer = std::panic::AssertUnwindSafe(hook(question))
                .catch_unwind()
                .await;
            match answer {
                Err(p) => Err(ToolError::OutcomeUnknown(format!(
                    "the outcome of an earlier attempt is unknown and the `on_unknown_outcome` hook panicked ({}); it was not run again",
                    crate::tool::panic_message(p.as_ref())
                ))),
                Ok(Resolution::Fail(msg)) => Err(ToolError::OutcomeUnknown(msg)),
                Ok(Resolution::RunAgain) => run_and_record(j, tool, cx, args, default_limit).await,
                Ok(Resolution::Record(out)) => {
                    let r = Ok(out);
                    let rec = Recorded::of(&r, &[], cx.data.as_ref(), cx.context.as_ref());
                    finish(&j, &session, &key, &rec).await?;
                    log_effect(j.effects, rec.effect(&name, &args, &key, false));
                    r
                }
            }
        }
    }
}

/// Run the call, then journal its result (with the values its writes were computed
/// on) before anyone sees it.
async fn run_and_record<D: Serialize, C: Serialize>(
    j: JournalCx<'_>,
    tool: &dyn Tool<D, C>,
    cx: ToolCx<D, C>,
    args: Value,
    default_limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let session = cx.session_id.clone();
    let key = cx.key.clone();
    let dispatcher = cx.dispatcher.clone();
    let (data, context) = (cx.data.clone(), cx.context.clone());
    let r = execute(tool, cx, args.clone(), default_limit).await;
    let dispatched = dispatcher.drain();
    let rec = Recorded::of(&r, &dispatched, data.as_ref(), context.as_ref());
    finish(&j, &session, &key, &rec).await?;
    if rec.ok {
        log_effect(j.effects, rec.effect(tool.name(), &args, &key, false));
    }
    for d in dispatched {
        dispatcher.dispatch(d);
    }
    r
}

/// A reused result whose writes another writer's changes would be lost to: merged by
/// the agent's hook, or not applied and the turn failed (its effect reported).
fn stale<D, C>(
    j: &JournalCx<'_>,
    rec: Recorded,
    changed: Changed,
    cx: &ToolCx<D, C>,
    name: &str,
    args: &Value,
) -> Result<ToolOutput, ToolError> {
    let found = StaleOnceResult {
        session_id: cx.session_id.to_string(),
        effect: rec.effect(name, args, &cx.key, true),
        changed: changed.fields,
        base: changed.base,
        current: changed.current,
    };
    tracing::warn!(tool = %name, key = %cx.key, fields = ?found.changed, "a reused once-tool result was computed on data that changed since");
    if let Some(merge) = j.merge {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| merge(&found))) {
            Ok(Some(out)) => {
                log_effect(j.effects, found.effect);
                return Ok(out);
            }
            Ok(None) => {}
            Err(p) => tracing::error!(
                tool = %name,
                panic = %crate::tool::panic_message(p.as_ref()),
                "the `on_stale_once_result` hook panicked; the turn fails with the stale result"
            ),
        }
    }
    let message = format!(
        "`{name}` ran earlier (its result is journaled) on data that changed since ({}); its result was not applied",
        found.changed.join(", ")
    );
    j.turn.fault(AgentError::OnceResultStale(Box::new(found)));
    Err(ToolError::Recorded(message))
}

async fn finish(
    j: &JournalCx<'_>,
    session: &str,
    key: &str,
    rec: &Recorded,
) -> Result<(), ToolError> {
    let bytes = serde_json::to_vec(rec).map_err(|e| {
        ToolError::OutcomeUnknown(format!(
            "the call ran but its result could not be encoded for the journal ({e}); it is not used"
        ))
    })?;
    j.store
        .journal_finish(session, key, &bytes)
        .await
        .map_err(|e| {
            ToolError::OutcomeUnknown(format!(
                "the call ran but its result could not be journaled ({e}); it is not used, and a retry will not run it again"
            ))
        })
}

fn replay<D, C>(rec: Recorded, cx: &ToolCx<D, C>) -> Result<ToolOutput, ToolError> {
    if !rec.ok {
        return Err(ToolError::Recorded(rec.content));
    }
    for d in rec.dispatched {
        cx.dispatch(d);
    }
    Ok(ToolOutput {
        content: rec.content,
        directive: rec.directive.unwrap_or_default(),
        ..ToolOutput::default()
    })
}
