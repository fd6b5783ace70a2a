//! A task's row as the store keeps it, and its columns, for the task
//! store's queries (`tasks.rs`) and the sweep's (`tasks_sweep.rs`).

use sqlx::Row;

/// One task. JSON columns are kept as text; the engine gives them meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    pub id: String,
    pub owner: String,
    pub tool: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    pub status_message: Option<String>,
    pub progress: Option<String>,
    /// The result (completed) or the JSON-RPC error (failed), as JSON.
    pub outcome: Option<String>,
    /// Outstanding `inputRequests` while `input_required`, as a JSON object.
    pub input_requests: Option<String>,
    /// Answers received and not yet taken by the running call, as a JSON object.
    pub input_responses: Option<String>,
    pub ttl_ms: i64,
    pub poll_ms: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub replica: String,
    pub heartbeat_ms: i64,
    pub cancel_requested: bool,
    /// Times another replica may still run it again when its replica dies
    /// (`task_retry`); 0: it fails instead.
    pub retries_left: i64,
    /// The call a retry runs (arguments, caller, request `_meta`), as JSON;
    /// kept only for tools with `task_retry`.
    pub call: Option<String>,
    /// The upstream server whose own task this row maps; `None`: teamgate
    /// runs it.
    pub upstream: Option<String>,
    /// That upstream's id of the task, never shown to the member.
    pub upstream_task: Option<String>,
}

impl TaskRow {
    pub fn is_terminal(&self) -> bool {
        is_terminal(&self.status)
    }
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

pub(super) const COLUMNS: &str = "id, owner, tool, status, status_message, progress, outcome, \
    input_requests, input_responses, ttl_ms, poll_ms, created_ms, updated_ms, replica, \
    heartbeat_ms, cancel_requested, retries_left, call, upstream, upstream_task";

pub(super) fn from_row(row: &sqlx::any::AnyRow) -> Result<TaskRow, sqlx::Error> {
    Ok(TaskRow {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        tool: row.try_get("tool")?,
        status: row.try_get("status")?,
        status_message: row.try_get("status_message")?,
        progress: row.try_get("progress")?,
        outcome: row.try_get("outcome")?,
        input_requests: row.try_get("input_requests")?,
        input_responses: row.try_get("input_responses")?,
        ttl_ms: row.try_get("ttl_ms")?,
        poll_ms: row.try_get("poll_ms")?,
        created_ms: row.try_get("created_ms")?,
        updated_ms: row.try_get("updated_ms")?,
        replica: row.try_get("replica")?,
        heartbeat_ms: row.try_get("heartbeat_ms")?,
        cancel_requested: row.try_get::<i64, _>("cancel_requested")? != 0,
        retries_left: row.try_get("retries_left")?,
        call: row.try_get("call")?,
        upstream: row.try_get("upstream")?,
        upstream_task: row.try_get("upstream_task")?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminal_statuses() {
        assert!(super::is_terminal("completed"));
        assert!(super::is_terminal("cancelled"));
        assert!(!super::is_terminal("input_required"));
    }
}
