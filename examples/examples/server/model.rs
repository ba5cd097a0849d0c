//! The model the server serves: the one every example would choose, else the scripted
//! concierge typing its answers out ([`Typewriter`]) as a real model streams them.

use std::sync::Arc;
use std::time::Duration;

use agent_core::prelude::*;
use agent_core::provider::{ModelRequest, ModelResponse, StreamChunk};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;

use super::scripted::scripted_model;

/// Streams a provider's whole answers in small pieces with a pause between them, as a
/// real model's tokens arrive.
pub struct Typewriter<P> {
    inner: P,
    chunk_chars: usize,
    pause: Duration,
}

impl<P> Typewriter<P> {
    /// Pieces of `chunk_chars` characters, `pause` apart.
    pub fn new(inner: P, chunk_chars: usize, pause: Duration) -> Self {
        Self {
            inner,
            chunk_chars: chunk_chars.max(1),
            pause,
        }
    }
}

#[async_trait]
impl<P: Provider> Provider for Typewriter<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn profile(&self) -> agent_core::policy::ModelProfile {
        self.inner.profile()
    }

    async fn generate(
        &self,
        request: &ModelRequest,
    ) -> Result<ModelResponse, agent_core::error::ProviderError> {
        self.inner.generate(request).await
    }

    fn generate_stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxStream<'a, Result<StreamChunk, agent_core::error::ProviderError>> {
        let (n, pause) = (self.chunk_chars, self.pause);
        Box::pin(
            futures::stream::once(self.inner.generate(request))
                .flat_map(move |r| {
                    let items: Vec<Result<StreamChunk, _>> = match r {
                        Ok(resp) => {
                            let chars: Vec<char> = resp.content.chars().collect();
                            let mut items: Vec<Result<StreamChunk, _>> = chars
                                .chunks(n)
                                .map(|c| Ok(StreamChunk::Text(c.iter().collect())))
                                .collect();
                            items.push(Ok(StreamChunk::Done(resp)));
                            items
                        }
                        Err(e) => vec![Err(e)],
                    };
                    futures::stream::iter(items)
                })
                .then(move |item| async move {
                    if matches!(item, Ok(StreamChunk::Text(_))) {
                        tokio::time::sleep(pause).await;
                    }
                    item
                }),
        )
    }
}

/// The model chosen by `env`, as every example chooses it ([`examples::model`]: vendor
/// keys, `AGENT_BASE_URL`, `LOCAL_MODEL` / `AGENT_MODEL`, `AGENT_LOCAL=1`), else the
/// scripted concierge. `start_local` starts the local model (the examples'
/// [`examples::model::start_local_server`]).
pub fn model_from(
    env: examples::model::Env<'_>,
    start_local: impl FnOnce(Option<&str>) -> Result<String, examples::model::ModelError>,
) -> Result<examples::model::Model, examples::model::ModelError> {
    let choice = examples::model::choose(env, examples::model::Fallback::Scripted);
    examples::model::connect(choice, env, scripted_model, start_local)
}

/// The provider to serve: the chosen model, or the scripted concierge typing its
/// answers out as a real model streams them.
pub fn served(model: &examples::model::Model) -> Arc<dyn Provider> {
    if *model.choice() != examples::model::Choice::Scripted {
        return model.provider();
    }
    Arc::new(Typewriter::new(
        scripted_model(),
        4,
        Duration::from_millis(15),
    ))
}
