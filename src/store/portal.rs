//! The portal's browser sessions (`PortalSessions`) and the store queries
//! only the portal asks: a member's own tokens, revoked only by their owner,
//! and the audit trail filtered.
//!
//! A session row is keyed by the sha256 of its cookie value, so a database
//! read gives no usable cookie. A row starts before sign-in, holding the
//! login's `state`, PKCE verifier and nonce for that browser only; finishing
//! the login takes them exactly once.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::{Store, StoreError, query_error};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalSession {
    pub id_hash: String,
    /// Empty until signed in.
    pub member: String,
    pub groups: Vec<String>,
    /// What else sign-in read from the ID token.
    pub claims: SignInClaims,
    pub csrf: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
    pub expires_ms: i64,
}

/// What sign-in read from the ID token besides the member and the groups:
/// for the grants that match on other claims, and to tell a member whose
/// groups grant nothing what the token held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInClaims {
    /// The string values of the claims the grants match on (`email` only
    /// when verified).
    #[serde(default)]
    pub values: BTreeMap<String, Vec<String>>,
    /// The names of the token's claims, never their values.
    #[serde(default)]
    pub names: Vec<String>,
    /// The claims the provider sent elsewhere (`_claim_names`, OpenID
    /// Connect's distributed claims: Entra ID's groups overage).
    #[serde(default)]
    pub distributed: Vec<String>,
}

/// A started login's secrets, handed back once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingLogin {
    pub verifier: String,
    pub nonce: String,
}

/// Browser sessions of the portal. `idle_ms` is how long an unused session
/// lives; every lookup refuses a session past either expiry.
#[async_trait]
pub trait PortalSessions: Send + Sync {
    /// Inserts a session (signed in or not); `login` = (state, verifier, nonce).
    async fn create_portal_session(
        &self,
        session: &PortalSession,
        login: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError>;
    /// The live session, its last use moved to now.
    async fn portal_session(
        &self,
        id_hash: &str,
        idle_ms: i64,
    ) -> Result<Option<PortalSession>, StoreError>;
    /// The login secrets if `state` is this session's pending one; the
    /// second call for the same login gets none.
    async fn take_login(
        &self,
        id_hash: &str,
        state: &str,
    ) -> Result<Option<PendingLogin>, StoreError>;
    /// Ends a session (logout); false when there was none.
    async fn end_portal_session(&self, id_hash: &str) -> Result<bool, StoreError>;
    /// Deletes expired sessions; how many.
    async fn purge_portal_sessions(&self, idle_ms: i64) -> Result<u64, StoreError>;
}

const COLUMNS: &str = "id_hash, member, groups, claims, csrf, created_ms, last_seen_ms, expires_ms";

fn from_row(row: &sqlx::any::AnyRow) -> Result<PortalSession, StoreError> {
    let read = query_error("read a portal session");
    let groups: String = row.try_get("groups").map_err(read)?;
    let claims: String = row.try_get("claims").map_err(read)?;
    let corrupt = |e: serde_json::Error| StoreError::Corrupt(e.to_string());
    Ok(PortalSession {
        id_hash: row.try_get("id_hash").map_err(read)?,
        member: row.try_get("member").map_err(read)?,
        groups: serde_json::from_str(&groups).map_err(corrupt)?,
        claims: serde_json::from_str(&claims).map_err(corrupt)?,
        csrf: row.try_get("csrf").map_err(read)?,
        created_ms: row.try_get("created_ms").map_err(read)?,
        last_seen_ms: row.try_get("last_seen_ms").map_err(read)?,
        expires_ms: row.try_get("expires_ms").map_err(read)?,
    })
}

#[async_trait]
impl PortalSessions for Store {
    async fn create_portal_session(
        &self,
        s: &PortalSession,
        login: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        let (state, verifier, nonce) = match login {
            Some((a, b, c)) => (Some(a), Some(b), Some(c)),
            None => (None, None, None),
        };
        sqlx::query(&format!(
            "insert into portal_sessions ({COLUMNS}, login_state, login_verifier, login_nonce) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .bind(&s.id_hash)
        .bind(&s.member)
        .bind(serde_json::to_string(&s.groups).unwrap_or_else(|_| "[]".into()))
        .bind(serde_json::to_string(&s.claims).unwrap_or_else(|_| "{}".into()))
        .bind(&s.csrf)
        .bind(s.created_ms)
        .bind(s.last_seen_ms)
        .bind(s.expires_ms)
        .bind(state)
        .bind(verifier)
        .bind(nonce)
        .execute(self.writer())
        .await
        .map_err(query_error("create a portal session"))?;
        Ok(())
    }

    async fn portal_session(
        &self,
        id_hash: &str,
        idle_ms: i64,
    ) -> Result<Option<PortalSession>, StoreError> {
        let now = self.now_ms();
        let touched = sqlx::query(
            "update portal_sessions set last_seen_ms = $1 \
             where id_hash = $2 and expires_ms > $1 and last_seen_ms > $3",
        )
        .bind(now)
        .bind(id_hash)
        .bind(now - idle_ms)
        .execute(self.writer())
        .await
        .map_err(query_error("look up a portal session"))?;
        if touched.rows_affected() == 0 {
            return Ok(None);
        }
        let row = sqlx::query(&format!(
            "select {COLUMNS} from portal_sessions where id_hash = $1"
        ))
        .bind(id_hash)
        .fetch_optional(self.pool())
        .await
        .map_err(query_error("look up a portal session"))?;
        row.as_ref().map(from_row).transpose()
    }

    async fn take_login(
        &self,
        id_hash: &str,
        state: &str,
    ) -> Result<Option<PendingLogin>, StoreError> {
        let error = query_error("finish a portal login");
        let row = sqlx::query(
            "select login_verifier, login_nonce from portal_sessions \
             where id_hash = $1 and login_state = $2 and expires_ms > $3",
        )
        .bind(id_hash)
        .bind(state)
        .bind(self.now_ms())
        .fetch_optional(self.pool())
        .await
        .map_err(error)?;
        let Some(row) = row else { return Ok(None) };
        // Taken once: of two callbacks racing, only one clears the state.
        let cleared = sqlx::query(
            "update portal_sessions set login_state = null, login_verifier = null, \
             login_nonce = null where id_hash = $1 and login_state = $2",
        )
        .bind(id_hash)
        .bind(state)
        .execute(self.writer())
        .await
        .map_err(error)?;
        if cleared.rows_affected() != 1 {
            return Ok(None);
        }
        Ok(Some(PendingLogin {
            verifier: row.try_get("login_verifier").map_err(error)?,
            nonce: row.try_get("login_nonce").map_err(error)?,
        }))
    }

    async fn end_portal_session(&self, id_hash: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("delete from portal_sessions where id_hash = $1")
            .bind(id_hash)
            .execute(self.writer())
            .await
            .map_err(query_error("end a portal session"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge_portal_sessions(&self, idle_ms: i64) -> Result<u64, StoreError> {
        let now = self.now_ms();
        let done =
            sqlx::query("delete from portal_sessions where expires_ms <= $1 or last_seen_ms <= $2")
                .bind(now)
                .bind(now - idle_ms)
                .execute(self.writer())
                .await
                .map_err(query_error("purge portal sessions"))?;
        Ok(done.rows_affected())
    }
}

impl Store {
    /// Revokes `id` only if `member` owns it: the ownership check is the
    /// query's, so no page can revoke another member's token.
    pub async fn revoke_own_token(&self, id: &str, member: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "update tokens set revoked_ms = $1 \
             where id = $2 and user_name = $3 and revoked_ms is null",
        )
        .bind(self.now_ms())
        .bind(id)
        .bind(member)
        .execute(self.writer())
        .await
        .map_err(query_error("revoke a token"))?;
        Ok(done.rows_affected() > 0)
    }
}
