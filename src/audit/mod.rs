//! The audit trail: one record per tools/call, resources/read and
//! prompts/get, and per refused authentication or authorization.
//!
//! Records go through a bounded queue to one writer task that appends them
//! in batches, so the call path never waits on the database. When the queue
//! is full, new calls are refused (503) before they run: load is shed, no
//! record is lost. At shutdown the writer takes what is queued, writes it
//! and says so (`Auditor::finished`). With `audit.durable`, a call's reply
//! waits until its record is committed (with the other records of the
//! moment: one commit for many replies). The writer hands each batch, in
//! the order it took them, to the shipper (`ship.rs`, `destinations.rs`).

mod destinations;
mod ship;

use std::{sync::LazyLock, time::Duration};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::{
    sync::{mpsc, oneshot, watch},
    task::JoinSet,
};
use tokio_util::sync::CancellationToken;

pub use ship::{ShipStat, Shipper};

use crate::store::{AuditRecord, Store};

/// Why a shipped batch did not reach its destination.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot reach the destination: {0}")]
    Unreachable(#[source] reqwest::Error),
    /// A status the destination may answer differently later (5xx, 429, 408).
    #[error("the destination answered HTTP {0}")]
    Status(u16),
    /// Refused for good (a 4xx): sending the same records again would be too.
    #[error("the destination refused the records: {0}")]
    Refused(String),
    #[error("cannot write: {0}")]
    Write(#[from] std::io::Error),
}

/// A record on its way to the writer, with whoever waits for its commit.
struct Queued {
    record: AuditRecord,
    committed: Option<oneshot::Sender<()>>,
}

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
    queue: mpsc::Sender<Queued>,
    written: watch::Receiver<bool>,
    /// `audit.durable`: `record` returns once the record is committed, or
    /// after this long (`store.timeout`) if the database does not answer.
    durable: Option<Duration>,
}

impl Auditor {
    /// Starts the writer. When `stop` is cancelled (the server has stopped
    /// taking calls) it closes the queue, writes what is in it and finishes.
    pub fn start(store: Store, buffer: usize, stop: CancellationToken) -> Self {
        Self::start_with(store, buffer, None, stop)
    }

    /// `start`, the batches also handed to `shipper`.
    pub fn start_with(
        store: Store,
        buffer: usize,
        shipper: Option<Shipper>,
        stop: CancellationToken,
    ) -> Self {
        let (queue, receiver) = mpsc::channel(buffer);
        let (done, written) = watch::channel(false);
        tokio::spawn(async move {
            write(store, receiver, shipper, stop).await;
            let _ = done.send(true);
        });
        Self {
            queue,
            written,
            durable: None,
        }
    }

    /// Every `record` waits for its record's commit (`audit.durable`), at
    /// most the given time.
    pub fn durable(self, durable: Option<Duration>) -> Self {
        Self { durable, ..self }
    }

    /// Whether a call may start: its record is sure to find room.
    pub fn has_room(&self) -> bool {
        self.queue.capacity() > 0
    }

    /// Queues a record, waiting for room rather than dropping it; with
    /// `audit.durable`, also until it is committed.
    pub async fn record(&self, record: AuditRecord) {
        let (committed, wait) = match self.durable {
            Some(within) => {
                let (sender, receiver) = oneshot::channel();
                (Some(sender), Some((receiver, within)))
            }
            None => (None, None),
        };
        if self.queue.send(Queued { record, committed }).await.is_err() {
            tracing::error!("audit writer stopped; record not written");
            return;
        }
        if let Some((wait, within)) = wait
            && tokio::time::timeout(within, wait).await.is_err()
        {
            // Still queued and retried: written when the database is back.
            tracing::warn!(
                "a reply left before its audit record was committed: the database did not \
                 answer within store.timeout"
            );
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
async fn write(
    store: Store,
    mut receiver: mpsc::Receiver<Queued>,
    shipper: Option<Shipper>,
    stop: CancellationToken,
) {
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
        // A reply waiting for its commit (`audit.durable`) is not kept
        // waiting longer: the records arriving while this batch is written
        // make the next one (group commit without a timer).
        let waited_on = batch.iter().any(|queued| queued.committed.is_some());
        if batch.len() < BATCH && !receiver.is_closed() && !waited_on {
            tokio::time::sleep(LINGER).await;
            while batch.len() < BATCH
                && let Ok(record) = receiver.try_recv()
            {
                batch.push(record);
            }
        }
        let (batch, committed): (Vec<AuditRecord>, Vec<_>) = batch
            .into_iter()
            .map(|queued| (queued.record, queued.committed))
            .unzip();
        if let Some(shipper) = &shipper {
            shipper.ship(&batch);
        }
        if in_flight.len() >= most {
            in_flight.join_next().await;
        }
        let store = store.clone();
        in_flight.spawn(async move {
            append(store, &batch).await;
            for waiting in committed.into_iter().flatten() {
                let _ = waiting.send(());
            }
        });
    }
    while in_flight.join_next().await.is_some() {}
}

/// Writes one batch, retrying a failing database instead of dropping
/// records; the queue fills meanwhile and new calls are shed.
async fn append(store: Store, batch: &[AuditRecord]) {
    let mut delay = Duration::from_millis(100);
    while let Err(error) = store.append_audit(batch).await {
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
        let (_dir, store) = Store::scratch(std::sync::Arc::new(crate::store::SystemClock)).await;
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
