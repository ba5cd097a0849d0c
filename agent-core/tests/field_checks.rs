//! Custom field checks (`#[field(validate = path)]`, `AgentBuilder::validate`): they
//! refuse or normalise a value on every write, after the schema's constraints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_core::clock::ManualClock;
use agent_core::prelude::*;
use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use common::*;
use serde_json::json;

fn served(city: String) -> Result<String, String> {
    match city.as_str() {
        "Lisbon" | "Porto" => Ok(city),
        _ => Err("we only have hotels in Lisbon and Porto".into()),
    }
}

fn title_case(city: String) -> Result<String, String> {
    let t = city.trim();
    let mut c = t.chars();
    Ok(c.next()
        .map(|f| {
            f.to_uppercase()
                .chain(c.flat_map(char::to_lowercase))
                .collect()
        })
        .unwrap_or_default())
}

fn booking(p: &ScriptedProvider) -> AgentBuilder<Booking, Concierge> {
    Agent::builder()
        .name("Concierge")
        .clock(ManualClock::new(TODAY_MS))
        .provider(p.clone())
        .flow(booking_flow(false))
}

#[tokio::test]
async fn a_refused_model_value_is_not_stored_and_the_reply_asks_again_with_the_message() {
    let p = ScriptedProvider::new();
    let a = booking(&p).validate("city", served).build().unwrap();
    p.respond(
        Answer::message("Paris it is! Which date?")
            .with_data(json!({ "city": "Paris" }))
            .claiming("ask_date"),
    );
    p.default_answer(
        CallKind::Respond,
        Answer::message("Sorry, we only serve Lisbon and Porto. Which city?"),
    );
    let r = a.respond("s", "Paris please").await.unwrap();
    assert_eq!(r.data.city, None);
    assert_eq!(r.step.as_deref(), Some("ask_city"));
    assert_eq!(
        r.rejected_data,
        ["city was refused: we only have hotels in Lisbon and Porto"]
    );
    assert_eq!(
        r.message,
        "Sorry, we only serve Lisbon and Porto. Which city?"
    );
    let last = p.last_request().unwrap().instructions();
    assert!(
        last.contains(
            "city Paris is not possible: it was refused: we only have hotels in Lisbon and Porto"
        ),
        "{last}"
    );
}

#[tokio::test]
async fn a_normaliser_stores_its_output_and_checks_run_in_order() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .validate("city", title_case)
        .validate("city", served)
        .build()
        .unwrap();
    p.respond(Answer::message("Which date?").with_data(json!({ "city": "  lisbon " })));
    p.default_answer(CallKind::Respond, Answer::message("Which date?"));
    let r = a.respond("s", "lisbon").await.unwrap();
    // Normalised first, then accepted by the second check.
    assert_eq!(r.data.city.as_deref(), Some("Lisbon"));
    assert!(r.rejected_data.is_empty());
}

#[tokio::test]
async fn a_normaliser_whose_output_breaks_the_schema_is_refused() {
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .constrain("city", json!({ "maxLength": 6 }))
        .validate("city", |c: String| Ok(format!("{c} (Portugal)")))
        .build()
        .unwrap();
    p.respond(Answer::message("Which date?").with_data(json!({ "city": "Lisbon" })));
    p.default_answer(CallKind::Respond, Answer::message("Which city?"));
    let r = a.respond("s", "Lisbon").await.unwrap();
    assert_eq!(r.data.city, None);
    assert!(
        r.rejected_data[0].contains("was normalised to \"Lisbon (Portugal)\""),
        "{:?}",
        r.rejected_data
    );
}

#[tokio::test]
async fn a_dispatched_write_refused_by_a_check_is_a_typed_error_and_changes_nothing() {
    let p = ScriptedProvider::new();
    let a = booking(&p).validate("city", served).build().unwrap();
    p.respond(Answer::message("Which city?"));
    a.respond("s", "hi").await.unwrap();
    a.dispatch(
        "s",
        Directive::new().data(json!({ "city": "Paris" }).as_object().cloned().unwrap()),
    )
    .await
    .unwrap();
    let err = a.respond("s", "hello").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("city was refused: we only have hotels in Lisbon and Porto"),
        "{err}"
    );
    let s = a.session("s").await.unwrap().unwrap();
    assert_eq!(s.data.city, None);
    assert_eq!(s.turns, 1);
}

#[tokio::test]
async fn a_tool_write_refused_by_a_check_fails_the_tool_call() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {}
    let tool = FnTool::new(
        "set_city",
        "Set the city.",
        |_cx: ToolCx<Booking, Concierge>, _a: Args| async move {
            Ok(ToolOutput::text("set")
                .data(json!({ "city": "Paris" }).as_object().cloned().unwrap()))
        },
    )
    .into_arc();
    let p = ScriptedProvider::new();
    let a = booking(&p)
        .tool(tool)
        .validate("city", served)
        .build()
        .unwrap();
    p.respond(Answer::tool("set_city", json!({})));
    p.tool_round(Answer::message("That city is not served."));
    let r = a.respond("s", "set it").await.unwrap();
    assert!(!r.tool_calls[0].ok);
    assert!(
        r.tool_calls[0]
            .output
            .contains("we only have hotels in Lisbon and Porto"),
        "{}",
        r.tool_calls[0].output
    );
    assert_eq!(r.data.city, None);
}

#[tokio::test]
async fn a_check_on_an_unknown_field_fails_build() {
    let p = ScriptedProvider::new();
    let err = booking(&p)
        .validate("cty", served)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot validate `cty`"), "{err}");
    assert!(err.contains("city"), "did you mean: {err}");
}

mod typed {
    use agent_core::testing::{Answer, ScriptedProvider};
    use agent_core::typed::prelude::*;
    use serde_json::json;

    fn served(city: String) -> Result<String, String> {
        match city.as_str() {
            "Lisbon" | "Porto" => Ok(city),
            _ => Err("we only have hotels in Lisbon and Porto".into()),
        }
    }

    fn upper(code: String) -> Result<String, String> {
        Ok(code.trim().to_uppercase())
    }

    #[data]
    pub struct Trip {
        /// City
        #[field(validate = served)]
        pub city: String,
        /// Airport code
        #[field(len = 3..=3, validate = upper)]
        pub airport: String,
    }

    #[flow(title = "Trip", data = Trip, required(city, airport))]
    mod trip {
        #[step(prompt = "Ask for the city and the airport.", collect(city, airport))]
        fn ask() {}

        #[step(end, prompt = "Confirm.")]
        fn confirm() {}
    }

    #[tokio::test]
    async fn field_validate_checks_travel_with_the_flow() {
        let p = ScriptedProvider::new();
        let a = Agent::<Trip, ()>::builder()
            .provider(p.clone())
            .flow(trip::flow())
            .build()
            .unwrap();
        p.respond(
            Answer::message("Noted.").with_data(json!({ "city": "Paris", "airport": "lis" })),
        );
        p.default_answer(
            agent_core::provider::CallKind::Respond,
            Answer::message("Which city?"),
        );
        let r = a.respond("s", "Paris, flying into lis").await.unwrap();
        assert_eq!(r.data.city, None);
        assert_eq!(r.data.airport.as_deref(), Some("LIS"));
        assert_eq!(
            r.rejected_data,
            ["city was refused: we only have hotels in Lisbon and Porto"]
        );
    }

    #[data]
    pub struct Stay {
        /// Check-in day
        pub check_in: Date,
    }

    #[flow(title = "Stay", data = Stay, required(check_in))]
    mod stay {
        #[step(prompt = "Ask for the check-in day.", collect(check_in))]
        fn ask() {}

        #[step(end, prompt = "Confirm.")]
        fn confirm() {}
    }

    #[tokio::test]
    async fn a_date_field_is_iso_in_the_schema_grounded_in_words_and_typed_in_the_data() {
        let schema = Stay::json_schema();
        let prop = &schema["properties"]["check_in"];
        assert_eq!(prop["format"], "date", "{prop}");
        let p = ScriptedProvider::new();
        let a = Agent::<Stay, ()>::builder()
            .provider(p.clone())
            .clock(agent_core::clock::ManualClock::new(1_781_515_800_000))
            .flow(stay::flow())
            .build()
            .unwrap();
        // Words the model copied instead of a date: refused by the format, asked again.
        p.respond(Answer::message("Noted.").with_data(json!({ "check_in": "July 1st" })));
        p.default_answer(
            agent_core::provider::CallKind::Respond,
            Answer::message("Which day?"),
        );
        let r = a.respond("s", "July 1st").await.unwrap();
        assert_eq!(r.data.check_in, None);
        assert!(
            r.rejected_data[0].contains("check_in"),
            "{:?}",
            r.rejected_data
        );
        // The ISO day the words name is stored, as a typed date.
        p.respond(Answer::message("Noted.").with_data(json!({ "check_in": "2026-07-01" })));
        let r = a.respond("s", "July 1st, I said").await.unwrap();
        assert_eq!(r.data.check_in, Date::new(2026, 7, 1));
    }
}
