//! Durable tasks (the 2026-07-28 tasks extension, SEP-2663): a tools/call
//! that becomes a task is a row in the store, so every replica answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` for it. The replica running
//! it beats a heartbeat into the row and reads cancellations from it; every
//! replica's sweep fails the tasks of a replica that stopped beating
//! (`run.rs`), or claims them to run again when their tool has
//! `task_retry` (`retry.rs`). A task an upstream server made for the call
//! is a row mapping teamgate's id to the upstream's (`upstream.rs`). Only the member who created a task sees it: anyone else gets
//! the same "not found" as for a task that never was.

mod retry;
mod run;
mod upstream;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock, atomic::AtomicBool},
    time::{Duration, SystemTime},
};

use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequests, InputResponses, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{McpError, calls::AuditSink};
use crate::{
    config::TasksConfig,
    store::{Store, StoreError, TaskRepo, TaskRow},
};

pub(super) use retry::{Rerunner, StoredCall};
pub(super) use run::{StoreInput, TaskEnd};

/// The tasks this replica runs, and the store every replica shares.
pub struct Tasks {
    store: Store,
    settings: TasksConfig,
    /// This process's name in `tasks.replica`, random per start.
    replica: String,
    /// The cancellation of each task running here, by id; bounded by
    /// `tasks.max_per_owner` per member, and emptied as tasks end.
    running: Mutex<HashMap<String, CancellationToken>>,
    /// Unexpired tasks by state, as last counted (for `/metrics`).
    counted: Mutex<Vec<(String, i64)>>,
    /// Where the ends of tasks lost with a replica are audited.
    audit: Option<AuditSink>,
    /// Every task's run here, its end recorded included: a graceful stop
    /// waits for them (`run.rs`).
    runs: TaskTracker,
    /// Set when this replica stops: a task cancelled then failed, not
    /// cancelled at the client's request.
    stopping: AtomicBool,
    /// Rebuilds the calls of tasks claimed to run again (`retry.rs`).
    rerunner: OnceLock<Arc<dyn Rerunner>>,
}

/// What a task-augmented call knows of its caller and tool.
pub struct NewTask<'a> {
    pub owner: &'a str,
    pub tool: &'a str,
    /// The call, kept when the tool has `task_retry`.
    pub retry: Option<StoredCall>,
}

fn store_error(error: StoreError) -> McpError {
    tracing::warn!(%error, "task store");
    McpError::internal_error("the task store is unavailable; retry shortly", None)
}

fn not_found() -> McpError {
    McpError::invalid_params("Failed to retrieve task: Task not found", None)
}

fn iso(ms: i64) -> String {
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(at).to_string()
}

fn status_of(text: &str) -> TaskStatus {
    match text {
        "input_required" => TaskStatus::InputRequired,
        "completed" => TaskStatus::Completed,
        "failed" => TaskStatus::Failed,
        "cancelled" => TaskStatus::Cancelled,
        _ => TaskStatus::Working,
    }
}

fn object(text: Option<&str>) -> JsonObject {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// The wire `Task` of a row.
fn task_of(row: &TaskRow) -> Task {
    let mut task = Task::new(
        row.id.clone(),
        status_of(&row.status),
        iso(row.created_ms),
        iso(row.updated_ms),
    )
    .with_ttl_ms(row.ttl_ms.max(1) as u64)
    .with_poll_interval_ms(row.poll_ms.max(1) as u64);
    if let Some(message) = row.status_message.clone().or(row.progress.clone()) {
        task = task.with_status_message(message);
    }
    task
}

/// The `DetailedTask` of a row: the result, error or input requests inline.
fn detailed(row: &TaskRow) -> DetailedTask {
    let payload = match status_of(&row.status) {
        TaskStatus::Completed => TaskPayload::Completed {
            result: object(row.outcome.as_deref()),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: object(row.outcome.as_deref()),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: row
                .input_requests
                .as_deref()
                .and_then(|t| serde_json::from_str::<InputRequests>(t).ok())
                .unwrap_or_default(),
        },
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task_of(row), payload)
}

impl Tasks {
    /// The tasks of this replica; the ends of tasks lost with any replica
    /// audited through `audit`.
    pub fn new(store: Store, settings: TasksConfig, audit: Option<AuditSink>) -> Arc<Self> {
        Arc::new(Self {
            store,
            settings,
            replica: hex::encode(rand::random::<[u8; 8]>()),
            running: Mutex::default(),
            counted: Mutex::default(),
            audit,
            runs: TaskTracker::new(),
            stopping: AtomicBool::new(false),
            rerunner: OnceLock::new(),
        })
    }

    /// Writes the task's row (so `tasks/get` resolves before the client
    /// hears of it) and returns its seed state.
    pub async fn create(&self, new: NewTask<'_>) -> Result<(TaskRow, CreateTaskResult), McpError> {
        let now = self.store.now_ms();
        let row = TaskRow {
            id: hex::encode(rand::random::<[u8; 16]>()),
            owner: new.owner.to_owned(),
            tool: new.tool.to_owned(),
            status: "working".into(),
            status_message: None,
            progress: None,
            outcome: None,
            input_requests: None,
            input_responses: None,
            ttl_ms: self.settings.ttl.as_millis() as i64,
            poll_ms: self.settings.poll_interval.as_millis() as i64,
            created_ms: now,
            updated_ms: now,
            replica: self.replica.clone(),
            heartbeat_ms: now,
            cancel_requested: false,
            retries_left: new.retry.as_ref().map_or(0, |call| i64::from(call.retries)),
            call: (new.retry.as_ref()).and_then(|call| serde_json::to_string(call).ok()),
            upstream: None,
            upstream_task: None,
        };
        let created = self
            .store
            .create_task(&row, self.settings.max_per_owner)
            .await
            .map_err(store_error)?;
        if !created {
            return Err(McpError::invalid_request(
                format!(
                    "you hold {} unexpired tasks (tasks.max_per_owner); wait for some to expire",
                    self.settings.max_per_owner
                ),
                None,
            ));
        }
        let seed = CreateTaskResult::new(task_of(&row));
        Ok((row, seed))
    }

    /// Drops a task that never ran (its call asked for input first).
    pub async fn forget(&self, id: &str) {
        if let Err(error) = self.store.delete_task(id).await {
            tracing::warn!(%error, task = %id, "an unused task row was left");
        }
    }

    /// `tasks/get`: the owner's task with its outcome or input requests.
    pub async fn get(&self, id: &str, owner: &str) -> Result<GetTaskResult, McpError> {
        let row = self.store.task(id, owner).await.map_err(store_error)?;
        let row = row.ok_or_else(not_found)?;
        Ok(GetTaskResult::new(detailed(&row)))
    }

    /// `tasks/update`: answers to outstanding input requests; answers to
    /// keys not outstanding are ignored.
    pub async fn update(
        &self,
        id: &str,
        owner: &str,
        responses: InputResponses,
    ) -> Result<(), McpError> {
        let responses: JsonObject = responses.into_iter().collect();
        let found = self
            .store
            .answer_input(id, owner, &responses)
            .await
            .map_err(store_error)?;
        if found { Ok(()) } else { Err(not_found()) }
    }

    /// `tasks/cancel`: marks the task; the replica running it stops it (at
    /// once when that is this one, else on its next heartbeat). A finished
    /// task acknowledges and stays as it ended.
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<(), McpError> {
        let found = self
            .store
            .request_cancel(id, owner)
            .await
            .map_err(store_error)?;
        if !found {
            return Err(not_found());
        }
        if let Some(token) = self.running.lock().expect("tasks lock").get(id) {
            token.cancel();
        }
        Ok(())
    }

    /// Unexpired tasks by status as last counted, for the `/metrics` gauge.
    pub fn counts(&self) -> Vec<(String, i64)> {
        self.counted.lock().expect("tasks lock").clone()
    }
}
