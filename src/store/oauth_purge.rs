//! Expired rows of the authorization server (`oauth.rs`) deleted by the
//! purge loop: codes an hour after their expiry, refresh tokens at theirs,
//! revoked grants (with what is left of their tokens) after a day, and
//! registered clients that never got a grant after a week; and the count
//! of recent registrations that bounds `/register`.

use super::{Store, StoreError, query_error};

/// How long a revoked grant's row stays (the portal shows only live ones).
const REVOKED_KEPT_MS: i64 = 24 * 3600 * 1000;
/// How long an expired code's row stays.
const CODE_KEPT_MS: i64 = 3600 * 1000;
/// How long a registered client that never got a grant stays.
const UNUSED_CLIENT_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

impl Store {
    /// Deletes what no request can use any more; how many rows.
    pub async fn purge_oauth(&self) -> Result<u64, StoreError> {
        let now = self.now_ms();
        let error = query_error("purge the authorization server's rows");
        let mut deleted = 0;
        for (sql, at) in [
            (
                "delete from oauth_codes where expires_ms < $1",
                now - CODE_KEPT_MS,
            ),
            ("delete from oauth_refresh where expires_ms < $1", now),
            (
                "delete from oauth_refresh where grant_id in \
                 (select id from oauth_grants where revoked_ms < $1)",
                now - REVOKED_KEPT_MS,
            ),
            (
                "delete from oauth_codes where grant_id in \
                 (select id from oauth_grants where revoked_ms < $1)",
                now - REVOKED_KEPT_MS,
            ),
            (
                "delete from oauth_grants where revoked_ms < $1",
                now - REVOKED_KEPT_MS,
            ),
            (
                "delete from oauth_clients where created_ms < $1 and client_id not in \
                 (select client_id from oauth_grants)",
                now - UNUSED_CLIENT_KEPT_MS,
            ),
        ] {
            let done = sqlx::query(sql)
                .bind(at)
                .execute(self.writer())
                .await
                .map_err(error)?;
            deleted += done.rows_affected();
        }
        Ok(deleted)
    }

    /// How many clients registered since `since_ms` count against the
    /// registration cap: those that got a grant, and those registered since
    /// `fresh_ms` (still in the middle of a sign-in). A flood of clients
    /// never used then stops counting within minutes, not an hour.
    pub async fn oauth_clients_counted(
        &self,
        since_ms: i64,
        fresh_ms: i64,
    ) -> Result<i64, StoreError> {
        let row = sqlx::query(
            "select count(*) as n from oauth_clients where created_ms >= $1 and \
             (created_ms >= $2 or client_id in (select client_id from oauth_grants))",
        )
        .bind(since_ms)
        .bind(fresh_ms)
        .fetch_one(self.pool())
        .await
        .map_err(query_error("count OAuth clients"))?;
        sqlx::Row::try_get(&row, "n").map_err(query_error("count OAuth clients"))
    }

    /// How many clients registered since `since_ms`.
    pub async fn oauth_clients_since(&self, since_ms: i64) -> Result<i64, StoreError> {
        let row = sqlx::query("select count(*) as n from oauth_clients where created_ms >= $1")
            .bind(since_ms)
            .fetch_one(self.pool())
            .await
            .map_err(query_error("count OAuth clients"))?;
        sqlx::Row::try_get(&row, "n").map_err(query_error("count OAuth clients"))
    }
}
