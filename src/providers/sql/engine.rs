//! One database's connections and how a statement runs on them. Read-only
//! is the database's own rule, never a look at the statement's text: on
//! PostgreSQL a transaction begun `READ ONLY`, on SQLite a connection with
//! `PRAGMA query_only`. Arguments are always bound, never spliced.

use std::{str::FromStr, time::Duration};

use anyhow::Context;
use futures::TryStreamExt;
use serde_json::{Map, Value};
use sqlx::{
    Column, Executor,
    postgres::{PgConnectOptions, PgPool, PgPoolOptions},
    sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions},
};

use super::values::{pg_row, sqlite_row};
use crate::config::SqlSourceConfig;
use crate::providers::ProviderError;

/// An argument as it is bound; `None` is a typed NULL.
#[derive(Debug, Clone)]
pub(super) enum Param {
    Text(Option<String>),
    Int(Option<i64>),
    Float(Option<f64>),
    Bool(Option<bool>),
}

/// What a result keeps: rows up to `max_rows` and `max_bytes` of JSON.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub statement_timeout: Duration,
    pub max_rows: usize,
    pub max_bytes: usize,
}

/// The rows kept, and why the rest were not, if any were left.
pub(super) struct Rows {
    /// Column names in the statement's order (JSON objects lose it).
    pub columns: Vec<String>,
    pub rows: Vec<Map<String, Value>>,
    pub truncated: Option<String>,
}

/// Binds each argument with its declared type.
macro_rules! bind {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for param in $params {
            query = match param {
                Param::Text(v) => query.bind(v.clone()),
                Param::Int(v) => query.bind(*v),
                Param::Float(v) => query.bind(*v),
                Param::Bool(v) => query.bind(*v),
            };
        }
        query
    }};
}

pub(super) enum Db {
    Pg(PgPool),
    /// SQLite has no read-only transaction: a read pool whose connections
    /// are `query_only`, and a pool for tools declared `read_only = false`.
    Sqlite {
        read: SqlitePool,
        write: SqlitePool,
    },
}

impl Db {
    /// Pools that connect on first use, so a database that is down does
    /// not stop the server; `url` has its `${NAME}` already read.
    pub(super) fn open(url: &str, source: &SqlSourceConfig) -> anyhow::Result<Self> {
        if source.is_sqlite() {
            let options = SqliteConnectOptions::from_str(url)
                .context("the URL is not a SQLite URL")?
                .create_if_missing(false);
            let pool = || {
                SqlitePoolOptions::new()
                    .max_connections(source.max_connections)
                    .min_connections(0)
                    .idle_timeout(source.idle_timeout)
                    .acquire_timeout(source.acquire_timeout)
            };
            let read = options.clone().pragma("query_only", "ON");
            return Ok(Self::Sqlite {
                read: pool().connect_lazy_with(read),
                write: pool().connect_lazy_with(options),
            });
        }
        let options = PgConnectOptions::from_str(url)
            .map_err(|_| anyhow::anyhow!("the URL is not a PostgreSQL URL"))?
            .application_name("teamgate");
        let pool = PgPoolOptions::new()
            .max_connections(source.max_connections)
            .min_connections(0)
            .idle_timeout(source.idle_timeout)
            .acquire_timeout(source.acquire_timeout)
            .connect_lazy_with(options);
        Ok(Self::Pg(pool))
    }

    /// Runs `statement` with `params` bound, keeping what `limits` allow.
    /// `persistent`: keep the prepared statement on the connection (declared
    /// statements), not for ad-hoc SQL.
    pub(super) async fn run(
        &self,
        (statement, params): (&str, &[Param]),
        read_only: bool,
        persistent: bool,
        limits: Limits,
    ) -> Result<Rows, ProviderError> {
        let timeout = limits.statement_timeout;
        match self {
            Self::Pg(pool) => {
                let mut tx = pool.begin().await.map_err(|e| error(e, timeout))?;
                // One round trip; both hold only until the transaction ends.
                let setup = format!(
                    "{}SET LOCAL statement_timeout = {}",
                    if read_only {
                        "SET TRANSACTION READ ONLY; "
                    } else {
                        ""
                    },
                    timeout.as_millis().max(1)
                );
                (tx.execute(sqlx::raw_sql(&setup)).await).map_err(|e| error(e, timeout))?;
                let query = bind!(sqlx::query(statement).persistent(persistent), params);
                let rows = collect(query.fetch(&mut *tx), pg_row, limits).await;
                let rows = rows.map_err(|e| error(e, timeout))?;
                let end = if read_only {
                    tx.rollback().await
                } else {
                    tx.commit().await
                };
                end.map_err(|e| error(e, timeout))?;
                Ok(rows)
            }
            Self::Sqlite { read, write } => {
                let pool = if read_only { read } else { write };
                // SQLite has no statement timeout of its own.
                let run = async {
                    let query = bind!(sqlx::query(statement).persistent(persistent), params);
                    collect(query.fetch(pool), sqlite_row, limits).await
                };
                match tokio::time::timeout(timeout, run).await {
                    Ok(rows) => rows.map_err(|e| error(e, timeout)),
                    Err(_) => Err(ProviderError::StatementTimeout(timeout)),
                }
            }
        }
    }
}

/// Reads rows until a limit; the rest are left unread.
async fn collect<R: sqlx::Row>(
    mut rows: impl futures::Stream<Item = Result<R, sqlx::Error>> + Unpin,
    convert: fn(&R) -> Map<String, Value>,
    limits: Limits,
) -> Result<Rows, sqlx::Error> {
    let (mut kept, mut bytes, mut columns) = (Vec::new(), 0, Vec::new());
    while let Some(row) = rows.try_next().await? {
        if columns.is_empty() {
            columns = row.columns().iter().map(|c| c.name().to_owned()).collect();
        }
        if kept.len() == limits.max_rows {
            let why = format!("truncated: more than max_rows ({}) rows", limits.max_rows);
            return Ok(Rows {
                columns,
                rows: kept,
                truncated: Some(why),
            });
        }
        let row = convert(&row);
        bytes += serde_json::to_string(&row).map_or(0, |s| s.len());
        if bytes > limits.max_bytes {
            let why = format!(
                "truncated: the rows exceed max_bytes ({} bytes of JSON)",
                limits.max_bytes
            );
            return Ok(Rows {
                columns,
                rows: kept,
                truncated: Some(why),
            });
        }
        kept.push(row);
    }
    Ok(Rows {
        columns,
        rows: kept,
        truncated: None,
    })
}

/// The database's own words, with PostgreSQL's SQLSTATE; never the URL.
fn error(error: sqlx::Error, timeout: Duration) -> ProviderError {
    match error {
        sqlx::Error::Database(e) => {
            if e.code().as_deref() == Some("57014") {
                return ProviderError::StatementTimeout(timeout);
            }
            let code = e
                .code()
                .map(|c| format!(" (SQLSTATE {c})"))
                .unwrap_or_default();
            let message = e.message().to_owned();
            ProviderError::Refused { message, code }
        }
        sqlx::Error::PoolTimedOut => ProviderError::NoConnection,
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            ProviderError::Decode(Box::new(error))
        }
        other => ProviderError::Unreachable(Box::new(other)),
    }
}
