//! Running tasks: the call in the background until it ends or is
//! cancelled, its input asked through the row, and the loop that beats this
//! replica's heartbeat, picks up cancellations made on any replica and
//! fails the tasks of replicas that died.

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use rmcp::model::{ErrorCode, InputRequests, InputResponses};
use tokio_util::sync::CancellationToken;

use super::{Tasks, store_error};
use crate::{
    mcp::{CallToolResponse, CallToolResult, McpError, calls::Audit},
    protocol::text_result,
    registry::TaskInput,
    store::{Store, TaskRepo},
};

/// How often a task waiting for input looks for the client's answers.
const INPUT_POLL: Duration = Duration::from_millis(200);

/// A task's call as it ended, for the audit record of its end.
pub(in crate::mcp) type TaskEnd = Result<CallToolResponse, McpError>;

/// `TaskInput` through the task's row: any replica's `tasks/update` answers.
pub(in crate::mcp) struct StoreInput {
    store: Store,
    id: String,
}

#[async_trait::async_trait]
impl TaskInput for StoreInput {
    async fn ask(&self, requests: InputRequests) -> Result<InputResponses, McpError> {
        let text = serde_json::to_string(&requests)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        self.store
            .ask_input(&self.id, &text)
            .await
            .map_err(store_error)?;
        // Bounded by the call's timeout and cancellation, which drop this future.
        loop {
            tokio::time::sleep(INPUT_POLL).await;
            if let Some(answers) = self.store.take_input(&self.id).await.map_err(store_error)? {
                return serde_json::from_str(&answers)
                    .map_err(|e| McpError::internal_error(e.to_string(), None));
            }
        }
    }
}

impl Tasks {
    /// The input channel of the task `id`, for its call's context.
    pub(in crate::mcp) fn input(&self, id: &str) -> Arc<StoreInput> {
        Arc::new(StoreInput {
            store: self.store.clone(),
            id: id.to_owned(),
        })
    }

    /// Runs `call` as the task `id` until it ends or `cancel` fires, then
    /// records how it ended (row and audit).
    pub(in crate::mcp) fn spawn(
        self: &Arc<Self>,
        id: String,
        call: BoxFuture<'static, TaskEnd>,
        cancel: CancellationToken,
        audit: Option<Audit>,
    ) {
        self.running
            .lock()
            .expect("tasks lock")
            .insert(id.clone(), cancel.clone());
        let tasks = self.clone();
        tokio::spawn(async move {
            let ended = tokio::select! {
                ended = call => Some(ended),
                () = cancel.cancelled() => None,
            };
            tasks.running.lock().expect("tasks lock").remove(&id);
            let (status, message, outcome) = tasks.settle(ended.as_ref());
            if let Err(error) = tasks
                .store
                .finish_task(&id, status, message.as_deref(), outcome.as_deref())
                .await
            {
                tracing::warn!(%error, task = %id, "a task's end was not recorded");
            }
            if let Some(audit) = audit {
                let cancelled = || {
                    McpError::new(
                        ErrorCode(crate::protocol::codes::REQUEST_CANCELLED),
                        "task cancelled",
                        None,
                    )
                };
                audit
                    .finish(&ended.unwrap_or_else(|| Err(cancelled())))
                    .await;
            }
        });
    }

    /// Status, status message and stored outcome of a call's end (`None`:
    /// cancelled). A tool error is `completed` with `isError`; only a
    /// protocol error is `failed`.
    fn settle(&self, ended: Option<&TaskEnd>) -> (&'static str, Option<String>, Option<String>) {
        let error_json = |error: &McpError| serde_json::to_string(error).ok();
        match ended {
            None => (
                "cancelled",
                Some("Cancelled at the client's request.".into()),
                None,
            ),
            Some(Ok(CallToolResponse::Complete(result))) => {
                ("completed", None, Some(self.kept(result)))
            }
            Some(Ok(_)) => {
                let error = McpError::internal_error(
                    "the tool asked for input in a way a task cannot carry",
                    None,
                );
                (
                    "failed",
                    Some(error.message.to_string()),
                    error_json(&error),
                )
            }
            Some(Err(error)) => (
                "failed",
                Some(format!("Tool execution failed: {}", error.message)),
                error_json(error),
            ),
        }
    }

    /// The result as stored: within `tasks.max_result_bytes`, else a tool
    /// error saying how large it was.
    fn kept(&self, result: &CallToolResult) -> String {
        let text = serde_json::to_string(result).unwrap_or_default();
        if text.len() <= self.settings.max_result_bytes {
            return text;
        }
        let note = format!(
            "The result was {} bytes, over the server's limit for task results \
             (tasks.max_result_bytes = {}).",
            text.len(),
            self.settings.max_result_bytes
        );
        serde_json::to_string(&text_result(note, true)).unwrap_or_default()
    }

    /// Beats this replica's heartbeat for the tasks it runs, stops those
    /// cancelled elsewhere, and fails the tasks of replicas that stopped
    /// beating; until `stop`.
    pub fn start(self: &Arc<Self>, stop: CancellationToken) {
        let tasks = self.clone();
        let every = (self.settings.heartbeat_timeout / 4).max(Duration::from_millis(250));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = stop.cancelled() => return,
                }
                tasks.beat().await;
            }
        });
    }

    async fn beat(&self) {
        let ids: Vec<String> = {
            let running = self.running.lock().expect("tasks lock");
            running.keys().cloned().collect()
        };
        match self.store.heartbeat(&self.replica, &ids).await {
            Ok(cancelled) => {
                let running = self.running.lock().expect("tasks lock");
                for id in cancelled {
                    if let Some(token) = running.get(&id) {
                        token.cancel();
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "task heartbeat failed"),
        }
        let stale = self.store.now_ms() - self.settings.heartbeat_timeout.as_millis() as i64;
        match self.store.sweep_tasks(stale).await {
            Ok((0, _)) => {}
            Ok((failed, _)) => tracing::warn!(failed, "tasks of a stopped replica marked failed"),
            Err(error) => tracing::warn!(%error, "task sweep failed"),
        }
        if let Ok(counts) = self.store.count_tasks().await {
            *self.counted.lock().expect("tasks lock") = counts;
        }
    }
}
