//! Expired rows of the authorization server (`oauth.rs`) deleted by the
//! purge loop: codes an hour after their expiry, refresh tokens at theirs,
//! and revoked grants (with what is left of their tokens) after a day.

use super::{Store, StoreError, query_error};

/// How long a revoked grant's row stays (the portal shows only live ones).
const REVOKED_KEPT_MS: i64 = 24 * 3600 * 1000;
/// How long an expired code's row stays.
const CODE_KEPT_MS: i64 = 3600 * 1000;

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
        ] {
            let done = sqlx::query(sql)
                .bind(at)
                .execute(self.pool())
                .await
                .map_err(error)?;
            deleted += done.rows_affected();
        }
        Ok(deleted)
    }
}
