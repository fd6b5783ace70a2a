//! SQLite only: the audit writer's own connection, driven without sqlx.
//!
//! Every call writes one audit row. Through sqlx each row cost more than
//! SQLite's own insert: the `Any` driver converts every bound value, sqlx
//! copies it again to hand it to its connection's worker thread, and each
//! statement crosses to that thread and back (callgrind, BENCHMARKS.md).
//! Here cached multi-row inserts (one step inserts up to 64 rows: a
//! single-row insert stepped per record cost SQLite a third more) are bound
//! straight from the records' strings, in one `IMMEDIATE` transaction per
//! batch, on the calling thread. The file is the one the pool opened (WAL
//! mode, so the pool's readers are never blocked); `busy_timeout` waits out
//! its writers.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex},
};

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params_from_iter, types::ToSqlOutput};

use super::{
    AuditRecord, Backend, StoreError,
    audit::{FIELDS, Field, columns},
    batch, copy,
};

/// Rows per insert statement at most (a power of two, see batch.rs).
const MAX_ROWS: usize = 64;

/// One connection, shared by the audit writer's batches (one at a time).
#[derive(Clone)]
pub(super) struct AuditConnection(Arc<Mutex<Connection>>);

impl AuditConnection {
    /// Opens the database file the pool opened (`Store::connect` refuses
    /// in-memory databases).
    pub(super) fn open(filename: &std::path::Path) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let error = sqlite_error("open the audit writer's connection");
        let connection = Connection::open_with_flags(filename, flags).map_err(error)?;
        // As the pool's connections (store/mod.rs): wait for the write lock,
        // and commit without a flush (WAL keeps that safe).
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(error)?;
        connection
            .pragma_update(None, "synchronous", "normal")
            .map_err(error)?;
        Ok(Self(Arc::new(Mutex::new(connection))))
    }

    /// Inserts `records` all or none, on the calling thread (see `blocking`).
    pub(super) fn append(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        blocking(|| self.insert(records))
    }

    fn insert(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let error = sqlite_error("append audit records");
        // A panic mid-batch leaves the transaction rolled back (its drop);
        // the connection itself stays usable.
        let mut connection = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(error)?;
        for chunk in batch::chunks(records, MAX_ROWS) {
            // `or rollback`: a failing row (a duplicate id) ends the whole
            // transaction at once, which the batch wants anyway; the default
            // (`abort`) would make SQLite journal every page each statement
            // touches, to undo just that statement.
            let sql = format!(
                "insert or rollback into audit ({}) values {}",
                columns!(),
                batch::values(Backend::Sqlite, chunk.len(), FIELDS)
            );
            let mut insert = tx.prepare_cached(&sql).map_err(error)?;
            let values = chunk
                .iter()
                .flat_map(AuditRecord::fields)
                .map(|field| match field {
                    // The same text as COPY stores on PostgreSQL (`copy::storable`).
                    Field::Text(text) => match copy::storable(text) {
                        Cow::Borrowed(text) => ToSqlOutput::from(text),
                        Cow::Owned(text) => ToSqlOutput::from(text),
                    },
                    Field::Number(number) => ToSqlOutput::from(number),
                });
            insert.execute(params_from_iter(values)).map_err(error)?;
        }
        tx.commit().map_err(error)
    }
}

fn sqlite_error(action: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + Copy {
    move |source| StoreError::Sqlite { action, source }
}

/// Runs `write` on this thread. On the multi-threaded runtime tokio first
/// hands this worker's queued tasks to another thread, so a batch's inserts
/// never hold calls up; elsewhere (single-threaded test runtimes) it simply runs.
fn blocking<T>(write: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(write),
        _ => write(),
    }
}
