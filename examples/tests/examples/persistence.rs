//! `persistence` on its scripted model: a second agent on the same SQLite file resumes
//! the session.

#[allow(dead_code)]
#[path = "../../examples/persistence.rs"]
mod persistence;

#[tokio::test]
async fn a_new_agent_on_the_same_file_continues_the_conversation() {
    let db = std::env::temp_dir().join(format!("agent-examples-test-{}.db", std::process::id()));
    let (model, t, printed) = run_example!(persistence, &db);
    assert_eq!(t.failures(), 0, "{printed}");

    // Before the restart: name collected, waiting at ask_company.
    let r = t.response(1).unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_company"));
    assert_eq!(r.version, 2);

    // After it: the new agent loaded that session from the file.
    assert!(
        printed.contains("resumed session `grace` (version 2, 2 turns) at step ask_company with {\"name\":\"Grace\"}"),
        "{printed}"
    );
    let r = t.response(2).unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_role"));
    assert_eq!(
        r.data.name.as_deref(),
        Some("Grace"),
        "data from before the restart"
    );
    assert_eq!(r.version, 3);

    let r = t.response(3).unwrap();
    assert_eq!(r.data.role.as_deref(), Some("rear admiral"));
    assert_eq!(r.message, "Thanks, your profile is complete!");
    assert_eq!(r.flow, None);

    assert!(!db.exists(), "the example removes its file");
    assert_eq!(model.unused(), 0);
}
