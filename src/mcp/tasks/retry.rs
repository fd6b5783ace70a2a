//! Tasks run again (`task_retry`, issue 66 part 3): the call such a task
//! keeps in its row, the claim of orphaned ones on each heartbeat, and the
//! run again here, rebuilt by the handler (`Rerunner`), audited as
//! `tasks/retry` when claimed and `tasks/end` when it ends.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{InputResponses, JsonObject};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{TaskEnd, Tasks, run::StoreInput};
use crate::{
    mcp::calls::{Audit, actor},
    registry::{Caller, Identity},
    store::{AuditRecord, TaskRepo, TaskRow},
};

/// At most this many orphaned tasks claimed per heartbeat: a replica that
/// finds many takes them over a few beats, sharing them with its peers.
const CLAIMS_PER_BEAT: usize = 4;

/// A call as it was made, kept in the task's row so another replica can
/// make it again. No secret is kept: the caller's identity and claims,
/// not its token; a member's credential values are read again at the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredCall {
    pub arguments: JsonObject,
    pub user: String,
    pub scopes: Vec<String>,
    #[serde(default)]
    pub token_id: Option<String>,
    #[serde(default)]
    pub claims: JsonObject,
    /// The toolset endpoint the call came through.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The request's `_meta` (protocol version, client capabilities),
    /// without its progress token: nobody listens for it any more.
    #[serde(default)]
    pub meta: JsonObject,
    /// What the client answered before the task began (`confirm`).
    #[serde(default)]
    pub input_responses: Option<InputResponses>,
    /// The tool's `task_retry_max` when the call was made.
    pub retries: u32,
}

impl StoredCall {
    /// The call of `caller` with `arguments`, made with `meta`.
    pub fn new(caller: &Caller, arguments: &JsonObject, meta: JsonObject, retries: u32) -> Self {
        let mut meta = meta;
        meta.remove("progressToken");
        Self {
            arguments: arguments.clone(),
            user: caller.user.clone(),
            scopes: caller.scopes.clone(),
            token_id: caller.token_id.clone(),
            claims: caller.claims.clone(),
            endpoint: caller.endpoint().map(str::to_owned),
            meta,
            input_responses: None,
            retries,
        }
    }

    pub fn with_input(mut self, responses: Option<InputResponses>) -> Self {
        self.input_responses = responses;
        self
    }

    /// The caller as it was when the call was made.
    pub fn caller(&self) -> Caller {
        let caller: Caller = Identity {
            user: self.user.clone(),
            scopes: self.scopes.clone(),
            token_id: self.token_id.clone(),
            claims: self.claims.clone(),
        }
        .into();
        match &self.endpoint {
            Some(endpoint) => caller.at_endpoint(endpoint),
            None => caller,
        }
    }

    fn protocol_version(&self) -> &str {
        (self.meta.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    }
}

/// Rebuilds a task's call on this replica: the handler knows the registry
/// serving now, the caller's policies and the call's context.
pub(in crate::mcp) trait Rerunner: Send + Sync {
    /// The call of `tool` as `stored` made it, running as the task whose
    /// input goes through `input` and which `cancel` stops; `end`, the
    /// audit of its end, named with what the call reports.
    fn rerun(
        &self,
        tool: &str,
        stored: StoredCall,
        channel: (Arc<StoreInput>, CancellationToken),
        end: Option<Audit>,
    ) -> (BoxFuture<'static, TaskEnd>, Option<Audit>);
}

impl Tasks {
    /// Orphaned tasks with a retry left are claimed and run here through
    /// `rerunner` (set once, when the handler's state exists).
    pub(in crate::mcp) fn retry_with(&self, rerunner: Arc<dyn Rerunner>) {
        let _ = self.rerunner.set(rerunner);
    }

    /// Claims tasks of replicas that stopped beating with a retry left, a
    /// few per beat, and runs each again here. Not while this replica stops.
    pub(super) async fn claim_orphans(self: &Arc<Self>, stale_before_ms: i64) {
        let Some(rerunner) = self.rerunner.get().cloned() else {
            return;
        };
        for _ in 0..CLAIMS_PER_BEAT {
            if self.runs.is_closed() {
                return;
            }
            match self.store.claim_task(&self.replica, stale_before_ms).await {
                Ok(Some(row)) => self.run_again(rerunner.as_ref(), row).await,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "claiming tasks to retry failed");
                    return;
                }
            }
        }
    }

    async fn run_again(self: &Arc<Self>, rerunner: &dyn Rerunner, row: TaskRow) {
        let stored = (row.call.as_deref()).and_then(|c| serde_json::from_str::<StoredCall>(c).ok());
        let Some(stored) = stored else {
            // Written by this code, so only a damaged row: fail it, saying so.
            let message = "The task's stored call could not be read; it was not run again.";
            let _ = (self.store)
                .finish_task((&row.id, &self.replica), "failed", Some(message), None)
                .await;
            return;
        };
        let run = 1 + i64::from(stored.retries) - row.retries_left;
        tracing::warn!(task = %row.id, tool = %row.tool, run, "running again a task whose replica stopped");
        let end = match &self.audit {
            Some(sink) => {
                let target = (row.tool.as_str(), row.id.as_str());
                let actor = actor(&stored.caller());
                let version = stored.protocol_version().to_owned();
                let at = (sink.now_ms)();
                let record = AuditRecord::task_retried(at, actor, target, &version, run);
                sink.auditor.record(record.clone()).await;
                Some(Audit::retried(sink, &record))
            }
            None => None,
        };
        let cancel = CancellationToken::new();
        let channel = (self.input(&row.id), cancel.clone());
        let (call, end) = rerunner.rerun(&row.tool, stored, channel, end);
        self.spawn(row.id, call, cancel, end);
    }
}
