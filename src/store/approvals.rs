//! Approval rows (issue 65 part 2): a call of a tool with `approval`,
//! parked until a member of its group decides. The row holds the exact
//! arguments the call runs with, so what the approver read is what runs,
//! and any replica sees the request and the decision.

use async_trait::async_trait;
use sqlx::Row;

use super::{Store, StoreError, query_error};

/// One request for approval. `arguments` is the JSON object the call runs
/// with when approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRow {
    pub id: String,
    pub requester: String,
    pub tool: String,
    pub arguments: String,
    pub args_digest: String,
    pub group: String,
    /// `pending`, `approved`, `denied`, `expired`, `withdrawn` or `used`.
    pub status: String,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub decided_ms: Option<i64>,
}

impl ApprovalRow {
    /// Still waiting for a decision at `now_ms`.
    pub fn is_open(&self, now_ms: i64) -> bool {
        self.status == "pending" && self.expires_ms > now_ms
    }
}

/// What became of a decision asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Recorded: the parked call reads it.
    Recorded,
    /// The decider asked for the call themselves.
    OwnRequest,
    /// Decided, expired or withdrawn already; its status as it is.
    Closed(String),
    Unknown,
}

/// The approval store's contract; both backends pass the same contract test
/// (`tests/api/approvals_store.rs`).
///
/// - `approval` reads a row by id.
/// - `open_approval` is `requester`'s latest request for `tool` with
///   `args_digest` that is pending or approved and not yet used, and not
///   expired: a call repeated after a restart joins it instead of asking
///   again.
/// - `decide_approval` records `decider`'s approval or denial of a pending,
///   unexpired request, once, and never the requester's own.
/// - `settle_approval` moves a row from `from` to `to` once (an approval
///   used by the one call it lets run; a pending one expired or withdrawn);
///   false when it was not in `from`.
/// - `approvals_seen_by` lists the newest rows a member sees: those of
///   `groups` and their own requests, at most `limit`.
/// - `purge_approvals` deletes the rows that expired before `before_ms`.
#[async_trait]
pub trait ApprovalRepo: Send + Sync {
    async fn create_approval(&self, row: &ApprovalRow) -> Result<(), StoreError>;
    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError>;
    async fn open_approval(
        &self,
        requester: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<Option<ApprovalRow>, StoreError>;
    async fn decide_approval(
        &self,
        id: &str,
        decider: &str,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<Decision, StoreError>;
    async fn settle_approval(&self, id: &str, from: &str, to: &str) -> Result<bool, StoreError>;
    async fn approvals_seen_by(
        &self,
        member: &str,
        groups: &[String],
        limit: i64,
    ) -> Result<Vec<ApprovalRow>, StoreError>;
    async fn purge_approvals(&self, before_ms: i64) -> Result<u64, StoreError>;
}

const COLUMNS: &str = "id, requester, tool, arguments, args_digest, approver_group, status, \
    decided_by, reason, created_ms, expires_ms, decided_ms";

/// Most groups a listing asks about (a member in thousands of groups sees
/// the requests of the first ones).
const MAX_GROUPS: usize = 64;

fn from_row(row: &sqlx::any::AnyRow) -> Result<ApprovalRow, sqlx::Error> {
    Ok(ApprovalRow {
        id: row.try_get("id")?,
        requester: row.try_get("requester")?,
        tool: row.try_get("tool")?,
        arguments: row.try_get("arguments")?,
        args_digest: row.try_get("args_digest")?,
        group: row.try_get("approver_group")?,
        status: row.try_get("status")?,
        decided_by: row.try_get("decided_by")?,
        reason: row.try_get("reason")?,
        created_ms: row.try_get("created_ms")?,
        expires_ms: row.try_get("expires_ms")?,
        decided_ms: row.try_get("decided_ms")?,
    })
}

#[async_trait]
impl ApprovalRepo for Store {
    async fn create_approval(&self, row: &ApprovalRow) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "insert into approvals ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12)"
        ))
        .bind(&row.id)
        .bind(&row.requester)
        .bind(&row.tool)
        .bind(&row.arguments)
        .bind(&row.args_digest)
        .bind(&row.group)
        .bind(&row.status)
        .bind(row.decided_by.clone())
        .bind(row.reason.clone())
        .bind(row.created_ms)
        .bind(row.expires_ms)
        .bind(row.decided_ms)
        .execute(self.writer())
        .await
        .map_err(query_error("record a request for approval"))?;
        Ok(())
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        let error = query_error("read a request for approval");
        let row = sqlx::query(&format!("select {COLUMNS} from approvals where id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(error)?;
        row.map(|r| from_row(&r)).transpose().map_err(error)
    }

    async fn open_approval(
        &self,
        requester: &str,
        tool: &str,
        args_digest: &str,
    ) -> Result<Option<ApprovalRow>, StoreError> {
        let error = query_error("find an open request for approval");
        let row = sqlx::query(&format!(
            "select {COLUMNS} from approvals where requester = $1 and tool = $2 \
             and args_digest = $3 and status in ('pending', 'approved') and expires_ms > $4 \
             order by created_ms desc limit 1"
        ))
        .bind(requester)
        .bind(tool)
        .bind(args_digest)
        .bind(self.now_ms())
        .fetch_optional(self.pool())
        .await
        .map_err(error)?;
        row.map(|r| from_row(&r)).transpose().map_err(error)
    }

    async fn decide_approval(
        &self,
        id: &str,
        decider: &str,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<Decision, StoreError> {
        let now = self.now_ms();
        let status = if approve { "approved" } else { "denied" };
        // One statement: two approvers at once, or a decision racing the
        // expiry, leave exactly one outcome.
        let done = sqlx::query(
            "update approvals set status = $1, decided_by = $2, reason = $3, decided_ms = $4 \
             where id = $5 and status = 'pending' and expires_ms > $4 and requester <> $2",
        )
        .bind(status)
        .bind(decider)
        .bind(reason)
        .bind(now)
        .bind(id)
        .execute(self.writer())
        .await
        .map_err(query_error("record a decision on a request for approval"))?;
        if done.rows_affected() > 0 {
            return Ok(Decision::Recorded);
        }
        Ok(match self.approval(id).await? {
            None => Decision::Unknown,
            Some(row) if row.requester == decider => Decision::OwnRequest,
            Some(row) if row.status == "pending" => Decision::Closed("expired".into()),
            Some(row) => Decision::Closed(row.status),
        })
    }

    async fn settle_approval(&self, id: &str, from: &str, to: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "update approvals set status = $1, decided_ms = coalesce(decided_ms, $2) \
             where id = $3 and status = $4",
        )
        .bind(to)
        .bind(self.now_ms())
        .bind(id)
        .bind(from)
        .execute(self.writer())
        .await
        .map_err(query_error("settle a request for approval"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn approvals_seen_by(
        &self,
        member: &str,
        groups: &[String],
        limit: i64,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        let error = query_error("list requests for approval");
        let groups = &groups[..groups.len().min(MAX_GROUPS)];
        let placeholders: Vec<String> = (0..groups.len()).map(|i| format!("${}", i + 3)).collect();
        let in_groups = if groups.is_empty() {
            String::new()
        } else {
            format!(" or approver_group in ({})", placeholders.join(", "))
        };
        let sql = format!(
            "select {COLUMNS} from approvals where requester = $1{in_groups} \
             order by created_ms desc, id desc limit $2"
        );
        let mut query = sqlx::query(&sql).bind(member).bind(limit);
        for group in groups {
            query = query.bind(group);
        }
        let rows = query.fetch_all(self.pool()).await.map_err(error)?;
        rows.iter()
            .map(from_row)
            .collect::<Result<_, _>>()
            .map_err(error)
    }

    async fn purge_approvals(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("delete from approvals where expires_ms < $1")
            .bind(before_ms)
            .execute(self.writer())
            .await
            .map_err(query_error("purge old requests for approval"))?;
        Ok(done.rows_affected())
    }
}
