//! Tasks an upstream server made for a member's call (issue 66 part 2): a
//! row maps teamgate's id to the upstream's, and no replica runs it (the
//! sweep and the retry claim leave it alone). `tasks/get`, `tasks/update`
//! and `tasks/cancel` on any replica reach the upstream through the
//! registry, over the member's own connection; the end seen first is kept
//! on the row (later reads need no upstream) and audited once, by the
//! replica whose write set it.

use rmcp::model::{CreateTaskResult, GetTaskResult, InputResponses, TaskPayload};

use super::{Tasks, detailed, iso, not_found, store_error, task_of};
use crate::{
    mcp::McpError,
    protocol::{CallToolResult, codes},
    registry::{
        CallContext, Registry,
        upstream_task::{UpstreamTaskOp, UpstreamTaskReply},
    },
    store::{AuditRecord, TaskRepo, TaskRow},
};

impl Tasks {
    /// Keeps the upstream task `seed` of `upstream`, made for `owner`'s call
    /// of `tool`, as a task of teamgate's: a fresh id, the upstream's kept
    /// on the row only. Refused past `tasks.max_per_owner`.
    pub async fn adopt(
        &self,
        (owner, tool): (&str, &str),
        upstream: String,
        seed: CreateTaskResult,
    ) -> Result<CreateTaskResult, McpError> {
        let now = self.store.now_ms();
        let own_ttl = self.settings.ttl.as_millis() as i64;
        let ttl = (seed.task.ttl_ms).map_or(own_ttl, |ttl| (ttl as i64).min(own_ttl));
        let poll = (seed.task.poll_interval_ms.map(|ms| ms as i64))
            .unwrap_or(self.settings.poll_interval.as_millis() as i64);
        let row = TaskRow {
            id: hex::encode(rand::random::<[u8; 16]>()),
            owner: owner.to_owned(),
            tool: tool.to_owned(),
            status: "working".into(),
            status_message: seed.task.status_message.clone(),
            progress: None,
            outcome: None,
            input_requests: None,
            input_responses: None,
            ttl_ms: ttl.max(1_000),
            poll_ms: poll.max(1),
            created_ms: now,
            updated_ms: now,
            replica: String::new(),
            heartbeat_ms: now,
            cancel_requested: false,
            retries_left: 0,
            call: None,
            upstream: Some(upstream),
            upstream_task: Some(seed.task.task_id),
        };
        let created = (self.store)
            .create_task(&row, self.settings.max_per_owner)
            .await
            .map_err(store_error)?;
        if !created {
            let why = format!(
                "you hold {} unexpired tasks (tasks.max_per_owner); wait for some to expire",
                self.settings.max_per_owner
            );
            return Err(McpError::invalid_request(why, None));
        }
        Ok(CreateTaskResult::new(task_of(&row)))
    }

    /// The owner's task row; anyone else gets "not found", as for a task
    /// that never was.
    pub async fn row(&self, id: &str, owner: &str) -> Result<TaskRow, McpError> {
        let row = self.store.task(id, owner).await.map_err(store_error)?;
        row.ok_or_else(not_found)
    }

    /// `tasks/get` of an upstream's task: as the upstream says, under
    /// teamgate's id and lifetime; its end kept and audited once.
    pub async fn get_upstream(
        &self,
        row: TaskRow,
        registry: &Registry,
        cx: &CallContext,
    ) -> Result<GetTaskResult, McpError> {
        if row.is_terminal() {
            return Ok(GetTaskResult::new(detailed(&row)));
        }
        let id = row.upstream_task.clone().unwrap_or_default();
        let asked = registry.upstream_task(&row.tool, UpstreamTaskOp::Get(id), cx);
        let mut got = match asked.await {
            Ok(UpstreamTaskReply::Task(got)) => *got,
            Ok(UpstreamTaskReply::Ack) => return Err(McpError::internal_error("no task", None)),
            // The upstream no longer has it (restarted, or it expired there).
            Err(error) if error.code.0 == codes::INVALID_PARAMS => {
                let message = "The upstream server no longer has this task.";
                let outcome = serde_json::to_string(&error).ok();
                self.end_upstream(&row, ("failed", Some(message)), "failed", outcome)
                    .await;
                let ended = self.row(&row.id, &row.owner).await?;
                return Ok(GetTaskResult::new(detailed(&ended)));
            }
            Err(error) => return Err(error),
        };
        let task = &mut got.task.task;
        task.task_id.clone_from(&row.id);
        task.created_at = iso(row.created_ms);
        task.ttl_ms = Some(row.ttl_ms.max(1) as u64);
        let message = task.status_message.clone();
        let ended = match &got.task.payload {
            TaskPayload::Completed { result } => {
                let read = serde_json::from_value::<CallToolResult>(result.clone().into());
                // Audited as an own task's end is: a tool's error is its outcome.
                let label = match &read {
                    Ok(result) if result.is_error == Some(true) => "tool_error",
                    _ => "ok",
                };
                let kept = read.map(|result| self.kept(&result)).ok();
                Some((("completed", label), kept))
            }
            TaskPayload::Failed { error } => {
                Some((("failed", "failed"), serde_json::to_string(error).ok()))
            }
            TaskPayload::Cancelled => Some((("cancelled", "cancelled"), None)),
            _ => None,
        };
        if let Some(((status, label), outcome)) = ended {
            self.end_upstream(&row, (status, message.as_deref()), label, outcome)
                .await;
        }
        Ok(got)
    }

    /// `tasks/update` of an upstream's task: the answers passed on as they
    /// are (their keys are the upstream's own `inputRequests`).
    pub async fn update_upstream(
        &self,
        row: &TaskRow,
        responses: InputResponses,
        (registry, cx): (&Registry, &CallContext),
    ) -> Result<(), McpError> {
        if row.is_terminal() {
            return Ok(());
        }
        let id = row.upstream_task.clone().unwrap_or_default();
        let op = UpstreamTaskOp::Update(id, responses);
        registry.upstream_task(&row.tool, op, cx).await.map(drop)
    }

    /// `tasks/cancel` of an upstream's task: marked, and passed on.
    pub async fn cancel_upstream(
        &self,
        row: &TaskRow,
        (registry, cx): (&Registry, &CallContext),
    ) -> Result<(), McpError> {
        let marked = self.store.request_cancel(&row.id, &row.owner).await;
        marked.map_err(store_error)?;
        if row.is_terminal() {
            return Ok(());
        }
        let id = row.upstream_task.clone().unwrap_or_default();
        let op = UpstreamTaskOp::Cancel(id);
        registry.upstream_task(&row.tool, op, cx).await.map(drop)
    }

    /// Keeps the end of the upstream's task on its row; the replica whose
    /// write set it audits it (`tasks/end`, outcome `label` and the status
    /// message), so it is audited once.
    async fn end_upstream(
        &self,
        row: &TaskRow,
        (status, message): (&str, Option<&str>),
        label: &str,
        outcome: Option<String>,
    ) {
        let write = (self.store).finish_task((&row.id, ""), status, message, outcome.as_deref());
        let won = match write.await {
            Ok(won) => won,
            Err(error) => {
                tracing::warn!(%error, task = %row.id, "an upstream task's end was not recorded");
                return;
            }
        };
        let Some(sink) = self.audit.as_ref().filter(|_| won) else {
            return;
        };
        let label = match (label, message) {
            ("ok" | "tool_error", _) => label.to_owned(),
            (label, Some(message)) => format!("{label}: {message}"),
            (label, None) => label.to_owned(),
        };
        let upstream = row.upstream.as_deref().unwrap_or_default();
        let record = AuditRecord::upstream_task_end(
            (sink.now_ms)(),
            &row.owner,
            (&row.tool, &row.id),
            (row.created_ms, upstream),
            label,
        );
        sink.auditor.record(record).await;
    }
}
