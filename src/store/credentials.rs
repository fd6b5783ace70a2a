//! Members' credential values (`member_credentials`, issue 29), as sealed
//! rows: this file never sees a value in the clear; `vault.rs` seals and
//! opens them.

use async_trait::async_trait;
use sqlx::Row;

use super::{Store, StoreError, query_error};

/// One member's sealed value of one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedRow {
    /// Which key sealed it (a digest of the key).
    pub key_id: String,
    /// base64 of the 96-bit nonce.
    pub nonce: String,
    /// base64 of the ciphertext and its tag.
    pub ciphertext: String,
    pub updated_at: i64,
}

/// The credential rows' contract; both backends pass the same contract
/// test (`tests/api/credentials_store.rs`).
///
/// - `put_credential` sets or replaces the member's row of `slot`.
/// - `credential` reads it back; `None` when the member set none.
/// - `delete_credential` is true when a row was there.
/// - `credential_slots` lists the member's slots and when each was set,
///   ordered by slot; never another member's.
/// - `credential_owners` lists up to `limit` owners of a row of `slot`,
///   the most recently set first (names only, never a value).
#[async_trait]
pub trait CredentialRepo: Send + Sync {
    async fn put_credential(
        &self,
        owner: &str,
        slot: &str,
        row: &SealedRow,
    ) -> Result<(), StoreError>;
    async fn credential(&self, owner: &str, slot: &str) -> Result<Option<SealedRow>, StoreError>;
    async fn delete_credential(&self, owner: &str, slot: &str) -> Result<bool, StoreError>;
    async fn credential_slots(&self, owner: &str) -> Result<Vec<(String, i64)>, StoreError>;
    async fn credential_owners(&self, slot: &str, limit: usize) -> Result<Vec<String>, StoreError>;
}

#[async_trait]
impl CredentialRepo for Store {
    async fn put_credential(
        &self,
        owner: &str,
        slot: &str,
        row: &SealedRow,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "insert into member_credentials (owner, slot, key_id, nonce, ciphertext, updated_at) \
             values ($1, $2, $3, $4, $5, $6) on conflict (owner, slot) do update set \
             key_id = excluded.key_id, nonce = excluded.nonce, \
             ciphertext = excluded.ciphertext, updated_at = excluded.updated_at",
        )
        .bind(owner)
        .bind(slot)
        .bind(&row.key_id)
        .bind(&row.nonce)
        .bind(&row.ciphertext)
        .bind(row.updated_at)
        .execute(self.writer())
        .await
        .map_err(query_error("store a member's credential"))?;
        Ok(())
    }

    async fn credential(&self, owner: &str, slot: &str) -> Result<Option<SealedRow>, StoreError> {
        let error = query_error("read a member's credential");
        let row = sqlx::query(
            "select key_id, nonce, ciphertext, updated_at from member_credentials \
             where owner = $1 and slot = $2",
        )
        .bind(owner)
        .bind(slot)
        .fetch_optional(self.pool())
        .await
        .map_err(error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let read = || -> Result<SealedRow, sqlx::Error> {
            Ok(SealedRow {
                key_id: row.try_get("key_id")?,
                nonce: row.try_get("nonce")?,
                ciphertext: row.try_get("ciphertext")?,
                updated_at: row.try_get("updated_at")?,
            })
        };
        read().map(Some).map_err(error)
    }

    async fn delete_credential(&self, owner: &str, slot: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("delete from member_credentials where owner = $1 and slot = $2")
            .bind(owner)
            .bind(slot)
            .execute(self.writer())
            .await
            .map_err(query_error("delete a member's credential"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn credential_slots(&self, owner: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let error = query_error("list a member's credentials");
        let rows = sqlx::query(
            "select slot, updated_at from member_credentials where owner = $1 order by slot",
        )
        .bind(owner)
        .fetch_all(self.pool())
        .await
        .map_err(error)?;
        rows.iter()
            .map(|r| Ok((r.try_get("slot")?, r.try_get("updated_at")?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(error)
    }

    async fn credential_owners(&self, slot: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let error = query_error("list a slot's owners");
        let rows = sqlx::query(
            "select owner from member_credentials where slot = $1 \
             order by updated_at desc, owner limit $2",
        )
        .bind(slot)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await
        .map_err(error)?;
        rows.iter()
            .map(|r| r.try_get("owner"))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(error)
    }
}
