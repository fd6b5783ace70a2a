//! Audit records shipped out as the writer takes them (`[audit.ship]`):
//! to stdout as JSON lines, to a webhook, as OTLP log records. Each
//! destination has its own bounded queue and task, so a slow one delays
//! neither the others nor any call. A destination gets every record at
//! least once, in the order this replica wrote them: a batch leaves its
//! queue only once the destination took it, and is retried until then.
//! When a queue is full, records are dropped for that destination, counted
//! (`ShipStats`, on `/metrics`) and logged, never blocking the writer.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::sync::Notify;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{
    AuditError,
    destinations::{self, Destination, Shipped},
};
use crate::{config::AuditConfig, store::AuditRecord};

/// One destination's queue and counters.
struct Queue {
    name: &'static str,
    records: Mutex<VecDeque<Arc<Shipped>>>,
    capacity: usize,
    arrived: Notify,
    dropped: AtomicU64,
    /// A full queue is logged once until it has room again.
    full: AtomicBool,
}

impl Queue {
    fn push(&self, batch: &[Arc<Shipped>]) {
        let mut lost = 0u64;
        {
            let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
            for record in batch {
                if records.len() < self.capacity {
                    records.push_back(record.clone());
                } else {
                    lost += 1;
                }
            }
        }
        if lost > 0 {
            self.dropped.fetch_add(lost, Ordering::Relaxed);
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::error!(
                    destination = self.name,
                    capacity = self.capacity,
                    "audit shipping: the queue is full; records are dropped for this destination \
                     until it takes them again (teamgate_audit_ship_dropped_total counts them)"
                );
            }
        }
        self.arrived.notify_one();
    }

    fn front(&self, most: usize) -> Vec<Arc<Shipped>> {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.iter().take(most).cloned().collect()
    }

    fn pop(&self, n: usize) {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let n = n.min(records.len());
        records.drain(..n);
        if records.len() < self.capacity / 2 {
            self.full.store(false, Ordering::Relaxed);
        }
    }

    fn len(&self) -> usize {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A destination's figures for `/metrics`.
pub struct ShipStat {
    pub destination: &'static str,
    pub queued: i64,
    pub dropped: u64,
}

/// The destinations `[audit.ship]` turns on, each with its queue and task.
#[derive(Clone)]
pub struct Shipper {
    queues: Arc<Vec<Arc<Queue>>>,
    redact: Arc<Vec<String>>,
    /// Each destination's task.
    tasks: TaskTracker,
}

impl Shipper {
    /// The shipper of `config`, its tasks started; `None` when nothing ships.
    /// When `stop` is cancelled, each task delivers what is queued (while
    /// its destination takes it) and ends.
    pub fn start(
        config: &AuditConfig,
        otlp: (&str, &str),
        stop: CancellationToken,
    ) -> Result<Option<Self>, AuditError> {
        if !config.ships() {
            return Ok(None);
        }
        let ship = &config.ship;
        let mut shipper = Self {
            queues: Arc::default(),
            redact: Arc::new(ship.redact.clone()),
            tasks: TaskTracker::new(),
        };
        let mut queues = Vec::new();
        if ship.stdout {
            queues.push(shipper.spawn(destinations::Stdout, ship.buffer, &stop));
        }
        if let Some(hook) = &ship.webhook {
            let hook = destinations::Webhook::new(hook)?;
            queues.push(shipper.spawn(hook, ship.buffer, &stop));
        }
        if ship.otlp {
            let (endpoint, service) = otlp;
            let otlp = destinations::Otlp::new(endpoint, service)?;
            queues.push(shipper.spawn(otlp, ship.buffer, &stop));
        }
        shipper.queues = Arc::new(queues);
        Ok(Some(shipper))
    }

    fn spawn<D: Destination>(
        &self,
        destination: D,
        capacity: usize,
        stop: &CancellationToken,
    ) -> Arc<Queue> {
        let queue = Arc::new(Queue {
            name: destination.name(),
            records: Mutex::new(VecDeque::new()),
            capacity,
            arrived: Notify::new(),
            dropped: AtomicU64::new(0),
            full: AtomicBool::new(false),
        });
        let task = deliver(destination, queue.clone(), stop.clone());
        self.tasks.spawn(task);
        queue
    }

    /// Hands `batch`, in the order it was taken, to every destination.
    pub fn ship(&self, batch: &[AuditRecord]) {
        let shipped: Vec<Arc<Shipped>> = batch
            .iter()
            .map(|record| Arc::new(Shipped::new(record, &self.redact)))
            .collect();
        for queue in self.queues.iter() {
            queue.push(&shipped);
        }
    }

    /// Each destination's queue length and records dropped so far.
    pub fn stats(&self) -> Vec<ShipStat> {
        (self.queues.iter())
            .map(|queue| ShipStat {
                destination: queue.name,
                queued: queue.len() as i64,
                dropped: queue.dropped.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Waits, at most `within`, for every destination to take what is
    /// queued after the stop; false when one did not.
    pub async fn finished(&self, within: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(within, self.tasks.wait())
            .await
            .is_ok()
    }
}

/// One destination's task: delivers the front of its queue, in order,
/// retrying with backoff; after `stop`, until the queue is empty.
async fn deliver<D: Destination>(destination: D, queue: Arc<Queue>, stop: CancellationToken) {
    let mut delay = Duration::from_millis(100);
    loop {
        let batch = queue.front(destination.batch());
        if batch.is_empty() {
            if stop.is_cancelled() {
                return;
            }
            tokio::select! {
                () = queue.arrived.notified() => {}
                () = stop.cancelled() => {}
            }
            continue;
        }
        match destination.deliver(&batch).await {
            Ok(()) => {
                queue.pop(batch.len());
                delay = Duration::from_millis(100);
            }
            Err(AuditError::Refused(why)) => {
                // Sending the same batch again would be refused again.
                queue.pop(batch.len());
                queue
                    .dropped
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                tracing::error!(
                    destination = destination.name(),
                    records = batch.len(),
                    %why,
                    "audit shipping: the destination refused records; dropped"
                );
            }
            Err(error) => {
                tracing::warn!(
                    destination = destination.name(),
                    %error,
                    retry_in_ms = delay.as_millis() as u64,
                    "audit shipping: not delivered yet; retrying"
                );
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    // Stopping: one more try, soon, then the caller's wait decides.
                    () = stop.cancelled(), if !stop.is_cancelled() => {}
                }
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}
