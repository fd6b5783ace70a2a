//! Resumable streams of 2025-era sessions: every event is recorded under the
//! session whose stream carried it, and `Last-Event-ID` resumes only within
//! the session that asks.
//!
//! rmcp's own resumption replays whatever stream an event id names, from any
//! session; its request streams are named by a bare UUID that says nothing of
//! their session. Here each session's worker records its events through a
//! [`Scoped`] store that prefixes every stream name with `<session>/`, and a
//! resumption replays only when the id's stream carries the asking session's
//! prefix. Anything else (another session's id, a guessed or expired one)
//! gets nothing.
//!
//! A resumed stream also follows its stream for a while after the replay
//! (SEP-1699 polling): a call whose connection closed keeps recording its
//! events, and the result reaches the client that reconnected, on whichever
//! replica it lands (events reach the database within the writer's linger).
//! A call may also end its own stream early ([`StreamCloser`]), and the
//! client then resumes the same way.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{EventStore, EventStoreError, EventStream, ServerSseMessage};
use crate::store::StreamEvents;

/// The stream name prefix of `session`'s events.
pub(super) fn scope_of(session: &str) -> String {
    format!("{session}/")
}

/// One session's view of the event store: what rmcp's worker for that
/// session records and replays.
pub(super) struct Scoped {
    pub scope: String,
    pub events: Arc<dyn StreamEvents>,
}

#[async_trait]
impl EventStore for Scoped {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let stream = format!("{}{stream_id}", self.scope);
        self.events.record(&stream, event).await
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let events = self
            .events
            .replay_in(&self.scope, last_event_id)
            .await?
            .ok_or(UNKNOWN)?;
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

const UNKNOWN: &str = "unknown, expired or foreign Last-Event-ID";

/// How long a resumed stream waits for more events before it closes (the
/// client reconnects after the `retry` interval and resumes again).
pub(super) const FOLLOW_FOR: Duration = Duration::from_secs(30);
/// The first and the longest pause between two looks for new events: short
/// while events arrive, longer while a call is quiet, so a stream left
/// waiting costs the database little.
const POLL_FIRST: Duration = Duration::from_millis(50);
const POLL_MAX: Duration = Duration::from_secs(1);
/// An id issued by another replica may not have reached the database yet
/// (the writer lingers before each batch): how long to look for it.
const ANCHOR_WAIT: Duration = Duration::from_millis(500);

/// Resumes `scope`'s stream after `last_event_id`: the events recorded since,
/// then new ones as they are recorded, until the stream's final response or
/// `FOLLOW_FOR`. `Err` when the id is not one of this scope's.
///
/// The stream opens with a priming event that restates `last_event_id`
/// (empty data, the `retry` delay): a client keeps its place from the
/// stream it is reading (the TypeScript SDK does), so if this stream ends
/// or breaks before anything new arrives, it resumes from the same id
/// rather than from nowhere.
pub(super) async fn resume(
    events: Arc<dyn StreamEvents>,
    scope: String,
    last_event_id: String,
    retry: Duration,
) -> Result<ReceiverStream<ServerSseMessage>, EventStoreError> {
    let mut waited = Duration::ZERO;
    let first = loop {
        if let Some(first) = events.replay_in(&scope, &last_event_id).await? {
            break first;
        }
        if waited >= ANCHOR_WAIT {
            return Err(UNKNOWN.into());
        }
        tokio::time::sleep(POLL_FIRST).await;
        waited += POLL_FIRST;
    };
    let (tx, rx) = mpsc::channel(16);
    let restated = ServerSseMessage::priming(last_event_id.clone(), retry);
    tx.try_send(restated).expect("room in a new channel");
    tokio::spawn(follow(events, scope, last_event_id, first, tx));
    Ok(ReceiverStream::new(rx))
}

async fn follow(
    events: Arc<dyn StreamEvents>,
    scope: String,
    mut last: String,
    mut batch: Vec<ServerSseMessage>,
    tx: mpsc::Sender<ServerSseMessage>,
) {
    let deadline = tokio::time::Instant::now() + FOLLOW_FOR;
    let mut pause = POLL_FIRST;
    loop {
        if !batch.is_empty() {
            pause = POLL_FIRST;
        }
        for event in batch {
            if let Some(id) = &event.event_id {
                last.clone_from(id);
            }
            let done = is_final(&event);
            if tx.send(event).await.is_err() || done {
                return;
            }
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return;
        }
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(pause.min(deadline - now)) => {}
        }
        pause = (pause * 2).min(POLL_MAX);
        batch = match events.replay_in(&scope, &last).await {
            Ok(Some(batch)) => batch,
            // Evicted meanwhile, or the store failed: end; the client resumes.
            _ => return,
        };
    }
}

/// A response or error ends the request stream that carried it.
pub(super) fn is_final(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}
