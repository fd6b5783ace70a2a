//! Which 2025-era session workers stay in memory: those used within
//! `store.session_memory_idle`, and past `store.max_sessions_in_memory` not
//! even all of those.
//!
//! A worker holds rmcp's channels (about 64 KiB a session) for as long as it
//! is in memory, but the session is its row in the store: a worker dropped
//! here is brought back by the session's next request (`sessions.rs`). A
//! worker is idle with none of its requests in flight, none of its streams
//! open and no request of its between rmcp's `has_session` and its stream.
//! One idle for `session_memory_idle` leaves ([`Resident::leave_idle`]), and
//! past the cap the least recently used idle one whose row is stored leaves
//! at once. Busy workers are passed over, so a long call keeps its worker
//! and the cap is exceeded only while more than that many are busy.
//!
//! Idleness is decided here rather than by rmcp's own keep-alive, which ends
//! a worker silent that long even mid-call and races the request that found
//! it: `sessions.rs` removes a leaving worker from rmcp's map under the
//! map's lock, and a request's claim finds it either kept or gone.

use std::{
    num::NonZeroUsize,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use lru::LruCache;
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions},
    transport::streamable_http_server::session::{
        SessionId, SessionRestoreMarker,
        local::{LocalSessionHandle, SessionError},
    },
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
    held: Arc<AtomicBool>,
}

impl Drop for InUse {
    /// Marks the worker used: the next look at it takes its idle time from
    /// then (no clock read here, so tests choose every instant).
    fn drop(&mut self) {
        self.held.store(true, Ordering::Relaxed);
    }
}

struct Worker {
    /// `InUse` clones of it are out while the worker is busy; set when one
    /// is dropped or a request reaches the worker without a stream.
    uses: Arc<AtomicBool>,
    /// Requests between `has_session` and their stream, the last at `claimed`.
    claims: u32,
    claimed: Instant,
    /// Last seen in use (admitted, claimed, or busy at a look).
    used: Instant,
    /// Its row is stored. A session whose row failed to store lives only in
    /// its worker, which then never leaves early.
    stored: bool,
}

impl Worker {
    /// Nothing of it in flight now.
    fn unused(&self, now: Instant) -> bool {
        Arc::strong_count(&self.uses) == 1
            && (self.claims == 0 || now.duration_since(self.claimed) >= CLAIM_TTL)
    }

    /// May leave for the cap.
    fn idle(&self, now: Instant) -> bool {
        self.stored && self.unused(now)
    }

    /// Unused since `now - limit`; a worker found used since the last look
    /// counts as used now.
    fn idle_for(&mut self, limit: Duration, now: Instant) -> bool {
        if !self.unused(now) || self.uses.swap(false, Ordering::Relaxed) {
            self.used = now;
            return false;
        }
        now.duration_since(self.used) >= limit
    }
}

struct Workers {
    live: LruCache<SessionId, Worker>,
    /// Workers dropped here whose own close (rmcp's, once the worker has
    /// ended) is still to come, counted per session: those closes must not
    /// end a worker restored for the session meanwhile. Bounded: each is
    /// taken by its close.
    dropped: LruCache<SessionId, u32>,
}

pub(super) struct Resident {
    cap: usize,
    /// `store.session_memory_idle`.
    idle: Duration,
    workers: Mutex<Workers>,
    /// Workers dropped for the cap since the start (a metric).
    dropped: AtomicU64,
}

impl Resident {
    /// At most `cap` idle workers in memory (at least one), none idle for
    /// `idle`.
    pub(super) fn new(cap: usize, idle: Duration) -> Self {
        let cap = cap.max(1);
        let dropped = NonZeroUsize::new(cap.saturating_mul(2)).unwrap_or(NonZeroUsize::MIN);
        Self {
            cap,
            idle,
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
            uses: Arc::new(AtomicBool::new(false)),
            claims: 1,
            claimed: now,
            used: now,
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
                workers.leave(&oldest);
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

    /// How often [`Self::leave_idle`] is due: a quarter of the idle time.
    pub(super) fn look_every(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(15))
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

    /// Workers unused for `session_memory_idle`, out of the count: the
    /// caller removes them from rmcp's map under its lock and closes them.
    /// At most `cap` a look, so the closes still to come fit in `dropped`.
    pub(super) fn leave_idle(&self, now: Instant) -> Vec<SessionId> {
        let mut workers = self.lock();
        let idle = self.idle;
        let leaving: Vec<SessionId> = workers
            .live
            .iter_mut()
            .filter_map(|(id, worker)| worker.idle_for(idle, now).then(|| id.clone()))
            .take(self.cap)
            .collect();
        for id in &leaving {
            workers.live.pop(id);
            workers.leave(id);
        }
        leaving
    }

    /// rmcp found `id` in memory for a request about to reach it. False when
    /// its worker has left since (the request restores the session).
    pub(super) fn claim(&self, id: &SessionId, now: Instant) -> bool {
        let mut workers = self.lock();
        let Some(worker) = workers.live.get_mut(id) else {
            return false;
        };
        worker.claims = worker.claims.saturating_add(1);
        worker.claimed = now;
        worker.used = now;
        true
    }

    /// A claimed request reached the worker without a stream (a
    /// notification, a response, a resumption read from the store).
    pub(super) fn release(&self, id: &SessionId) {
        if let Some(worker) = self.lock().live.get_mut(id) {
            worker.claims = worker.claims.saturating_sub(1);
            worker.uses.store(true, Ordering::Relaxed);
        }
    }

    /// A claimed request's stream is made: the worker is busy while what
    /// this returns is held.
    pub(super) fn in_use(&self, id: &SessionId) -> Option<InUse> {
        let mut workers = self.lock();
        let worker = workers.live.get_mut(id)?;
        worker.claims = worker.claims.saturating_sub(1);
        Some(InUse {
            held: worker.uses.clone(),
        })
    }

    /// `id`'s worker ended or is to end. False when it is one dropped here
    /// (rmcp's close once it has ended): a worker restored for the session
    /// since then is not the one closed.
    pub(super) fn closed(&self, id: &SessionId) -> bool {
        let mut workers = self.lock();
        if let Some(pending) = workers.dropped.get_mut(id) {
            *pending -= 1;
            if *pending == 0 {
                workers.dropped.pop(id);
            }
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

impl Workers {
    /// `id`'s worker, out of `live`, is being closed here: its own close is
    /// still to come.
    fn leave(&mut self, id: &SessionId) {
        match self.dropped.get_mut(id) {
            Some(pending) => *pending += 1,
            None => {
                self.dropped.put(id.clone(), 1);
            }
        }
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

/// rmcp's map of the workers in memory.
pub(super) type Handles = std::collections::HashMap<SessionId, LocalSessionHandle>;

/// `ids`' workers, out of rmcp's map.
pub(super) fn take(sessions: &mut Handles, ids: &[SessionId]) -> Vec<LocalSessionHandle> {
    ids.iter().filter_map(|id| sessions.remove(id)).collect()
}

/// Ends workers already out of rmcp's map (one that has ended is done).
pub(super) async fn close_all(handles: impl IntoIterator<Item = LocalSessionHandle>) {
    for handle in handles {
        if let Err(error) = handle.close().await
            && !matches!(error, SessionError::SessionServiceTerminated)
        {
            tracing::warn!(%error, "session worker not closed");
        }
    }
}

#[cfg(test)]
mod tests;
