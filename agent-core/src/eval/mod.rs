//! The eval kit: does an agent do its job on a real model? (feature `eval`)
//!
//! Engine tests on a scripted model prove the engine; they say nothing about what a
//! real model makes of the prompts. An eval runs *scenarios* (user turns with
//! expectations on data, flow, step, stopped reason, tool calls and reply text) on a
//! real provider, several times, and reports figures, like a benchmark does for speed:
//!
//! - **pass^1**: share of scenarios whose run at temperature 0 passed;
//! - **pass^k**: share of scenarios that passed in *all* k runs at temperature 0.7
//!   with seeds 1..k (tau-bench's pass^k: reliability, not luck);
//! - model calls, prompt and output tokens, and latency per turn;
//! - the **cacheable prefix**: over each call after a run's first, the bytes of the
//!   HTTP request body equal to the previous call's body from the start, over the
//!   body's length (what a provider's prompt cache can reuse), overall and per call kind;
//! - the **cached prompt** share: prompt tokens the provider says it read from its prompt
//!   cache (llama.cpp and OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`,
//!   Gemini `cachedContentTokenCount`) over all prompt tokens: what the cache did in fact;
//! - **what the replies scored** (per turn in the JSON report, per suite in the tables):
//!   words per reply (median and 90th percentile), sentences repeated within a reply
//!   and from the previous reply, replies that leak the engine's instructions or a
//!   field identifier, turns that wait for a value without asking a question, replies
//!   that name a value the state does not hold or claim a tool's outcome the turn did
//!   not produce, and the hand-written `reply_not` and `data` expectations that failed
//!   (the rules are on [`ReplyScore`] and share nothing with the engine's);
//! - **unexpected stored values**: fields a run stored that its scenario names in no
//!   `data` or `present` expectation (nobody was expected to give them).
//!
//! Runs end as passed, failed (an expectation, or a model answer that stayed unusable
//! after repair: quality), errored (the model server failed or missed the turn
//! deadline: no verdict) or fault (a panic, a hang with no model call pending, an engine
//! error on a usable answer, a broken protocol: a bug, CI fails on it). After
//! [`RunOptions::breaker`] errored runs in a row the rest are marked errored without
//! running, so a dead server never costs a deadline per turn.
//!
//! # Suite files (TOML)
//!
//! Users write suites without Rust. Every key is checked: an unknown key, data field,
//! flow, step, tool or stopped kind is an error naming its line, and nothing runs
//! until the whole file is right ([`Suite::load`] against [`Catalog::of`] the agent).
//!
//! ```toml
//! description = "What the suite covers"      # optional
//!
//! [outcomes]                                  # optional: regexes by which a reply
//! book_room = ['(?i)\bbooked\b']              # states a tool's outcome (claims score)
//!
//! [defaults]                                  # optional, for every scenario
//! clock = "2026-06-15T09:30:00+01:00"         # RFC 3339: the agent clock, fixed
//! context = { tier = "gold" }                 # the agent context (JSON of its type)
//! reply_bounds = { words = 40, echoed = 0 }   # bounds on every reply: words, repeated,
//!                                             # echoed, leaked, contradictions, claims,
//!                                             # asks (true: a waiting turn asks)
//!
//! [[scenario]]
//! name = "one value per turn"                 # unique in the file
//! tags = ["quick", "smoke"]                   # optional; filter runs by tag
//! clock = "2026-06-15T09:30:00Z"              # optional, overrides the default
//! context = { tier = "basic" }                # optional, overrides the default
//! reply_bounds = { words = 25 }               # optional, overrides the default
//!
//! [[scenario.turn]]                           # one per user message, in order
//! user = "Hi, I need a hotel"                 # required
//! # or several phrasings of the same message: run i says phrasing i of every turn
//! # (the last where a turn has fewer), and the scenario passes only if all runs do:
//! # user = ["Hi, I need a hotel", "hey, got a room?"]
//! # expectations for this turn, all optional:
//! step = "ask_city"                           # current step ("" = none)
//! flow = "booking"                            # active flow ("" = none)
//! stopped = "needs_input"                     # needs_input, flow_completed, reply, halt,
//!                                             # aborted, auto_step_cap, transition_cap,
//!                                             # responded, flow_failed
//! data = { city = "Lisbon", guests = 2 }      # fields equal (strings: any case)
//! present = ["booking_id"]                    # fields set, to any value
//! absent = ["guests"]                         # fields not set (nobody said them)
//! tools = [{ name = "book_room", times = 1, args = { hotel = "Grand" } }]
//!                                             # exact count of calls this turn whose
//!                                             # arguments contain `args` (times: 1)
//! reply = ["(?i)which city"]                  # regexes the reply must match
//! reply_not = ["(?i)confirmed"]               # regexes it must not match
//!
//! [scenario.end]                              # optional; the same keys but `user`,
//! data = { booking_id = "GRAND-2" }           # checked after the last turn; tool
//! tools = [{ name = "book_room", times = 1 }] # counts are over the whole run
//! ```
//!
//! # In Rust
//!
//! [`Runner::of`] takes a function returning your agent's builder and
//! [`Runner::load`] reads a suite file checked against that agent (its doc has the
//! whole program); suites can also be written in code:
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::eval::{Expect, RunOptions, Runner, Scenario, Suite, Turn};
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Booking { city: Option<String> }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new();
//! model.respond(Answer::message("Which city?"));
//! let suite = Suite::new("demo").scenario(
//!     Scenario::new("hello stores nothing")
//!         .turn(Turn::user("hi").expect(Expect::step("ask_city")).expect(Expect::absent("city"))),
//! );
//! let runner = Runner::new(Arc::new(model), |setup| {
//!     let flow = Flow::builder("booking")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .build()?;
//!     setup.apply(Agent::<Booking, ()>::builder().flow(flow)).build()
//! })
//! .options(RunOptions { k: 0, progress: false, ..RunOptions::default() });
//! let report = runner.run(&suite).await;
//! assert_eq!(report.summary.pass_1, Some(1.0));
//! # });
//! ```

mod file;
mod options;
mod recorder;
mod report;
mod runner;
mod scenario;
mod score;

pub use file::{Catalog, SuiteError};
pub use options::RunOptions;
pub use recorder::CallStats;
pub use report::{
    EvalReport, Failure, Outcome, RunReport, ScenarioReport, SuiteReport, Summary, TurnStats,
};
pub use runner::{EvalError, Runner, Setup};
pub use scenario::{Expect, Observed, STOPPED_KINDS, Scenario, Turn, same, stopped_kind};
pub use score::{Outcomes, ReplyBounds, ReplyScore};

/// A named list of scenarios (one suite file).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Suite {
    /// The suite's name (a file's stem).
    pub name: String,
    /// Its scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// Patterns by which a reply states a tool's outcome (for the claims score).
    pub outcomes: Outcomes,
}

impl Suite {
    /// A suite named `name` with no scenarios yet; add them with [`Suite::scenario`].
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            scenarios: Vec::new(),
            outcomes: Outcomes::new(),
        }
    }
    /// Patterns by which a reply states a tool's outcome.
    pub fn outcomes(mut self, outcomes: Outcomes) -> Self {
        self.outcomes = outcomes;
        self
    }
    /// Add a scenario to the suite (run in the order added).
    pub fn scenario(mut self, s: Scenario) -> Self {
        self.scenarios.push(s);
        self
    }
    /// Only the scenarios carrying `tag`.
    pub fn only(mut self, tag: &str) -> Self {
        self.scenarios.retain(|s| s.has_tag(tag));
        self
    }

    /// Only the scenarios whose name contains `text` (case aside): one scenario of a
    /// suite, while working on it.
    pub fn named_like(mut self, text: &str) -> Self {
        let text = text.to_lowercase();
        self.scenarios
            .retain(|s| s.name.to_lowercase().contains(&text));
        self
    }
}
