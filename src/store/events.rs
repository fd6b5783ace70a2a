//! Resumable SSE events shared by every replica.
//!
//! Each event is written to the database in batches by one background task,
//! so streaming never waits on a database round trip per event, and kept in
//! this process's memory for a short while (`IN_MEMORY`): a client that
//! reconnects within seconds to the replica that streamed it is served from
//! memory, any other from the database. Memory is a cache of the newest
//! events, not a second copy of the retention: the configured retention of
//! a busy legacy session's calls held 100,000 events (about 70 MB) in RAM
//! for ten minutes after the load had stopped. The write queue is bounded:
//! when it is full, streaming waits rather than dropping events.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};
use sqlx::Row;
use tokio::sync::mpsc;

use super::{
    Backend, MemoryEventStore, Retention, Store, StoreError, batch, memory::Held, query_error,
};
use crate::protocol::{EventStoreError, ServerJsonRpcMessage, ServerSseMessage};

/// The event store as sessions use it (this module and `memory.rs` implement it).
#[async_trait]
pub trait StreamEvents: Send + Sync + 'static {
    /// Records `event` on `stream` and returns it as sent, with its new id.
    async fn record(
        &self,
        stream: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError>;

    /// The events after `last_event_id` on its stream, when that stream's
    /// name starts with `scope`; `None` for an id of another scope, or one
    /// not (or no longer) known.
    async fn replay_in(
        &self,
        scope: &str,
        last_event_id: &str,
    ) -> Result<Option<Vec<ServerSseMessage>>, EventStoreError>;
}

/// Events waiting to be written; beyond this, streaming waits.
const QUEUE: usize = 16_384;
/// Events taken per write cycle (one linger, one transaction): the writer
/// keeps up with `BATCH / LINGER` events a second.
const BATCH: usize = 8192;
/// Rows per insert statement at most.
const MAX_ROWS: usize = 32;
/// How long the writer gathers events before a write: fewer, larger
/// transactions under load.
const LINGER: Duration = Duration::from_millis(25);
/// The in-memory cache: at most this many events, none older than this
/// (past the SSE retry interval and the disconnect grace, within which a
/// dropped client reconnects), let go every `EXPIRE_EVERY` without traffic.
const IN_MEMORY: Retention = Retention {
    max_events: 10_000,
    max_age: Duration::from_secs(30),
};
const EXPIRE_EVERY: Duration = Duration::from_secs(5);

struct Pending {
    stream_id: String,
    position: i64,
    event: ServerSseMessage,
    created_ms: i64,
}

pub struct SqlEventStore {
    store: Store,
    retention: Retention,
    memory: MemoryEventStore,
    queue: mpsc::Sender<Pending>,
}

impl SqlEventStore {
    /// Starts the batch writer; it stops when the store is dropped.
    pub fn new(store: Store, retention: Retention) -> Arc<Self> {
        let replica = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let (queue, receiver) = mpsc::channel(QUEUE);
        let cache = Retention {
            max_events: retention.max_events.min(IN_MEMORY.max_events),
            max_age: retention.max_age.min(IN_MEMORY.max_age),
        };
        let this = Arc::new(Self {
            memory: MemoryEventStore::with_prefix(cache, &format!("{replica}-")),
            store: store.clone(),
            retention,
            queue,
        });
        tokio::spawn(write_batches(store, replica, receiver));
        tokio::spawn(expire_memory(Arc::downgrade(&this)));
        this
    }

    /// Deletes events past the retention age or beyond the retained count.
    pub async fn purge(&self) -> Result<u64, StoreError> {
        let cutoff = self.store.now_ms() - self.retention.max_age.as_millis() as i64;
        let pool = self.store.writer();
        let mut removed = sqlx::query("delete from stream_events where created_ms < $1")
            .bind(cutoff)
            .execute(pool)
            .await
            .map_err(query_error("purge old stream events"))?
            .rows_affected();
        let boundary = sqlx::query(
            "select created_ms from stream_events order by created_ms desc limit 1 offset $1",
        )
        .bind(self.retention.max_events as i64)
        .fetch_optional(pool)
        .await
        .map_err(query_error("find the stream event retention boundary"))?;
        if let Some(row) = boundary {
            let oldest_kept: i64 = row.try_get(0).map_err(query_error("read a stream event"))?;
            removed += sqlx::query("delete from stream_events where created_ms <= $1")
                .bind(oldest_kept)
                .execute(pool)
                .await
                .map_err(query_error("purge surplus stream events"))?
                .rows_affected();
        }
        Ok(removed)
    }

    /// The database's copy of [`MemoryEventStore::replay`]: `None` for an id
    /// it does not hold, or one of a stream outside `scope`.
    async fn replay_from_database(
        &self,
        scope: &str,
        last_event_id: &str,
    ) -> Result<Option<Vec<ServerSseMessage>>, StoreError> {
        let pool = self.store.pool();
        let Some(anchor) = sqlx::query(
            "select stream_id, replica, position, created_ms from stream_events where id = $1",
        )
        .bind(last_event_id)
        .fetch_optional(pool)
        .await
        .map_err(query_error("find a stream event"))?
        else {
            return Ok(None);
        };
        let stream_id: String = anchor
            .try_get("stream_id")
            .map_err(query_error("read a stream event"))?;
        if !stream_id.starts_with(scope) {
            return Ok(None);
        }
        let replica: String = anchor
            .try_get("replica")
            .map_err(query_error("read a stream event"))?;
        let position: i64 = anchor
            .try_get("position")
            .map_err(query_error("read a stream event"))?;
        let created: i64 = anchor
            .try_get("created_ms")
            .map_err(query_error("read a stream event"))?;
        // A stream may have been served by several replicas over time (a GET
        // stream after a move): order by time, then replica, then position.
        let rows = sqlx::query(
            "select id, payload from stream_events where stream_id = $1 and \
             (created_ms > $2 or (created_ms = $2 and (replica > $3 or (replica = $3 and position > $4)))) \
             order by created_ms, replica, position limit 10000",
        )
        .bind(&stream_id)
        .bind(created)
        .bind(&replica)
        .bind(position)
        .fetch_all(pool)
        .await
        .map_err(query_error("replay stream events"))?;
        rows.iter()
            .map(|row| {
                let id: String = row
                    .try_get("id")
                    .map_err(query_error("read a stream event"))?;
                let payload: String = row
                    .try_get("payload")
                    .map_err(query_error("read a stream event"))?;
                decode(id, &payload)
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

fn encode(event: &ServerSseMessage) -> String {
    json!({
        "message": event.message.as_deref(),
        "retry_ms": event.retry.map(|r| r.as_millis() as u64),
    })
    .to_string()
}

fn decode(id: String, payload: &str) -> Result<ServerSseMessage, StoreError> {
    let value: Value =
        serde_json::from_str(payload).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut event = match value.get("message").filter(|m| !m.is_null()) {
        Some(message) => {
            let message = serde_json::from_value(message.clone())
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            ServerSseMessage::new(id.clone(), message)
        }
        None => ServerSseMessage::retry(Duration::from_millis(
            value["retry_ms"].as_u64().unwrap_or(3000),
        )),
    };
    if let Some(retry) = value["retry_ms"].as_u64() {
        event.retry = Some(Duration::from_millis(retry));
    }
    event.event_id = Some(id);
    Ok(event)
}

/// Lets the in-memory events go as they age; ends with the store.
async fn expire_memory(store: std::sync::Weak<SqlEventStore>) {
    let mut ticks = tokio::time::interval(EXPIRE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(store) = store.upgrade() else { return };
        store.memory.expire();
    }
}

async fn write_batches(store: Store, replica: String, mut receiver: mpsc::Receiver<Pending>) {
    let mut batch = Vec::new();
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        tokio::time::sleep(LINGER).await;
        // What arrived meanwhile joins this cycle, without waiting for more.
        while batch.len() < BATCH
            && let Ok(pending) = receiver.try_recv()
        {
            batch.push(pending);
        }
        batch.retain(not_done_within(&batch));
        if let Err(error) = insert(&store, &replica, &batch).await {
            // The events stay replayable from memory on this replica.
            tracing::warn!(%error, events = batch.len(), "stream events not persisted");
        }
        batch.clear();
    }
}

/// Whether an event is to be written: not when its stream began (the
/// priming event, which carries no message) and ended (a reply or an error)
/// within this one write cycle. Such a stream, most requests' in a 2025-era
/// session, was answered on its open connection while the writer lingered;
/// its events stay replayable from this replica's memory, and writing them
/// was about a fifth of every such call. Streams that last longer (progress,
/// a slow tool, a GET stream) are written, so any replica can resume them.
fn not_done_within(batch: &[Pending]) -> impl Fn(&Pending) -> bool + use<> {
    let mut began = std::collections::HashSet::new();
    let mut ended = std::collections::HashSet::new();
    for pending in batch {
        match pending.event.message.as_deref() {
            None => began.insert(pending.stream_id.clone()),
            Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)) => {
                ended.insert(pending.stream_id.clone())
            }
            Some(_) => false,
        };
    }
    let done: std::collections::HashSet<String> = began.intersection(&ended).cloned().collect();
    move |pending| !done.contains(&pending.stream_id)
}

async fn insert(store: &Store, replica: &str, batch: &[Pending]) -> Result<(), sqlx::Error> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut writing = batch::Writing::begin(store.writer(), batch.len(), MAX_ROWS, None).await?;
    for chunk in writing.chunks(batch) {
        let sql = insert_text(store.backend(), chunk.len());
        bind_rows(&sql, replica, chunk)
            .execute(writing.connection())
            .await?;
    }
    writing.finish().await
}

/// The insert of `rows` events, built once per row count (batch.rs).
fn insert_text(backend: Backend, rows: usize) -> std::borrow::Cow<'static, str> {
    static INSERT: batch::Texts = batch::Texts::new();
    INSERT.get(backend, rows, || {
        format!(
            "insert into stream_events (id, stream_id, replica, position, payload, created_ms) \
             values {} on conflict (id) do nothing",
            batch::values(backend, rows, 6)
        )
    })
}

/// `sql` with `chunk`'s rows bound, in its column order.
fn bind_rows<'q>(
    sql: &'q str,
    replica: &'q str,
    chunk: &'q [Pending],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    chunk.iter().fold(sqlx::query(sql), |query, pending| {
        query
            .bind(pending.event.event_id.clone().unwrap_or_default())
            .bind(&pending.stream_id)
            .bind(replica)
            .bind(pending.position)
            .bind(encode(&pending.event))
            .bind(pending.created_ms)
    })
}

#[async_trait]
impl StreamEvents for SqlEventStore {
    async fn record(
        &self,
        stream: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let (event, sequence) = self.memory.record(stream, event);
        let id = event.event_id.clone().unwrap_or_default();
        let pending = Pending {
            stream_id: stream.to_owned(),
            position: sequence as i64,
            event,
            created_ms: self.store.now_ms(),
        };
        self.queue
            .send(pending)
            .await
            .map_err(|_| "event writer stopped")?;
        Ok(id)
    }

    async fn replay_in(
        &self,
        scope: &str,
        last_event_id: &str,
    ) -> Result<Option<Vec<ServerSseMessage>>, EventStoreError> {
        match self.memory.replay(scope, last_event_id) {
            Held::Events(events) => Ok(Some(events)),
            Held::Foreign => Ok(None),
            // Another replica's, or evicted from memory: the database has it.
            Held::Missing => Ok(self.replay_from_database(scope, last_event_id).await?),
        }
    }
}
