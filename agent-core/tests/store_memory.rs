//! The session-store conformance suite on the in-memory store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod conformance;

use std::sync::Arc;

use agent_core::store::{MemoryStore, SessionStore};
use async_trait::async_trait;
use conformance::{Backend, Fixture};

struct Memory;

#[async_trait]
impl Backend for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }
    async fn create(&self) -> Fixture {
        Fixture {
            store: Arc::new(MemoryStore::new()),
            token: String::new(),
            guard: None,
        }
    }
    async fn reopen(&self, _token: &str) -> Arc<dyn SessionStore> {
        panic!("the memory store does not outlive its handle")
    }
}

fn backend() -> Option<Memory> {
    Some(Memory)
}

conformance::suite!(backend());
conformance::lease::lease_suite!(backend());
conformance::fair::fair_suite!(backend());
conformance::journal::journal_suite!(backend());
conformance::once_reuse::once_reuse_suite!(backend());
conformance::compat::compat_suite!(backend());
