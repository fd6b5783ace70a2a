//! An in-process event store for resumable SSE streams, bounded by count
//! and by age so memory cannot grow with traffic.
//!
//! Event ids are `<sequence>.<tag>`: the sequence orders events globally and
//! the random tag makes an id impossible to guess, so nobody can replay a
//! stream whose ids they were never sent.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

use async_trait::async_trait;

use crate::mcp::{EventStore, EventStoreError, EventStream, ServerSseMessage};

#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Events kept across all streams; the oldest go first.
    pub max_events: usize,
    /// Events older than this are not replayed.
    pub max_age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_events: 10_000,
            max_age: Duration::from_secs(300),
        }
    }
}

struct Stored {
    sequence: u64,
    tag: u64,
    stream: String,
    at: Instant,
    event: ServerSseMessage,
}

pub struct MemoryEventStore {
    retention: Retention,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    events: VecDeque<Stored>,
}

impl MemoryEventStore {
    pub fn new(retention: Retention) -> Self {
        Self {
            retention,
            inner: Mutex::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().expect("event store lock").events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn parse(id: &str) -> Option<(u64, u64)> {
    let (sequence, tag) = id.split_once('.')?;
    Some((sequence.parse().ok()?, u64::from_str_radix(tag, 16).ok()?))
}

#[async_trait]
impl EventStore for MemoryEventStore {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let tag: u64 = rand::random();
        let now = Instant::now();
        let mut inner = self.inner.lock().expect("event store lock");
        let sequence = inner.next;
        inner.next += 1;
        let id = format!("{sequence}.{tag:016x}");
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        inner.events.push_back(Stored {
            sequence,
            tag,
            stream: stream_id.to_owned(),
            at: now,
            event,
        });
        while inner.events.len() > self.retention.max_events
            || inner
                .events
                .front()
                .is_some_and(|e| now.duration_since(e.at) > self.retention.max_age)
        {
            inner.events.pop_front();
        }
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let (sequence, tag) = parse(last_event_id).ok_or("malformed Last-Event-ID")?;
        let inner = self.inner.lock().expect("event store lock");
        // Sequences are increasing, so the position is a binary search.
        let start = inner.events.partition_point(|e| e.sequence < sequence);
        let anchor = inner
            .events
            .get(start)
            .filter(|e| e.sequence == sequence && e.tag == tag)
            .ok_or("unknown or expired Last-Event-ID")?;
        let stream = anchor.stream.clone();
        let cutoff = Instant::now()
            .checked_sub(self.retention.max_age)
            .unwrap_or_else(Instant::now);
        let replay: Vec<ServerSseMessage> = inner
            .events
            .range(start + 1..)
            .filter(|e| e.stream == stream && e.at >= cutoff)
            .map(|e| e.event.clone())
            .collect();
        Ok(Box::pin(futures::stream::iter(replay)))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn event(n: i64) -> ServerSseMessage {
        let message = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": n}}
        ))
        .unwrap();
        ServerSseMessage::from_message(message)
    }

    #[tokio::test]
    async fn replays_only_later_events_of_the_same_stream() {
        let store = MemoryEventStore::new(Retention::default());
        let a1 = store.store_event("a", &event(1)).await.unwrap();
        store.store_event("b", &event(2)).await.unwrap();
        let a3 = store.store_event("a", &event(3)).await.unwrap();
        let replay: Vec<_> = store
            .replay_events_after(&a1)
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(replay.len(), 1);
        assert_eq!(replay[0].event_id.as_deref(), Some(a3.as_str()));
    }

    #[tokio::test]
    async fn guessed_or_expired_ids_are_refused() {
        let store = MemoryEventStore::new(Retention {
            max_events: 2,
            max_age: Duration::from_secs(60),
        });
        let first = store.store_event("a", &event(1)).await.unwrap();
        let (sequence, _) = parse(&first).unwrap();
        assert!(
            store
                .replay_events_after(&format!("{sequence}.{:016x}", 7))
                .await
                .is_err()
        );
        store.store_event("a", &event(2)).await.unwrap();
        store.store_event("a", &event(3)).await.unwrap();
        assert_eq!(store.len(), 2, "bounded by count");
        assert!(store.replay_events_after(&first).await.is_err(), "evicted");
    }
}
