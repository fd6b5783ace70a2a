//! The authorization server's rows (`OAuthRepo`): signing keys shared by
//! replicas, registered clients, grants (a member's consent to a client),
//! single-use authorization codes and rotating refresh tokens. Codes and
//! refresh tokens are kept only as their sha256, so a database read gives
//! none that works.

use async_trait::async_trait;
use sqlx::Row;

use super::{Store, StoreError, query_error};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthKeyRow {
    pub kid: String,
    /// Base64 PKCS#8 of the P-256 private key.
    pub private_pkcs8: String,
    pub public_x: String,
    pub public_y: String,
    pub created_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClientRow {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub created_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthGrantRow {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    pub member: String,
    pub scopes: Vec<String>,
    pub created_ms: i64,
    pub last_used_ms: i64,
    pub revoked_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthCodeRow {
    pub code_hash: String,
    pub grant_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub expires_ms: i64,
}

/// What presenting a code or a refresh token found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken<T> {
    /// First use, live: the row.
    Fresh(T),
    /// Used before: the grant it belongs to (to be revoked).
    Reused(String),
    /// Unknown or expired.
    Unknown,
}

#[async_trait]
pub trait OAuthRepo: Send + Sync {
    /// Every signing key created after `since_ms`, newest first.
    async fn oauth_keys(&self, since_ms: i64) -> Result<Vec<OAuthKeyRow>, StoreError>;
    async fn add_oauth_key(&self, key: &OAuthKeyRow) -> Result<(), StoreError>;
    /// Deletes keys created before `before_ms`; how many.
    async fn purge_oauth_keys(&self, before_ms: i64) -> Result<u64, StoreError>;
    async fn add_oauth_client(&self, client: &OAuthClientRow) -> Result<(), StoreError>;
    async fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClientRow>, StoreError>;
    /// A new grant and the code that starts it.
    async fn add_oauth_grant(
        &self,
        grant: &OAuthGrantRow,
        code: &OAuthCodeRow,
    ) -> Result<(), StoreError>;
    async fn oauth_grant(&self, id: &str) -> Result<Option<OAuthGrantRow>, StoreError>;
    /// Live grants, of `member` or of everyone, newest first.
    async fn oauth_grants(&self, member: Option<&str>) -> Result<Vec<OAuthGrantRow>, StoreError>;
    /// Revokes a grant (only `member`'s when given); false when none was live.
    async fn revoke_oauth_grant(&self, id: &str, member: Option<&str>) -> Result<bool, StoreError>;
    /// Marks a code used: the first call gets it, later ones its grant.
    async fn take_oauth_code(&self, code_hash: &str) -> Result<Taken<OAuthCodeRow>, StoreError>;
    async fn add_oauth_refresh(
        &self,
        token_hash: &str,
        grant_id: &str,
        expires_ms: i64,
    ) -> Result<(), StoreError>;
    /// Rotates a refresh token: the first presentation gets its grant id,
    /// a later one `Reused`.
    async fn take_oauth_refresh(&self, token_hash: &str) -> Result<Taken<String>, StoreError>;
    /// The grant a refresh token (current or rotated) belongs to.
    async fn oauth_refresh_grant(&self, token_hash: &str) -> Result<Option<String>, StoreError>;
}

fn json_list(row: &sqlx::any::AnyRow, column: &str) -> Result<Vec<String>, StoreError> {
    let text: String = row
        .try_get(column)
        .map_err(query_error("read an OAuth row"))?;
    serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn to_json(list: &[String]) -> String {
    serde_json::to_string(list).unwrap_or_else(|_| "[]".into())
}

const GRANT_COLUMNS: &str =
    "id, client_id, client_name, member, scopes, created_ms, last_used_ms, revoked_ms";

fn grant_from(row: &sqlx::any::AnyRow) -> Result<OAuthGrantRow, StoreError> {
    let read = query_error("read an OAuth grant");
    Ok(OAuthGrantRow {
        id: row.try_get("id").map_err(read)?,
        client_id: row.try_get("client_id").map_err(read)?,
        client_name: row.try_get("client_name").map_err(read)?,
        member: row.try_get("member").map_err(read)?,
        scopes: json_list(row, "scopes")?,
        created_ms: row.try_get("created_ms").map_err(read)?,
        last_used_ms: row.try_get("last_used_ms").map_err(read)?,
        revoked_ms: row.try_get("revoked_ms").map_err(read)?,
    })
}

#[async_trait]
impl OAuthRepo for Store {
    async fn oauth_keys(&self, since_ms: i64) -> Result<Vec<OAuthKeyRow>, StoreError> {
        let read = query_error("read signing keys");
        let rows = sqlx::query(
            "select kid, private_pkcs8, public_x, public_y, created_ms from oauth_keys \
             where created_ms > $1 order by created_ms desc, kid",
        )
        .bind(since_ms)
        .fetch_all(self.pool())
        .await
        .map_err(read)?;
        rows.iter()
            .map(|row| {
                Ok(OAuthKeyRow {
                    kid: row.try_get("kid").map_err(read)?,
                    private_pkcs8: row.try_get("private_pkcs8").map_err(read)?,
                    public_x: row.try_get("public_x").map_err(read)?,
                    public_y: row.try_get("public_y").map_err(read)?,
                    created_ms: row.try_get("created_ms").map_err(read)?,
                })
            })
            .collect()
    }

    async fn add_oauth_key(&self, key: &OAuthKeyRow) -> Result<(), StoreError> {
        sqlx::query(
            "insert into oauth_keys (kid, private_pkcs8, public_x, public_y, created_ms) \
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&key.kid)
        .bind(&key.private_pkcs8)
        .bind(&key.public_x)
        .bind(&key.public_y)
        .bind(key.created_ms)
        .execute(self.writer())
        .await
        .map_err(query_error("add a signing key"))?;
        Ok(())
    }

    async fn purge_oauth_keys(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("delete from oauth_keys where created_ms < $1")
            .bind(before_ms)
            .execute(self.writer())
            .await
            .map_err(query_error("purge signing keys"))?;
        Ok(done.rows_affected())
    }

    async fn add_oauth_client(&self, client: &OAuthClientRow) -> Result<(), StoreError> {
        sqlx::query(
            "insert into oauth_clients (client_id, name, redirect_uris, created_ms) \
             values ($1, $2, $3, $4)",
        )
        .bind(&client.client_id)
        .bind(&client.name)
        .bind(to_json(&client.redirect_uris))
        .bind(client.created_ms)
        .execute(self.writer())
        .await
        .map_err(query_error("register an OAuth client"))?;
        Ok(())
    }

    async fn oauth_client(&self, client_id: &str) -> Result<Option<OAuthClientRow>, StoreError> {
        let read = query_error("read an OAuth client");
        let row = sqlx::query(
            "select client_id, name, redirect_uris, created_ms from oauth_clients \
             where client_id = $1",
        )
        .bind(client_id)
        .fetch_optional(self.pool())
        .await
        .map_err(read)?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(OAuthClientRow {
            client_id: row.try_get("client_id").map_err(read)?,
            name: row.try_get("name").map_err(read)?,
            redirect_uris: json_list(&row, "redirect_uris")?,
            created_ms: row.try_get("created_ms").map_err(read)?,
        }))
    }

    async fn add_oauth_grant(
        &self,
        g: &OAuthGrantRow,
        code: &OAuthCodeRow,
    ) -> Result<(), StoreError> {
        let error = query_error("record an OAuth grant");
        let mut tx = self.writer().begin().await.map_err(error)?;
        sqlx::query(&format!(
            "insert into oauth_grants ({GRANT_COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&g.id)
        .bind(&g.client_id)
        .bind(&g.client_name)
        .bind(&g.member)
        .bind(to_json(&g.scopes))
        .bind(g.created_ms)
        .bind(g.last_used_ms)
        .bind(g.revoked_ms)
        .execute(&mut *tx)
        .await
        .map_err(error)?;
        sqlx::query(
            "insert into oauth_codes (code_hash, grant_id, redirect_uri, challenge, expires_ms) \
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&code.code_hash)
        .bind(&code.grant_id)
        .bind(&code.redirect_uri)
        .bind(&code.challenge)
        .bind(code.expires_ms)
        .execute(&mut *tx)
        .await
        .map_err(error)?;
        tx.commit().await.map_err(error)?;
        Ok(())
    }

    async fn oauth_grant(&self, id: &str) -> Result<Option<OAuthGrantRow>, StoreError> {
        let row = sqlx::query(&format!(
            "select {GRANT_COLUMNS} from oauth_grants where id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await
        .map_err(query_error("read an OAuth grant"))?;
        row.as_ref().map(grant_from).transpose()
    }

    async fn oauth_grants(&self, member: Option<&str>) -> Result<Vec<OAuthGrantRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "select {GRANT_COLUMNS} from oauth_grants where revoked_ms is null \
             and ($1 = '' or member = $1) order by created_ms desc, id limit 500"
        ))
        .bind(member.unwrap_or_default())
        .fetch_all(self.pool())
        .await
        .map_err(query_error("list OAuth grants"))?;
        rows.iter().map(grant_from).collect()
    }

    async fn revoke_oauth_grant(&self, id: &str, member: Option<&str>) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "update oauth_grants set revoked_ms = $1 \
             where id = $2 and revoked_ms is null and ($3 = '' or member = $3)",
        )
        .bind(self.now_ms())
        .bind(id)
        .bind(member.unwrap_or_default())
        .execute(self.writer())
        .await
        .map_err(query_error("revoke an OAuth grant"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn take_oauth_code(&self, code_hash: &str) -> Result<Taken<OAuthCodeRow>, StoreError> {
        let error = query_error("redeem an authorization code");
        let now = self.now_ms();
        let row = sqlx::query(
            "select grant_id, redirect_uri, challenge, expires_ms, used_ms from oauth_codes \
             where code_hash = $1",
        )
        .bind(code_hash)
        .fetch_optional(self.pool())
        .await
        .map_err(error)?;
        let Some(row) = row else {
            return Ok(Taken::Unknown);
        };
        let grant_id: String = row.try_get("grant_id").map_err(error)?;
        // Of two exchanges racing, only one marks the code used.
        let marked = sqlx::query(
            "update oauth_codes set used_ms = $1 where code_hash = $2 and used_ms is null",
        )
        .bind(now)
        .bind(code_hash)
        .execute(self.writer())
        .await
        .map_err(error)?;
        if marked.rows_affected() != 1 {
            return Ok(Taken::Reused(grant_id));
        }
        let expires_ms: i64 = row.try_get("expires_ms").map_err(error)?;
        if expires_ms <= now {
            return Ok(Taken::Unknown);
        }
        Ok(Taken::Fresh(OAuthCodeRow {
            code_hash: code_hash.to_owned(),
            grant_id,
            redirect_uri: row.try_get("redirect_uri").map_err(error)?,
            challenge: row.try_get("challenge").map_err(error)?,
            expires_ms,
        }))
    }

    async fn add_oauth_refresh(
        &self,
        token_hash: &str,
        grant_id: &str,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        let error = query_error("record a refresh token");
        sqlx::query(
            "insert into oauth_refresh (token_hash, grant_id, expires_ms) values ($1, $2, $3)",
        )
        .bind(token_hash)
        .bind(grant_id)
        .bind(expires_ms)
        .execute(self.writer())
        .await
        .map_err(error)?;
        sqlx::query("update oauth_grants set last_used_ms = $1 where id = $2")
            .bind(self.now_ms())
            .bind(grant_id)
            .execute(self.writer())
            .await
            .map_err(error)?;
        Ok(())
    }

    async fn take_oauth_refresh(&self, token_hash: &str) -> Result<Taken<String>, StoreError> {
        let error = query_error("rotate a refresh token");
        let now = self.now_ms();
        let row =
            sqlx::query("select grant_id, expires_ms from oauth_refresh where token_hash = $1")
                .bind(token_hash)
                .fetch_optional(self.pool())
                .await
                .map_err(error)?;
        let Some(row) = row else {
            return Ok(Taken::Unknown);
        };
        let grant_id: String = row.try_get("grant_id").map_err(error)?;
        let marked = sqlx::query(
            "update oauth_refresh set rotated_ms = $1 where token_hash = $2 and rotated_ms is null",
        )
        .bind(now)
        .bind(token_hash)
        .execute(self.writer())
        .await
        .map_err(error)?;
        if marked.rows_affected() != 1 {
            return Ok(Taken::Reused(grant_id));
        }
        let expires_ms: i64 = row.try_get("expires_ms").map_err(error)?;
        if expires_ms <= now {
            return Ok(Taken::Unknown);
        }
        Ok(Taken::Fresh(grant_id))
    }

    async fn oauth_refresh_grant(&self, token_hash: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("select grant_id from oauth_refresh where token_hash = $1")
            .bind(token_hash)
            .fetch_optional(self.pool())
            .await
            .map_err(query_error("look up a refresh token"))?;
        row.map(|r| r.try_get("grant_id"))
            .transpose()
            .map_err(query_error("look up a refresh token"))
    }
}
