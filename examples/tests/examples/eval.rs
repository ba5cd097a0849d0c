//! The eval example: its suite files are valid against the agents they test (a typo
//! fails here, not after an hour on a model), big enough, and its options parse.

#[allow(dead_code)]
#[path = "../../examples/eval.rs"]
mod eval;

use agent_core::AgentConfig;

#[test]
fn every_suite_file_is_valid_against_its_agent() {
    let mut smoke = 0;
    for (name, at_least) in [("concierge", 30), ("triage", 15)] {
        let suite = eval::load(&eval::SuiteArg::named(name), &AgentConfig::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            suite.scenarios.len() >= at_least,
            "{name}: {} scenarios, the baseline is {at_least}",
            suite.scenarios.len()
        );
        assert!(
            !suite.clone().only("quick").scenarios.is_empty(),
            "{name} has a quick subset"
        );
        smoke += suite.only("smoke").scenarios.len();
    }
    assert!(smoke >= 5, "CI's smoke subset has {smoke} scenarios");
}

#[test]
fn a_suite_file_of_ones_own_is_checked_against_the_agent_and_filtered_by_name() {
    let dir = std::env::temp_dir().join(format!("eval-own-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mine.toml");
    std::fs::write(
        &path,
        "[[scenario]]\nname = \"greeting\"\n[[scenario.turn]]\nuser = \"hi\"\nstep = \"ask_city\"\n\n\
         [[scenario]]\nname = \"one city\"\n[[scenario.turn]]\nuser = \"Lisbon\"\ndata = { city = \"Lisbon\" }\n",
    )
    .unwrap();
    let arg = eval::SuiteArg {
        agent: "concierge".into(),
        path: path.clone(),
    };
    let suite = eval::load(&arg, &AgentConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.scenarios.len(), 2);
    assert_eq!(suite.named_like("CITY").scenarios.len(), 1);
    // A name the agent does not have is an error with its line, before anything runs.
    std::fs::write(
        &path,
        "[[scenario]]\nname = \"typo\"\n[[scenario.turn]]\nuser = \"hi\"\nstep = \"ask_cty\"\n",
    )
    .unwrap();
    let err = eval::load(&arg, &AgentConfig::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("mine.toml:5"), "{err}");
    assert!(err.contains("ask_cty"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_pick_suites_subsets_and_k() {
    let args =
        |a: &[&str]| eval::parse_args(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    let all = args(&[]).unwrap();
    let agents: Vec<&str> = all.suites.iter().map(|s| s.agent.as_str()).collect();
    assert_eq!(agents, ["concierge", "triage", "clinic"]);
    assert!(all.suites[0].path.ends_with("evals/concierge.toml"));
    assert_eq!((all.k, all.tag), (3, None));
    let smoke = args(&["--smoke", "--suite", "triage"]).unwrap();
    assert_eq!((smoke.k, smoke.tag.as_deref()), (0, Some("smoke")));
    assert_eq!(smoke.suites, [eval::SuiteArg::named("triage")]);
    assert_eq!(args(&["--quick", "--k", "2"]).unwrap().k, 2);
    assert!(all.greedy);
    let k_only = args(&["--no-greedy", "--k", "3"]).unwrap();
    assert_eq!((k_only.greedy, k_only.k), (false, 3));
    assert!(
        args(&["--smoke", "--no-greedy"])
            .unwrap_err()
            .contains("nothing to run")
    );
    assert!(
        args(&["--suite", "nope"])
            .unwrap_err()
            .contains("unknown suite `nope`")
    );
    // A suite file of one's own, against an example agent: named by --agent, or by
    // the file's name.
    let own = args(&[
        "--suite",
        "my/suite.toml",
        "--agent",
        "clinic",
        "--scenario",
        "past",
    ])
    .unwrap();
    assert_eq!(own.suites.len(), 1);
    assert_eq!(own.suites[0].agent, "clinic");
    assert_eq!(
        own.suites[0].path,
        std::path::PathBuf::from("my/suite.toml")
    );
    assert_eq!(own.scenario.as_deref(), Some("past"));
    let by_name = args(&["--suite", "other/triage.toml"]).unwrap();
    assert_eq!(by_name.suites[0].agent, "triage");
    assert!(
        args(&["--suite", "my/suite.toml"])
            .unwrap_err()
            .contains("name it with --agent")
    );
    assert!(
        args(&["--suite", "x.toml", "--agent", "nope"])
            .unwrap_err()
            .contains("unknown agent `nope`")
    );
    assert!(args(&["--k"]).unwrap_err().contains("needs a value"));
    assert!(
        args(&["--frobnicate"])
            .unwrap_err()
            .contains("unknown option")
    );
}
