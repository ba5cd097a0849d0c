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

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::directive::Directive;
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
}

impl Recorded {
    fn of(r: &Result<ToolOutput, ToolError>, dispatched: &[Directive]) -> Self {
        match r {
            Ok(out) => Self {
                ok: true,
                content: out.content.clone(),
                directive: (!out.directive.is_empty()).then(|| out.directive.clone()),
                dispatched: dispatched.to_vec(),
            },
            // A failed call's writes are dropped by the pipeline: none kept.
            Err(e) => Self {
                ok: false,
                content: e.to_string(),
                directive: None,
                dispatched: Vec::new(),
            },
        }
    }
}

/// A once-tool call whose earlier run journaled its intent but no result: the
/// process stopped (or lost the store) between the two writes, so whether its effect
/// happened is unknown. Given to the agent's `on_unknown_outcome` hook.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownOutcome {
    /// The session.
    pub session_id: String,
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The call's idempotency key (the one the first run saw): ask the system the
    /// tool changes whether it saw this key.
    pub key: String,
    /// When the intent was written (ms since the Unix epoch).
    pub intent_ms: u64,
}

/// The application's answer to an [`UnknownOutcome`].
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

/// What a once-call needs besides the tool: where the journal is and who decides
/// unknown outcomes.
pub(crate) struct JournalCx<'a> {
    pub(crate) store: &'a dyn SessionStore,
    pub(crate) hook: Option<&'a UnknownOutcomeHook>,
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
pub(crate) async fn call<D, C>(
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
                tracing::debug!(tool = %name, key = %key, "once-tool call replayed from the journal");
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
                    finish(&j, &session, &key, &Recorded::of(&r, &[])).await?;
                    r
                }
            }
        }
    }
}

/// Run the call, then journal its result before anyone sees it.
async fn run_and_record<D, C>(
    j: JournalCx<'_>,
    tool: &dyn Tool<D, C>,
    cx: ToolCx<D, C>,
    args: Value,
    default_limit: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    let session = cx.session_id.clone();
    let key = cx.key.clone();
    let dispatcher = cx.dispatcher.clone();
    let r = execute(tool, cx, args, default_limit).await;
    let dispatched = dispatcher.drain();
    finish(&j, &session, &key, &Recorded::of(&r, &dispatched)).await?;
    for d in dispatched {
        dispatcher.dispatch(d);
    }
    r
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
