//! The session-store conformance suite on the SQLite store (feature `sqlite`), plus
//! what is particular to it: WAL mode, errors that name the file.

#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod conformance;

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::error::StoreError;
use agent_core::store::SessionStore;
use agent_core::store::sqlite::{SqliteOptions, SqliteStore};
use async_trait::async_trait;
use conformance::{Backend, Fixture};

struct Sqlite;

/// Removes a database file and its WAL companions.
struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

fn temp_path() -> PathBuf {
    let dir = std::env::temp_dir().join("agent-core-store-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("sessions-{}.db", conformance::unique()))
}

#[async_trait]
impl Backend for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    async fn create(&self) -> Fixture {
        let path = temp_path();
        let store = SqliteStore::open(&path).unwrap();
        Fixture {
            store: Arc::new(store),
            token: path.to_string_lossy().into_owned(),
            guard: Some(Box::new(TempDb(path))),
        }
    }
    async fn reopen(&self, token: &str) -> Arc<dyn SessionStore> {
        Arc::new(SqliteStore::open(token).unwrap())
    }
}

fn backend() -> Option<Sqlite> {
    Some(Sqlite)
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
async fn the_file_is_in_wal_mode_with_one_table() {
    let path = temp_path();
    let _guard = TempDb(path.clone());
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.path(), path.as_path());
    store
        .save(
            agent_core::store::StoredSession {
                id: "s".into(),
                version: 1,
                updated_ms: 1,
                bytes: b"x".to_vec(),
            },
            0,
        )
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let n: i64 = conn
        .query_row("SELECT count(*) FROM agent_sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn options_are_applied_and_full_sync_still_round_trips() {
    let path = temp_path();
    let _guard = TempDb(path.clone());
    let store = SqliteStore::open_with(
        &path,
        SqliteOptions {
            max_idle_connections: 1,
            full_sync: true,
            ..SqliteOptions::default()
        },
    )
    .unwrap();
    let s = agent_core::store::StoredSession {
        id: "s".into(),
        version: 1,
        updated_ms: 2,
        bytes: vec![0, 1, 2],
    };
    store.save(s.clone(), 0).await.unwrap();
    assert_eq!(store.load("s").await.unwrap(), Some(s));
}

#[test]
fn an_unopenable_path_is_a_backend_error_naming_the_file() {
    let err = SqliteStore::open("/nonexistent-dir/for/sure/sessions.db").unwrap_err();
    match err {
        StoreError::Backend(m) => {
            assert!(m.contains("/nonexistent-dir/for/sure/sessions.db"), "{m}");
            assert!(m.contains("directory exists"), "{m}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn versions_beyond_sqlite_integers_are_rejected_not_wrapped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let path = temp_path();
        let _guard = TempDb(path.clone());
        let store = SqliteStore::open(&path).unwrap();
        let err = store
            .save(
                agent_core::store::StoredSession {
                    id: "s".into(),
                    version: u64::MAX,
                    updated_ms: 0,
                    bytes: Vec::new(),
                },
                0,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
        assert!(store.load("s").await.unwrap().is_none());
    });
}
