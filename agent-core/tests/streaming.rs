//! Live streaming: reply text reaches the consumer while the model is still writing,
//! whenever nothing after the call can replace it; otherwise it is held back until the
//! turn is saved. Either way the deltas concatenate to the final message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::error::ProviderError;
use agent_core::prelude::*;
use agent_core::provider::{ModelRequest, ModelResponse, StreamChunk};
use agent_core::testing::{Answer, ScriptedProvider};
use async_trait::async_trait;
use common::*;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::json;
use tokio::sync::Semaphore;

/// Streams the scripted answer in two halves and waits for `release` in between, so a
/// test can observe what the consumer receives while the model is still "writing".
struct Gated {
    inner: ScriptedProvider,
    gate: Gate,
}

/// The current gate; `close` installs a fresh closed one for the next turn.
#[derive(Clone)]
struct Gate(Arc<Mutex<Arc<Semaphore>>>);

impl Gate {
    fn new() -> Self {
        Gate(Arc::new(Mutex::new(Arc::new(Semaphore::new(0)))))
    }
    fn close(&self) -> Arc<Semaphore> {
        let s = Arc::new(Semaphore::new(0));
        *self.0.lock().unwrap() = s.clone();
        s
    }
    fn current(&self) -> Arc<Semaphore> {
        self.0.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    async fn generate(&self, r: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.inner.generate(r).await
    }
    fn generate_stream<'a>(
        &'a self,
        r: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, ProviderError>> {
        Box::pin(async_stream(self, r))
    }
}

fn async_stream<'a>(
    p: &'a Gated,
    r: &'a ModelRequest,
) -> impl futures::Stream<Item = Result<StreamChunk, ProviderError>> + 'a {
    futures::stream::once(async move {
        match p.inner.generate(r).await {
            Err(e) => vec![Err(e)],
            Ok(resp) => {
                // Cut inside the message value: everything before it, then the rest.
                let cut = resp
                    .content
                    .find("\"message\":\"")
                    .map_or(resp.content.len() / 2, |i| i + 14);
                let cut = cut.min(resp.content.len());
                let (a, b) = resp.content.split_at(cut);
                vec![
                    Ok(StreamChunk::Text(a.to_owned())),
                    Ok(StreamChunk::Text(format!("\u{0}{b}"))), // marker: wait here
                    Ok(StreamChunk::Done(resp.clone())),
                ]
            }
        }
    })
    .flat_map(futures::stream::iter)
    .then(move |item| async move {
        match item {
            Ok(StreamChunk::Text(t)) if t.starts_with('\u{0}') => {
                // Open once released (a turn may stream more than one call).
                let gate = p.gate.current();
                if let Ok(permit) = gate.acquire().await {
                    drop(permit);
                }
                Ok(StreamChunk::Text(t[1..].to_owned()))
            }
            other => other,
        }
    })
}

/// Consume events until the first text delta; true if it arrived before `release`.
async fn first_text_before_release(
    mut events: std::pin::Pin<Box<dyn futures::Stream<Item = Event<Booking>> + Send>>,
    release: Arc<Semaphore>,
) -> (bool, String, Vec<String>) {
    let early = tokio::time::timeout(Duration::from_millis(1500), async {
        loop {
            match events.next().await {
                Some(Event::TextDelta(t)) => return Some(t),
                Some(Event::Error(e)) => panic!("turn failed: {e}"),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await;
    let mut texts = Vec::new();
    let live = match early {
        Ok(Some(t)) => {
            texts.push(t);
            true
        }
        _ => false,
    };
    release.add_permits(1_000);
    let mut done = String::new();
    while let Some(e) = events.next().await {
        match e {
            Event::TextDelta(t) => texts.push(t),
            Event::Done(r) => done = r.message.clone(),
            Event::Error(e) => panic!("turn failed: {e}"),
            _ => {}
        }
    }
    (live, done, texts)
}

fn gated_agent(
    flow: Flow<Booking, Concierge>,
) -> (Agent<Booking, Concierge>, ScriptedProvider, Gate) {
    let p = ScriptedProvider::new();
    let gate = Gate::new();
    let a = Agent::builder()
        .provider(Gated {
            inner: p.clone(),
            gate: gate.clone(),
        })
        .flow(flow)
        .build()
        .unwrap();
    (a, p, gate)
}

#[tokio::test]
async fn a_predicted_reply_streams_while_the_model_is_still_writing() {
    let (a, p, gate) = gated_agent(booking_flow(false));
    let release = gate.current();
    p.respond(Answer::message("Which city would you like?"));
    let (live, done, texts) =
        first_text_before_release(a.respond_stream("s", "hi"), release.clone()).await;
    assert!(live, "text should arrive before the model finished");
    assert_eq!(texts.concat(), done);
    assert_eq!(done, "Which city would you like?");
    let release = gate.close();

    // Next turn: a speculative extraction + reply whose claim the dry walk confirms.
    p.respond(
        Answer::message("And the check-in date?")
            .with_data(json!({"city": "Lisbon"}))
            .claiming("ask_date"),
    );
    let (live, done, texts) =
        first_text_before_release(a.respond_stream("s", "Lisbon"), release.clone()).await;
    assert!(live);
    assert_eq!(texts.concat(), done);
    assert_eq!(done, "And the check-in date?");
}

#[tokio::test]
async fn a_speculative_reply_the_walk_will_reject_is_never_shown() {
    let (a, p, gate) = gated_agent(booking_flow(false));
    let release = gate.current();
    // All data at once: the first call renders ask_city, the walk lands on confirm.
    p.respond(
        Answer::message("Which city?")
            .with_data(json!({"city": "Lisbon", "check_in": "2026-07-01", "guests": 2})),
    );
    p.respond(Answer::message("Shall I book Lisbon for 2 on July 1?"));
    let (_, done, texts) = first_text_before_release(
        a.respond_stream("s", "Lisbon, July 1, two"),
        release.clone(),
    )
    .await;
    assert_eq!(done, "Shall I book Lisbon for 2 on July 1?");
    assert_eq!(
        texts.concat(),
        done,
        "the rejected reply never reached the consumer"
    );
}

#[tokio::test]
async fn a_reply_a_finalize_hook_may_replace_is_held_until_the_turn_is_saved() {
    let flow = Flow::builder("booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"])
                .finalize(|_cx: &Cx<'_, Booking, Concierge>| {
                    Directive::say("Replaced by finalize.")
                }),
        )
        .build()
        .unwrap();
    let (a, p, gate) = gated_agent(flow);
    let release = gate.current();
    p.respond(Answer::message("Which city?"));
    let (live, done, texts) =
        first_text_before_release(a.respond_stream("s", "hi"), release.clone()).await;
    assert!(!live, "text must wait: finalize could replace it");
    assert_eq!(done, "Replaced by finalize.");
    assert_eq!(texts.concat(), done);
}

#[tokio::test]
async fn with_live_text_sent_a_save_conflict_is_reported_not_replayed() {
    use agent_core::error::StoreError;
    use agent_core::store::{MemoryStore, SessionInfo, SessionStore, StoredSession};

    /// Saves another version of the session right before the engine's first save.
    struct Racing {
        inner: MemoryStore,
        raced: Mutex<bool>,
    }
    #[async_trait]
    impl SessionStore for Racing {
        async fn load(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
            self.inner.load(id).await
        }
        async fn save(&self, s: StoredSession, expected: u64) -> Result<(), StoreError> {
            let race = {
                let mut r = self.raced.lock().unwrap();
                !std::mem::replace(&mut *r, true)
            };
            if race {
                let mut other = s.clone();
                other.version = expected + 1;
                self.inner.save(other, expected).await?;
            }
            self.inner.save(s, expected).await
        }
        async fn delete(&self, id: &str) -> Result<bool, StoreError> {
            self.inner.delete(id).await
        }
        async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
            self.inner.list().await
        }
        async fn prune(&self, c: u64) -> Result<usize, StoreError> {
            self.inner.prune(c).await
        }
    }
    let p = ScriptedProvider::new();
    p.default_answer(
        agent_core::provider::CallKind::Respond,
        Answer::message("Which city?"),
    );
    let a: Agent<Booking, Concierge> = Agent::builder()
        .provider(p.clone())
        .store(Racing {
            inner: MemoryStore::new(),
            raced: Mutex::new(false),
        })
        .flow(booking_flow(false))
        .build()
        .unwrap();
    let events: Vec<Event<Booking>> = a.respond_stream("s", "hi").collect().await;
    let texts: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts.len(),
        1,
        "text streamed once, never replayed by a retry"
    );
    assert!(matches!(
        events.last(),
        Some(Event::Error(AgentError::Store(StoreError::Conflict { .. })))
    ));
    assert_eq!(p.calls(), 1);
}

#[tokio::test]
async fn the_question_after_a_completed_flow_reaches_the_stream_too() {
    let flow = Flow::builder("booking")
        .step(
            Step::model("ask_city")
                .prompt("Ask the city.")
                .collect(["city"]),
        )
        .build()
        .unwrap();
    let (a, p, gate) = gated_agent(flow);
    let release = gate.current();
    p.respond(Answer::message("Which city?"));
    let _ = first_text_before_release(a.respond_stream("s", "hi"), release.clone()).await;
    let release = gate.close();
    p.respond(Answer::message("Lisbon, noted.").with_data(json!({"city": "Lisbon"})));
    let (_, done, texts) =
        first_text_before_release(a.respond_stream("s", "Lisbon"), release.clone()).await;
    assert_eq!(
        done,
        "Lisbon, noted. Is there anything else I can help with?"
    );
    assert_eq!(texts.concat(), done);
}
