use super::*;
use agent_core::provider::Provider;

#[test]
fn schema_names_are_sanitised() {
    assert_eq!(schema_name("turn"), "turn");
    assert_eq!(schema_name("a b/c"), "a_b_c");
    assert_eq!(schema_name(""), "answer");
    assert_eq!(schema_name(&"x".repeat(80)).len(), 64);
}

#[test]
fn the_key_never_shows_in_debug() {
    let p = OpenAi::new("sk-secret-secret-secret").model("gpt-4o");
    let d = format!("{p:?}");
    assert!(!d.contains("sk-secret"), "{d}");
    assert!(d.contains("gpt-4o"));
}

#[test]
fn from_lookup_reads_the_documented_variables() {
    let env = |k: &str| match k {
        "OPENAI_API_KEY" => Some("sk-test-0123456789".to_owned()),
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_owned()),
        "OPENAI_MODEL" => Some("gpt-4.1".to_owned()),
        _ => None,
    };
    let p = OpenAi::from_lookup(env).unwrap();
    assert_eq!(p.base(), "http://127.0.0.1:9/v1");
    assert_eq!(p.name(), "openai/gpt-4.1");
    let err = OpenAi::from_lookup(|_| None).unwrap_err();
    assert!(err.to_string().contains("OPENAI_API_KEY"));
    let bad = OpenAi::from_lookup(|k| match k {
        "OPENAI_API_KEY" => Some("k".into()),
        "OPENAI_BASE_URL" => Some("127.0.0.1:9".into()),
        _ => None,
    });
    assert!(matches!(bad, Err(ConfigError::InvalidBaseUrl(_))));
}
