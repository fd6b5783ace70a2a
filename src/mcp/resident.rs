//! Which 2025-era session workers stay in memory when more than
//! `store.max_sessions_in_memory` are open.
//!
//! A worker holds rmcp's channels (about 64 KiB a session) for as long as it
//! is in memory, but the session is its row in the store: a worker dropped
//! here is brought back by the session's next request, as one that idled
//! out (`sessions.rs`). Past the cap the least recently used idle worker
//! leaves: none of its requests in flight, none of its streams open, no
//! request of its between rmcp's `has_session` and its stream, its row
//! stored. Busy workers are passed over, so the cap is exceeded only while
//! more than that many are busy.

use std::{
    num::NonZeroUsize,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use lru::LruCache;
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions},
    transport::streamable_http_server::session::{SessionId, SessionRestoreMarker},
};

/// How long a request rmcp found its session for holds the worker at most
/// before its stream is made: bounds a claim whose request was refused in
/// between (a bad protocol-version header, say).
const CLAIM_TTL: Duration = Duration::from_secs(10);
/// Workers looked at per admission for one to drop. A busy one met moves to
/// the recently used end, so a run of long streams does not stall the cap.
const SCAN: usize = 16;

/// Held while a request or stream of the session is in flight: a clone rides
/// in the request's extensions (dropped when the handler is done with it)
/// and another in its stream.
#[derive(Clone)]
pub(super) struct InUse {
    _held: Arc<()>,
}

struct Worker {
    /// `InUse` clones of it are out while the worker is busy.
    uses: Arc<()>,
    /// Requests between `has_session` and their stream, the last at `claimed`.
    claims: u32,
    claimed: Instant,
    /// Its row is stored. A session whose row failed to store lives only in
    /// its worker, which then never leaves early.
    stored: bool,
}

impl Worker {
    fn idle(&self, now: Instant) -> bool {
        self.stored
            && Arc::strong_count(&self.uses) == 1
            && (self.claims == 0 || now.duration_since(self.claimed) >= CLAIM_TTL)
    }
}

struct Workers {
    live: LruCache<SessionId, Worker>,
    /// Workers dropped here whose own close (rmcp's, once the worker has
    /// ended) is still to come: that close must not end a worker restored
    /// for the same session meanwhile. Bounded: each is taken by its close.
    dropped: LruCache<SessionId, ()>,
}

pub(super) struct Resident {
    cap: usize,
    workers: Mutex<Workers>,
    /// Workers dropped for the cap since the start (a metric).
    dropped: AtomicU64,
}

impl Resident {
    /// At most `cap` idle workers in memory (at least one).
    pub(super) fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        let dropped = NonZeroUsize::new(cap.saturating_mul(2)).unwrap_or(NonZeroUsize::MIN);
        Self {
            cap,
            workers: Mutex::new(Workers {
                live: LruCache::unbounded(),
                dropped: LruCache::new(dropped),
            }),
            dropped: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Workers> {
        // Every update leaves the maps whole, so a panic elsewhere leaves
        // nothing half done.
        self.workers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker made for `id`, claimed until its handshake is done (a new
    /// session's `stored` is settled by [`Self::opened`]). Returns the
    /// workers to close to stay within the cap.
    pub(super) fn admit(&self, id: &SessionId, stored: bool, now: Instant) -> Vec<SessionId> {
        let mut workers = self.lock();
        let worker = Worker {
            uses: Arc::new(()),
            claims: 1,
            claimed: now,
            stored,
        };
        workers.live.put(id.clone(), worker);
        let mut leaving = Vec::new();
        for _ in 0..SCAN {
            if workers.live.len() <= self.cap {
                break;
            }
            let Some((oldest, worker)) = workers.live.peek_lru() else {
                break;
            };
            if worker.idle(now) {
                let (oldest, _) = workers.live.pop_lru().expect("just seen");
                workers.dropped.put(oldest.clone(), ());
                leaving.push(oldest);
            } else {
                let oldest = oldest.clone();
                workers.live.promote(&oldest);
            }
        }
        self.dropped
            .fetch_add(leaving.len() as u64, Ordering::Relaxed);
        leaving
    }

    /// Workers dropped for the cap since the start.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// A new session's `initialize` is answered, its row stored or not.
    pub(super) fn opened(&self, id: &SessionId, stored: bool) {
        if let Some(worker) = self.lock().live.peek_mut(id) {
            worker.stored = stored;
            worker.claims = worker.claims.saturating_sub(1);
        }
    }

    /// rmcp found `id` in memory for a request about to reach it.
    pub(super) fn claim(&self, id: &SessionId, now: Instant) {
        if let Some(worker) = self.lock().live.get_mut(id) {
            worker.claims = worker.claims.saturating_add(1);
            worker.claimed = now;
        }
    }

    /// A claimed request reached the worker without a stream (a
    /// notification, a response, a resumption read from the store).
    pub(super) fn release(&self, id: &SessionId) {
        if let Some(worker) = self.lock().live.get_mut(id) {
            worker.claims = worker.claims.saturating_sub(1);
        }
    }

    /// A claimed request's stream is made: the worker is busy while what
    /// this returns is held.
    pub(super) fn in_use(&self, id: &SessionId) -> Option<InUse> {
        let mut workers = self.lock();
        let worker = workers.live.get_mut(id)?;
        worker.claims = worker.claims.saturating_sub(1);
        Some(InUse {
            _held: worker.uses.clone(),
        })
    }

    /// `id`'s worker ended or is to end. False when it is one dropped here
    /// (rmcp's close once it has ended): a worker restored for the session
    /// since then is not the one closed.
    pub(super) fn closed(&self, id: &SessionId) -> bool {
        let mut workers = self.lock();
        if workers.dropped.pop(id).is_some() {
            return false;
        }
        workers.live.pop(id);
        true
    }

    /// Workers in memory as this counts them.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().live.len()
    }
}

/// Whether `message` is a restore's replayed `notifications/initialized`
/// (rmcp marks it), not a request that claimed the worker.
pub(super) fn replayed(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Notification(n)
        if n.notification.extensions().get::<SessionRestoreMarker>().is_some())
}

/// `stream`, keeping its worker in memory until it ends.
pub(super) fn holding<S>(
    stream: S,
    in_use: Option<InUse>,
) -> impl Stream<Item = S::Item> + Send + Sync + 'static
where
    S: Stream + Send + Sync + 'static,
{
    stream.map(move |item| {
        let _held = &in_use;
        item
    })
}

#[cfg(test)]
mod tests;
