//! The benchmark scripts, in one place: the `turn` and `stores` benches include this
//! module, and so does the `bench` example (`examples/examples/bench/main.rs`), so the
//! table it prints measures exactly what `cargo bench` measures.
//!
//! The user keeps not answering: the model re-asks and claims the awaiting step, and a
//! new session starts every few turns, so history stays short.
#![allow(dead_code)] // each includer uses part of it

use std::sync::Arc;

use agent_core::prelude::*;
use agent_core::provider::{CallKind, ModelRequest, ModelResponse, Usage};
use agent_core::signal::SignalCx;
use agent_core::store::SessionStore;
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the scripts' agent collects.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Booking {
    /// City the guest wants to stay in
    city: Option<String>,
    /// Check-in date, ISO 8601
    check_in: Option<String>,
    /// Number of guests
    guests: Option<u8>,
    feedback: Option<String>,
}

/// What every turn of a script says.
pub const MESSAGE: &str = "I'd like to book a room";

/// The constant answer to a call of `kind`.
pub fn instant_content(kind: CallKind) -> &'static str {
    match kind {
        CallKind::Route => r#"{"flow":"booking"}"#,
        CallKind::Classify => r#"{"conditions":{"c0":false},"flow":"booking"}"#,
        CallKind::Summarize => "summary",
        _ => {
            r#"{"data":{},"step":"ask_city","switch_flow":null,"message":"Which city would you like?"}"#
        }
    }
}

/// [`instant_content`] as a response.
pub fn instant_response(kind: CallKind) -> ModelResponse {
    ModelResponse {
        content: instant_content(kind).to_owned(),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        finish: Default::default(),
        id: None,
    }
}

/// Answers every call instantly from constants: what is timed is the engine. Profiled
/// as capable unless made with [`Instant::small`].
#[derive(Default)]
pub struct Instant {
    profile: agent_core::policy::ModelProfile,
}

impl Instant {
    /// Profiled as a small model: the small-model behaviours run.
    pub fn small() -> Self {
        Self {
            profile: agent_core::policy::ModelProfile::Small,
        }
    }
}

#[async_trait]
impl Provider for Instant {
    fn name(&self) -> &str {
        "instant"
    }
    fn profile(&self) -> agent_core::policy::ModelProfile {
        self.profile
    }
    async fn generate(
        &self,
        req: &ModelRequest,
    ) -> Result<ModelResponse, agent_core::error::ProviderError> {
        Ok(instant_response(req.kind))
    }
}

/// The scripted provider of the store benches (the test kit's, as users have it).
pub fn scripted() -> ScriptedProvider {
    let provider = ScriptedProvider::new();
    provider.default_answer(
        CallKind::Respond,
        Answer::message("Which city would you like?").claiming("ask_city"),
    );
    provider
}

pub fn booking<D: AgentData>() -> Result<Flow<D, ()>, ConfigErrors> {
    Flow::builder("booking")
        .title("Hotel booking")
        .when("the user wants to book a hotel room")
        .required(["city", "check_in", "guests"])
        .step(
            Step::model("ask_city")
                .prompt("Ask which city.")
                .collect(["city"]),
        )
        .step(
            Step::model("ask_date")
                .prompt("Ask for the check-in date.")
                .collect(["check_in"]),
        )
        .step(
            Step::model("ask_guests")
                .prompt("Ask how many guests.")
                .collect(["guests"]),
        )
        .step(Step::model("confirm").prompt("Confirm the booking.").end())
        .build()
}

pub fn feedback<D: AgentData>() -> Result<Flow<D, ()>, ConfigErrors> {
    Flow::builder("feedback")
        .when("the user wants to leave feedback")
        .step(
            Step::model("ask")
                .prompt("Ask for feedback.")
                .collect(["feedback"]),
        )
        .build()
}

/// The agent of a script: the booking flow, optionally the feedback flow (`flows` 2)
/// and the "frustrated" signal.
pub fn agent(
    provider: impl Provider + 'static,
    store: Arc<dyn SessionStore>,
    flows: usize,
    signal: bool,
) -> Result<Agent<Booking, ()>, ConfigErrors> {
    let mut b = Agent::builder()
        .name("Concierge")
        .provider(provider)
        .store_arc(store)
        .flow(booking()?);
    if flows > 1 {
        b = b.flow(feedback()?);
    }
    if signal {
        b = b.signal(
            Signal::new("frustrated")
                .when("the user is frustrated")
                .handle(|_: &SignalCx<'_, Booking, ()>| {
                    SignalDirective::from(PreDirective::new().append_prompt("Lead with empathy."))
                }),
        );
    }
    b.build()
}
