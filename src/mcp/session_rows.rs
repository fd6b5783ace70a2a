//! New sessions' rows, committed in groups. Each `initialize` still waits
//! until its row is committed, so a session made here is found by every
//! replica as soon as its client has the id; the rows of the sessions opened
//! meanwhile share that one transaction.
//!
//! One insert per `initialize`, from up to every pool connection at once,
//! was most of an `initialize`'s cost: on SQLite the inserts queued on its one
//! write lock (the losers sleeping in its busy handler), on PostgreSQL each
//! waited for a commit of its own. Here one writer commits whatever has
//! queued while it wrote the last group.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, GetExtensions, ServerCapabilities,
        ServerJsonRpcMessage, ServerResult,
    },
    transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError},
};
use tokio::sync::{mpsc, oneshot};

use super::calls::facts_in;
use crate::{
    registry::Caller,
    store::{SessionRepo, SessionRow, StoreError},
};

/// Rows committed in one transaction at most.
const GROUP: usize = 256;
/// Rows waiting for the writer at most; an `initialize` past it waits for room.
const QUEUE: usize = 4096;

/// A row and who waits for its commit.
type Pending = (SessionRow, oneshot::Sender<Result<(), StoreError>>);

/// The group writer of one `Sessions`; its task starts with the first row
/// and ends when this is dropped.
pub(super) struct SessionRows {
    repo: Arc<dyn SessionRepo>,
    queue: OnceLock<mpsc::Sender<Pending>>,
    /// The last capabilities stored, as JSON: every session of one registry
    /// is sent the same, so they are serialised again only when they change.
    capabilities: ArcSwapOption<(ServerCapabilities, String)>,
}

/// What a new session's row takes from its `initialize`, read before rmcp
/// takes the message (so the message itself is not copied).
pub(super) struct Opening {
    owner: String,
    client_name: String,
    client_version: String,
    init_params: String,
}

impl Opening {
    /// `None` for anything but an `initialize` request.
    pub(super) fn of(message: &ClientJsonRpcMessage) -> Option<Self> {
        let ClientJsonRpcMessage::Request(request) = message else {
            return None;
        };
        let ClientRequest::InitializeRequest(init) = &request.request else {
            return None;
        };
        let owner = facts_in(request.request.extensions()).map_or_else(
            || Caller::anonymous().user.clone(),
            |facts| facts.caller.user.clone(),
        );
        Some(Self {
            owner,
            client_name: init.params.client_info.name.clone(),
            client_version: init.params.client_info.version.clone(),
            init_params: serde_json::to_string(&init.params).unwrap_or_default(),
        })
    }
}

impl SessionRows {
    pub(super) fn new(repo: Arc<dyn SessionRepo>) -> Self {
        Self {
            repo,
            queue: OnceLock::new(),
            capabilities: ArcSwapOption::empty(),
        }
    }

    /// Stores the row of session `id`, opened by `opening` and answered with
    /// `response` (nothing when the answer is not an initialize result);
    /// the row expires `idle_ttl_ms` from now. True once it is committed.
    pub(super) async fn opened(
        &self,
        id: &str,
        opening: Opening,
        response: &ServerJsonRpcMessage,
        idle_ttl_ms: i64,
    ) -> bool {
        let ServerJsonRpcMessage::Response(response) = response else {
            return false;
        };
        let ServerResult::InitializeResult(result) = &response.result else {
            return false;
        };
        let now = self.repo.clock_ms();
        let row = SessionRow {
            id: id.to_owned(),
            owner: opening.owner,
            protocol_version: result.protocol_version.to_string(),
            client_name: opening.client_name,
            client_version: opening.client_version,
            init_params: opening.init_params,
            server_capabilities: self.capabilities_json(&result.capabilities),
            state: "{}".into(),
            created_ms: now,
            last_seen_ms: now,
            expires_ms: now + idle_ttl_ms,
        };
        self.store(row).await
    }

    fn capabilities_json(&self, capabilities: &ServerCapabilities) -> String {
        if let Some(last) = self.capabilities.load().as_deref()
            && last.0 == *capabilities
        {
            return last.1.clone();
        }
        let json = serde_json::to_string(capabilities).unwrap_or_default();
        let last = (capabilities.clone(), json.clone());
        self.capabilities.store(Some(Arc::new(last)));
        json
    }

    /// Stores `row`, returning once it is committed (true) or failed. A
    /// failure is logged, not fatal: the session then works on this replica
    /// until it idles out.
    async fn store(&self, row: SessionRow) -> bool {
        let queue = self.queue.get_or_init(|| {
            let (queue, receiver) = mpsc::channel(QUEUE);
            tokio::spawn(write(self.repo.clone(), receiver));
            queue
        });
        let (done, committed) = oneshot::channel();
        let result = match queue.send((row, done)).await {
            Ok(()) => match committed.await {
                Ok(result) => result,
                Err(_) => {
                    tracing::error!("the session writer stopped while writing this session");
                    return false;
                }
            },
            // The writer is gone (it panicked): write alone.
            Err(mpsc::error::SendError((row, _))) => self.repo.create(&row).await,
        };
        if let Err(error) = &result {
            tracing::error!(%error, "session not stored; it will not survive a restart");
        }
        result.is_ok()
    }
}

/// The writer: takes every row waiting and commits them together; a group
/// that fails (a clashing id, say) is written row by row, so each
/// `initialize` gets its own row's outcome.
async fn write(repo: Arc<dyn SessionRepo>, mut receiver: mpsc::Receiver<Pending>) {
    let mut group = Vec::with_capacity(GROUP);
    while receiver.recv_many(&mut group, GROUP).await > 0 {
        let (rows, waiting): (Vec<SessionRow>, Vec<_>) = group.drain(..).unzip();
        match repo.create_many(&rows).await {
            Ok(()) => {
                for waiter in waiting {
                    let _ = waiter.send(Ok(()));
                }
            }
            Err(error) if rows.len() == 1 => {
                if let Some(waiter) = waiting.into_iter().next() {
                    let _ = waiter.send(Err(error));
                }
            }
            Err(_) => {
                for (row, waiter) in rows.iter().zip(waiting) {
                    let _ = waiter.send(repo.create(row).await);
                }
            }
        }
    }
}

/// rmcp's view of the session rows: what it replays to restore a session.
/// Rows are written by `Sessions` (which knows the owner), so `store` only
/// fills a gap and `delete` is the client's DELETE.
pub struct StoredSessions(pub Arc<dyn SessionRepo>);

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(row) = self.0.get(session_id).await? else {
            return Ok(None);
        };
        let params = serde_json::from_str(&row.init_params)?;
        Ok(Some(SessionState::new(params)))
    }

    async fn store(
        &self,
        _session_id: &str,
        _state: &SessionState,
    ) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.0.delete(session_id).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{
        ClientJsonRpcMessage, InitializeResult, RequestId, ServerCapabilities,
        ServerJsonRpcMessage, ServerResult,
    };
    use serde_json::json;

    use super::{Opening, SessionRows};
    use crate::{
        registry::Caller,
        store::{ManualClock, SessionRepo, Store},
    };

    const START_MS: i64 = 1_000_000;

    fn message(method: &str, params: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
        .expect("a valid client message")
    }

    fn initialize() -> ClientJsonRpcMessage {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1.2"},
        });
        message("initialize", params)
    }

    fn answer(capabilities: &ServerCapabilities) -> ServerJsonRpcMessage {
        let result = InitializeResult::new(capabilities.clone());
        ServerJsonRpcMessage::response(ServerResult::InitializeResult(result), RequestId::Number(1))
    }

    #[test]
    fn only_an_initialize_opens_a_session() {
        assert!(Opening::of(&initialize()).is_some());
        assert!(Opening::of(&message("ping", json!({}))).is_none());
    }

    /// Each row carries the capabilities its session was sent, also when
    /// they change between two sessions (the JSON is reused otherwise).
    #[tokio::test]
    async fn an_opening_is_stored_with_the_capabilities_it_was_sent() {
        let (_dir, store) = Store::scratch(Arc::new(ManualClock::new(START_MS))).await;
        let rows = SessionRows::new(Arc::new(store.clone()));
        let tools = serde_json::from_value::<ServerCapabilities>(json!({"tools": {}})).unwrap();
        let more =
            serde_json::from_value::<ServerCapabilities>(json!({"tools": {}, "prompts": {}}))
                .unwrap();
        for (id, sent) in [("a", &tools), ("b", &tools), ("c", &more), ("d", &tools)] {
            let opening = Opening::of(&initialize()).expect("an initialize request");
            rows.opened(id, opening, &answer(sent), 60_000).await;
            let row = store.get(id).await.unwrap().expect("the row is stored");
            assert_eq!(
                row.server_capabilities,
                serde_json::to_string(sent).unwrap()
            );
            assert_eq!(row.owner, Caller::anonymous().user);
            assert_eq!(
                (row.client_name.as_str(), row.client_version.as_str()),
                ("probe", "1.2")
            );
            assert!(row.init_params.contains("\"clientInfo\""));
            assert_eq!(row.expires_ms, START_MS + 60_000);
        }
    }
}
