//! The PostgreSQL store's SQL: the schema it creates and the statements each connection
//! prepares, kept together so the table layout and the queries over it are read side by
//! side.

use tokio_postgres::{Client, Statement};

use super::{PostgresStore, backend};
use crate::error::StoreError;

/// The server's clock in ms since the Unix epoch (lease expiry).
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// One connection with its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) load: Statement,
    pub(super) insert: Statement,
    pub(super) update: Statement,
    pub(super) version: Statement,
    pub(super) delete: Statement,
    pub(super) list: Statement,
    pub(super) prune: Statement,
    pub(super) prune_leases: Statement,
    pub(super) acquire: Statement,
    pub(super) lease_holder: Statement,
    pub(super) renew: Statement,
    pub(super) release: Statement,
    pub(super) lease_token: Statement,
    pub(super) insert_leased: Statement,
    pub(super) update_leased: Statement,
    pub(super) journal_intent: Statement,
    pub(super) journal_get: Statement,
    pub(super) journal_result: Statement,
    pub(super) journal_delete: Statement,
    pub(super) journal_prune: Statement,
}

/// The tables, index and sequence of table `t`, created if missing; one transaction
/// under an advisory lock, so concurrent first starts (many processes) do not race.
pub(super) fn schema(t: &str) -> String {
    format!(
        "BEGIN;
                 SELECT pg_advisory_xact_lock(hashtext('agent_core.store.{t}'));
                 CREATE TABLE IF NOT EXISTS {t} (
                     id         TEXT PRIMARY KEY,
                     version    BIGINT NOT NULL,
                     updated_ms BIGINT NOT NULL,
                     bytes      BYTEA NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS {t}_updated_ms ON {t} (updated_ms);
                 CREATE TABLE IF NOT EXISTS {t}_leases (
                     id         TEXT PRIMARY KEY,
                     holder     TEXT NOT NULL,
                     token      BIGINT NOT NULL,
                     expires_ms BIGINT NOT NULL
                 );
                 CREATE SEQUENCE IF NOT EXISTS {t}_lease_tokens;
                 CREATE TABLE IF NOT EXISTS {t}_journal (
                     session_id TEXT NOT NULL,
                     call_key   TEXT NOT NULL,
                     tool       TEXT NOT NULL,
                     intent_ms  BIGINT NOT NULL,
                     result     BYTEA,
                     PRIMARY KEY (session_id, call_key)
                 );
                 CREATE INDEX IF NOT EXISTS {t}_journal_ms ON {t}_journal (intent_ms);
                 COMMIT;"
    )
}

impl PostgresStore {
    pub(super) async fn prepare(&self, client: Client) -> Result<Conn, StoreError> {
        let t = &self.inner.table;
        let p = |sql: String| {
            let client = &client;
            async move {
                client
                    .prepare(&sql)
                    .await
                    .map_err(|e| backend(&format!("preparing `{sql}`"), e))
            }
        };
        let load = p(format!(
            "SELECT version, updated_ms, bytes FROM {t} WHERE id = $1"
        ))
        .await?;
        let insert = p(format!(
            "INSERT INTO {t} (id, version, updated_ms, bytes) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO NOTHING"
        ))
        .await?;
        let update = p(format!(
            "UPDATE {t} SET version = $2, updated_ms = $3, bytes = $4 \
             WHERE id = $1 AND version = $5"
        ))
        .await?;
        let version = p(format!("SELECT version FROM {t} WHERE id = $1")).await?;
        let delete = p(format!("DELETE FROM {t} WHERE id = $1")).await?;
        let list = p(format!(
            "SELECT id, version, updated_ms FROM {t} ORDER BY id"
        ))
        .await?;
        let prune = p(format!("DELETE FROM {t} WHERE updated_ms < $1")).await?;
        let prune_leases = p(format!(
            "DELETE FROM {t}_leases l WHERE l.expires_ms <= {NOW_MS} \
             AND NOT EXISTS (SELECT 1 FROM {t} s WHERE s.id = l.id)"
        ))
        .await?;
        let acquire = p(format!(
            "INSERT INTO {t}_leases AS l (id, holder, token, expires_ms) \
             VALUES ($1, $2, nextval('{t}_lease_tokens'), {NOW_MS} + $3::bigint) \
             ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, \
             token = EXCLUDED.token, expires_ms = EXCLUDED.expires_ms \
             WHERE l.expires_ms <= {NOW_MS} \
             RETURNING token"
        ))
        .await?;
        let lease_holder = p(format!(
            "SELECT holder, GREATEST(expires_ms - {NOW_MS}, 0) FROM {t}_leases WHERE id = $1"
        ))
        .await?;
        let renew = p(format!(
            "UPDATE {t}_leases SET expires_ms = {NOW_MS} + $3::bigint \
             WHERE id = $1 AND token = $2"
        ))
        .await?;
        let release = p(format!(
            "DELETE FROM {t}_leases WHERE id = $1 AND token = $2"
        ))
        .await?;
        let lease_token = p(format!("SELECT token FROM {t}_leases WHERE id = $1")).await?;
        let insert_leased = p(format!(
            "WITH l AS (SELECT 1 FROM {t}_leases WHERE id = $1 AND token = $5 FOR SHARE) \
             INSERT INTO {t} (id, version, updated_ms, bytes) \
             SELECT $1::text, $2::bigint, $3::bigint, $4::bytea WHERE EXISTS (SELECT 1 FROM l) \
             ON CONFLICT (id) DO NOTHING"
        ))
        .await?;
        let update_leased = p(format!(
            "WITH l AS (SELECT 1 FROM {t}_leases WHERE id = $1 AND token = $6 FOR SHARE) \
             UPDATE {t} SET version = $2, updated_ms = $3, bytes = $4 \
             WHERE id = $1 AND version = $5 AND EXISTS (SELECT 1 FROM l)"
        ))
        .await?;
        let journal_intent = p(format!(
            "INSERT INTO {t}_journal (session_id, call_key, tool, intent_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, call_key) DO NOTHING"
        ))
        .await?;
        let journal_get = p(format!(
            "SELECT intent_ms, result FROM {t}_journal WHERE session_id = $1 AND call_key = $2"
        ))
        .await?;
        let journal_result = p(format!(
            "INSERT INTO {t}_journal (session_id, call_key, tool, intent_ms, result) \
             VALUES ($1, $2, '', $3, $4) ON CONFLICT (session_id, call_key) \
             DO UPDATE SET result = EXCLUDED.result"
        ))
        .await?;
        let journal_delete = p(format!("DELETE FROM {t}_journal WHERE session_id = $1")).await?;
        let journal_prune = p(format!("DELETE FROM {t}_journal WHERE intent_ms < $1")).await?;
        Ok(Conn {
            client,
            journal_intent,
            journal_get,
            journal_result,
            journal_delete,
            journal_prune,
            load,
            insert,
            update,
            version,
            delete,
            list,
            prune,
            prune_leases,
            acquire,
            lease_holder,
            renew,
            release,
            lease_token,
            insert_leased,
            update_leased,
        })
    }
}
