//! A 2025-era client that leaves stops its call: a request's stream that
//! ends before its answer (the client dropped the connection, or the server
//! ended it for SEP-1699 polling) and is not resumed with `Last-Event-ID`
//! within `mcp.disconnect_grace` has its call cancelled the way the client's
//! own `notifications/cancelled` would (a command tool's process group is
//! killed), and the call's audit record says the client disconnected.
//!
//! A resumption is noted in the session's row (its `state`: the event id it
//! resumed from, and when), so it counts on whichever replica it lands: the
//! replica running the call reads the row when the grace has passed. The
//! first resumption must name an event of the call's own stream; after it,
//! a resumed stream ends at the latest after `resume::FOLLOW_FOR` and the
//! client resumes again, so the call lives on while the session's latest
//! resumption is at most that, the `retry` delay and the grace old.

use std::{
    collections::{BTreeMap, VecDeque},
    pin::Pin,
    sync::{
        Arc, Weak,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, RequestId},
    transport::streamable_http_server::session::{ServerSseMessage, local::LocalSessionHandle},
};
use serde::{Deserialize, Serialize};

use super::resume::{FOLLOW_FOR, is_final};
use crate::store::SessionRepo;

/// Event ids of a stream remembered to match a resumption against (a client
/// resumes from the last one it received).
const IDS_KEPT: usize = 64;
/// Resumptions a session's row remembers, and for how long.
const MARKS_KEPT: usize = 64;
const MARK_TTL_MS: i64 = 10 * 60 * 1000;

/// In a request's extensions: set when its call was cancelled because its
/// client left (read by the call's audit record, `calls.rs`).
#[derive(Debug, Default)]
pub(super) struct Departure(AtomicBool);

impl Departure {
    pub(super) fn left(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The resumptions of a session noted in its row's `state`.
#[derive(Default, Serialize, Deserialize)]
struct Marks {
    /// Event id resumed from → when (the store's clock, ms).
    #[serde(default)]
    resumed: BTreeMap<String, i64>,
}

/// What watching the sessions' request streams needs.
#[derive(Clone)]
pub(super) struct Departures {
    grace: Duration,
    /// How long a resumed stream may run, plus the client's `retry` delay.
    follow: Duration,
    repo: Arc<dyn SessionRepo>,
}

impl Departures {
    pub(super) fn new(grace: Duration, retry: Duration, repo: Arc<dyn SessionRepo>) -> Self {
        let follow = FOLLOW_FOR + retry;
        Self {
            grace,
            follow,
            repo,
        }
    }

    /// `stream` (request `id`'s, in `handle`'s session) watched: if it ends
    /// before the answer, the call is cancelled unless resumed in time. The
    /// [`Departure`] goes into the request's extensions.
    pub(super) fn watch<S>(
        &self,
        stream: S,
        handle: LocalSessionHandle,
        id: &RequestId,
    ) -> (Watched<S>, Arc<Departure>) {
        let departure = Arc::new(Departure::default());
        let watch = Watch {
            departures: self.clone(),
            departure: departure.clone(),
            handle,
            request: serde_json::to_value(id).unwrap_or_default(),
            ids: VecDeque::new(),
            answered: false,
        };
        let watched = Watched {
            inner: stream,
            watch: Some(watch),
        };
        (watched, departure)
    }

    /// `stream` passed on as it is (not a request's).
    pub(super) fn unwatched<S>(stream: S) -> Watched<S> {
        Watched {
            inner: stream,
            watch: None,
        }
    }

    /// Notes in `session`'s row that a client resumed from `event_id`.
    pub(super) async fn resumed(&self, session: &str, event_id: &str) {
        let now = self.repo.clock_ms();
        let noted = async {
            let Some(row) = self.repo.get(session).await? else {
                return Ok(());
            };
            let mut marks: Marks = serde_json::from_str(&row.state).unwrap_or_default();
            marks.resumed.retain(|_, at| now - *at < MARK_TTL_MS);
            while marks.resumed.len() >= MARKS_KEPT {
                let oldest = marks.resumed.iter().min_by_key(|(_, at)| **at);
                let oldest = oldest.map(|(id, _)| id.clone()).unwrap_or_default();
                marks.resumed.remove(&oldest);
            }
            marks.resumed.insert(event_id.to_owned(), now);
            let state = serde_json::to_string(&marks).unwrap_or_else(|_| "{}".into());
            self.repo.set_state(session, &state).await
        };
        if let Err(error) = noted.await {
            tracing::warn!(%error, "a resumption was not noted in its session's row");
        }
    }

    /// When the session was last resumed: from one of `ids` (the first
    /// look), else after `since`. `None`: not resumed (or the session ended).
    async fn last_resumed(
        &self,
        session: &str,
        ids: &VecDeque<String>,
        since: Option<i64>,
    ) -> Result<Option<i64>, crate::store::StoreError> {
        let Some(row) = self.repo.get(session).await? else {
            return Ok(None);
        };
        let marks: Marks = serde_json::from_str(&row.state).unwrap_or_default();
        let latest = marks
            .resumed
            .iter()
            .filter(|(id, at)| match since {
                None => ids.contains(id),
                Some(since) => **at > since,
            })
            .map(|(_, at)| *at)
            .max();
        Ok(latest)
    }
}

/// A request's stream, passing its events on and noting their ids and
/// whether the answer went out.
pub(super) struct Watched<S> {
    inner: S,
    watch: Option<Watch>,
}

struct Watch {
    departures: Departures,
    departure: Arc<Departure>,
    handle: LocalSessionHandle,
    /// The request's JSON-RPC id.
    request: serde_json::Value,
    ids: VecDeque<String>,
    answered: bool,
}

impl<S: Stream<Item = ServerSseMessage> + Unpin> Stream for Watched<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let next = Pin::new(&mut this.inner).poll_next(cx);
        if let (Poll::Ready(Some(event)), Some(watch)) = (&next, &mut this.watch) {
            if let Some(id) = &event.event_id {
                if watch.ids.len() == IDS_KEPT {
                    watch.ids.pop_front();
                }
                watch.ids.push_back(id.clone());
            }
            watch.answered |= is_final(event);
        }
        next
    }
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        let Some(watch) = self.watch.take() else {
            return;
        };
        if watch.answered {
            return;
        }
        // Dropped outside a runtime: the server is ending anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(watch.run());
        }
    }
}

impl Watch {
    /// Waits out the grace (and any resumptions), then cancels the call if
    /// it still runs. The call's end drops its request's extensions, and
    /// with them the last strong hold on its [`Departure`].
    async fn run(self) {
        let Self {
            departures,
            departure,
            handle,
            request,
            ids,
            ..
        } = self;
        let departure: Weak<Departure> = Arc::downgrade(&departure);
        let session = handle.id().to_string();
        let grace_ms = departures.grace.as_millis() as i64;
        let follow_ms = departures.follow.as_millis() as i64;
        let (mut wait, mut since) = (departures.grace, None);
        loop {
            tokio::time::sleep(wait).await;
            if departure.strong_count() == 0 {
                return;
            }
            match departures.last_resumed(&session, &ids, since).await {
                Ok(Some(at)) => {
                    since = Some(at);
                    let left = at + follow_ms + grace_ms - departures.repo.clock_ms();
                    wait = Duration::from_millis(left.max(grace_ms).max(100) as u64);
                }
                Ok(None) => break,
                Err(error) => {
                    // The store did not answer: the call is kept, and the
                    // question asked again after another grace.
                    tracing::warn!(%error, "whether a stream was resumed is unknown");
                    wait = departures.grace;
                }
            }
        }
        let Some(departure) = departure.upgrade() else {
            return;
        };
        departure.0.store(true, Ordering::Relaxed);
        drop(departure);
        let reason = "the client disconnected and did not resume within mcp.disconnect_grace";
        let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request, "reason": reason}});
        let Ok(cancel) = serde_json::from_value::<ClientJsonRpcMessage>(cancel) else {
            return;
        };
        tracing::info!(%session, %request, "{reason}: the call is cancelled");
        if handle.push_message(cancel, None).await.is_err() {
            tracing::debug!(%session, "the session ended before its call was cancelled");
        }
    }
}
