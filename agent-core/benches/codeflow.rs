//! Replay cost of a resumed code-flow turn against the flow's length: a flow that
//! has recorded 10, 100 or 1000 answers is resumed by a message that does not answer
//! its open question, so each timed turn replays the whole journal, makes one
//! (instant) extraction call, asks again and saves. Also prints the journal's stored
//! size per length.
//!
//! `cargo bench -p agent-core --bench codeflow`

#![allow(missing_docs)] // criterion_group! generates an undocumented fn

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::codeflow::{CodeFlow, FlowCx};
use agent_core::prelude::*;
use agent_core::provider::{ModelRequest, ModelResponse, Usage};
use agent_core::store::MemoryStore;
use async_trait::async_trait;
use criterion::{Criterion, criterion_group};

/// Answers every extraction instantly: with a number while the flow is being built,
/// with null (not an answer) while it is timed.
struct Instant {
    answering: Arc<AtomicBool>,
}

#[async_trait]
impl Provider for Instant {
    fn name(&self) -> &str {
        "instant"
    }
    async fn generate(
        &self,
        req: &ModelRequest,
    ) -> Result<ModelResponse, agent_core::error::ProviderError> {
        if req.kind == agent_core::provider::CallKind::Summarize {
            return Ok(ModelResponse {
                content: "The user gave numbers.".to_owned(),
                tool_calls: Vec::new(),
                usage: Usage::default(),
                finish: Default::default(),
                id: None,
            });
        }
        let content = if self.answering.load(Ordering::Relaxed) {
            r#"{"answer":7}"#
        } else {
            r#"{"answer":null}"#
        };
        Ok(ModelResponse {
            content: content.to_owned(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            finish: Default::default(),
            id: None,
        })
    }
}

/// Asks for numbers, forever; every answer is a journal entry.
fn counter() -> CodeFlow<(), ()> {
    CodeFlow::new("counter", |ctx: FlowCx<(), ()>| async move {
        let mut sum = 0u64;
        loop {
            let n: u64 = ctx.ask("n", "Next number?").await;
            sum += n;
            if sum == u64::MAX {
                return ctx.end("overflow");
            }
        }
    })
}

fn bench_replay(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    let mut group = c.benchmark_group("code_flow_resumed_turn");
    for steps in [10usize, 100, 1000] {
        let answering = Arc::new(AtomicBool::new(true));
        let store = Arc::new(MemoryStore::new());
        let Ok(agent) = Agent::<(), ()>::builder()
            .provider(Instant {
                answering: answering.clone(),
            })
            .code_flow(counter())
            // Keep the history short (compaction, as in production), so the timing is
            // the replay, not a long conversation.
            .config(AgentConfig {
                history_token_budget: 64,
                keep_last_messages: 8,
                ..AgentConfig::default()
            })
            .store_arc(store.clone())
            .build()
        else {
            return;
        };
        rt.block_on(async {
            // Turn 1 starts the flow; then one answered question per turn.
            for _ in 0..=steps {
                let _ = agent.respond("s", "7").await;
            }
            if let Ok(Some(s)) = agent.session("s").await
                && let Some(code) = &s.code
            {
                let journal = serde_json::to_string(code).map_or(0, |j| j.len());
                println!(
                    "code flow with {} recorded steps: journal {journal} bytes ({:.1} bytes/step)",
                    code.journal.len() - 1,
                    journal as f64 / steps as f64
                );
            }
        });
        answering.store(false, Ordering::Relaxed);
        group.bench_function(format!("{steps}_steps"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = std::time::Instant::now();
                    for _ in 0..iters {
                        black_box(agent.respond("s", "hmm").await.ok());
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_replay);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
