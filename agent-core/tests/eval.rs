//! The eval kit on a scripted model: suite files checked line by line, verdicts per
//! run, pass^1 and pass^k, and the outcomes that tell a bad answer (failed) from a dead
//! server (errored) and from our own bug (fault).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::eval::{
    Catalog, EvalReport, Expect, Outcome, RunOptions, Runner, Scenario, Setup, Suite, Turn,
};
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::{Booking, Concierge};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Hotel {
    hotel: String,
}

fn flow() -> Flow<Booking, Concierge> {
    let book = FnTool::new("book_room", "Book the room.", |_cx, a: Hotel| async move {
        Ok(ToolOutput::text(format!("booked {}", a.hotel)))
    });
    Flow::builder("booking")
        .required(["city", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask for the city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        .step(Step::model("confirm").prompt("Confirm.").tool(book))
        .build()
        .unwrap()
}

fn agent(setup: Setup<Concierge>) -> Result<Agent<Booking, Concierge>, ConfigErrors> {
    setup
        .apply(Agent::builder().name("Concierge").flow(flow()))
        .build()
}

fn catalog() -> Catalog {
    let p = ScriptedProvider::new();
    Catalog::of(
        &agent(Setup {
            provider: Arc::new(p),
            clock: None,
            context: None,
        })
        .unwrap(),
    )
}

fn quiet(k: u32) -> RunOptions {
    RunOptions {
        k,
        progress: false,
        turn_timeout: Duration::from_secs(5),
        ..RunOptions::default()
    }
}

const GOOD: &str = r#"
description = "two scenarios"

[defaults]
clock = "2026-06-15T09:30:00+01:00"
context = { tier = "gold" }

[[scenario]]
name = "hi stores nothing"
tags = ["smoke"]

[[scenario.turn]]
user = "hi"
step = "ask_city"
flow = "booking"
stopped = "needs_input"
absent = ["city", "guests"]
reply = ["(?i)city"]
reply_not = ["(?i)booked"]

[[scenario]]
name = "city"

[[scenario.turn]]
user = "Lisbon"
data = { city = "lisbon" }

[scenario.end]
tools = [{ name = "book_room", times = 0 }]
"#;

#[test]
fn a_suite_file_parses_into_scenarios_with_defaults() {
    let suite = Suite::parse("booking", "booking.toml", GOOD, &catalog()).unwrap();
    assert_eq!(suite.scenarios.len(), 2);
    let s = &suite.scenarios[0];
    assert_eq!(s.name, "hi stores nothing");
    assert_eq!(s.tags, ["smoke"]);
    // 2026-06-15T08:30:00Z
    assert_eq!(s.clock_ms, Some(1_781_512_200_000));
    assert_eq!(s.context, Some(json!({ "tier": "gold" })));
    assert_eq!(s.turns[0].expect.len(), 7);
    assert_eq!(suite.scenarios[1].end.len(), 1);
    assert_eq!(suite.clone().only("smoke").scenarios.len(), 1);
}

#[test]
fn an_unknown_key_is_an_error_naming_its_line() {
    let text =
        "[[scenario]]\nname = \"x\"\n\n[[scenario.turn]]\nuser = \"hi\"\nsteps = \"ask_city\"\n";
    let e = Suite::parse("s", "s.toml", text, &catalog()).unwrap_err();
    assert_eq!(e.problems.len(), 1, "{e}");
    assert!(e.problems[0].starts_with("6:"), "{e}");
    assert!(e.problems[0].contains("steps"), "{e}");
}

#[test]
fn every_unknown_name_is_reported_with_its_line_and_nothing_runs() {
    let text = r#"
[[scenario]]
name = "typos"
clock = "yesterday"

[[scenario.turn]]
user = "hi"
step = "ask_ctiy"
data = { cty = "Lisbon" }
tools = [{ name = "book_rom" }]
stopped = "done"
flow = "bookng"
reply = ["("]

[[scenario]]
name = "typos"
"#;
    let e = Suite::parse("s", "typos.toml", text, &catalog()).unwrap_err();
    let all = e.to_string();
    for (line, needle) in [
        ("4:", "clock `yesterday`"),
        ("8:", "did you mean `ask_city`?"),
        ("9:", "did you mean `city`?"),
        ("10:", "did you mean `book_room`?"),
        ("11:", "unknown stopped kind `done`"),
        ("12:", "did you mean `booking`?"),
        ("13:", "invalid pattern"),
        ("16:", "a second scenario named `typos`"),
        ("15:", "has no [[scenario.turn]]"),
    ] {
        assert!(
            e.problems
                .iter()
                .any(|p| p.starts_with(line) && p.contains(needle)),
            "missing {line} {needle} in:\n{all}"
        );
    }
    assert!(all.contains("typos.toml:8:"), "{all}");
}

#[test]
fn a_context_that_does_not_fit_the_type_is_an_error() {
    let text = "[defaults]\ncontext = { tier = 3 }\n";
    let e = Suite::parse("s", "s.toml", text, &catalog()).unwrap_err();
    assert!(e.problems[0].starts_with("2:"), "{e}");
    assert!(e.problems[0].contains("context"), "{e}");
}

fn scripted_city() -> ScriptedProvider {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::from_fn(|req| {
            // The second message names a city; the first does not.
            let last = req
                .messages
                .last()
                .map(|m| m.content.to_string())
                .unwrap_or_default();
            let (data, message) = if last.contains("Lisbon") {
                (
                    json!({ "city": "Lisbon" }),
                    "Lisbon, noted. How many guests?",
                )
            } else {
                (json!({}), "Which city? How many guests?")
            };
            let body = json!({ "message": message, "data": data });
            Ok(agent_core::provider::ModelResponse {
                content: body.to_string(),
                usage: agent_core::provider::Usage {
                    input_tokens: 100,
                    output_tokens: 10,
                    cached_input_tokens: 60,
                },
                ..Default::default()
            })
        }),
    );
    p
}

#[tokio::test]
async fn a_suite_runs_greedy_and_k_runs_and_reports_pass_rates() {
    let suite = Suite::parse("booking", "booking.toml", GOOD, &catalog()).unwrap();
    let report = Runner::new(Arc::new(scripted_city()), agent)
        .options(quiet(2))
        .run(&suite)
        .await;
    assert_eq!(report.faults(), 0, "{:#?}", report.failure_lines());
    assert_eq!(
        report.summary.pass_1,
        Some(1.0),
        "{:#?}",
        report.failure_lines()
    );
    assert_eq!(report.summary.pass_k, Some(1.0));
    // Greedy run first, then seeds 1 and 2, at the k temperature.
    let runs = &report.scenarios[0].runs;
    assert_eq!(runs.len(), 3);
    assert_eq!((runs[0].seed, runs[0].temperature), (None, 0.0));
    assert_eq!((runs[2].seed, runs[2].temperature), (Some(2), 0.7));
    assert_eq!(report.summary.turns, 6);
    let calls: usize = runs.iter().flat_map(|r| &r.turns).map(|t| t.calls).sum();
    assert_eq!(calls, 3);
    assert!(
        (report.summary.prompt_tokens_per_turn - 100.0 * report.summary.calls_per_turn).abs()
            < 1e-9
    );
    // The provider's own cache figures, summed over calls.
    assert_eq!(report.summary.cached_prompt_share, Some(0.6));
    let table = EvalReport {
        suites: vec![report],
    }
    .table();
    assert!(table.contains("60 %"), "{table}");
}

#[tokio::test]
async fn a_failing_expectation_names_the_turn_and_the_reason() {
    let suite = Suite::new("s").scenario(
        Scenario::new("wrong step")
            .turn(Turn::user("hi").expect(Expect::step("confirm")))
            .end(Expect::data("city", "Porto")),
    );
    let report = Runner::new(Arc::new(scripted_city()), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    assert_eq!(report.summary.pass_1, Some(0.0));
    let run = &report.scenarios[0].runs[0];
    assert_eq!(run.outcome, Outcome::Failed);
    assert_eq!(run.failures[0].turn, Some(0));
    assert_eq!(
        run.failures[0].reason,
        "step: expected `confirm`, found `ask_city`"
    );
    assert!(run.failures[1].end);
    let table = EvalReport {
        suites: vec![report.clone()],
    }
    .table();
    assert!(
        table.contains("wrong step [t=0] Failed: turn 1: step"),
        "{table}"
    );
}

#[tokio::test]
async fn a_later_call_reports_the_prefix_it_shares_with_the_previous_one() {
    let suite = Suite::new("s").scenario(
        Scenario::new("two turns")
            .turn(Turn::user("hi"))
            .turn(Turn::user("Lisbon")),
    );
    let report = Runner::new(Arc::new(scripted_city()), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    let calls = &report.scenarios[0].runs[0].calls;
    assert_eq!(calls.len(), 2);
    assert!(calls[0].first && calls[0].prefix_bytes == 0);
    assert!(!calls[1].first);
    assert!(calls[1].prefix_bytes > 0 && calls[1].prefix_bytes < calls[1].body_bytes);
    let share = report.summary.cacheable_prefix;
    assert!(share > 0.0 && share < 1.0, "{share}");
    assert!(
        report
            .summary
            .cacheable_prefix_by_kind
            .contains_key("respond")
    );
}

#[tokio::test]
async fn an_unusable_answer_is_a_failure_not_a_fault() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::raw("not json at all"));
    let suite = Suite::new("s").scenario(Scenario::new("garbage").turn(Turn::user("hi")));
    let report = Runner::new(Arc::new(p), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    let run = &report.scenarios[0].runs[0];
    assert_eq!(run.outcome, Outcome::Failed, "{:?}", run.failures);
    assert!(run.failures[0].reason.contains("unusable"));
    assert_eq!(report.faults(), 0);
}

#[tokio::test]
async fn a_dead_server_errors_runs_then_the_breaker_skips_the_rest() {
    let p = ScriptedProvider::new();
    p.default_answer(
        CallKind::Respond,
        Answer::error(ProviderError::Network("connection refused".into())),
    );
    let mut suite = Suite::new("s");
    for i in 0..5 {
        suite = suite.scenario(
            Scenario::new(format!("s{i}"))
                .turn(Turn::user("hi"))
                .turn(Turn::user("again")),
        );
    }
    let report = Runner::new(Arc::new(p.clone()), agent)
        .options(RunOptions {
            breaker: 2,
            ..quiet(0)
        })
        .run(&suite)
        .await;
    assert_eq!(report.summary.runs.get("errored"), Some(&5));
    assert_eq!(report.faults(), 0);
    // Each errored run stops at its first turn; after two, nothing calls the model.
    assert_eq!(p.calls(), 2);
    let skipped = &report.scenarios[4].runs[0].failures[0].reason;
    assert!(skipped.starts_with("not run"), "{skipped}");
}

/// A model that takes ten seconds.
struct Slow;

#[async_trait::async_trait]
impl agent_core::provider::Provider for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    async fn generate(
        &self,
        _: &agent_core::provider::ModelRequest,
    ) -> Result<agent_core::provider::ModelResponse, ProviderError> {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Err(ProviderError::Other("late".into()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_past_the_deadline_is_errored_but_a_hang_in_our_code_is_a_fault() {
    // The model never answers in time: errored.
    let p = Slow;
    let suite = Suite::new("s").scenario(Scenario::new("slow").turn(Turn::user("hi")));
    let options = RunOptions {
        turn_timeout: Duration::from_millis(100),
        ..quiet(0)
    };
    let report = Runner::new(Arc::new(p), agent)
        .options(options.clone())
        .run(&suite)
        .await;
    let run = &report.scenarios[0].runs[0];
    assert_eq!(run.outcome, Outcome::Errored, "{:?}", run.failures);

    // A step hook that never returns, with no model call pending: a fault.
    let stuck = |setup: Setup<Concierge>| {
        let flow = Flow::builder("booking")
            .step(
                Step::model("ask_city")
                    .prompt("Ask.")
                    .collect(["city"])
                    .prepare(|_cx: &Cx<'_, Booking, Concierge>| {
                        std::thread::sleep(Duration::from_millis(400));
                        PreDirective::new()
                    }),
            )
            .build()?;
        setup.apply(Agent::builder().flow(flow)).build()
    };
    let report = Runner::new(Arc::new(scripted_city()), stuck)
        .options(options)
        .run(&suite)
        .await;
    let run = &report.scenarios[0].runs[0];
    assert_eq!(run.outcome, Outcome::Fault, "{:?}", run.failures);
    assert!(
        run.failures[0].reason.contains("hung"),
        "{:?}",
        run.failures
    );
}

#[tokio::test]
async fn a_panicking_hook_is_a_fault_and_the_other_runs_go_on() {
    let built = Arc::new(AtomicUsize::new(0));
    let count = built.clone();
    let factory = move |setup: Setup<Concierge>| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        let mut step = Step::model("ask_city").prompt("Ask.").collect(["city"]);
        if n == 0 {
            step = step.prepare(
                |_cx: &Cx<'_, Booking, Concierge>| -> PreDirective<Booking, Concierge> {
                    panic!("hook bug")
                },
            );
        }
        let flow = Flow::builder("booking").step(step).build()?;
        setup.apply(Agent::builder().flow(flow)).build()
    };
    let suite = Suite::new("s")
        .scenario(Scenario::new("panics").turn(Turn::user("hi")))
        .scenario(Scenario::new("fine").turn(Turn::user("hi")));
    let report = Runner::new(Arc::new(scripted_city()), factory)
        .options(quiet(0))
        .run(&suite)
        .await;
    assert_eq!(report.faults(), 1);
    assert_eq!(report.scenarios[0].runs[0].outcome, Outcome::Fault);
    assert_eq!(report.scenarios[1].runs[0].outcome, Outcome::Passed);
}

#[tokio::test]
async fn reports_render_as_table_markdown_and_json() {
    let suite = Suite::parse("booking", "booking.toml", GOOD, &catalog()).unwrap();
    let report = Runner::new(Arc::new(scripted_city()), agent)
        .options(quiet(1))
        .run(&suite)
        .await;
    let all = EvalReport {
        suites: vec![report],
    };
    let table = all.table();
    assert!(table.contains("pass^1"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("booking  2 ")),
        "{table}"
    );
    let md = all.markdown();
    assert!(md.contains("| booking | 2 | 100 % | 100 % (k=1) |"), "{md}");
    assert!(md.contains("| hi stores nothing | pass | pass |"), "{md}");
    let json = serde_json::to_string(&all).unwrap();
    let back: EvalReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.suites[0].scenarios.len(), 2);
    assert_eq!(back.suites[0].summary.pass_k, Some(1.0));
    assert_eq!(
        back.suites[0].failure_lines(),
        all.suites[0].failure_lines()
    );
    assert_eq!(back.suites[0].summary.runs, all.suites[0].summary.runs);
}

const PHRASINGS: &str = r#"
[[scenario]]
name = "the city, said three ways"

[[scenario.turn]]
user = "hi"
step = "ask_city"

[[scenario.turn]]
user = ["Lisbon", "Lisbon, please", "Porto"]
data = { city = "Lisbon" }
"#;

#[tokio::test]
async fn every_phrasing_of_a_turn_runs_and_the_scenario_passes_only_if_all_do() {
    let suite = Suite::parse("booking", "booking.toml", PHRASINGS, &catalog()).unwrap();
    assert_eq!(suite.scenarios[0].variants(), 3);
    assert_eq!(suite.scenarios[0].turns[1].phrasing(2), "Porto");
    // A turn with fewer phrasings says its last one.
    assert_eq!(suite.scenarios[0].turns[0].phrasing(2), "hi");
    let report = Runner::new(Arc::new(scripted_city()), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    let runs = &report.scenarios[0].runs;
    assert_eq!(runs.len(), 3);
    let said: Vec<&str> = runs.iter().map(|r| r.turns[1].user.as_str()).collect();
    assert_eq!(said, ["Lisbon", "Lisbon, please", "Porto"]);
    let outcomes: Vec<Outcome> = runs.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Passed, Outcome::Passed, Outcome::Failed]
    );
    assert_eq!(report.summary.pass_1, Some(0.0));
    let lines = report.failure_lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0]
            .starts_with("the city, said three ways [t=0, phrasing 3] Failed: turn 2: data.city"),
        "{lines:?}"
    );
    // The stored data after each turn is in the report.
    assert_eq!(runs[0].turns[1].data["city"], json!("Lisbon"));
    assert_eq!(runs[2].turns[1].data["city"], json!(null));
}

#[test]
fn an_empty_list_of_phrasings_is_an_error_naming_its_line() {
    let text = "[[scenario]]\nname = \"x\"\n[[scenario.turn]]\nuser = []\n";
    let err = Suite::parse("s", "s.toml", text, &catalog()).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(err.problems[0].starts_with("4:8: `user = []`"), "{err}");
}

const SCORED: &str = r#"
[outcomes]
book_room = ["(?i)\\bbooked\\b"]

[defaults]
reply_bounds = { words = 6 }

[[scenario]]
name = "nobody expects the city"

[[scenario.turn]]
user = "hi"

[[scenario.turn]]
user = "Lisbon"
"#;

#[tokio::test]
async fn replies_are_scored_and_bounded_and_unexpected_values_are_counted() {
    let suite = Suite::parse("booking", "booking.toml", SCORED, &catalog()).unwrap();
    let p = ScriptedProvider::new();
    p.respond(Answer::message("We have rooms all year round. Which city?"));
    p.respond(
        Answer::message("We have rooms all year round. Lisbon, noted. How many guests?")
            .with_data(json!({ "city": "Lisbon" })),
    );
    let report = Runner::new(Arc::new(p), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    let run = &report.scenarios[0].runs[0];
    // The first reply runs over the suite's bound on words.
    let first = run.turns[0].score.as_ref().unwrap();
    assert_eq!((first.words, first.echoed), (8, 0));
    assert!(run.turns[0].waits && !first.unasked);
    assert_eq!(run.outcome, Outcome::Failed);
    assert_eq!(run.failures[0].turn, Some(0));
    assert_eq!(run.failures[0].reason, "reply: 8 words, bound 6");
    // The model stored a city that the scenario names nowhere.
    assert_eq!(run.unexpected, ["city = \"Lisbon\" (turn 2)"]);
    let r = &report.summary.replies;
    assert_eq!((r.replies, r.unexpected_stored), (2, 1));
    assert_eq!((r.waiting, r.unasked, r.claiming), (2, 0, 0));
    let table = EvalReport {
        suites: vec![report.clone()],
    }
    .table();
    assert!(table.contains("words median/p90"), "{table}");
}

#[tokio::test]
async fn a_claimed_outcome_without_its_tool_and_a_value_the_state_lacks_are_scored() {
    let p = ScriptedProvider::new();
    p.respond(Answer::message("Lisbon it is: your room is booked!"));
    let suite = Suite::new("s")
        .outcomes(
            agent_core::eval::Outcomes::new()
                .pattern("book_room", r"(?i)\bbooked\b")
                .unwrap(),
        )
        .scenario(
            Scenario::new("claims")
                .turn(Turn::user("Lisbon please"))
                .end(Expect::data("city", "Lisbon")),
        );
    let report = Runner::new(Arc::new(p), agent)
        .options(quiet(0))
        .run(&suite)
        .await;
    let run = &report.scenarios[0].runs[0];
    let s = run.turns[0].score.as_ref().unwrap();
    assert_eq!(s.claims, ["book_room: \"booked\""]);
    assert_eq!(s.contradictions, ["city: \"Lisbon\""]);
    assert!(s.unasked, "it waits for the city and asks nothing");
    assert_eq!(run.values_missed, 1);
    let r = &report.summary.replies;
    assert_eq!((r.claiming, r.contradicting, r.values_missed), (1, 1, 1));
}
