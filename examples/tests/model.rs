//! Choosing the examples' model from the environment (an injected lookup: no real
//! environment, no network), and reading the local model's address from the output of
//! `scripts/local-llm.sh start`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use agent_core::testing::ScriptedProvider;
use examples::model::{
    Choice, Fallback, Model, ModelError, choose, connect, local_script, parse_local,
};

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

/// Connect as the examples do with only `vars` set, the local model forbidden.
fn connect_with(vars: &[(&str, &str)], fallback: Fallback) -> Result<Model, ModelError> {
    let e = env(vars);
    connect(choose(&e, fallback), &e, ScriptedProvider::new, no_local)
}

fn no_local(_: Option<&str>) -> Result<String, ModelError> {
    panic!("the local model must not be started")
}

const LOCAL_STDOUT: &str = "OPENAI_BASE_URL=http://127.0.0.1:18080/v1\nOPENAI_API_KEY=unused-local-key\nOPENAI_MODEL=gemma-3-270m\n";

#[test]
fn with_nothing_set_the_main_example_uses_the_local_model_and_the_others_their_script() {
    let none = env(&[]);
    assert_eq!(
        choose(&none, Fallback::Local),
        Choice::Local { model: None }
    );
    assert_eq!(choose(&none, Fallback::Scripted), Choice::Scripted);
}

#[test]
fn agent_local_turns_the_scripted_fallback_into_the_local_model() {
    for on in ["1", "true", "yes"] {
        assert_eq!(
            choose(&env(&[("AGENT_LOCAL", on)]), Fallback::Scripted),
            Choice::Local { model: None }
        );
    }
    assert_eq!(
        choose(&env(&[("AGENT_LOCAL", "0")]), Fallback::Scripted),
        Choice::Scripted
    );
}

#[test]
fn vendor_keys_are_tried_in_order_openai_anthropic_gemini() {
    let all = [
        ("OPENAI_API_KEY", "sk-1"),
        ("ANTHROPIC_API_KEY", "a-1"),
        ("GEMINI_API_KEY", "g-1"),
    ];
    assert_eq!(choose(&env(&all), Fallback::Local), Choice::OpenAi);
    assert_eq!(choose(&env(&all[1..]), Fallback::Local), Choice::Anthropic);
    assert_eq!(choose(&env(&all[2..]), Fallback::Local), Choice::Gemini);
    assert_eq!(
        choose(&env(&[("GOOGLE_API_KEY", "g-2")]), Fallback::Scripted),
        Choice::Gemini
    );
    // A key beats AGENT_LOCAL.
    assert_eq!(
        choose(
            &env(&[("AGENT_LOCAL", "1"), ("GEMINI_API_KEY", "g")]),
            Fallback::Scripted
        ),
        Choice::Gemini
    );
}

#[test]
fn vendor_keys_beat_a_base_url_and_the_description_names_what_was_ignored() {
    let vars = [
        ("ANTHROPIC_API_KEY", "a-1"),
        ("AGENT_BASE_URL", "http://localhost:11434/v1"),
        ("LOCAL_MODEL", "gemma-3-270m"),
    ];
    let e = env(&vars);
    assert_eq!(choose(&e, Fallback::Scripted), Choice::Anthropic);
    let m = connect_with(&vars, Fallback::Local).unwrap();
    assert_eq!(
        m.description(),
        "using Anthropic claude-haiku-4-5 (ANTHROPIC_API_KEY is set; AGENT_BASE_URL, LOCAL_MODEL ignored: ANTHROPIC_API_KEY is set)"
    );
    assert_eq!(
        choose(&env(&vars[1..]), Fallback::Scripted),
        Choice::Compatible {
            base_url: "http://localhost:11434/v1".into()
        }
    );
}

#[test]
fn local_model_or_agent_model_names_the_local_model_and_reaches_the_script() {
    for var in ["LOCAL_MODEL", "AGENT_MODEL"] {
        let vars = [(var, "gemma-3-270m")];
        let e = env(&vars);
        let choice = choose(&e, Fallback::Scripted);
        assert_eq!(
            choice,
            Choice::Local {
                model: Some("gemma-3-270m".into())
            },
            "{var} picks the local model even where the example would use its script"
        );
        let mut asked = None;
        let m = connect(choice, &e, ScriptedProvider::new, |name| {
            asked = name.map(str::to_owned);
            Ok(LOCAL_STDOUT.to_owned())
        })
        .unwrap();
        assert_eq!(asked.as_deref(), Some("gemma-3-270m"));
        assert!(
            m.description()
                .contains("LOCAL_MODEL / AGENT_MODEL names it"),
            "{}",
            m.description()
        );
        assert_eq!(
            m.config().max_reply_chars,
            120,
            "the 270M model gets short replies"
        );
    }
    let e = env(&[
        ("LOCAL_MODEL", "gemma-3-270m"),
        ("AGENT_MODEL", "qwen2.5-coder-1.5b-instruct"),
    ]);
    let err = connect(
        choose(&e, Fallback::Local),
        &e,
        ScriptedProvider::new,
        no_local,
    )
    .unwrap_err();
    assert!(matches!(err, ModelError::Ambiguous { .. }), "{err:?}");
    assert!(err.to_string().contains("unset one of them"), "{err}");
}

#[test]
fn the_default_local_model_gets_room_for_real_replies() {
    let out = LOCAL_STDOUT.replace("gemma-3-270m", "qwen2.5-coder-1.5b-instruct");
    let m = connect(
        Choice::Local { model: None },
        &env(&[]),
        ScriptedProvider::new,
        |name| {
            assert_eq!(name, None, "the script picks its default");
            Ok(out.clone())
        },
    )
    .unwrap();
    assert!(m.is_local());
    let c = m.config();
    assert_eq!(c.temperature, Some(0.0));
    assert!(c.max_reply_chars >= 300 && c.max_tokens.is_some(), "{c:?}");
}

#[test]
fn descriptions_name_the_vendor_the_model_and_why() {
    let m = connect_with(&[("OPENAI_API_KEY", "sk-secret-123456")], Fallback::Local).unwrap();
    assert_eq!(
        m.description(),
        "using OpenAI gpt-4o-mini (OPENAI_API_KEY is set)"
    );
    assert!(
        !format!("{m:?}").contains("sk-secret"),
        "the key never prints"
    );

    let m = connect_with(
        &[
            ("ANTHROPIC_API_KEY", "a"),
            ("AGENT_MODEL", "claude-sonnet-4-5"),
        ],
        Fallback::Local,
    )
    .unwrap();
    assert_eq!(
        m.description(),
        "using Anthropic claude-sonnet-4-5 (ANTHROPIC_API_KEY is set)"
    );

    let m = connect_with(&[("GEMINI_API_KEY", "g")], Fallback::Local).unwrap();
    assert_eq!(
        m.description(),
        "using Google Gemini gemini-2.5-flash (GEMINI_API_KEY is set)"
    );

    let m = connect_with(
        &[
            ("AGENT_BASE_URL", "http://localhost:11434/v1/"),
            ("AGENT_MODEL", "llama3.2"),
        ],
        Fallback::Local,
    )
    .unwrap();
    assert_eq!(
        m.description(),
        "using the model llama3.2 on the OpenAI-compatible server at http://localhost:11434/v1 (AGENT_BASE_URL is set)"
    );
    assert_eq!(
        m.config().max_tokens,
        None,
        "vendors keep the default settings"
    );
}

#[test]
fn a_base_url_that_is_not_http_is_a_typed_error() {
    let err = connect_with(&[("AGENT_BASE_URL", "localhost:11434")], Fallback::Local).unwrap_err();
    assert!(matches!(err, ModelError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("http://"), "{err}");
}

#[test]
fn the_scripted_fallback_says_how_to_use_a_real_model() {
    let m = connect_with(&[], Fallback::Scripted).unwrap();
    assert_eq!(*m.choice(), Choice::Scripted);
    assert!(
        m.description().starts_with("using a scripted model"),
        "{}",
        m.description()
    );
    for var in ["OPENAI_API_KEY", "AGENT_BASE_URL", "AGENT_LOCAL=1"] {
        assert!(m.description().contains(var), "{}", m.description());
    }
    assert_eq!(m.provider().name(), "scripted");
}

#[test]
fn the_local_model_is_read_from_the_scripts_output() {
    let e = env(&[]);
    let m = connect(
        Choice::Local { model: None },
        &e,
        ScriptedProvider::new,
        |_| Ok(LOCAL_STDOUT.to_owned()),
    )
    .unwrap();
    assert_eq!(
        m.description(),
        "using the local model gemma-3-270m via llama.cpp at http://127.0.0.1:18080 (no API key set)"
    );
    assert_eq!(m.provider().name(), "compatible/gemma-3-270m");
    let config = m.config();
    assert_eq!(config.temperature, Some(0.0));
    assert!(config.max_tokens.is_some() && config.max_reply_chars <= 160);
}

#[test]
fn parsing_the_scripts_output_ignores_other_lines_and_accepts_export_and_quotes() {
    let s = parse_local(LOCAL_STDOUT).unwrap();
    assert_eq!(s.base_url, "http://127.0.0.1:18080/v1");
    assert_eq!(s.model, "gemma-3-270m");
    assert_eq!(s.api_key.as_deref(), Some("unused-local-key"));

    let s = parse_local(
        "[local-llm] ready\nexport OPENAI_BASE_URL=\"http://127.0.0.1:9/v1\"\nOPENAI_MODEL='m'\n",
    )
    .unwrap();
    assert_eq!(
        (s.base_url.as_str(), s.model.as_str(), s.api_key),
        ("http://127.0.0.1:9/v1", "m", None)
    );
}

#[test]
fn output_without_an_address_is_a_typed_error() {
    let err = parse_local("[local-llm] stage 1/4\n").unwrap_err();
    assert!(matches!(err, ModelError::LocalOutput(_)), "{err:?}");
    let err = connect(
        Choice::Local { model: None },
        &env(&[]),
        ScriptedProvider::new,
        |_| Ok("OPENAI_MODEL=x\n".into()),
    )
    .unwrap_err();
    assert!(matches!(err, ModelError::LocalOutput(_)), "{err:?}");
    assert!(
        err.to_string().contains("OPENAI_API_KEY"),
        "the error says how to use another model: {err}"
    );
}

#[test]
fn a_failing_start_is_reported_not_panicked() {
    let err = connect(
        Choice::Local { model: None },
        &env(&[]),
        ScriptedProvider::new,
        |_| Err(ModelError::LocalStart("exit status 1".into())),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("could not start the local model"),
        "{err}"
    );
}

#[test]
fn the_script_path_points_at_the_workspace_script() {
    assert!(local_script().is_file(), "{}", local_script().display());
}
