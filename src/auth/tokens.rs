//! Personal access tokens: `tg_<id>_<secret>`. The id finds the row, the
//! secret is checked against its SHA-256 in constant time. Verified tokens
//! are cached (bounded, short TTL) so a request does not cost a database
//! round trip; a revocation evicts the entry here and, via the change bus,
//! on every replica.

use std::time::Duration;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AuthError;
use crate::{
    registry::Caller,
    store::{Store, StoreError, TokenRow},
};

const PREFIX: &str = "tg_";

pub struct PersonalTokens {
    store: Store,
    cache: moka::future::Cache<String, Option<TokenRow>>,
    /// Tokens whose `last_used` was written recently; bounds those writes.
    used: moka::future::Cache<String, ()>,
}

/// A freshly created token: the only time the secret exists in the clear.
pub struct NewToken {
    pub token: String,
    pub row: TokenRow,
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Splits `tg_<id>_<secret>`; anything else is not a personal token.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let ok = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (ok(id, 12) && ok(secret, 64)).then_some((id, secret))
}

impl PersonalTokens {
    pub fn new(store: Store, cache_ttl: Duration) -> Self {
        Self {
            store,
            cache: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(cache_ttl)
                .build(),
            used: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(60))
                .build(),
        }
    }

    pub async fn create(
        &self,
        user: &str,
        label: &str,
        scopes: Vec<String>,
        expires_in: Option<Duration>,
    ) -> Result<NewToken, StoreError> {
        let id = hex::encode(rand::random::<[u8; 6]>());
        let secret = hex::encode(rand::random::<[u8; 32]>());
        let now = self.store.now_ms();
        let row = TokenRow {
            id: id.clone(),
            user_name: user.to_owned(),
            label: label.to_owned(),
            scopes,
            secret_hash: hash(&secret),
            created_ms: now,
            expires_ms: expires_in.map(|d| now + d.as_millis() as i64),
            last_used_ms: None,
            revoked_ms: None,
        };
        self.store.insert_token(&row).await?;
        Ok(NewToken {
            token: format!("{PREFIX}{id}_{secret}"),
            row,
        })
    }

    /// The caller a presented personal token stands for.
    pub async fn verify(&self, id: &str, secret: &str) -> Result<Caller, AuthError> {
        let store = self.store.clone();
        let key = id.to_owned();
        let row = self
            .cache
            .try_get_with(key.clone(), async move { store.token(&key).await })
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?;
        let Some(row) = row else {
            return Err(AuthError::InvalidToken("unknown token"));
        };
        if !bool::from(hash(secret).as_bytes().ct_eq(row.secret_hash.as_bytes())) {
            return Err(AuthError::InvalidToken("unknown token"));
        }
        if row.revoked_ms.is_some() {
            return Err(AuthError::InvalidToken("the token was revoked"));
        }
        if row.expires_ms.is_some_and(|at| at <= self.store.now_ms()) {
            return Err(AuthError::InvalidToken("the token expired"));
        }
        self.note_use(&row.id).await;
        Ok(Caller {
            user: row.user_name,
            scopes: row.scopes,
            token_id: Some(row.id),
            claims: Default::default(),
        })
    }

    /// Records `last_used` at most once a minute per token, off the request path.
    async fn note_use(&self, id: &str) {
        if self.used.contains_key(id) {
            return;
        }
        self.used.insert(id.to_owned(), ()).await;
        let store = self.store.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            if let Err(error) = store.mark_token_used(&id).await {
                tracing::warn!(%error, "token last-used time not recorded");
            }
        });
    }

    /// Forgets a cached token (after its revocation, here or elsewhere).
    pub async fn forget(&self, id: &str) {
        self.cache.invalidate(id).await;
    }

    /// Evicts tokens revoked elsewhere (the CLI, another replica) as soon as
    /// the database shows it: polled every `every`, for as long as `self` lives.
    pub fn watch_revocations(self: &std::sync::Arc<Self>, every: Duration) {
        let this = std::sync::Arc::downgrade(self);
        tokio::spawn(async move {
            let mut since = 0;
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let Some(tokens) = this.upgrade() else { return };
                // Revocations stamped in the last second are rechecked: clocks
                // of replicas differ slightly and a revoke may commit late.
                let now = tokens.store.now_ms();
                match tokens.store.revoked_since(since).await {
                    Ok(ids) => {
                        for id in ids {
                            tokens.forget(&id).await;
                        }
                        since = now - 1000;
                    }
                    Err(error) => tracing::warn!(%error, "token revocations not checked"),
                }
            }
        });
    }

    pub async fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        let revoked = self.store.revoke_token(id).await?;
        self.forget(id).await;
        Ok(revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_tokens_parse() {
        let secret = "a".repeat(64);
        assert_eq!(
            parse(&format!("tg_0123456789ab_{secret}")),
            Some(("0123456789ab", secret.as_str()))
        );
        assert!(parse("tg_0123456789ab_short").is_none());
        assert!(parse(&format!("xx_0123456789ab_{secret}")).is_none());
        assert!(parse("eyJhbGciOiJSUzI1NiJ9.e30.sig").is_none());
    }
}
