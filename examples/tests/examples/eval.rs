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
        let suite = eval::load(name, &AgentConfig::default()).unwrap_or_else(|e| panic!("{e}"));
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
fn options_pick_suites_subsets_and_k() {
    let args =
        |a: &[&str]| eval::parse_args(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    let all = args(&[]).unwrap();
    assert_eq!(all.suites, ["concierge", "triage", "clinic"]);
    assert_eq!((all.k, all.tag), (3, None));
    let smoke = args(&["--smoke", "--suite", "triage"]).unwrap();
    assert_eq!((smoke.k, smoke.tag.as_deref()), (0, Some("smoke")));
    assert_eq!(smoke.suites, ["triage"]);
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
    assert!(args(&["--k"]).unwrap_err().contains("needs a value"));
    assert!(
        args(&["--frobnicate"])
            .unwrap_err()
            .contains("unknown option")
    );
}
