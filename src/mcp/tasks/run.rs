//! Running tasks: the call in the background until it ends or is
//! cancelled, its input asked through the row, and the loop that beats this
//! replica's heartbeat, picks up cancellations made on any replica and
//! fails the tasks of replicas that died.

use std::{
    sync::{Arc, Mutex, atomic::Ordering},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use rmcp::model::{ErrorCode, InputRequests, InputResponses};
use tokio_util::sync::CancellationToken;

use super::{Tasks, store_error};
use crate::{
    mcp::{CallToolResponse, CallToolResult, McpError, calls::Audit},
    protocol::text_result,
    registry::TaskInput,
    store::{AuditRecord, Store, TaskRepo},
};

/// How often a task waiting for input looks for the client's answers.
const INPUT_POLL: Duration = Duration::from_millis(200);

/// Why a task running when its replica stopped gracefully did not finish.
const SHUT_DOWN: &str =
    "The server running this task shut down before it finished; call the tool again";

/// A task's call as it ended, for the audit record of its end.
pub(in crate::mcp) type TaskEnd = Result<CallToolResponse, McpError>;

/// At most one progress write per task this often: a chatty command's
/// lines do not each cost a write to the shared store.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The longest progress message kept on the row, in bytes.
const PROGRESS_MAX: usize = 1_000;

/// `TaskInput` through the task's row: any replica's `tasks/update` answers.
pub(in crate::mcp) struct StoreInput {
    store: Store,
    id: String,
    progress: Arc<Mutex<Progress>>,
}

/// A task's progress not yet written, and when the last write was.
#[derive(Default)]
struct Progress {
    latest: Option<String>,
    written: Option<Instant>,
    /// A write is due; later messages only replace `latest`.
    due: bool,
}

impl StoreInput {
    /// Writes the latest message after `wait`; off the call's own path, so
    /// a slow store does not slow the tool.
    fn write_after(&self, wait: Duration) {
        let (store, id, progress) = (self.store.clone(), self.id.clone(), self.progress.clone());
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let message = {
                let mut progress = progress.lock().expect("progress lock");
                progress.due = false;
                progress.written = Some(Instant::now());
                progress.latest.take()
            };
            let Some(message) = message else { return };
            if let Err(error) = store.task_progress(&id, &message).await {
                tracing::warn!(%error, task = %id, "a task's progress was not recorded");
            }
        });
    }
}

fn bounded(message: &str) -> String {
    let mut end = message.len().min(PROGRESS_MAX);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
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

    async fn progress(&self, message: &str) {
        let wait = {
            let mut progress = self.progress.lock().expect("progress lock");
            progress.latest = Some(bounded(message));
            if progress.due {
                return;
            }
            progress.due = true;
            let since = progress.written.map(|at| at.elapsed());
            since.map_or(Duration::ZERO, |since| PROGRESS_EVERY.saturating_sub(since))
        };
        self.write_after(wait);
    }
}

impl Tasks {
    /// The input channel of the task `id`, for its call's context.
    pub(in crate::mcp) fn input(&self, id: &str) -> Arc<StoreInput> {
        Arc::new(StoreInput {
            store: self.store.clone(),
            id: id.to_owned(),
            progress: Arc::default(),
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
        self.runs.spawn(async move {
            let ended = tokio::select! {
                ended = call => Some(ended),
                () = cancel.cancelled() => None,
            };
            tasks.running.lock().expect("tasks lock").remove(&id);
            let (status, message, outcome) = tasks.settle(ended.as_ref());
            let row = (id.as_str(), tasks.replica.as_str());
            match (tasks.store)
                .finish_task(row, status, message.as_deref(), outcome.as_deref())
                .await
            {
                Ok(true) => {}
                // Claimed by another replica while this one was thought
                // dead: that run's end is the task's.
                Ok(false) => return,
                Err(error) => tracing::warn!(%error, task = %id, "a task's end was not recorded"),
            }
            if let Some(audit) = audit {
                let stopped = tasks.stopping.load(Ordering::Relaxed);
                let cancelled = || match stopped {
                    true => McpError::internal_error(SHUT_DOWN, None),
                    false => McpError::new(
                        ErrorCode(crate::protocol::codes::REQUEST_CANCELLED),
                        "task cancelled",
                        None,
                    ),
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
            None if self.stopping.load(Ordering::Relaxed) => {
                let error = McpError::internal_error(SHUT_DOWN, None);
                ("failed", Some(format!("{SHUT_DOWN}.")), error_json(&error))
            }
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
    pub(super) fn kept(&self, result: &CallToolResult) -> String {
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

    async fn beat(self: &Arc<Self>) {
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
        self.claim_orphans(stale).await;
        match self.store.sweep_tasks(stale).await {
            Ok((lost, _)) if lost.is_empty() => {}
            Ok((lost, _)) => {
                tracing::warn!(
                    failed = lost.len(),
                    "tasks of a stopped replica marked failed"
                );
                if let Some(sink) = &self.audit {
                    let now = (sink.now_ms)();
                    for task in lost {
                        let why = "the replica running it stopped (no heartbeat)";
                        let target = (task.tool.as_str(), task.id.as_str());
                        let record =
                            AuditRecord::task_lost(now, &task.owner, target, task.created_ms, why);
                        sink.auditor.record(record).await;
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "task sweep failed"),
        }
        if let Ok(counts) = self.store.count_tasks().await {
            *self.counted.lock().expect("tasks lock") = counts;
        }
    }

    /// This replica stops: its running tasks get `within` to finish; those
    /// still running then are failed at once, saying so, their ends written
    /// and audited before this returns (or `within` again has passed).
    pub async fn stop(&self, within: Duration) {
        self.runs.close();
        if tokio::time::timeout(within, self.runs.wait()).await.is_ok() {
            return;
        }
        self.stopping.store(true, Ordering::Relaxed);
        let running: Vec<CancellationToken> = self
            .running
            .lock()
            .expect("tasks lock")
            .values()
            .cloned()
            .collect();
        tracing::warn!(
            tasks = running.len(),
            "tasks still running at shutdown are failed"
        );
        for token in running {
            token.cancel();
        }
        let _ = tokio::time::timeout(within, self.runs.wait()).await;
    }
}
