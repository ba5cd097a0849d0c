//! The PostgreSQL store's SQL: the schema it creates and the statements each connection
//! prepares, kept together so the table layout and the queries over it are read side by
//! side.

use tokio_postgres::{Client, Statement};

use super::{PostgresStore, db};
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
    pub(super) leave_queue: Statement,
    pub(super) prune_queue: Statement,
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
                 ALTER TABLE {t} ADD COLUMN IF NOT EXISTS long_id TEXT;
                 CREATE INDEX IF NOT EXISTS {t}_updated_ms ON {t} (updated_ms);
                 CREATE TABLE IF NOT EXISTS {t}_leases (
                     id         TEXT PRIMARY KEY,
                     holder     TEXT NOT NULL,
                     token      BIGINT NOT NULL,
                     expires_ms BIGINT NOT NULL
                 );
                 CREATE SEQUENCE IF NOT EXISTS {t}_lease_tokens;
                 CREATE TABLE IF NOT EXISTS {t}_lease_queue (
                     id         TEXT NOT NULL,
                     ticket     BIGINT NOT NULL,
                     expires_ms BIGINT NOT NULL,
                     PRIMARY KEY (id, ticket)
                 );
                 {take}
                 CREATE TABLE IF NOT EXISTS {t}_journal (
                     session_id TEXT NOT NULL,
                     call_key   TEXT NOT NULL,
                     tool       TEXT NOT NULL,
                     intent_ms  BIGINT NOT NULL,
                     result     BYTEA,
                     PRIMARY KEY (session_id, call_key)
                 );
                 CREATE INDEX IF NOT EXISTS {t}_journal_ms ON {t}_journal (intent_ms);
                 COMMIT;",
        take = take_function(t)
    )
}

/// The function `{t}_lease_take(id, holder, ttl ms, ticket, ticket ttl ms, enqueue)`:
/// `SessionStore::acquire_lease_queued` (and, with no ticket and `enqueue` false,
/// `try_acquire_lease`) as one call, serialized per session by a transaction-scoped
/// advisory lock. Returns `(acquired, token, ticket, ahead, holder, ms left)`.
fn take_function(t: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION {t}_lease_take(
             p_id text, p_holder text, p_ttl bigint, p_ticket bigint, p_ticket_ttl bigint,
             p_enqueue boolean)
         RETURNS TABLE (o_acquired boolean, o_token bigint, o_ticket bigint, o_ahead bigint,
                        o_holder text, o_left bigint)
         LANGUAGE plpgsql AS $take$
         DECLARE
             v_now bigint := {NOW_MS};
             v_ticket bigint := p_ticket;
             v_head bigint;
             v_holder text;
             v_expires bigint;
             v_token bigint;
         BEGIN
             PERFORM pg_advisory_xact_lock(hashtext('{t}'), hashtext(p_id));
             DELETE FROM {t}_lease_queue q WHERE q.id = p_id AND q.expires_ms <= v_now;
             IF v_ticket IS NOT NULL THEN
                 INSERT INTO {t}_lease_queue AS q (id, ticket, expires_ms)
                 VALUES (p_id, v_ticket, v_now + p_ticket_ttl)
                 ON CONFLICT (id, ticket) DO UPDATE SET expires_ms = EXCLUDED.expires_ms;
             END IF;
             SELECT min(q.ticket) INTO v_head FROM {t}_lease_queue q WHERE q.id = p_id;
             IF v_head IS NULL OR v_head = v_ticket THEN
                 INSERT INTO {t}_leases AS l (id, holder, token, expires_ms)
                 VALUES (p_id, p_holder, nextval('{t}_lease_tokens'), v_now + p_ttl)
                 ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder,
                     token = EXCLUDED.token, expires_ms = EXCLUDED.expires_ms
                 WHERE l.expires_ms <= {NOW_MS}
                 RETURNING l.token INTO v_token;
                 IF v_token IS NOT NULL THEN
                     IF v_ticket IS NOT NULL THEN
                         DELETE FROM {t}_lease_queue q
                         WHERE q.id = p_id AND q.ticket = v_ticket;
                     END IF;
                     RETURN QUERY SELECT true, v_token, NULL::bigint, 0::bigint, ''::text,
                         0::bigint;
                     RETURN;
                 END IF;
             END IF;
             -- Not taken: only the queue changed, which is soft state (a waiter whose
             -- ticket a server crash lost enters again under its number), so this
             -- commit need not wait for the disk.
             PERFORM set_config('synchronous_commit', 'off', true);
             IF v_ticket IS NULL AND p_enqueue THEN
                 v_ticket := nextval('{t}_lease_tokens');
                 INSERT INTO {t}_lease_queue (id, ticket, expires_ms)
                 VALUES (p_id, v_ticket, v_now + p_ticket_ttl);
             END IF;
             SELECT l.holder, l.expires_ms INTO v_holder, v_expires
             FROM {t}_leases l WHERE l.id = p_id;
             RETURN QUERY SELECT false, NULL::bigint, v_ticket,
                 (SELECT count(*) FROM {t}_lease_queue q WHERE q.id = p_id
                  AND (v_ticket IS NULL OR q.ticket < v_ticket)),
                 CASE WHEN v_expires > v_now THEN v_holder ELSE '' END,
                 CASE WHEN v_expires > v_now THEN v_expires - v_now ELSE 0 END;
         END
         $take$;"
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
                    .map_err(|e| db(&format!("preparing `{sql}`"), e))
            }
        };
        let load = p(format!(
            "SELECT version, updated_ms, bytes FROM {t} WHERE id = $1"
        ))
        .await?;
        let insert = p(format!(
            "INSERT INTO {t} (id, version, updated_ms, bytes, long_id) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING"
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
            "SELECT COALESCE(long_id, id), version, updated_ms FROM {t} ORDER BY 1"
        ))
        .await?;
        let prune = p(format!("DELETE FROM {t} WHERE updated_ms < $1")).await?;
        let prune_leases = p(format!(
            "DELETE FROM {t}_leases l WHERE l.expires_ms <= {NOW_MS} \
             AND NOT EXISTS (SELECT 1 FROM {t} s WHERE s.id = l.id)"
        ))
        .await?;
        let acquire = p(format!(
            "SELECT o_acquired, o_token, o_ticket, o_ahead, o_holder, o_left \
             FROM {t}_lease_take($1, $2, $3, $4, $5, $6)"
        ))
        .await?;
        let leave_queue = p(format!(
            "DELETE FROM {t}_lease_queue WHERE id = $1 AND ticket = $2"
        ))
        .await?;
        let prune_queue = p(format!(
            "DELETE FROM {t}_lease_queue WHERE expires_ms <= {NOW_MS}"
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
             INSERT INTO {t} (id, version, updated_ms, bytes, long_id) \
             SELECT $1::text, $2::bigint, $3::bigint, $4::bytea, $6::text \
             WHERE EXISTS (SELECT 1 FROM l) \
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
            leave_queue,
            prune_queue,
            renew,
            release,
            lease_token,
            insert_leased,
            update_leased,
        })
    }
}
