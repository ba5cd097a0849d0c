//! Hooks and predicates written with the macros run at run time with their typed views.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use agent_core::provider::CallKind;
use agent_core::testing::{Answer, ScriptedProvider};
use agent_core::typed::prelude::*;
use serde_json::json;

/// What the hooks saw, in order.
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn log(line: String) {
    LOG.lock().unwrap().push(line);
}

fn logged() -> Vec<String> {
    LOG.lock().unwrap().clone()
}

/// What the trip flow collects.
#[data]
pub struct Trip {
    /// Destination city
    pub city: String,
    /// Number of travellers
    pub travellers: u8,
    /// Set by `finalize`
    pub confirmed: bool,
}

/// Who is travelling.
#[context]
pub struct Traveller {
    /// Loyalty tier
    pub tier: String,
}

#[flow(data = Trip, context = Traveller, required(city, travellers),
       on_enter = welcome, on_exit = left)]
mod trip {
    fn welcome(v: View<'_>) -> PreDirective<Trip, Traveller> {
        super::log(format!(
            "flow.on_enter tier={} city={:?}",
            v.context().tier,
            v.city.get()
        ));
        PreDirective::new()
    }

    fn left(v: View<'_>) {
        super::log(format!("flow.on_exit session={}", v.session_id()));
    }

    #[step(prompt = "Ask the destination.", collect(city))]
    fn ask_city(v: ask_city::View<'_>) -> PreDirective<Trip, Traveller> {
        PreDirective::new().append_prompt(format!("Tier {} guest.", v.context().tier))
    }

    #[step(prompt = "Ask how many travel.", collect(travellers), requires(city))]
    async fn ask_travellers(v: ask_travellers::View<'_>) -> PreDirective<Trip, Traveller> {
        // `city` is required here: a plain String.
        PreDirective::new().append_prompt(format!("Destination: {}.", v.city))
    }

    #[step(auto, requires(travellers), branches(
        if |v| v.travellers > 4 => group,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm the trip.", requires(city, travellers), finalize = confirmed)]
    fn confirm() {}

    fn confirmed(v: confirm::View<'_>) -> impl IntoDirective<Trip> {
        Directive::data(Trip::patch().confirmed(v.travellers > 0)).complete()
    }

    #[step(end, reply = "Groups are handled by phone.")]
    fn group() {}
}

fn agent(p: &ScriptedProvider) -> Agent<Trip, Traveller> {
    Agent::builder()
        .provider(p.clone())
        .context(Traveller {
            tier: "gold".into(),
        })
        .flow(trip::flow().unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn hooks_see_their_typed_views_and_prepare_feeds_the_prompt() {
    let p = ScriptedProvider::new();
    p.default_answer(CallKind::Respond, Answer::message("Go on."));
    let a = agent(&p);
    p.respond(Answer::message("Where to?"));
    a.respond("hooks", "hi").await.unwrap();
    assert!(
        logged().contains(&"flow.on_enter tier=gold city=None".to_string()),
        "{:?}",
        logged()
    );
    assert!(p.requests()[0].instructions().contains("Tier gold guest."));

    p.respond(Answer::message("How many?").with_data(json!({"city": "Porto"})));
    let r = a.respond("hooks", "Porto").await.unwrap();
    assert_eq!(r.step.as_deref(), Some("ask_travellers"));
    p.clear_requests();
    // `ask_travellers` is now rendered with `city` present: its prepare hook (which
    // reads `city` as a plain String) feeds the prompt.
    a.respond("hooks", "not sure yet").await.unwrap();
    assert!(
        p.requests()
            .iter()
            .any(|q| q.instructions().contains("Destination: Porto.")),
        "{:#?}",
        p.requests()
    );
}

#[tokio::test]
async fn a_view_predicate_routes_to_the_group_reply() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("?").with_data(json!({"city": "Porto", "travellers": 6})));
    let r = a.respond("group", "Porto, six of us").await.unwrap();
    assert_eq!(r.message, "Groups are handled by phone.");
    assert_eq!(r.stopped, StoppedReason::Reply);
}

#[tokio::test]
async fn finalize_reads_required_fields_writes_data_and_completes() {
    let p = ScriptedProvider::new();
    let a = agent(&p);
    p.respond(Answer::message("?").with_data(json!({"city": "Porto", "travellers": 2})));
    p.respond(Answer::message("Two travellers to Porto: confirmed."));
    let r = a.respond("small", "Porto, two of us").await.unwrap();
    assert_eq!(r.data.confirmed, Some(true));
    assert_eq!(
        r.stopped,
        StoppedReason::FlowCompleted {
            flow: "trip".into()
        }
    );
}
