//! Personal access token rows. The secret itself is never stored.

use sqlx::Row;

use super::{Store, StoreError, query_error};

#[derive(Debug, Clone, PartialEq)]
pub struct TokenRow {
    pub id: String,
    pub user_name: String,
    pub label: String,
    pub scopes: Vec<String>,
    pub secret_hash: String,
    pub created_ms: i64,
    pub expires_ms: Option<i64>,
    pub last_used_ms: Option<i64>,
    pub revoked_ms: Option<i64>,
}

const COLUMNS: &str =
    "id, user_name, label, scopes, secret_hash, created_ms, expires_ms, last_used_ms, revoked_ms";

fn from_row(row: &sqlx::any::AnyRow) -> Result<TokenRow, StoreError> {
    let read = query_error("read a token row");
    let scopes: String = row.try_get("scopes").map_err(read)?;
    Ok(TokenRow {
        id: row.try_get("id").map_err(query_error("read a token row"))?,
        user_name: row
            .try_get("user_name")
            .map_err(query_error("read a token row"))?,
        label: row
            .try_get("label")
            .map_err(query_error("read a token row"))?,
        scopes: serde_json::from_str(&scopes).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        secret_hash: row
            .try_get("secret_hash")
            .map_err(query_error("read a token row"))?,
        created_ms: row
            .try_get("created_ms")
            .map_err(query_error("read a token row"))?,
        expires_ms: row
            .try_get("expires_ms")
            .map_err(query_error("read a token row"))?,
        last_used_ms: row
            .try_get("last_used_ms")
            .map_err(query_error("read a token row"))?,
        revoked_ms: row
            .try_get("revoked_ms")
            .map_err(query_error("read a token row"))?,
    })
}

impl Store {
    pub async fn insert_token(&self, token: &TokenRow) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "insert into tokens ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(&token.id)
        .bind(&token.user_name)
        .bind(&token.label)
        .bind(serde_json::to_string(&token.scopes).unwrap_or_else(|_| "[]".into()))
        .bind(&token.secret_hash)
        .bind(token.created_ms)
        .bind(token.expires_ms)
        .bind(token.last_used_ms)
        .bind(token.revoked_ms)
        .execute(self.writer())
        .await
        .map_err(query_error("create a token"))?;
        Ok(())
    }

    pub async fn token(&self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        let row = sqlx::query(&format!("select {COLUMNS} from tokens where id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(query_error("look up a token"))?;
        row.as_ref().map(from_row).transpose()
    }

    pub async fn tokens(&self, user: Option<&str>) -> Result<Vec<TokenRow>, StoreError> {
        let with_user =
            format!("select {COLUMNS} from tokens where user_name = $1 order by created_ms, id");
        let everyone = format!("select {COLUMNS} from tokens order by created_ms, id");
        let query = match user {
            Some(user) => sqlx::query(&with_user).bind(user.to_owned()),
            None => sqlx::query(&everyone),
        };
        let rows = query
            .fetch_all(self.pool())
            .await
            .map_err(query_error("list tokens"))?;
        rows.iter().map(from_row).collect()
    }

    /// Marks a token revoked; false if it does not exist or was revoked already.
    pub async fn revoke_token(&self, id: &str) -> Result<bool, StoreError> {
        let done =
            sqlx::query("update tokens set revoked_ms = $1 where id = $2 and revoked_ms is null")
                .bind(self.now_ms())
                .bind(id)
                .execute(self.writer())
                .await
                .map_err(query_error("revoke a token"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Ids of tokens revoked at or after `since_ms`.
    pub async fn revoked_since(&self, since_ms: i64) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query("select id from tokens where revoked_ms >= $1")
            .bind(since_ms)
            .fetch_all(self.pool())
            .await
            .map_err(query_error("check token revocations"))?;
        rows.iter()
            .map(|r| {
                r.try_get("id")
                    .map_err(query_error("check token revocations"))
            })
            .collect()
    }

    pub async fn mark_token_used(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("update tokens set last_used_ms = $1 where id = $2")
            .bind(self.now_ms())
            .bind(id)
            .execute(self.writer())
            .await
            .map_err(query_error("record token use"))?;
        Ok(())
    }
}
