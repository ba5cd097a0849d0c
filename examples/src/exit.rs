//! How an example ends: its exit status and, when it failed, one line on stderr in
//! words (the error's `Display`, never its `Debug`).
//!
//! ```no_run
//! use std::process::ExitCode;
//! # async fn demo() -> Result<examples::exit::Tally, Box<dyn std::error::Error>> { Ok(Default::default()) }
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> ExitCode {
//!     examples::exit::report(demo().await)
//! }
//! ```
//!
//! An example exits with 1 when it could not start (no model, a bad setting), when the
//! model could not be reached, or when every turn failed; a demo whose turns succeeded
//! (some failures it shows on purpose included) exits with 0.

use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

use agent_core::error::AgentError;

use crate::repl::ReplOutcome;
use crate::show::Transcript;

/// How the turns of a run went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Turns sent.
    pub turns: usize,
    /// Turns that failed.
    pub failed: usize,
    /// Turns that failed because a model call failed (after the provider's retries):
    /// the model cannot be reached.
    pub unreachable: usize,
}

impl Tally {
    /// Count one turn.
    pub fn record<T>(&mut self, outcome: &Result<T, AgentError>) {
        match outcome {
            Ok(_) => self.ok(),
            Err(e) => self.failure(e),
        }
    }
    /// Count a turn that succeeded.
    pub fn ok(&mut self) {
        self.turns += 1;
    }
    /// Count a turn that failed with `e`.
    pub fn failure(&mut self, e: &AgentError) {
        self.turns += 1;
        self.failed += 1;
        if matches!(e, AgentError::Provider { .. }) {
            self.unreachable += 1;
        }
    }
    /// Why the run failed, if it did.
    pub fn verdict(&self) -> Option<String> {
        if self.unreachable > 0 {
            Some(format!(
                "the model could not be reached or refused the call ({} of {} turn(s) failed; see the errors above)",
                self.failed, self.turns
            ))
        } else if self.turns > 0 && self.failed == self.turns {
            Some(format!(
                "every turn failed ({}; see the errors above)",
                self.turns
            ))
        } else {
            None
        }
    }
}

/// What an example's run returns, as far as its exit status goes.
pub trait Outcome {
    /// How its turns went.
    fn tally(&self) -> Tally;
}

impl Outcome for Tally {
    fn tally(&self) -> Tally {
        *self
    }
}

/// A run without turns (a server, a benchmark): its result alone decides.
impl Outcome for () {
    fn tally(&self) -> Tally {
        Tally::default()
    }
}

impl<D> Outcome for Transcript<D> {
    fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for turn in &self.turns {
            t.record(&turn.outcome);
        }
        t
    }
}

impl<D> Outcome for ReplOutcome<D> {
    fn tally(&self) -> Tally {
        self.tally
    }
}

/// A run's own result next to its tally (the streaming examples).
impl<T> Outcome for (T, Tally) {
    fn tally(&self) -> Tally {
        self.1
    }
}

/// The exit status of a run; when it failed, says why on `err` in words.
pub fn status<T: Outcome>(result: Result<T, Box<dyn Error>>, err: &mut dyn Write) -> ExitCode {
    let why = match result {
        Ok(outcome) => outcome.tally().verdict(),
        Err(e) => Some(e.to_string()),
    };
    match why {
        None => ExitCode::SUCCESS,
        Some(why) => {
            // Nothing more to do if stderr is gone: the status still says it failed.
            let _ = writeln!(err, "error: {why}");
            ExitCode::FAILURE
        }
    }
}

/// [`status`] with stderr: what every example's `main` returns.
pub fn report<T: Outcome>(result: Result<T, Box<dyn Error>>) -> ExitCode {
    status(result, &mut io::stderr())
}
