//! The counters behind quotas shared by replicas (issue 64). Each replica
//! takes blocks of a key's quota for one window and admits from its block
//! without asking the database again (`http/lease.rs`); this file is only
//! the shared count.

use async_trait::async_trait;
use sqlx::Row;

use super::{Store, StoreError, query_error};

/// One counter per (key, window), shared by every replica on the database.
///
/// Contract (`tests/api/shared_quotas.rs`, on SQLite and PostgreSQL):
/// - `take_quota` grants at most `want` of the `limit` a key has in the
///   window starting at `window_ms`, and never more in total across every
///   caller, however many take at once; 0 once the window is spent. Another
///   key or window has a count of its own. Asking for 0 only checks that the
///   database answers.
/// - `purge_quotas` deletes the windows that started before `before_ms`.
#[async_trait]
pub trait QuotaRepo: Send + Sync {
    async fn take_quota(
        &self,
        key: &str,
        window_ms: i64,
        limit: i64,
        want: i64,
    ) -> Result<i64, StoreError>;
    async fn purge_quotas(&self, before_ms: i64) -> Result<u64, StoreError>;
}

#[async_trait]
impl QuotaRepo for Store {
    async fn take_quota(
        &self,
        key: &str,
        window_ms: i64,
        limit: i64,
        want: i64,
    ) -> Result<i64, StoreError> {
        // One statement, so concurrent takers queue on the row's lock and
        // each sees the count its own addition made. The count goes past
        // the limit (what was asked, not granted); what this take was
        // granted follows from the count before it.
        let row = sqlx::query(
            "insert into quota_windows (key, window_ms, used) values ($1, $2, $3) \
             on conflict (key, window_ms) do update set used = quota_windows.used + excluded.used \
             returning used",
        )
        .bind(key)
        .bind(window_ms)
        .bind(want)
        .fetch_one(self.writer())
        .await
        .map_err(query_error("take a block of a shared quota"))?;
        let used: i64 = row
            .try_get("used")
            .map_err(query_error("take a block of a shared quota"))?;
        Ok(granted(used, limit, want))
    }

    async fn purge_quotas(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("delete from quota_windows where window_ms < $1")
            .bind(before_ms)
            .execute(self.writer())
            .await
            .map_err(query_error("purge old quota windows"))?;
        Ok(done.rows_affected())
    }
}

/// What a take of `want` got when the count after it is `used`.
fn granted(used: i64, limit: i64, want: i64) -> i64 {
    (limit - (used - want)).clamp(0, want.max(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_take_gets_what_was_left_before_it() {
        // (count after the take, limit, asked, granted)
        for (used, limit, want, expect) in [
            (10, 60, 10, 10),
            (65, 60, 10, 5),
            (80, 60, 10, 0),
            (0, 60, 0, 0),
        ] {
            assert_eq!(super::granted(used, limit, want), expect, "{used} {want}");
        }
    }
}
