//! An in-process event store for resumable SSE streams, bounded by count
//! and by age so memory cannot grow with traffic.
//!
//! Event ids are `<prefix><sequence>.<tag>`: the sequence orders events, the
//! prefix names the replica (ids stay unique across replicas) and the random
//! tag makes an id impossible to guess, so nobody can replay a stream whose
//! ids they were never sent. A replay names the scope (the session) whose
//! streams it may read: an id of another scope's stream replays nothing.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::protocol::ServerSseMessage;

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
    prefix: String,
    inner: Mutex<Inner>,
}

/// What this store knows of an id asked for in a scope.
pub enum Held {
    /// The events after it on its stream, which is in the scope.
    Events(Vec<ServerSseMessage>),
    /// Held, but its stream is another scope's.
    Foreign,
    /// Not held here: never issued here, or evicted.
    Missing,
}

#[derive(Default)]
struct Inner {
    next: u64,
    events: VecDeque<Stored>,
}

impl Inner {
    /// Where the event of `sequence` is held, if it still is. Sequences
    /// are increasing, so the position is a binary search.
    fn position(&self, sequence: u64) -> Option<usize> {
        let at = self.events.partition_point(|e| e.sequence < sequence);
        self.events
            .get(at)
            .is_some_and(|e| e.sequence == sequence)
            .then_some(at)
    }

    /// The held event an id names: its sequence and its tag both match.
    fn find(&self, (sequence, tag): (u64, u64)) -> Option<usize> {
        self.position(sequence)
            .filter(|&at| self.events[at].tag == tag)
    }
}

impl MemoryEventStore {
    pub fn new(retention: Retention) -> Self {
        Self::with_prefix(retention, "")
    }

    /// Ids start with `prefix`; ids without it are not this store's.
    pub fn with_prefix(retention: Retention, prefix: &str) -> Self {
        Self {
            retention,
            prefix: prefix.to_owned(),
            inner: Mutex::default(),
        }
    }

    /// The sequence and tag of an id of this store's form.
    fn own(&self, id: &str) -> Option<(u64, u64)> {
        parse(id.strip_prefix(self.prefix.as_str())?)
    }

    /// Stores `event` and returns it with its new id, and its sequence.
    pub fn record(&self, stream_id: &str, event: &ServerSseMessage) -> (ServerSseMessage, u64) {
        let tag: u64 = rand::random();
        let now = Instant::now();
        let mut inner = self.inner.lock().expect("event store lock");
        let sequence = inner.next;
        inner.next += 1;
        let mut event = event.clone();
        event.event_id = Some(event_id(&self.prefix, sequence, tag));
        inner.events.push_back(Stored {
            sequence,
            tag,
            stream: stream_id.to_owned(),
            at: now,
            event: event.clone(),
        });
        self.evict(&mut inner, now);
        (event, sequence)
    }

    /// Lets go of events past the retention now, as `record` does: without
    /// traffic nothing else would, and the events of a burst would stay
    /// until the next one.
    pub fn expire(&self) {
        self.expire_at(Instant::now());
    }

    fn expire_at(&self, now: Instant) {
        let mut inner = self.inner.lock().expect("event store lock");
        self.evict(&mut inner, now);
        // The queue's buffer keeps the size of the largest burst otherwise.
        if inner.events.capacity() > 4 * inner.events.len().max(64) {
            inner.events.shrink_to_fit();
        }
    }

    fn evict(&self, inner: &mut Inner, now: Instant) {
        while inner.events.len() > self.retention.max_events
            || inner
                .events
                .front()
                .is_some_and(|e| now.duration_since(e.at) > self.retention.max_age)
        {
            inner.events.pop_front();
        }
    }

    /// Events after `last_event_id` on its stream, if that stream's name
    /// starts with `scope`.
    pub fn replay(&self, scope: &str, last_event_id: &str) -> Held {
        let Some(id) = self.own(last_event_id) else {
            return Held::Missing;
        };
        let inner = self.inner.lock().expect("event store lock");
        let Some(start) = inner.find(id) else {
            return Held::Missing;
        };
        let stream = inner.events[start].stream.as_str();
        if !stream.starts_with(scope) {
            return Held::Foreign;
        }
        let cutoff = Instant::now()
            .checked_sub(self.retention.max_age)
            .unwrap_or_else(Instant::now);
        Held::Events(
            inner
                .events
                .range(start + 1..)
                .filter(|e| e.stream == stream && e.at >= cutoff)
                .map(|e| e.event.clone())
                .collect(),
        )
    }

    pub fn len(&self) -> usize {
        self.inner.lock().expect("event store lock").events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `<prefix><sequence>.<tag as 16 hex digits>`, written without `format!`:
/// every streamed event gets one, and the formatting machinery was most of
/// the event store's cost per call in the profile (BENCHMARKS.md).
fn event_id(prefix: &str, sequence: u64, tag: u64) -> String {
    let mut hex = [0u8; 16];
    hex::encode_to_slice(tag.to_be_bytes(), &mut hex).expect("8 bytes are 16 hex digits");
    let mut digits = itoa::Buffer::new();
    let sequence = digits.format(sequence);
    let mut id = String::with_capacity(prefix.len() + sequence.len() + 1 + hex.len());
    id.push_str(prefix);
    id.push_str(sequence);
    id.push('.');
    id.push_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"));
    id
}

fn parse(id: &str) -> Option<(u64, u64)> {
    let (sequence, tag) = id.split_once('.')?;
    Some((sequence.parse().ok()?, u64::from_str_radix(tag, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: i64) -> ServerSseMessage {
        let message = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": n}}
        ))
        .unwrap();
        ServerSseMessage::from_message(message)
    }

    fn put(store: &MemoryEventStore, stream: &str, n: i64) -> String {
        store.record(stream, &event(n)).0.event_id.unwrap()
    }

    fn replayed(store: &MemoryEventStore, scope: &str, id: &str) -> Option<Vec<String>> {
        match store.replay(scope, id) {
            Held::Events(events) => Some(events.into_iter().map(|e| e.event_id.unwrap()).collect()),
            Held::Foreign | Held::Missing => None,
        }
    }

    #[test]
    fn replays_only_later_events_of_the_same_stream() {
        let store = MemoryEventStore::new(Retention::default());
        let a1 = put(&store, "s/a", 1);
        put(&store, "s/b", 2);
        let a3 = put(&store, "s/a", 3);
        assert_eq!(replayed(&store, "s/", &a1), Some(vec![a3]));
    }

    #[test]
    fn an_id_of_another_scope_replays_nothing() {
        let store = MemoryEventStore::new(Retention::default());
        let a1 = put(&store, "alice/a", 1);
        put(&store, "alice/a", 2);
        assert!(matches!(store.replay("bob/", &a1), Held::Foreign));
        assert_eq!(replayed(&store, "alice/", &a1).map(|e| e.len()), Some(1));
    }

    #[test]
    fn ids_read_back_as_written() {
        let id = event_id("r1-", 42, 0xab);
        assert_eq!(id, "r1-42.00000000000000ab");
        assert_eq!(parse(id.strip_prefix("r1-").unwrap()), Some((42, 0xab)));
        assert_eq!(
            event_id("", u64::MAX, u64::MAX),
            format!("{}.{:016x}", u64::MAX, u64::MAX)
        );
    }

    #[test]
    fn guessed_or_expired_ids_are_refused() {
        let store = MemoryEventStore::new(Retention {
            max_events: 2,
            max_age: Duration::from_secs(60),
        });
        let first = put(&store, "s/a", 1);
        let (sequence, _) = parse(&first).unwrap();
        let guessed = format!("{sequence}.{:016x}", 7);
        assert!(matches!(store.replay("s/", &guessed), Held::Missing));
        put(&store, "s/a", 2);
        put(&store, "s/a", 3);
        assert_eq!(store.len(), 2, "bounded by count");
        assert!(
            matches!(store.replay("s/", &first), Held::Missing),
            "evicted"
        );
    }

    #[test]
    fn aged_events_go_without_new_traffic_and_the_buffer_shrinks() {
        let store = MemoryEventStore::new(Retention {
            max_events: 10_000,
            max_age: Duration::from_secs(30),
        });
        let ids: Vec<String> = (0..5000).map(|n| put(&store, "s/a", n)).collect();
        store.expire_at(Instant::now() + Duration::from_secs(10));
        assert_eq!(store.len(), 5000, "nothing is past the age yet");
        store.expire_at(Instant::now() + Duration::from_secs(31));
        assert!(store.is_empty());
        assert!(matches!(store.replay("s/", &ids[0]), Held::Missing));
        let capacity = store.inner.lock().unwrap().events.capacity();
        assert!(
            capacity < 1000,
            "the burst's buffer is given back: {capacity}"
        );
    }
}
