//! Legacy session rows: who owns a session, what it negotiated, and when it
//! expires. The in-memory session worker can be dropped at any time; this row
//! is what brings it back, on this replica or another.

use async_trait::async_trait;
use sqlx::Row;

use super::{Backend, Store, StoreError, batch, query_error};

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub owner: String,
    pub protocol_version: String,
    pub client_name: String,
    pub client_version: String,
    /// The `initialize` params as JSON; replayed to restore the session.
    pub init_params: String,
    /// The server capabilities sent in the `initialize` result, as JSON.
    pub server_capabilities: String,
    /// Per-session settings (log level, subscriptions) as a JSON object.
    pub state: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
    pub expires_ms: i64,
}

/// The session store's contract. Every backend passes the same contract
/// test (`tests/api/store.rs`).
///
/// - `create` fails if the id exists (ids are random; a clash is a bug).
/// - `create_many` stores all of its rows or none (one transaction), with
///   `create`'s rule for each.
/// - `get` never returns an expired row, even before the purge ran.
/// - `touch` moves `last_seen` to now and `expires` to now + `idle_ttl_ms`;
///   it returns false for an unknown or expired session.
/// - `delete` returns whether a row was removed.
/// - `count` counts live (unexpired) sessions, of one owner or of everyone.
/// - `purge_expired` removes expired rows and returns how many.
/// - `reachable` is false while the database does not answer; it asks the
///   database at most once a second.
#[async_trait]
pub trait SessionRepo: Send + Sync {
    /// Now, by the clock expiry decisions use.
    fn clock_ms(&self) -> i64;
    /// Whether the database answers, as `/readyz` reports it (`probe.rs`).
    async fn reachable(&self) -> bool;
    async fn create(&self, row: &SessionRow) -> Result<(), StoreError>;
    async fn create_many(&self, rows: &[SessionRow]) -> Result<(), StoreError>;
    async fn get(&self, id: &str) -> Result<Option<SessionRow>, StoreError>;
    async fn touch(&self, id: &str, idle_ttl_ms: i64) -> Result<bool, StoreError>;
    async fn set_state(&self, id: &str, state: &str) -> Result<(), StoreError>;
    async fn delete(&self, id: &str) -> Result<bool, StoreError>;
    async fn list(&self, limit: i64) -> Result<Vec<SessionRow>, StoreError>;
    async fn count(&self, owner: Option<&str>) -> Result<i64, StoreError>;
    async fn purge_expired(&self) -> Result<u64, StoreError>;
}

const COLUMNS: &str = "id, owner, protocol_version, client_name, client_version, init_params, \
    server_capabilities, state, created_ms, last_seen_ms, expires_ms";
const FIELDS: usize = 11;
/// Rows per insert statement at most (a power of two, see batch.rs).
const MAX_ROWS: usize = 64;

fn from_row(row: &sqlx::any::AnyRow) -> Result<SessionRow, sqlx::Error> {
    Ok(SessionRow {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        protocol_version: row.try_get("protocol_version")?,
        client_name: row.try_get("client_name")?,
        client_version: row.try_get("client_version")?,
        init_params: row.try_get("init_params")?,
        server_capabilities: row.try_get("server_capabilities")?,
        state: row.try_get("state")?,
        created_ms: row.try_get("created_ms")?,
        last_seen_ms: row.try_get("last_seen_ms")?,
        expires_ms: row.try_get("expires_ms")?,
    })
}

#[async_trait]
impl SessionRepo for Store {
    fn clock_ms(&self) -> i64 {
        self.now_ms()
    }

    async fn reachable(&self) -> bool {
        Store::reachable(self).await
    }

    async fn create(&self, row: &SessionRow) -> Result<(), StoreError> {
        let sql = format!(
            "insert into sessions ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        );
        bind_row(sqlx::query(&sql), row)
            .execute(self.writer())
            .await
            .map_err(query_error("record a session"))?;
        Ok(())
    }

    async fn create_many(&self, rows: &[SessionRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        // A batch that fits is one statement, its own transaction: one
        // hand-off to SQLite's writer thread instead of three, which halved
        // the thread switches of an `initialize` (BENCHMARKS.md, twelfth
        // session). On PostgreSQL the commit returns before the database
        // flushes it to disk: the guarantee SQLite's `synchronous = normal`
        // gives every row here. A crash of the database server (not of
        // teamgate) may forget the last moment's new sessions, whose
        // clients then get 404 and initialize again, as when a session
        // ends; the rows stay consistent, and are seen by every replica at
        // once.
        let error = query_error("record sessions");
        let backend = self.backend();
        let setting =
            (backend == Backend::Postgres).then_some("set local synchronous_commit = off");
        let mut writing = batch::Writing::begin(self.writer(), rows.len(), MAX_ROWS, setting)
            .await
            .map_err(error)?;
        for chunk in writing.chunks(rows) {
            let sql = insert_text(chunk.len(), backend);
            let insert = chunk.iter().fold(sqlx::query(&sql), bind_row);
            insert.execute(writing.connection()).await.map_err(error)?;
        }
        writing.finish().await.map_err(error)
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let row = sqlx::query(&format!(
            "select {COLUMNS} from sessions where id = $1 and expires_ms > $2"
        ))
        .bind(id)
        .bind(self.now_ms())
        .fetch_optional(self.pool())
        .await
        .map_err(query_error("load a session"))?;
        row.as_ref()
            .map(from_row)
            .transpose()
            .map_err(query_error("read a session row"))
    }

    async fn touch(&self, id: &str, idle_ttl_ms: i64) -> Result<bool, StoreError> {
        let now = self.now_ms();
        let done = sqlx::query("update sessions set last_seen_ms = $1, expires_ms = $2 where id = $3 and expires_ms > $1")
            .bind(now)
            .bind(now.saturating_add(idle_ttl_ms))
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("refresh a session"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn set_state(&self, id: &str, state: &str) -> Result<(), StoreError> {
        sqlx::query("update sessions set state = $1 where id = $2")
            .bind(state)
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("save session settings"))?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("delete from sessions where id = $1")
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("end a session"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn list(&self, limit: i64) -> Result<Vec<SessionRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "select {COLUMNS} from sessions where expires_ms > $1 order by created_ms, id limit $2"
        ))
        .bind(self.now_ms())
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(query_error("list sessions"))?;
        rows.iter()
            .map(from_row)
            .collect::<Result<_, _>>()
            .map_err(query_error("read a session row"))
    }

    async fn count(&self, owner: Option<&str>) -> Result<i64, StoreError> {
        let now = self.now_ms();
        let query = match owner {
            Some(owner) => {
                sqlx::query("select count(*) from sessions where expires_ms > $1 and owner = $2")
                    .bind(now)
                    .bind(owner.to_owned())
            }
            None => sqlx::query("select count(*) from sessions where expires_ms > $1").bind(now),
        };
        let row = query
            .fetch_one(self.pool())
            .await
            .map_err(query_error("count sessions"))?;
        row.try_get::<i64, _>(0)
            .map_err(query_error("count sessions"))
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("delete from sessions where expires_ms <= $1")
            .bind(self.now_ms())
            .execute(self.writer())
            .await
            .map_err(query_error("purge expired sessions"))?;
        Ok(done.rows_affected())
    }
}

/// The insert of `rows` rows, built once per row count (batch.rs).
fn insert_text(rows: usize, backend: Backend) -> std::borrow::Cow<'static, str> {
    static INSERT: batch::Texts = batch::Texts::new();
    INSERT.get(backend, rows, || {
        format!(
            "insert into sessions ({COLUMNS}) values {}",
            batch::values(backend, rows, FIELDS)
        )
    })
}

/// Binds one row's values in `COLUMNS` order, for both inserts.
fn bind_row<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    row: &'q SessionRow,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(&row.id)
        .bind(&row.owner)
        .bind(&row.protocol_version)
        .bind(&row.client_name)
        .bind(&row.client_version)
        .bind(&row.init_params)
        .bind(&row.server_capabilities)
        .bind(&row.state)
        .bind(row.created_ms)
        .bind(row.last_seen_ms)
        .bind(row.expires_ms)
}
