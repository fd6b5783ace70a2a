//! Server-wide values kept in the database.

use sqlx::Row;

use super::{Store, StoreError, query_error};

impl Store {
    /// The value of `key`, inserting `make()` first if there is none. Safe
    /// against a concurrent first start: the first insert wins, everyone
    /// reads the winner.
    pub async fn setting_or_insert(
        &self,
        key: &str,
        make: impl FnOnce() -> String,
    ) -> Result<String, StoreError> {
        sqlx::query("insert into settings (key, value, created_ms) values ($1, $2, $3) on conflict (key) do nothing")
            .bind(key)
            .bind(make())
            .bind(self.now_ms())
            .execute(self.writer())
            .await
            .map_err(query_error("save a setting"))?;
        let row = sqlx::query("select value from settings where key = $1")
            .bind(key)
            .fetch_one(self.pool())
            .await
            .map_err(query_error("read a setting"))?;
        row.try_get("value").map_err(query_error("read a setting"))
    }

    /// Sets `key` to `value`, whatever it was.
    pub async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query("insert into settings (key, value, created_ms) values ($1, $2, $3) on conflict (key) do update set value = excluded.value, created_ms = excluded.created_ms")
            .bind(key)
            .bind(value)
            .bind(self.now_ms())
            .execute(self.writer())
            .await
            .map_err(query_error("save a setting"))?;
        Ok(())
    }

    /// The value of `key`, if set.
    pub async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("select value from settings where key = $1")
            .bind(key)
            .fetch_optional(self.pool())
            .await
            .map_err(query_error("read a setting"))?;
        row.map(|row| row.try_get("value"))
            .transpose()
            .map_err(query_error("read a setting"))
    }
}

/// The setting that holds the tools of `upstream` a running server does
/// not offer (bad names, clashes), as JSON: `[{"tool": ..., "why": ...}]`.
pub fn dropped_tools_key(upstream: &str) -> String {
    format!("upstream.dropped.{upstream}")
}
