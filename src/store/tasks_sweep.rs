//! The tasks' sweep (`TaskRepo::sweep_tasks`): the live tasks of replicas
//! that stopped beating failed and returned for their audit records, the
//! expired ones deleted.

use sqlx::Row;

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
             returning id, owner, tool, created_ms",
        )
        .bind(
            "The replica running this task stopped (no heartbeat within \
             tasks.heartbeat_timeout); the task did not finish.",
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
}
