//! What a provider adds over the raw HTTP round trip: the same chat completion against
//! the same local fixture server (127.0.0.1), sent by a bare `reqwest` call (pre-encoded
//! body, answer parsed as `serde_json::Value`) and by `OpenAi::generate` (encoding the
//! request with history, tools and schema; parsing into a `ModelResponse`), alone and
//! behind `Resilient`. The same for a streamed answer.
//!
//! `cargo bench -p agent-providers --bench overhead`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/support/server.rs"]
mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::provider::{
    CallKind, Message, ModelRequest, OutputSchema, Provider, ToolCall, ToolSpec,
};
use agent_providers::OpenAi;
use agent_providers::resilience::Resilient;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};
use server::{FixtureServer, Reply};

fn request() -> ModelRequest {
    let mut assistant = Message::assistant("");
    assistant.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "book_room".into(),
        arguments: json!({ "hotel": "Grand" }),
    }];
    ModelRequest {
        kind: CallKind::Respond,
        system: "You are a hotel concierge. ".repeat(20),
        messages: vec![
            Message::user("Book the Grand in Lisbon"),
            Message::assistant("Which date?"),
            Message::user("July 1st"),
            assistant,
            Message::tool("call_1", "booked BK-5"),
        ],
        tools: vec![ToolSpec {
            name: "book_room".into(),
            description: "Book the room.".into(),
            parameters: json!({ "type": "object",
                "properties": { "hotel": { "type": "string", "description": "Hotel name" } },
                "required": ["hotel"] }),
        }],
        output: Some(OutputSchema {
            name: "turn".into(),
            schema: Arc::new(json!({ "type": "object",
                "properties": { "data": { "type": "object" }, "message": { "type": "string" } },
                "required": ["message"], "additionalProperties": false })),
        }),
        max_tokens: Some(256),
        temperature: Some(0.2),
        seed: None,
    }
}

/// Answers at once, in process.
struct Instant0;

#[async_trait::async_trait]
impl Provider for Instant0 {
    fn name(&self) -> &str {
        "instant"
    }
    async fn generate(
        &self,
        _: &ModelRequest,
    ) -> Result<agent_core::provider::ModelResponse, agent_core::error::ProviderError> {
        Ok(agent_core::provider::ModelResponse::default())
    }
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The bare call: pre-encoded body, answer parsed as a `Value`.
async fn raw_call(client: &reqwest::Client, url: &str, body: &[u8]) -> Value {
    let r = client
        .post(url)
        .header("authorization", "Bearer sk-bench-0123456789")
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let bytes = r.bytes().await.unwrap();
    serde_json::from_slice::<Value>(&bytes).unwrap()
}

/// The bare streamed call: read every byte.
async fn raw_stream(client: &reqwest::Client, url: &str, body: &[u8]) -> usize {
    let r = client
        .post(url)
        .header("authorization", "Bearer sk-bench-0123456789")
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let mut s = r.bytes_stream();
    let mut n = 0;
    while let Some(chunk) = s.next().await {
        n += chunk.unwrap().len();
    }
    n
}

async fn provider_stream(p: &OpenAi, req: &ModelRequest) -> usize {
    let mut s = p.generate_stream(req);
    let mut n = 0;
    while let Some(chunk) = s.next().await {
        chunk.unwrap();
        n += 1;
    }
    n
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(FixtureServer::start());
    server.always(
        "/v1/chat/completions",
        Reply::json(200, &fixture("openai/chat_structured.json")),
    );
    server.always(
        "/stream/v1/chat/completions",
        Reply::sse(&fixture("openai/stream_text.sse")),
    );
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.url());
    let stream_url = format!("{}/stream/v1/chat/completions", server.url());
    let provider = OpenAi::new("sk-bench-0123456789")
        .base_url(&format!("{}/v1", server.url()))
        .unwrap()
        .http_client(client.clone());
    let streaming = OpenAi::new("sk-bench-0123456789")
        .base_url(&format!("{}/stream/v1", server.url()))
        .unwrap()
        .http_client(client.clone());
    let resilient = Resilient::new(provider.clone());
    let req = request();
    let body = provider.request_body(&req, false).unwrap();
    let stream_body = provider.request_body(&req, true).unwrap();

    let mut g = c.benchmark_group("chat_completion");
    g.bench_function("raw_reqwest", |b| {
        b.iter(|| rt.block_on(raw_call(&client, &url, &body)))
    });
    g.bench_function("openai_generate", |b| {
        b.iter(|| rt.block_on(provider.generate(&req)).unwrap())
    });
    g.bench_function("resilient_openai_generate", |b| {
        b.iter(|| rt.block_on(resilient.generate(&req)).unwrap())
    });
    g.finish();

    // Paired: every iteration makes both calls and times one, so both see the same
    // machine load (separately timed groups drift on a busy machine).
    let mut g = c.benchmark_group("paired_chat_completion");
    g.bench_function("raw_reqwest", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    let s = Instant::now();
                    raw_call(&client, &url, &body).await;
                    t += s.elapsed();
                    provider.generate(&req).await.unwrap();
                }
                t
            })
        })
    });
    g.bench_function("openai_generate", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    raw_call(&client, &url, &body).await;
                    let s = Instant::now();
                    provider.generate(&req).await.unwrap();
                    t += s.elapsed();
                }
                t
            })
        })
    });
    g.bench_function("resilient_openai_generate", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    raw_call(&client, &url, &body).await;
                    let s = Instant::now();
                    resilient.generate(&req).await.unwrap();
                    t += s.elapsed();
                }
                t
            })
        })
    });
    g.finish();

    let mut g = c.benchmark_group("paired_chat_completion_stream");
    g.bench_function("raw_reqwest", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    let s = Instant::now();
                    raw_stream(&client, &stream_url, &stream_body).await;
                    t += s.elapsed();
                    provider_stream(&streaming, &req).await;
                }
                t
            })
        })
    });
    g.bench_function("openai_generate_stream", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    raw_stream(&client, &stream_url, &stream_body).await;
                    let s = Instant::now();
                    provider_stream(&streaming, &req).await;
                    t += s.elapsed();
                }
                t
            })
        })
    });
    g.finish();

    // CPU only, no network: what we do per call beyond what a bare call does.
    let answer = fixture("openai/chat_structured.json").into_bytes();
    let mut g = c.benchmark_group("cpu_only");
    g.bench_function("encode_request_body", |b| {
        b.iter(|| provider.request_body(&req, false).unwrap())
    });
    g.bench_function("decode_as_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&answer).unwrap())
    });
    g.bench_function("decode_as_model_response", |b| {
        b.iter(|| agent_providers::openai::parse_response(&answer).unwrap())
    });
    // The resilience layer around an in-process provider that answers at once.
    let instant = Instant0;
    let wrapped = Resilient::new(Instant0);
    let timed = Resilient::new(Instant0)
        .request_timeout(Duration::from_secs(30))
        .total_timeout(Duration::from_secs(90));
    g.bench_function("instant_provider", |b| {
        b.iter(|| rt.block_on(instant.generate(&req)).unwrap())
    });
    g.bench_function("instant_provider_resilient", |b| {
        b.iter(|| rt.block_on(wrapped.generate(&req)).unwrap())
    });
    g.bench_function("instant_provider_resilient_with_timeouts", |b| {
        b.iter(|| rt.block_on(timed.generate(&req)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
