//! Durable task rows (issue 31): a task-augmented `tools/call`, its status,
//! its outcome and the replica running it. Any replica reads and updates
//! them, so a task outlives the connection and the replica that started it.

use async_trait::async_trait;
use sqlx::Row;

pub use super::task_row::TaskRow;
pub use super::tasks_sweep::LostTask;

use super::task_row::{COLUMNS, from_row};
use super::{Store, StoreError, query_error};

/// The task store's contract; both backends pass the same contract test
/// (`tests/api/tasks_store.rs`).
///
/// - `create_task` refuses (false) when the owner already has `max_per_owner`
///   unexpired tasks.
/// - `task` returns the row only to its owner, and never an expired one
///   (created + ttl passed), even before the sweep ran.
/// - `finish_task` sets a terminal status once, and only for the replica
///   running the task: false when it already had one, or another replica
///   claimed it.
/// - `request_cancel` marks the owner's task for cancellation (false: no such
///   task); the running replica reads the mark on its next heartbeat.
/// - `heartbeat` records that `replica` still runs `ids` and returns those of
///   them it must stop: their cancellation was asked, or another replica
///   claimed them (`claim_task`) while this one was thought dead.
/// - `ask_input` parks a task in `input_required` with `requests`;
///   `answer_input` moves the answers to outstanding keys over (others are
///   ignored) and returns to `working` once none is left; `take_input`
///   hands the gathered answers to the running call once none is outstanding.
/// - `task_progress` records a working task's latest progress line and moves
///   its `updated_ms`; a task not working is left as it is.
/// - `delete_task` removes a task that never ran.
/// - A row with `upstream` set maps an upstream's own task: no replica runs
///   it, so neither the sweep nor a claim touches it; its end is written
///   with `finish_task` for replica `""` by whoever sees it first.
/// - `sweep_tasks` fails the live tasks whose heartbeat is older than
///   `stale_before_ms` and that no retry is left for (none kept, none
///   left, or cancellation asked), returning them (for their audit
///   records), and deletes the expired ones, counted.
/// - `claim_task` takes one live task whose heartbeat is older than
///   `stale_before_ms` and that has a retry left for `replica`, atomically:
///   of replicas claiming at once exactly one gets it. Its heartbeat is
///   then fresh, one retry is used, its input and progress are cleared.
/// - `count_tasks` counts unexpired tasks by status.
#[async_trait]
pub trait TaskRepo: Send + Sync {
    async fn create_task(&self, row: &TaskRow, max_per_owner: i64) -> Result<bool, StoreError>;
    async fn task(&self, id: &str, owner: &str) -> Result<Option<TaskRow>, StoreError>;
    async fn finish_task(
        &self,
        (id, replica): (&str, &str),
        status: &str,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool, StoreError>;
    async fn request_cancel(&self, id: &str, owner: &str) -> Result<bool, StoreError>;
    async fn heartbeat(&self, replica: &str, ids: &[String]) -> Result<Vec<String>, StoreError>;
    async fn ask_input(&self, id: &str, requests: &str) -> Result<(), StoreError>;
    async fn answer_input(
        &self,
        id: &str,
        owner: &str,
        responses: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<bool, StoreError>;
    async fn take_input(&self, id: &str) -> Result<Option<String>, StoreError>;
    async fn task_progress(&self, id: &str, message: &str) -> Result<(), StoreError>;
    async fn delete_task(&self, id: &str) -> Result<(), StoreError>;
    async fn sweep_tasks(&self, stale_before_ms: i64) -> Result<(Vec<LostTask>, u64), StoreError>;
    async fn claim_task(
        &self,
        replica: &str,
        stale_before_ms: i64,
    ) -> Result<Option<TaskRow>, StoreError>;
    async fn count_tasks(&self) -> Result<Vec<(String, i64)>, StoreError>;
}

type Object = serde_json::Map<String, serde_json::Value>;

fn object(text: Option<&str>) -> Object {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

impl Store {
    async fn task_by_id(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        let error = query_error("read a task");
        let row = sqlx::query(&format!("select {COLUMNS} from tasks where id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(error)?;
        row.map(|r| from_row(&r)).transpose().map_err(error)
    }

    async fn set_input(
        &self,
        id: &str,
        status: &str,
        requests: &Object,
        responses: &Object,
    ) -> Result<(), StoreError> {
        let text = |o: &Object| serde_json::Value::Object(o.clone()).to_string();
        sqlx::query(
            "update tasks set status = $1, input_requests = $2, input_responses = $3, \
             updated_ms = $4 where id = $5 and status in ('working', 'input_required')",
        )
        .bind(status)
        .bind(text(requests))
        .bind(text(responses))
        .bind(self.now_ms())
        .bind(id)
        .execute(self.writer())
        .await
        .map_err(query_error("record a task's input"))?;
        Ok(())
    }
}

#[async_trait]
impl TaskRepo for Store {
    async fn create_task(&self, row: &TaskRow, max_per_owner: i64) -> Result<bool, StoreError> {
        let error = query_error("create a task");
        let held: i64 = sqlx::query_scalar(
            "select count(*) from tasks where owner = $1 and created_ms + ttl_ms > $2",
        )
        .bind(&row.owner)
        .bind(self.now_ms())
        .fetch_one(self.pool())
        .await
        .map_err(error)?;
        if held >= max_per_owner {
            return Ok(false);
        }
        sqlx::query(&format!(
            "insert into tasks ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
             $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
        ))
        .bind(&row.id)
        .bind(&row.owner)
        .bind(&row.tool)
        .bind(&row.status)
        .bind(row.status_message.clone())
        .bind(row.progress.clone())
        .bind(row.outcome.clone())
        .bind(row.input_requests.clone())
        .bind(row.input_responses.clone())
        .bind(row.ttl_ms)
        .bind(row.poll_ms)
        .bind(row.created_ms)
        .bind(row.updated_ms)
        .bind(&row.replica)
        .bind(row.heartbeat_ms)
        .bind(i64::from(row.cancel_requested))
        .bind(row.retries_left)
        .bind(row.call.clone())
        .bind(row.upstream.clone())
        .bind(row.upstream_task.clone())
        .execute(self.writer())
        .await
        .map_err(error)?;
        Ok(true)
    }

    async fn task(&self, id: &str, owner: &str) -> Result<Option<TaskRow>, StoreError> {
        let now = self.now_ms();
        Ok(self
            .task_by_id(id)
            .await?
            .filter(|t| t.owner == owner && t.created_ms + t.ttl_ms > now))
    }

    async fn finish_task(
        &self,
        (id, replica): (&str, &str),
        status: &str,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "update tasks set status = $1, status_message = $2, outcome = $3, \
             input_requests = null, updated_ms = $4 \
             where id = $5 and replica = $6 and status in ('working', 'input_required')",
        )
        .bind(status)
        .bind(message)
        .bind(outcome)
        .bind(self.now_ms())
        .bind(id)
        .bind(replica)
        .execute(self.writer())
        .await
        .map_err(query_error("finish a task"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn request_cancel(&self, id: &str, owner: &str) -> Result<bool, StoreError> {
        if self.task(id, owner).await?.is_none() {
            return Ok(false);
        }
        sqlx::query("update tasks set cancel_requested = 1 where id = $1 and owner = $2")
            .bind(id)
            .bind(owner)
            .execute(self.writer())
            .await
            .map_err(query_error("ask to cancel a task"))?;
        Ok(true)
    }

    async fn heartbeat(&self, replica: &str, ids: &[String]) -> Result<Vec<String>, StoreError> {
        let error = query_error("record a task heartbeat");
        let mut cancelled = Vec::new();
        let now = self.now_ms();
        for id in ids {
            sqlx::query("update tasks set heartbeat_ms = $1 where id = $2 and replica = $3")
                .bind(now)
                .bind(id)
                .bind(replica)
                .execute(self.writer())
                .await
                .map_err(error)?;
            if self
                .task_by_id(id)
                .await?
                .is_some_and(|t| t.cancel_requested || t.replica != replica)
            {
                cancelled.push(id.clone());
            }
        }
        Ok(cancelled)
    }

    async fn ask_input(&self, id: &str, requests: &str) -> Result<(), StoreError> {
        let requests = object(Some(requests));
        self.set_input(id, "input_required", &requests, &Object::new())
            .await
    }

    async fn answer_input(
        &self,
        id: &str,
        owner: &str,
        responses: &Object,
    ) -> Result<bool, StoreError> {
        let Some(row) = self.task(id, owner).await? else {
            return Ok(false);
        };
        if row.status != "input_required" {
            return Ok(true);
        }
        let mut outstanding = object(row.input_requests.as_deref());
        let mut answered = object(row.input_responses.as_deref());
        for (key, answer) in responses {
            if outstanding.remove(key).is_some() {
                answered.insert(key.clone(), answer.clone());
            }
        }
        let status = if outstanding.is_empty() {
            "working"
        } else {
            "input_required"
        };
        self.set_input(id, status, &outstanding, &answered).await?;
        Ok(true)
    }

    async fn take_input(&self, id: &str) -> Result<Option<String>, StoreError> {
        let Some(row) = self.task_by_id(id).await? else {
            return Ok(None);
        };
        if row.status != "working" || row.input_responses.is_none() {
            return Ok(None);
        }
        sqlx::query("update tasks set input_responses = null, input_requests = null where id = $1")
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("take a task's input"))?;
        Ok(row.input_responses)
    }

    async fn task_progress(&self, id: &str, message: &str) -> Result<(), StoreError> {
        sqlx::query(
            "update tasks set progress = $1, updated_ms = $2 where id = $3 and status = 'working'",
        )
        .bind(message)
        .bind(self.now_ms())
        .bind(id)
        .execute(self.writer())
        .await
        .map_err(query_error("record a task's progress"))?;
        Ok(())
    }

    async fn delete_task(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("delete from tasks where id = $1")
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("delete a task"))?;
        Ok(())
    }

    async fn sweep_tasks(&self, stale_before_ms: i64) -> Result<(Vec<LostTask>, u64), StoreError> {
        self.sweep_stale_tasks(stale_before_ms).await
    }

    async fn claim_task(
        &self,
        replica: &str,
        stale_before_ms: i64,
    ) -> Result<Option<TaskRow>, StoreError> {
        self.claim_stale_task(replica, stale_before_ms).await
    }

    async fn count_tasks(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let error = query_error("count tasks");
        let rows = sqlx::query(
            "select status, count(*) as n from tasks where created_ms + ttl_ms > $1 \
             group by status",
        )
        .bind(self.now_ms())
        .fetch_all(self.pool())
        .await
        .map_err(error)?;
        rows.iter()
            .map(|r| Ok((r.try_get("status")?, r.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(error)
    }
}
