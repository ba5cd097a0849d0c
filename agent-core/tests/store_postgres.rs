//! The session-store conformance suite on the PostgreSQL store (feature `postgres`),
//! against the server at `AGENT_TEST_POSTGRES_URL` (`scripts/services.sh start` runs a
//! throwaway one). Each test uses its own table `agent_test_*`.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod conformance;

use std::sync::{Arc, Once};

use agent_core::error::StoreError;
use agent_core::store::SessionStore;
use agent_core::store::postgres::{PostgresOptions, PostgresStore};
use async_trait::async_trait;
use conformance::{Backend, Fixture};

const URL_VAR: &str = "AGENT_TEST_POSTGRES_URL";

struct Postgres {
    url: String,
}

#[async_trait]
impl Backend for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    async fn create(&self) -> Fixture {
        let table = format!("agent_test_{}", conformance::unique());
        let store = self.reopen(&table).await;
        Fixture {
            store,
            token: table,
            guard: None,
        }
    }
    async fn reopen(&self, token: &str) -> Arc<dyn SessionStore> {
        let options = PostgresOptions::default().table(token);
        Arc::new(
            PostgresStore::connect_with(&self.url, options)
                .await
                .unwrap(),
        )
    }
}

fn backend() -> Option<Postgres> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(Postgres { url }),
        _ => {
            static ONCE: Once = Once::new();
            ONCE.call_once(|| {
                conformance::notice(&format!(
                    "skipped: PostgreSQL store tests ({URL_VAR} is not set; run `eval \"$(bash scripts/services.sh start)\"`)"
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
async fn a_bad_table_name_is_refused_before_connecting() {
    let err = PostgresStore::connect_with(
        "postgres://nobody@127.0.0.1:1/none",
        PostgresOptions::default().table("x; DROP TABLE y"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, StoreError::Backend(m) if m.contains("invalid table name")),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_backend_error_with_a_hint() {
    let err = PostgresStore::connect("postgres://nobody@127.0.0.1:1/none")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Backend(m) if m.contains("connecting")),
        "{err:?}"
    );
}

#[tokio::test]
async fn debug_output_hides_the_password() {
    let Some(b) = backend() else { return };
    // The throwaway server trusts local connections, so any password is accepted.
    let Some(rest) = b.url.strip_prefix("postgres://postgres@") else {
        return;
    };
    let url = format!("postgres://postgres:s3cret-pw@{rest}");
    let table = format!("agent_test_{}", conformance::unique());
    let store = PostgresStore::connect_with(&url, PostgresOptions::default().table(&table))
        .await
        .unwrap();
    let shown = format!("{store:?}");
    assert!(shown.contains(&table), "{shown}");
    assert!(!shown.contains("s3cret-pw"), "{shown}");
}

/// A server error reaches the caller with its SQLSTATE and message (the client's own
/// text for it is only "db error"): here a NUL byte, which the agent refuses but the
/// store's own methods pass to the server.
#[tokio::test]
async fn a_server_error_carries_its_sqlstate_and_message() {
    let Some(b) = backend() else { return };
    let fx = b.create().await;
    let err = fx
        .store
        .save(
            agent_core::store::StoredSession {
                id: "a\0b".into(),
                version: 1,
                updated_ms: 1,
                bytes: b"x".to_vec(),
            },
            0,
        )
        .await
        .unwrap_err();
    let StoreError::Backend(m) = &err else {
        panic!("{err:?}")
    };
    assert!(m.contains("SQLSTATE 22021"), "{m}");
    assert!(m.contains("0x00"), "{m}");
    assert!(!m.ends_with("db error"), "{m}");
}
