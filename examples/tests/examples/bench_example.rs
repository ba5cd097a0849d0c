//! The `bench` example in quick mode: every row of the table is there, and the model-call
//! counts (deterministic with the scripted provider) are exactly the budgeted ones.
//! Timings are not asserted.

#[path = "../../examples/bench/main.rs"]
#[allow(dead_code)] // `main` and the CLI are the example's, not the test's
mod bench;

#[test]
fn quick_bench_prints_every_row_and_the_exact_model_call_counts() {
    let report = bench::run(&bench::Options::quick()).expect("the quick bench runs");

    // One field per turn: exactly one model call per turn, ending on confirm.
    let calls = &report.model_calls;
    assert_eq!(calls.one_field_per_turn, [1, 1, 1, 1]);
    assert_eq!(calls.one_field_provider_calls, 4);
    assert_eq!(
        calls.one_field_steps,
        [
            Some("ask_city".to_owned()),
            Some("ask_date".to_owned()),
            Some("ask_guests".to_owned()),
            Some("confirm".to_owned()),
        ]
    );
    // All data in one message: confirm in one turn, at most two calls.
    assert_eq!(calls.all_in_one_step.as_deref(), Some("confirm"));
    assert_eq!(calls.all_in_one_turns, 1);
    assert!(
        calls.all_in_one_calls <= 2,
        "{} calls",
        calls.all_in_one_calls
    );
    assert_eq!(
        calls.all_in_one_provider_calls,
        calls.all_in_one_calls as usize
    );

    // Every measurement produced samples.
    assert_eq!(report.turn_time.len(), 3);
    assert!(report.turn_time.iter().all(|t| t.us_per_turn.samples > 0));
    assert!(report.throughput.rate.samples > 0);
    assert!(report.idle_session.stored_bytes > report.idle_session.history_text_bytes);
    assert!(report.idle_session.history_text_bytes > 0);
    assert!(report.streaming.live_turns > 0, "no delta streamed live");
    let stores: Vec<&str> = report.stores.iter().map(|s| s.store).collect();
    assert_eq!(stores, ["memory", "SQLite", "PostgreSQL", "Redis"]);
    assert!(report.stores[..2].iter().all(|s| s.rate.is_some()));
    // The lease's cost is measured on the same stores (memory and SQLite always).
    let leases: Vec<&str> = report.lease.iter().map(|l| l.store).collect();
    assert_eq!(leases, ["memory", "SQLite", "PostgreSQL", "Redis"]);
    for l in &report.lease[..2] {
        assert!(l.overhead_us().is_some(), "{l:?}");
        assert!(l.acquire_release_us.is_some_and(|s| s.samples > 0), "{l:?}");
    }

    // The table has every row, each once, in order.
    let table = report.to_markdown();
    let mut at = 0;
    for label in [
        "| framework time per turn, 1 flow ¹",
        "| framework time per turn, 2 flows ¹",
        "| framework time per turn, 2 flows + 1 signal ¹",
        "| model calls per turn, booking, one field per turn ²",
        "| model calls, booking, all data in one message ²",
        "| turns/s on independent sessions",
        "| bytes per idle session ⁴",
        "| store throughput, memory ⁵",
        "| store throughput, SQLite ⁵",
        "| store throughput, PostgreSQL ⁵",
        "| store throughput, Redis ⁵",
        "| session lease per turn, memory ⁷",
        "| session lease per turn, SQLite ⁷",
        "| session lease per turn, PostgreSQL ⁷",
        "| session lease per turn, Redis ⁷",
        "| streaming first-delta latency ⁶",
    ] {
        let found = table[at..]
            .find(label)
            .unwrap_or_else(|| panic!("row `{label}` missing or out of order:\n{table}"));
        at += found + label.len();
        assert_eq!(table.matches(label).count(), 1, "{label}");
    }
    assert!(table.contains("| 47 µs |") && table.contains("| 65 µs |"));
    assert!(table.contains("| 80 µs |"));
    assert!(table.contains("1.0 (4 calls in 4 turns)"), "{table}");
    assert!(table.contains("build: debug") || table.contains("build: release"));
    // Table rows all have the same number of cells.
    let widths: Vec<usize> = table
        .lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| l.matches(" | ").count())
        .collect();
    assert_eq!(
        widths.len(),
        19,
        "header + 12 rows + 4 session lease rows + 2 rows of processes sharing PostgreSQL"
    );
    assert_eq!(
        table.matches("processes sharing PostgreSQL").count(),
        2,
        "{table}"
    );
    assert!(widths.iter().all(|&w| w == widths[0]), "{table}");
    for label in bench::ROW_LABELS {
        assert!(table.contains(label), "{label}");
    }

    // The JSON form carries the same numbers.
    let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    assert_eq!(
        json["model_calls"]["one_field_per_turn"],
        serde_json::json!([1, 1, 1, 1])
    );
    assert_eq!(json["machine"]["mode"], "quick");
    assert_eq!(json["stores"].as_array().map(Vec::len), Some(4));
    assert_eq!(json["lease"].as_array().map(Vec::len), Some(4));
}

#[test]
fn the_bench_accepts_quick_and_json_and_rejects_unknown_options() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        bench::Options::parse(args(&["--quick", "--json"])).unwrap(),
        Some(bench::Options {
            quick: true,
            json: true
        })
    );
    assert_eq!(bench::Options::parse(args(&["--help"])).unwrap(), None);
    assert!(bench::Options::parse(args(&["--fast"])).is_err());
}

#[test]
fn stats_are_the_median_and_the_nearest_rank_p90() {
    let s = bench::stats((1..=10).map(f64::from).collect());
    assert_eq!((s.median, s.p90, s.samples), (5.5, 9.0, 10));
    let s = bench::stats(vec![3.0, 1.0, 2.0]);
    assert_eq!((s.median, s.p90), (2.0, 3.0));
}
