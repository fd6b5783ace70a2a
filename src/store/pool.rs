//! The store's connection pools: each connection set up for its backend,
//! replaced once free after `store.connection_lifetime`, and counted for
//! `/metrics`.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use sqlx::{Database, any::AnyPoolOptions, pool::PoolOptions, postgres::PgPoolOptions};

use super::{Backend, Store};

impl Store {
    /// The connections open now, how many of them are idle, and how many
    /// were opened since the start, over the read and write pools (on
    /// PostgreSQL one pool, and the audit writers').
    pub fn connections(&self) -> Connections {
        let mut pools = vec![(self.pool.size(), self.pool.num_idle())];
        if self.backend == Backend::Sqlite {
            pools.push((self.writer.size(), self.writer.num_idle()));
        }
        if let Some(copier) = &self.copier {
            pools.push((copier.size(), copier.num_idle()));
        }
        let (open, idle) = pools
            .iter()
            .fold((0, 0), |(open, idle), pool| (open + pool.0, idle + pool.1));
        Connections {
            open,
            idle,
            opened: self.opened.load(Ordering::Relaxed),
        }
    }
}

/// The store's connections, as `/metrics` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    pub open: u32,
    pub idle: usize,
    /// Opened since the start (the first ones and every replacement).
    pub opened: u64,
}

/// What every pool of the store shares.
#[derive(Clone)]
pub(super) struct Pooling {
    /// How long a request waits for a connection (`store.timeout`).
    pub(super) timeout: Duration,
    /// `store.connection_lifetime`.
    pub(super) lifetime: Duration,
    /// Counts the connections opened.
    pub(super) opened: Arc<AtomicU64>,
}

/// A pool of at most `connections`, each set up for `backend`. A connection
/// is replaced once free after `lifetime`: a SQLite one holds its page cache
/// (up to 2 MB) and a thread, a PostgreSQL one its buffers and statements,
/// and after a load they would stay. Closing idle ones would not do: the
/// token revocation poll (four times a second) takes the pool's connections
/// in turn, so none is ever idle for long.
pub(super) fn pool_options(backend: Backend, connections: u32, pooling: Pooling) -> AnyPoolOptions {
    let opened = pooling.opened.clone();
    sized::<sqlx::Any>(backend, connections, &pooling).after_connect(move |conn, _meta| {
        opened.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            if backend == Backend::Sqlite {
                // WAL lets readers run beside the writer; the busy timeout
                // waits for the lock (another process's, or a reader
                // checkpointing) instead of failing at once.
                sqlx::query("pragma journal_mode = wal")
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("pragma busy_timeout = 5000")
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("pragma synchronous = normal")
                    .execute(&mut *conn)
                    .await?;
            }
            Ok(())
        })
    })
}

/// PostgreSQL's audit writers' pool (audit_copy.rs), on its driver rather
/// than `Any`: set up and replaced as the others are.
pub(super) fn copier_options(connections: u32, pooling: Pooling) -> PgPoolOptions {
    let opened = pooling.opened.clone();
    sized::<sqlx::Postgres>(Backend::Postgres, connections, &pooling).after_connect(
        move |_conn, _meta| {
            opened.fetch_add(1, Ordering::Relaxed);
            Box::pin(async { Ok(()) })
        },
    )
}

/// What every pool shares: its size, how long a request waits for a
/// connection, and a connection's lifetime.
fn sized<DB: Database>(backend: Backend, connections: u32, pooling: &Pooling) -> PoolOptions<DB> {
    PoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(pooling.timeout)
        .max_lifetime(pooling.lifetime)
        // sqlx pings a connection before each use by default: over the
        // network that finds one the server dropped, but a SQLite connection
        // is a thread of this process, and its ping was one more hand-off to
        // that thread per statement group (BENCHMARKS.md, twelfth session).
        .test_before_acquire(backend == Backend::Postgres)
}
