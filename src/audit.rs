//! The audit trail: one record per tools/call, resources/read and
//! prompts/get, and per refused authentication or authorization.
//!
//! Records go through a bounded queue to one writer task that appends them
//! in batches, so the call path never waits on the database. When the queue
//! is full, new calls are refused (503) before they run: load is shed, no
//! record is lost. At shutdown the writer takes what is queued, writes it
//! and says so (`Auditor::finished`).

use std::{sync::LazyLock, time::Duration};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::{
    sync::{mpsc, watch},
    task::JoinSet,
};
use tokio_util::sync::CancellationToken;

use crate::store::{AuditRecord, Store};

/// Records taken per write cycle (one COPY on PostgreSQL, one transaction of
/// 64-row statements on SQLite).
const BATCH: usize = 4096;

/// How long the writer waits for more records once one has arrived. Each
/// transaction costs several round trips to the database and a commit;
/// under load, waiting a moment turns hundreds of tiny transactions a second
/// into a few large ones. The call path never waits for it. Longer waits
/// make larger batches, cheaper per record for PostgreSQL, but 40 ms raised
/// the benchmark's p99 (the database's bursts of work compete with calls on
/// a shared machine; see BENCHMARKS.md).
const LINGER: Duration = Duration::from_millis(10);

#[derive(Clone)]
pub struct Auditor {
    queue: mpsc::Sender<AuditRecord>,
    written: watch::Receiver<bool>,
}

impl Auditor {
    /// Starts the writer. When `stop` is cancelled (the server has stopped
    /// taking calls) it closes the queue, writes what is in it and finishes.
    pub fn start(store: Store, buffer: usize, stop: CancellationToken) -> Self {
        let (queue, receiver) = mpsc::channel(buffer);
        let (done, written) = watch::channel(false);
        tokio::spawn(async move {
            write(store, receiver, stop).await;
            let _ = done.send(true);
        });
        Self { queue, written }
    }

    /// Whether a call may start: its record is sure to find room.
    pub fn has_room(&self) -> bool {
        self.queue.capacity() > 0
    }

    /// Queues a record, waiting for room rather than dropping it.
    pub async fn record(&self, record: AuditRecord) {
        if self.queue.send(record).await.is_err() {
            tracing::error!("audit writer stopped; record not written");
        }
    }

    /// Waits, at most `within`, for the writer to finish after its stop;
    /// false when it did not (the database is down: records are lost).
    pub async fn finished(&self, within: Duration) -> bool {
        let mut written = self.written.clone();
        matches!(
            tokio::time::timeout(within, written.wait_for(|done| *done)).await,
            Ok(Ok(_))
        )
    }
}

/// The writer: takes batches from the queue and writes up to
/// `Store::audit_writers` of them at once. One batch at a time, each waiting
/// for its commit to reach the disk, capped the writer at one batch per
/// commit, and the benchmark's 44,000 calls a second on PostgreSQL outran it
/// (the queue filled and calls were refused). In memory at most: the queue
/// plus that many batches.
async fn write(store: Store, mut receiver: mpsc::Receiver<AuditRecord>, stop: CancellationToken) {
    let most = store.audit_writers();
    let mut in_flight = JoinSet::new();
    loop {
        let mut batch = Vec::with_capacity(BATCH.min(receiver.len().max(64)));
        let taken = tokio::select! {
            taken = receiver.recv_many(&mut batch, BATCH) => taken,
            () = stop.cancelled(), if !receiver.is_closed() => {
                // No new records; the loop drains the queue, then recv_many says 0.
                receiver.close();
                continue;
            }
        };
        if taken == 0 {
            break;
        }
        if batch.len() < BATCH && !receiver.is_closed() {
            tokio::time::sleep(LINGER).await;
            while batch.len() < BATCH
                && let Ok(record) = receiver.try_recv()
            {
                batch.push(record);
            }
        }
        if in_flight.len() >= most {
            in_flight.join_next().await;
        }
        in_flight.spawn(append(store.clone(), batch));
    }
    while in_flight.join_next().await.is_some() {}
}

/// Writes one batch, retrying a failing database instead of dropping
/// records; the queue fills meanwhile and new calls are shed.
async fn append(store: Store, batch: Vec<AuditRecord>) {
    let mut delay = Duration::from_millis(100);
    while let Err(error) = store.append_audit(&batch).await {
        tracing::error!(%error, records = batch.len(), "audit records not written yet; retrying");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// SHA-256 of the canonical JSON of `arguments`: proves what was sent
/// without keeping it (arguments may hold secrets).
pub fn digest(arguments: &Value) -> String {
    match arguments {
        Value::Null => String::new(),
        Value::Object(map) => digest_object(map),
        other => hash(other),
    }
}

/// `digest` of an arguments object, without wrapping it in a `Value` (a
/// clone of every argument, on every call).
pub fn digest_object(arguments: &serde_json::Map<String, Value>) -> String {
    static EMPTY_OBJECT: LazyLock<String> = LazyLock::new(|| hex::encode(Sha256::digest(b"{}")));
    // Most calls pass no arguments: their digest is always the same.
    if arguments.is_empty() {
        return EMPTY_OBJECT.clone();
    }
    hash(arguments)
}

fn hash(value: &impl serde::Serialize) -> String {
    // serde_json without `preserve_order` sorts object keys: canonical
    // enough. Written straight into the hasher, never into a String.
    let mut hasher = Sha256::new();
    serde_json::to_writer(&mut hasher, value).expect("JSON values always serialize");
    hex::encode(hasher.finalize())
}

/// A new record id: time-ordered and unique across replicas. Its format
/// belongs to the store, whose time-range queries rely on it.
pub use crate::store::record_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stopped_writer_finishes_only_once_the_queue_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/audit.db", dir.path().display());
        let store = Store::connect(&url, std::sync::Arc::new(crate::store::SystemClock))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let stop = CancellationToken::new();
        let auditor = Auditor::start(store.clone(), 10_000, stop.clone());
        let at_ms = store.now_ms();
        for _ in 0..5_000 {
            let record = AuditRecord {
                id: crate::store::record_id(at_ms),
                at_ms,
                ..AuditRecord::example("echo")
            };
            auditor.record(record).await;
        }
        // Stopped with 5,000 records queued (more than one batch): finished
        // means every one of them is in the table.
        assert!(!auditor.finished(Duration::ZERO).await);
        stop.cancel();
        assert!(auditor.finished(Duration::from_secs(30)).await);
        assert_eq!(store.audit_count().await.unwrap(), 5_000);
        // Later records are refused, not queued for a writer that is gone.
        assert!(auditor.queue.is_closed());
    }

    #[test]
    fn digests_are_stable_and_hide_the_arguments() {
        let a = digest(&serde_json::json!({"b": 1, "a": "secret-value"}));
        let b = digest(&serde_json::json!({"a": "secret-value", "b": 1}));
        assert_eq!(a, b);
        assert!(!a.contains("secret"));
        assert_eq!(digest(&Value::Null), "");
        // The object path and the shortcut for no arguments agree with the general one.
        let object = serde_json::json!({"b": 1, "a": "secret-value"});
        assert_eq!(digest_object(object.as_object().unwrap()), a);
        let empty = serde_json::json!({});
        assert_eq!(
            digest(&empty),
            hex::encode(Sha256::digest(empty.to_string()))
        );
    }
}
