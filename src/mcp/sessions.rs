//! teamgate's `SessionManager`: rmcp's in-memory session workers, backed by the
//! session store so a session survives restarts, moves replicas, idles free.
//!
//! - On `initialize`, the session row (owner, negotiated version, client,
//!   capabilities) is written; rmcp replays it wherever the session's next
//!   request lands (`StoredSessions`).
//! - A worker idle for `store.session_memory_idle` leaves memory, its row
//!   kept until `store.session_idle_ttl`; past `store.max_sessions_in_memory`
//!   the least recently used idle one at once (`resident.rs`). rmcp's own
//!   keep-alive, which ends a silent worker even mid-call, only backs that
//!   up, at `session_idle_ttl`.
//! - A session whose row is gone (ended, expired, purged) is closed here too,
//!   so every replica answers 404 for it.
//! - The event store stays private: rmcp would also persist 2026-07-28
//!   streams if the manager exposed it, and that revision has no event ids.
//!   Each session's worker records its events under the session, and a
//!   `Last-Event-ID` resumes only within the session that sends it
//!   (`resume.rs`).
//! - A request's stream that ends before its answer and is not resumed
//!   within `mcp.disconnect_grace` has its call cancelled (`departure.rs`).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionRestoreMarker,
        local::{
            LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, SessionConfig,
            SessionError,
        },
    },
};
use tokio_util::sync::CancellationToken;

use super::{
    EventStore, StreamCloser,
    departure::Departures,
    known::{self, Known, Presence},
    resident::{self, Handles, Resident, close_all, holding, take},
    resume::{self, Scoped},
    session_rows::{Opening, SessionRows},
};
use crate::store::{SessionRepo, StreamEvents};

/// How long a "this session still exists" answer is trusted before the
/// store is asked again; bounds how long an ended session lingers elsewhere.
const PRESENCE_TTL: Duration = Duration::from_secs(5);
/// How long a request in a session in memory waits for its row's refresh.
const PRESENCE_READ_WAIT: Duration = Duration::from_millis(300);
/// Minimum time between two `last_seen` writes for one session.
const TOUCH_EVERY: Duration = Duration::from_secs(30);

pub struct SessionSettings {
    pub idle_ttl: Duration,
    pub memory_idle: Duration,
    /// The reconnection delay sent with each stream's priming event.
    pub sse_retry: Duration,
    /// How long a request's dropped stream waits to be resumed before its
    /// call is cancelled.
    pub disconnect_grace: Duration,
    /// Idle workers kept in memory at most (`resident.rs`).
    pub max_in_memory: usize,
}

pub struct Sessions {
    /// The session workers in memory. It has no event store of its own:
    /// each worker gets its session's (`spawn_worker`).
    inner: LocalSessionManager,
    events: Arc<dyn StreamEvents>,
    sse_retry: Duration,
    repo: Arc<dyn SessionRepo>,
    /// New sessions' rows, committed in groups.
    rows: SessionRows,
    idle_ttl_ms: i64,
    known: Known,
    departures: Departures,
    /// Which workers stay in memory past the cap.
    resident: Resident,
}

impl Sessions {
    /// Sessions stored in `repo`, whose streams are recorded in `events`.
    pub fn new(
        repo: Arc<dyn SessionRepo>,
        events: Arc<dyn StreamEvents>,
        settings: &SessionSettings,
    ) -> Self {
        let mut session_config = SessionConfig::default();
        // A worker's idleness is decided here (`leave_idle`); rmcp's timer
        // only ends a worker silent past the session's own expiry.
        session_config.keep_alive = Some(settings.idle_ttl.max(settings.memory_idle));
        session_config.sse_retry = Some(settings.sse_retry);
        let mut inner = LocalSessionManager::default();
        inner.session_config = session_config;
        Self {
            inner,
            events,
            sse_retry: settings.sse_retry,
            rows: SessionRows::new(repo.clone()),
            departures: Departures::new(
                settings.disconnect_grace,
                settings.sse_retry,
                repo.clone(),
            ),
            repo,
            idle_ttl_ms: settings.idle_ttl.as_millis() as i64,
            known: Known::new(PRESENCE_TTL, TOUCH_EVERY),
            resident: Resident::new(settings.max_in_memory, settings.memory_idle),
        }
    }

    /// Who owns `id`, from the store (remembered: owners never change).
    pub async fn owner_of(&self, id: &str) -> Option<Arc<str>> {
        if let Some(owner) = self.known.owner(id) {
            return Some(owner);
        }
        self.read(id).await;
        self.known.owner(id)
    }

    /// The protocol version `id` negotiated, from its row (read each time:
    /// only batches ask).
    pub async fn protocol_version(&self, id: &str) -> Option<String> {
        let row = self.repo.get(id).await.ok()??;
        Some(row.protocol_version)
    }

    /// Reads `id`'s row into `known`; returns its expiry (`known::UNKNOWN`
    /// when the store fails: a database error keeps sessions served).
    async fn read(&self, id: &str) -> i64 {
        match self.repo.get(id).await {
            Ok(Some(row)) => {
                self.known.note(id, Some(&row.owner), row.expires_ms);
                row.expires_ms
            }
            Ok(None) => {
                self.known.note(id, None, known::GONE);
                known::GONE
            }
            Err(_) => known::UNKNOWN,
        }
    }

    /// Sessions whose worker is in memory now (the rest live only in the store).
    pub async fn in_memory(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Workers dropped for `store.max_sessions_in_memory` since the start.
    pub fn dropped_for_cap(&self) -> u64 {
        self.resident.dropped()
    }

    /// A worker for session `id` whose events are recorded under the session.
    /// rmcp's manager gives every worker its one event store, so each worker
    /// is made by a manager of its own, whose handle then joins `inner`.
    async fn spawn_worker(
        &self,
        id: &SessionId,
    ) -> Result<(LocalSessionHandle, <Self as SessionManager>::Transport), LocalSessionManagerError>
    {
        let scoped: Arc<dyn EventStore> = Arc::new(Scoped {
            scope: resume::scope_of(id),
            events: self.events.clone(),
        });
        let mut maker = LocalSessionManager::default().with_event_store(scoped);
        maker.session_config = self.inner.session_config.clone();
        let RestoreOutcome::Restored(transport) = maker.restore_session(id.clone()).await? else {
            unreachable!("a new manager holds no session");
        };
        let handle = maker.sessions.write().await.remove(id);
        Ok((handle.expect("the worker just made"), transport))
    }

    /// Puts `id`'s new worker in rmcp's map and counts it in; returns those
    /// dropped for the cap, out of the map under the same lock, to close.
    fn admit(
        &self,
        sessions: &mut Handles,
        id: &SessionId,
        handle: LocalSessionHandle,
        stored: bool,
    ) -> Vec<LocalSessionHandle> {
        sessions.insert(id.clone(), handle);
        take(sessions, &self.resident.admit(id, stored, Instant::now()))
    }

    /// Lets workers idle for `store.session_memory_idle` leave memory (each
    /// within a quarter more of it) until `stop`. Out of rmcp's map under its
    /// lock: a request that found one there claimed it first, or restores it.
    pub async fn leave_idle(&self, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.resident.look_every());
        while tokio::select! { _ = ticks.tick() => true, () = stop.cancelled() => false } {
            let mut sessions = self.inner.sessions.write().await;
            let handles = take(&mut sessions, &self.resident.leave_idle(Instant::now()));
            drop(sessions);
            close_all(handles).await;
        }
    }

    /// Refreshes the session's expiry, at most once per `TOUCH_EVERY`.
    async fn touch(&self, id: &SessionId) {
        if !self.known.claim_touch(id) {
            return;
        }
        if let Err(error) = self.repo.touch(id, self.idle_ttl_ms).await {
            tracing::warn!(%error, "session expiry not refreshed");
        }
        self.known.reread(id);
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id: SessionId = uuid::Uuid::new_v4().to_string().into();
        let (handle, transport) = self.spawn_worker(&id).await?;
        let mut sessions = self.inner.sessions.write().await;
        let leaving = self.admit(&mut sessions, &id, handle, false);
        drop(sessions);
        close_all(leaving).await;
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let restoring = match &message {
            ClientJsonRpcMessage::Request(r) => r
                .request
                .extensions()
                .get::<SessionRestoreMarker>()
                .is_some(),
            _ => false,
        };
        // A fresh session's row, committed with the others opened meanwhile
        // (`session_rows.rs`). Failing to store it is logged, not fatal: the
        // session then works on this replica until it idles out.
        let opening = if restoring {
            None
        } else {
            Opening::of(&message)
        };
        let response = self.inner.initialize_session(id, message).await?;
        if let Some(opening) = opening {
            let stored = self
                .rows
                .opened(id, opening, &response, self.idle_ttl_ms)
                .await;
            self.resident.opened(id, stored);
        }
        Ok(response)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.inner.has_session(id).await? {
            return Ok(false);
        }
        // In memory; is its row still there and unexpired?
        let expires = match self.known.presence(id) {
            Presence::Expires(expires) => expires,
            // A session in memory is served while the database does not
            // answer: its refresh waits briefly, not `store.timeout`.
            Presence::Read => tokio::time::timeout(PRESENCE_READ_WAIT, self.read(id))
                .await
                .unwrap_or(known::UNKNOWN),
        };
        if expires <= self.repo.clock_ms() {
            let _ = self.inner.close_session(id).await;
            return Ok(false);
        }
        // Held in memory until the request reaches the worker, unless it
        // left since rmcp found it: then the request restores it.
        Ok(self.resident.claim(id, Instant::now()))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.known.forget(id);
        let mut sessions = self.inner.sessions.write().await;
        if !self.resident.closed(id) {
            // rmcp's close of a worker dropped here, after it ended: the one
            // in memory now, if any, was restored since.
            return Ok(());
        }
        let handle = sessions.remove(id);
        drop(sessions);
        close_all(handle).await;
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        // rmcp's `create_stream`, keeping the stream's number: a request gets
        // the means to end its own stream early (`StreamCloser`).
        let handle = self.inner.sessions.read().await.get(id).cloned();
        let handle = handle.ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let in_use = self.resident.in_use(id);
        let receiver = handle.establish_request_wise_channel().await?;
        let mut message = message;
        let stream = tokio_stream::wrappers::ReceiverStream::new(receiver.inner);
        let stream = match &mut message {
            ClientJsonRpcMessage::Request(request) => {
                if let Some(stream) = receiver.http_request_id {
                    let closer = StreamCloser::new(handle.clone(), stream, self.sse_retry);
                    request.request.extensions_mut().insert(closer);
                }
                // A stream that ends before its answer may cancel its call.
                let (stream, left) = self.departures.watch(stream, handle.clone(), &request.id);
                request.request.extensions_mut().insert(left);
                // The worker stays while the handler holds the request.
                request.request.extensions_mut().insert(in_use.clone());
                stream
            }
            _ => Departures::unwatched(stream),
        };
        let stream = holding(stream, in_use);
        handle
            .push_message(message, receiver.http_request_id)
            .await?;
        Ok(stream)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id).await;
        // A restore's replayed `notifications/initialized` is not the request
        // that claimed the worker.
        if !resident::replayed(&message) {
            self.resident.release(id);
        }
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        let in_use = self.resident.in_use(id);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(holding(stream, in_use))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id).await;
        // Read from the store, not the worker (a call still running holds it).
        self.resident.release(id);
        // Only ids of this session's own streams resume (`resume.rs`).
        let scope = resume::scope_of(id);
        let from = last_event_id.clone();
        let stream = resume::resume(self.events.clone(), scope, last_event_id, self.sse_retry)
            .await
            .map_err(SessionError::EventStore)?;
        // Noted for the replica running the call (`departure.rs`).
        self.departures.resumed(id, &from).await;
        Ok(stream)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let mut sessions = self.inner.sessions.write().await;
        if sessions.contains_key(&id) {
            // A concurrent request already restored it.
            return Ok(RestoreOutcome::AlreadyPresent);
        }
        let (handle, transport) = self.spawn_worker(&id).await?;
        let leaving = self.admit(&mut sessions, &id, handle, true);
        drop(sessions);
        close_all(leaving).await;
        Ok(RestoreOutcome::Restored(transport))
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        None
    }
}
