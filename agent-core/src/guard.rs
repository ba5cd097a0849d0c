//! Every user callback the engine calls (hooks, predicates, signal handlers, reply
//! functions, the migration and response hooks) runs through here, so a panic in one
//! becomes [`AgentError::HookPanicked`] naming it instead of unwinding out of
//! `Agent::respond` halfway through a turn. The turn works on a copy of the session
//! and saves last, so a caught panic leaves the stored session as it was.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;

use crate::error::AgentError;
use crate::hook::{Cx, Predicate};
use crate::tool::panic_message;

fn panicked(what: String, payload: &(dyn std::any::Any + Send)) -> AgentError {
    let message = panic_message(payload);
    tracing::error!(callback = %what, panic = %message, "user callback panicked; the turn fails");
    AgentError::HookPanicked { what, message }
}

/// Run a synchronous callback. `what` names it, and is only built on a panic.
pub(crate) fn call<T>(
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> T,
) -> Result<T, AgentError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| panicked(what(), p.as_ref()))
}

/// Await an async callback (a hook or a signal handler).
pub(crate) async fn hook<T>(
    fut: impl Future<Output = T>,
    what: impl FnOnce() -> String,
) -> Result<T, AgentError> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|p| panicked(what(), p.as_ref()))
}

/// Test a code predicate where no error can be returned at once (inside a filter):
/// a panic counts as `false` and is remembered on the turn's dispatcher, which fails
/// the turn before the next model call and before the save.
pub(crate) fn test<D, C>(
    p: &Predicate<D, C>,
    cx: &Cx<'_, D, C>,
    what: impl FnOnce() -> String,
) -> bool {
    match call(what, || p(cx)) {
        Ok(b) => b,
        Err(e) => {
            cx.dispatcher.fault(e);
            false
        }
    }
}

/// "`kind` of step `s` in flow `f`".
pub(crate) fn of_step(kind: &str, flow: &str, step: &str) -> String {
    format!("{kind} of step `{step}` in flow `{flow}`")
}

/// "`if` predicate of branch n of step `s` in flow `f`" (n counts from 1).
pub(crate) fn of_branch(n: usize, flow: &str, step: &str) -> String {
    of_step(&format!("`if` predicate of branch {}", n + 1), flow, step)
}
