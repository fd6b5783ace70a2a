//! The audit trail: one record per tools/call, resources/read and
//! prompts/get, and per refused authentication or authorization.
//!
//! Records go through a bounded queue to one writer task that appends them
//! in batches, so the call path never waits on the database. When the queue
//! is full, new calls are refused (503) before they run: load is shed, no
//! record is lost.

use std::{sync::LazyLock, time::Duration};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::store::{AuditRecord, Store};

/// Records taken per write cycle (one transaction; the store splits it
/// into statements of at most 256 rows).
const BATCH: usize = 1024;

/// How long the writer waits for more records once one has arrived. Each
/// transaction costs several round trips to the database's own thread; under
/// load, waiting a moment turns hundreds of tiny transactions a second into a
/// few large ones. The call path never waits for it.
const LINGER: Duration = Duration::from_millis(10);

#[derive(Clone)]
pub struct Auditor {
    queue: mpsc::Sender<AuditRecord>,
}

impl Auditor {
    /// Starts the writer; it drains the queue and stops when every `Auditor` is gone.
    pub fn start(store: Store, buffer: usize) -> Self {
        let (queue, receiver) = mpsc::channel(buffer);
        tokio::spawn(write(store, receiver));
        Self { queue }
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
}

async fn write(store: Store, mut receiver: mpsc::Receiver<AuditRecord>) {
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        if batch.len() < BATCH {
            tokio::time::sleep(LINGER).await;
            while batch.len() < BATCH
                && let Ok(record) = receiver.try_recv()
            {
                batch.push(record);
            }
        }
        // Retry a failing database instead of dropping records; the queue
        // fills meanwhile and new calls are shed.
        let mut delay = Duration::from_millis(100);
        while let Err(error) = store.append_audit(&batch).await {
            tracing::error!(%error, records = batch.len(), "audit records not written yet; retrying");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        batch.clear();
    }
}

/// SHA-256 of the canonical JSON of `arguments`: proves what was sent
/// without keeping it (arguments may hold secrets).
pub fn digest(arguments: &Value) -> String {
    static EMPTY_OBJECT: LazyLock<String> = LazyLock::new(|| hex::encode(Sha256::digest(b"{}")));
    match arguments {
        Value::Null => String::new(),
        // Most calls pass no arguments: their digest is always the same.
        Value::Object(map) if map.is_empty() => EMPTY_OBJECT.clone(),
        _ => {
            // serde_json without `preserve_order` sorts object keys: canonical
            // enough. Written straight into the hasher, never into a String.
            let mut hasher = Sha256::new();
            serde_json::to_writer(&mut hasher, arguments).expect("JSON values always serialize");
            hex::encode(hasher.finalize())
        }
    }
}

/// A new record id: time-ordered and unique across replicas. Its format
/// belongs to the store, whose time-range queries rely on it.
pub use crate::store::record_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_stable_and_hide_the_arguments() {
        let a = digest(&serde_json::json!({"b": 1, "a": "secret-value"}));
        let b = digest(&serde_json::json!({"a": "secret-value", "b": 1}));
        assert_eq!(a, b);
        assert!(!a.contains("secret"));
        assert_eq!(digest(&Value::Null), "");
        // The shortcut for no arguments agrees with the general path.
        let empty = serde_json::json!({});
        assert_eq!(
            digest(&empty),
            hex::encode(Sha256::digest(empty.to_string()))
        );
    }
}
