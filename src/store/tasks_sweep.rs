//! The tasks of replicas that stopped beating (`TaskRepo::sweep_tasks`,
//! `TaskRepo::claim_task`): claimed by another replica to run again when
//! their tool has `task_retry` and a retry is left, else failed and
//! returned for their audit records; the expired ones deleted.

use sqlx::Row;

use super::task_row::{COLUMNS, TaskRow, from_row};
use super::{Store, StoreError, query_error};

/// A task failed because its replica stopped beating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostTask {
    pub id: String,
    pub owner: String,
    pub tool: String,
    pub created_ms: i64,
}

impl Store {
    pub(super) async fn sweep_stale_tasks(
        &self,
        stale_before_ms: i64,
    ) -> Result<(Vec<LostTask>, u64), StoreError> {
        let error = query_error("sweep tasks");
        let now = self.now_ms();
        let lost = serde_json::json!({
            "code": crate::protocol::codes::INTERNAL_ERROR,
            "message": "the replica running this task stopped before it finished",
        })
        .to_string();
        let failed = sqlx::query(
            "update tasks set status = 'failed', status_message = $1, outcome = $2, \
             input_requests = null, updated_ms = $3 \
             where status in ('working', 'input_required') and heartbeat_ms < $4 \
             and (retries_left <= 0 or call is null or cancel_requested <> 0) \
             and upstream is null \
             returning id, owner, tool, created_ms",
        )
        .bind(
            "The replica running this task stopped (no heartbeat within \
             tasks.heartbeat_timeout); the task did not finish, and no retry is left.",
        )
        .bind(lost)
        .bind(now)
        .bind(stale_before_ms)
        .fetch_all(self.writer())
        .await
        .map_err(error)?;
        let failed = (failed.iter())
            .map(|row| {
                Ok(LostTask {
                    id: row.try_get("id")?,
                    owner: row.try_get("owner")?,
                    tool: row.try_get("tool")?,
                    created_ms: row.try_get("created_ms")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(error)?;
        let deleted = sqlx::query("delete from tasks where created_ms + ttl_ms <= $1")
            .bind(now)
            .execute(self.writer())
            .await
            .map_err(error)?;
        Ok((failed, deleted.rows_affected()))
    }

    pub(super) async fn claim_stale_task(
        &self,
        replica: &str,
        stale_before_ms: i64,
    ) -> Result<Option<TaskRow>, StoreError> {
        let error = query_error("claim a task to retry");
        // The outer condition repeats the inner one: of replicas racing for
        // the same row, the first update freshens its heartbeat and every
        // other finds it no longer stale, so exactly one claims it.
        let claimed = sqlx::query(&format!(
            "update tasks set replica = $1, heartbeat_ms = $2, updated_ms = $2, \
             retries_left = retries_left - 1, status = 'working', progress = null, \
             input_requests = null, input_responses = null, \
             status_message = 'Running again: the replica running it stopped.' \
             where id = (select id from tasks where status in ('working', 'input_required') \
               and heartbeat_ms < $3 and retries_left > 0 and call is not null \
               and upstream is null \
               and cancel_requested = 0 and created_ms + ttl_ms > $2 order by heartbeat_ms limit 1) \
             and heartbeat_ms < $3 and retries_left > 0 \
             returning {COLUMNS}"
        ))
        .bind(replica)
        .bind(self.now_ms())
        .bind(stale_before_ms)
        .fetch_optional(self.writer())
        .await
        .map_err(error)?;
        claimed.map(|row| from_row(&row)).transpose().map_err(error)
    }
}
