//! Persistence: the only module that talks SQL (and the only one importing sqlx).
//!
//! One implementation over sqlx's `Any` driver serves both backends: SQLite
//! (the zero-setup default) and PostgreSQL (several replicas). The schema
//! keeps to what both dialects share, so each query is written once; each
//! backend has its own migration folder with the same versions.

mod approvals;
mod audit;
mod audit_copy;
mod audit_kinds;
mod batch;
mod clock;
mod credentials;
mod events;
mod memory;
mod notify;
mod oauth;
mod oauth_purge;
mod pins;
mod pins_confirmed;
mod pool;
mod portal;
mod probe;
mod quotas;
mod serve_lock;
mod sessions;
mod settings;
mod task_row;
mod tasks;
mod tasks_sweep;
mod tokens;
mod usage;
mod usage_rows;
mod vault;

use std::{path::PathBuf, str::FromStr, sync::atomic::AtomicU64, time::Duration};

use sqlx::{
    AnyPool, PgPool, any::AnyConnectOptions, postgres::PgConnectOptions,
    sqlite::SqliteConnectOptions,
};

// Approval by a second person (issue 65 part 2).
pub use approvals::{ApprovalRepo, ApprovalRow, Decision};
pub use audit::{AuditFilter, AuditRecord, record_id};
pub use audit_kinds::{Actor, Via};
pub use clock::{Clock, ManualClock, SystemClock};
pub use credentials::{CredentialRepo, SealedRow};
pub use events::{SqlEventStore, StreamEvents};
pub use memory::{MemoryEventStore, Retention};
pub use notify::{RELAY_QUEUE, bridge};
pub use oauth::{OAuthClientRow, OAuthCodeRow, OAuthGrantRow, OAuthKeyRow, OAuthRepo, Taken};
pub use pins::{Pending, PinRepo, PinRow};
pub use pins_confirmed::{ConfirmedBy, confirmed, selects};
pub use pool::Connections;
use pool::{Pooling, copier_options, pool_options};
pub use portal::{PendingLogin, PortalSession, PortalSessions, SignInClaims};
// Quotas shared by replicas (issue 64).
pub use quotas::QuotaRepo;
pub use serve_lock::ServeLock;
pub use sessions::{SessionRepo, SessionRow};
pub use settings::dropped_tools_key;
pub use tokens::TokenRow;
// Usage rolled up for the portal (issue 64 part 2).
pub use usage::{Dimension, Grain, LATENCY_BOUNDS_MS, LATENCY_BUCKETS, Tally, counted, is_error};
pub use usage_rows::UsageRow;
// Members' credential values (issue 29).
pub use vault::Vault;
// Durable tasks (issue 31).
pub use tasks::{LostTask, TaskRepo, TaskRow};

use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store.url {0:?} is not a sqlite:// or postgres:// URL")]
    UnsupportedUrl(String),
    #[error(
        "store.url {0:?} is an in-memory SQLite database, which teamgate's connections \
         cannot share; name a file (sqlite://path)"
    )]
    InMemory(String),
    #[error("cannot open the database ({backend:?}): {source}")]
    Connect {
        backend: Backend,
        source: sqlx::Error,
    },
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error while trying to {action}: {source}")]
    Query {
        action: &'static str,
        source: sqlx::Error,
    },
    #[error("stored data is corrupt ({0})")]
    Corrupt(String),
    #[error("credentials.keys is empty: members' credential values cannot be sealed or opened")]
    NoCredentialKey,
    #[error("sealing a credential value failed: {0}")]
    Sealing(&'static str),
    #[error(transparent)]
    ServeLock(#[from] serve_lock::ServeLockError),
}

/// Wraps a sqlx error with what we were doing, for messages an operator can act on.
pub(crate) fn query_error(action: &'static str) -> impl Fn(sqlx::Error) -> StoreError + Copy {
    move |source| StoreError::Query { action, source }
}

/// Audit batches PostgreSQL takes at once. A commit waits for its WAL to
/// reach the disk; with several in flight the database groups their commits.
const AUDIT_WRITERS: usize = 4;

/// A connection pool to the configured database, plus the clock every
/// expiry decision reads (so tests can move time).
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    /// Where every write goes. On SQLite, one connection of its own: the
    /// database takes one writer at a time, and writers queued here wake as
    /// soon as the last one commits, where on the shared pool they met the
    /// lock held and slept in SQLite's busy handler (1, 2, 5, 10 ms...),
    /// which was most of an `initialize`'s time. On PostgreSQL, `pool`.
    writer: AnyPool,
    /// PostgreSQL's audit writers, on its own driver: the batches go in as
    /// a `COPY`, which `Any` cannot send (audit_copy.rs). None on SQLite.
    copier: Option<PgPool>,
    backend: Backend,
    clock: Arc<dyn Clock>,
    /// How long a request waits for a connection (`store.timeout`).
    timeout: Duration,
    /// Connections opened since the start, shared by the clones.
    opened: Arc<AtomicU64>,
    /// Whether the database answers, shared by the clones (`probe.rs`).
    probe: Arc<probe::Probe>,
}

/// `store.timeout`'s default, for the commands that connect without it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// `store.connection_lifetime`'s default, likewise.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(30);

impl Store {
    /// Connects (creating a SQLite file and its folder on first start) but
    /// does not migrate.
    pub async fn connect(url: &str, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        Self::connect_with(url, clock, DEFAULT_TIMEOUT, DEFAULT_LIFETIME).await
    }

    /// `connect` as `[store]` says: its URL, `timeout` and
    /// `connection_lifetime`.
    pub async fn from_config(
        config: &crate::config::StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StoreError> {
        let (timeout, lifetime) = (config.timeout, config.connection_lifetime);
        Self::connect_with(config.url.expose(), clock, timeout, lifetime).await
    }

    /// `connect`, a request waiting at most `timeout` for a connection
    /// (`store.timeout`) and a connection closed once free after `lifetime`
    /// (`store.connection_lifetime`).
    async fn connect_with(
        url: &str,
        clock: Arc<dyn Clock>,
        timeout: Duration,
        lifetime: Duration,
    ) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(StoreError::UnsupportedUrl(url.to_owned()));
        };
        let url = match backend {
            Backend::Sqlite => prepare_sqlite(url),
            Backend::Postgres => url.to_owned(),
        };
        let connect = |source| StoreError::Connect { backend, source };
        // Checked before the pool opens (an in-memory database is refused).
        if backend == Backend::Sqlite {
            sqlite_file(&url)?;
        }
        let options = AnyConnectOptions::from_str(&url).map_err(connect)?;
        let opened = Arc::new(AtomicU64::new(0));
        let pooling = Pooling {
            timeout,
            lifetime,
            opened: opened.clone(),
        };
        let pool = pool_options(
            backend,
            if backend == Backend::Sqlite { 4 } else { 16 },
            pooling.clone(),
        )
        .connect_with(options.clone())
        .await
        .map_err(connect)?;
        let (writer, copier) = match backend {
            Backend::Sqlite => {
                let writer = pool_options(backend, 1, pooling)
                    .connect_with(options)
                    .await
                    .map_err(connect)?;
                (writer, None)
            }
            Backend::Postgres => {
                let options = PgConnectOptions::from_str(&url).map_err(connect)?;
                let copier = copier_options(AUDIT_WRITERS as u32, pooling)
                    .connect_with(options)
                    .await
                    .map_err(connect)?;
                (pool.clone(), Some(copier))
            }
        };
        Ok(Self {
            pool,
            writer,
            copier,
            backend,
            clock,
            timeout,
            opened,
            probe: Arc::default(),
        })
    }

    /// A migrated SQLite store in a new temporary folder, which must outlive
    /// it: the unit tests' store.
    #[cfg(test)]
    pub(crate) async fn scratch(clock: Arc<dyn Clock>) -> (tempfile::TempDir, Self) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/scratch.db", dir.path().display());
        let store = Self::connect(&url, clock).await.unwrap();
        store.migrate().await.unwrap();
        (dir, store)
    }

    /// How long a request waits for the database (`store.timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Applies the embedded migrations of this backend. On PostgreSQL sqlx
    /// takes an advisory lock, so replicas starting together are safe.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self.backend {
            Backend::Sqlite => sqlx::migrate!("migrations/sqlite").run(&self.pool).await?,
            Backend::Postgres => {
                sqlx::migrate!("migrations/postgres")
                    .run(&self.pool)
                    .await?
            }
        }
        Ok(())
    }

    /// How many `append_audit` calls are worth running at once: SQLite has
    /// one writer and commits without a flush (WAL, `synchronous = normal`).
    pub fn audit_writers(&self) -> usize {
        match self.backend {
            Backend::Sqlite => 1,
            Backend::Postgres => AUDIT_WRITERS,
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The clock expiry reads, for what keeps time beside the store (shared
    /// quotas' windows).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// True when the database answers a trivial query within a second.
    pub async fn ping(&self) -> bool {
        let probe = sqlx::query("select 1").execute(&self.pool);
        matches!(
            tokio::time::timeout(Duration::from_secs(1), probe).await,
            Ok(Ok(_))
        )
    }

    /// Reads.
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Writes: every insert, update and delete, and every transaction.
    pub(crate) fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// PostgreSQL's audit writers (audit_copy.rs); None on SQLite.
    fn copier(&self) -> Option<&PgPool> {
        self.copier.as_ref()
    }
}

/// The file a `sqlite:` URL names. An in-memory database is refused: each
/// connection would get one of its own (sqlx names `:memory:` anew per
/// parse, and shared cache did not join them), so the migrations applied on
/// one were missing on the next.
fn sqlite_file(url: &str) -> Result<PathBuf, StoreError> {
    let options = SqliteConnectOptions::from_str(url).map_err(|source| StoreError::Connect {
        backend: Backend::Sqlite,
        source,
    })?;
    let file = options.get_filename();
    if file.to_string_lossy().starts_with("file:sqlx-in-memory-") || url.contains("mode=memory") {
        return Err(StoreError::InMemory(url.to_owned()));
    }
    Ok(file.to_path_buf())
}

/// The file a `sqlite:` URL names, when it names one (`None` for
/// PostgreSQL and in-memory URLs): what the operator commands check before
/// they would create an empty database.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    url.starts_with("sqlite:")
        .then(|| sqlite_file(url).ok())
        .flatten()
}

/// `sqlite://path` with `mode=rwc` (create the file) and the folder made.
fn prepare_sqlite(url: &str) -> String {
    let path = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default();
    if let Some(parent) = std::path::Path::new(path).parent()
        && !parent.as_os_str().is_empty()
    {
        let _ = std::fs::create_dir_all(parent);
    }
    if url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory store used to take its migrations on one pool connection
    /// and fail its queries on the next; it is refused at once, saying why.
    #[tokio::test]
    async fn an_in_memory_database_is_refused_with_a_reason() {
        for url in ["sqlite::memory:", "sqlite://t.db?mode=memory"] {
            let refused = Store::connect(url, Arc::new(SystemClock)).await;
            assert!(
                matches!(&refused, Err(StoreError::InMemory(_))),
                "{url}: {:?}",
                refused.err()
            );
        }
    }
}
