//! The session-store conformance suite on the Redis store (feature `redis`), against
//! the server at `AGENT_TEST_REDIS_URL` (`scripts/services.sh start` runs a throwaway
//! one). Each test uses its own key prefix `agent-test:*`.

#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod conformance;

use std::sync::{Arc, Once};

use agent_core::error::StoreError;
use agent_core::store::SessionStore;
use agent_core::store::redis::{RedisOptions, RedisStore};
use async_trait::async_trait;
use conformance::{Backend, Fixture};

const URL_VAR: &str = "AGENT_TEST_REDIS_URL";

struct Redis {
    url: String,
}

#[async_trait]
impl Backend for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }
    async fn create(&self) -> Fixture {
        let prefix = format!("agent-test:{}:", conformance::unique());
        let store = self.reopen(&prefix).await;
        Fixture {
            store,
            token: prefix,
            guard: None,
        }
    }
    async fn reopen(&self, token: &str) -> Arc<dyn SessionStore> {
        let options = RedisOptions::default().prefix(token);
        Arc::new(RedisStore::connect_with(&self.url, options).await.unwrap())
    }
}

fn backend() -> Option<Redis> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(Redis { url }),
        _ => {
            static ONCE: Once = Once::new();
            ONCE.call_once(|| {
                conformance::notice(&format!(
                    "skipped: Redis store tests ({URL_VAR} is not set; run `eval \"$(bash scripts/services.sh start)\"`)"
                ));
            });
            None
        }
    }
}

conformance::suite!(backend());
conformance::lease::lease_suite!(backend());
conformance::fair::fair_suite!(backend());
conformance::journal::journal_suite!(backend());
conformance::once_reuse::once_reuse_suite!(backend());
conformance::compat::compat_suite!(backend());
conformance::durable_suite!(backend());
conformance::journal::journal_durable_suite!(backend());
conformance::lease::lease_process_suite!(backend());

#[tokio::test]
async fn an_unreachable_server_is_a_backend_error() {
    let err = RedisStore::connect("redis://127.0.0.1:1/0")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Backend(m) if m.contains("connecting")),
        "{err:?}"
    );
}

#[tokio::test]
async fn keys_live_under_the_prefix() {
    let Some(b) = backend() else { return };
    let prefix = format!("agent-test:{}:", conformance::unique());
    let store = RedisStore::connect_with(&b.url, RedisOptions::default().prefix(&prefix))
        .await
        .unwrap();
    assert_eq!(store.prefix(), prefix);
    store
        .save(
            agent_core::store::StoredSession {
                id: "s".into(),
                version: 1,
                updated_ms: 5,
                bytes: b"x".to_vec(),
            },
            0,
        )
        .await
        .unwrap();
    // Another prefix sees nothing.
    let other = RedisStore::connect_with(
        &b.url,
        RedisOptions::default().prefix(format!("{prefix}other:")),
    )
    .await
    .unwrap();
    assert!(other.load("s").await.unwrap().is_none());
    assert!(other.list().await.unwrap().is_empty());
    assert_eq!(store.list().await.unwrap().len(), 1);
}
