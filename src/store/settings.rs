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
}
