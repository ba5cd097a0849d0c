//! A template names fields by their Rust names, also under `#[serde(rename_all = ..)]`
//! or `#[serde(rename = ..)]`; the runtime flow gets the JSON names (`{start-city}`),
//! which `flow()` accepts and the reply renders.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
#[serde(rename_all = "kebab-case")]
pub struct Trip {
    /// Where the trip starts
    pub start_city: String,
    /// Travellers
    #[serde(rename = "party size")]
    pub party: u8,
}

#[flow(data = Trip)]
mod trip {
    #[step(prompt = "Ask where the trip starts.", collect(start_city, party))]
    fn ask_start() {}

    #[step(end, reply = "Leaving from {start_city} with {party}.")]
    fn done() {}
}

fn main() {
    let f = trip::flow().expect("the JSON names are accepted");
    match f.step("done").expect("step").kind() {
        agent_core::step::StepKind::Reply(text) => {
            assert_eq!(text, "Leaving from {start-city} with {party size}.");
            let data = agent_core::__private::serde_json::json!({
                "start-city": "Lisbon",
                "party size": 2,
            });
            assert_eq!(
                agent_core::template::render(text, &data),
                "Leaving from Lisbon with 2."
            );
        }
        _ => panic!("a reply step"),
    }
}
