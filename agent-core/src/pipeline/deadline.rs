//! The whole-turn deadline (`AgentConfig::turn_timeout`). It starts when the turn is
//! asked for, so the wait for the session (its lease, turns ahead of it) counts: a
//! wait that reaches it fails the turn with `SessionBusy` before anything runs. It
//! ends where the save begins, so a save is never cut halfway. A person's approval
//! is no wait inside a turn: the turn that resumes it has a deadline of its own.
//!
//! A timer can only stop code that awaits: a callback or a code flow that loops
//! without ever awaiting keeps the thread, and no deadline can end it.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{AgentError, ConfigErrors, FlowConfigurationError};

/// When the turn must be done.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// A deadline `limit` from now (none without a limit, or with one too far away
    /// to represent, such as `Duration::MAX`).
    pub(crate) fn start(limit: Option<Duration>) -> Option<Self> {
        let limit = limit?;
        let at = Instant::now().checked_add(limit)?;
        Some(Self { at, limit })
    }

    /// When a code flow's run is stopped as a failed step: a tenth of the limit
    /// before the deadline, which leaves the turn time to reply and save. A flow that
    /// never finishes then counts toward `max_flow_failures` and is cleared, instead
    /// of timing out every turn for ever.
    pub(crate) fn flow_stop(&self) -> Instant {
        self.at - self.limit / 10
    }

    /// The limit, for messages.
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    /// What is left of it (zero once it passed).
    pub(crate) fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }
}

/// Run `fut` until the deadline; past it, the turn fails with `TurnTimeout`.
pub(crate) async fn within<T>(
    deadline: Option<Deadline>,
    fut: impl Future<Output = Result<T, AgentError>>,
) -> Result<T, AgentError> {
    let Some(d) = deadline else {
        return fut.await;
    };
    // Outside any Tokio runtime (another executor) there is no timer to race: the turn
    // runs without its deadline. A Tokio runtime without timers is a setup mistake
    // with a fix, reported below.
    if tokio::runtime::Handle::try_current().is_err() {
        tracing::warn!(limit = ?d.limit, "no Tokio runtime: the turn runs without its deadline");
        return fut.await;
    }
    // Tokio panics when the runtime was built without timers: say how to fix it.
    let timed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tokio::time::timeout_at(d.at, fut)
    }))
    .map_err(|_| no_timer())?;
    match timed.await {
        Ok(r) => r,
        Err(_) => {
            tracing::warn!(limit = ?d.limit, "turn deadline passed; the turn is stopped");
            Err(AgentError::TurnTimeout { after: d.limit })
        }
    }
}

fn no_timer() -> AgentError {
    AgentError::Config(ConfigErrors(vec![FlowConfigurationError {
        flow: String::new(),
        step: None,
        problem: "`turn_timeout` needs a Tokio runtime with timers".into(),
        help: "build the runtime with `enable_time()` or `enable_all()` (`#[tokio::main]` does), or set `AgentConfig::turn_timeout` to `None`".into(),
    }]))
}
