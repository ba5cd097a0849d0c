//! `instructions` on its scripted model: which rules reach the model, call by call.

#[allow(dead_code)]
#[path = "../../examples/instructions.rs"]
mod instructions;

fn has(rules: &[String], text: &str) -> bool {
    rules.iter().any(|r| r.contains(text))
}

#[tokio::test]
async fn agent_when_if_and_step_rules_reach_the_model_when_they_apply() {
    let (model, (t, calls), printed) = run_example!(instructions);
    assert_eq!(t.failures(), 0, "{printed}");
    assert_eq!(calls.len(), 3, "{calls:#?}");

    // Agent rules and the `when` rule go with every reply call.
    for rules in &calls[..2] {
        assert!(
            has(rules, "MUST answer in the user's language"),
            "{rules:?}"
        );
        assert!(has(
            rules,
            "When the user asks about food: SHOULD mention the vegetarian menu"
        ));
    }
    // The `if` rule holds only once the party size (2) is known: not in the first
    // call, which read the message (as the answer to `ask_table`) and wrote for
    // `ask_phone`, so its reply is not used. The step rule goes with every call that
    // writes for `ask_phone`.
    assert!(
        !has(&calls[0], "terrace") && has(&calls[0], "country code"),
        "{:?}",
        calls[0]
    );
    assert!(
        has(&calls[1], "SHOULD offer a table on the terrace"),
        "{:?}",
        calls[1]
    );
    assert!(
        has(&calls[1], "MUST ask for the country code"),
        "{:?}",
        calls[1]
    );
    // The last call only extracts the phone number.
    assert!(calls[2].is_empty(), "{:?}", calls[2]);

    let r = t.last().unwrap();
    assert_eq!(r.data.phone.as_deref(), Some("+351912345678"));
    assert_eq!(r.message, "Your table is booked. See you soon!");
    assert_eq!(r.flow, None);
    assert_eq!(model.unused(), 0);
}
