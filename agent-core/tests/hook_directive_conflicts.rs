//! A typed `PreDirective` given two position fields by merging erased directives
//! (`.erase()`: their shapes are not in their types, so the compiler cannot see them;
//! typed ones are compile errors) fails the turn with
//! `AgentError::Directive` naming the hook that returned it, instead of the runtime
//! merge keeping one of the two positions silently. The failed turn changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::__private::IntoPreDirective;
use agent_core::error::{AgentError, DirectiveError};
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::directive::state::Checked;
use agent_core::typed::prelude::*;
use serde_json::json;

type Erased = PreDirective<Trip, (), Checked, Checked>;

/// What the trip flow collects.
#[data]
pub struct Trip {
    /// Destination city
    pub city: String,
    /// A note
    pub note: String,
}

#[flow(data = Trip, on_enter = entering)]
mod trip {
    /// Builds its directive across statements; two positions on "enter twice".
    fn entering(v: View<'_>) -> Erased {
        let p = PreDirective::new()
            .data(Trip::patch().note("entered"))
            .erase();
        if v.message() != "enter twice" {
            return p;
        }
        let p = p.directive(Directive::complete().erase());
        p.directive(Directive::go_to_step(Step::confirm).erase())
    }

    /// Two positions on "two positions"; one position set across statements (with a
    /// reply and a data write added later) on "one position".
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city(v: ask_city::View<'_>) -> Erased {
        let mut p = PreDirective::new().append_prompt("Be brief.").erase();
        match v.message() {
            "two positions" => {
                p = p.directive(Directive::go_to_step(Step::confirm).erase());
                p = p.data(Trip::patch().note("lost"));
                p = p.directive(Directive::complete().erase());
            }
            "one position" => {
                p = p.directive(Directive::go_to_step(Step::confirm).erase());
                p = p.directive(Directive::reply("Straight to the confirmation.").erase());
                p = p.data(Trip::patch().city("Lisbon"));
            }
            _ => {}
        }
        p
    }

    #[step(end, prompt = "Confirm.")]
    fn confirm() {}
}

fn agent(p: &ScriptedProvider) -> Agent<Trip, ()> {
    Agent::builder()
        .provider(p.clone())
        .flow(trip::flow().unwrap())
        .build()
        .unwrap()
}

fn two_positions(e: AgentError, hook: &str, fields: [&str; 2]) {
    match e {
        AgentError::Directive {
            source_name,
            error: DirectiveError::MultiplePositions { fields: found },
        } => {
            assert_eq!(source_name, hook);
            assert_eq!(found, fields);
        }
        other => panic!("expected two positions from {hook}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_prepare_hook_with_two_positions_fails_the_turn_naming_it_and_changes_nothing() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    let a = agent(&p);
    a.respond("s", "hi").await.unwrap();
    let before = a.session("s").await.unwrap().expect("saved");
    assert_eq!(before.step.as_deref(), Some("ask_city"));

    let e = a.respond("s", "two positions").await.unwrap_err();
    two_positions(e, "step `ask_city` prepare", ["goToStep", "complete"]);
    // The message says what to do.
    let msg = AgentError::Directive {
        source_name: "step `ask_city` prepare".into(),
        error: DirectiveError::MultiplePositions {
            fields: vec!["goToStep".into(), "complete".into()],
        },
    }
    .to_string();
    assert!(msg.contains("one position field"), "{msg}");
    assert!(msg.contains("step `ask_city` prepare"), "{msg}");

    // Nothing was applied or saved.
    let after = a.session("s").await.unwrap().expect("saved");
    assert_eq!(after.version, before.version);
    assert_eq!(after.turns, before.turns);
    assert_eq!(after.step, before.step);
    assert_eq!(after.flow, before.flow);
    assert_eq!(after.data.note, before.data.note);
    assert_eq!(after.history.len(), before.history.len());
    assert!(after.completed_flows.is_empty());

    // The session goes on as before.
    let r = a.respond("s", "still thinking").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_city"));
}

#[tokio::test]
async fn a_flow_on_enter_hook_with_two_positions_fails_the_turn_naming_it() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    let a = agent(&p);
    let e = a.respond("s", "enter twice").await.unwrap_err();
    two_positions(e, "flow `trip` on_enter", ["complete", "goToStep"]);
    assert_eq!(p.calls(), 0);
    assert!(a.session("s").await.unwrap().is_none(), "nothing was saved");

    // Without the conflict the same hook's data write is applied.
    a.respond("s", "hi").await.unwrap();
    let s = a.session("s").await.unwrap().expect("saved");
    assert_eq!(s.data.note.as_deref(), Some("entered"));
}

#[tokio::test]
async fn one_position_set_across_statements_is_applied() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Shall I confirm?"));
    let a = agent(&p);
    a.respond("s", "hi").await.unwrap();
    let r = a.respond("s", "one position").await.unwrap();
    let s = a.session("s").await.unwrap().expect("saved");
    assert_eq!(s.data.city.as_deref(), Some("Lisbon"));
    assert_eq!(r.step.as_deref(), Some("confirm"), "{r:?}");
}

#[test]
fn the_conversions_report_the_two_positions() {
    let p: Erased = PreDirective::new().directive(Directive::complete().erase());
    let p = p.directive(Directive::reset().erase());
    assert_eq!(
        p.try_into_runtime().unwrap_err(),
        DirectiveError::MultiplePositions {
            fields: vec!["complete".into(), "reset".into()],
        }
    );
    let p: Erased = PreDirective::new().directive(Directive::abort("spam").erase());
    let p = p.directive(Directive::go_to_step(trip::Step::confirm).erase());
    assert!(matches!(
        p.try_into_pre_directive(),
        Err(DirectiveError::MultiplePositions { .. })
    ));
    // `reply` with `abort` merged from erased directives is reported by
    // `try_into_runtime` too.
    let p: Erased = PreDirective::new().directive(Directive::abort("spam").erase());
    let p = p.directive(Directive::reply("bye").erase());
    assert_eq!(
        p.try_into_runtime().unwrap_err(),
        DirectiveError::ReplyWithAbort
    );
    // One position, a reply and writes convert (typed: checked by the compiler).
    let p = PreDirective::<Trip, ()>::new()
        .directive(Directive::complete())
        .reply("Done.")
        .data(Trip::patch().city("Porto"));
    let rt = p.try_into_runtime().expect("valid");
    assert!(rt.base.position.is_some());
    assert_eq!(
        rt.base.data,
        Some(json!({"city": "Porto"}).as_object().unwrap().clone())
    );
    // The unchecked conversions keep working as before.
    let p: Erased = PreDirective::new().directive(Directive::complete().erase());
    let p = p.directive(Directive::reset().erase());
    assert_eq!(
        p.into_runtime().base.position.map(|p| p.field_name()),
        Some("complete")
    );
}
