//! Personal access tokens: `tg_<id>_<secret>`. The id finds the row, the
//! secret is checked against its SHA-256 in constant time. Verified tokens
//! are cached (bounded, short TTL) so a request does not cost a database
//! round trip; a revocation evicts the entry here at once and, by polling
//! the store (`watch_revocations`), on every replica, and ends the streams
//! opened with the token (`revoked`).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use moka::sync::Cache;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AuthError;
use crate::{
    registry::{Caller, Identity},
    store::{Store, StoreError, TokenRow},
};

const PREFIX: &str = "tg_";

/// Tokens kept at most.
const CACHE_CAPACITY: u64 = 10_000;
/// Minimum time between two `last_used` writes for one token.
const NOTE_USE_EVERY: Duration = Duration::from_secs(60);
/// How long a revoked id is remembered for streams: far longer than a
/// request takes from authentication to opening its stream.
const REVOKED_KEPT: Duration = Duration::from_secs(60);

pub struct PersonalTokens {
    store: Store,
    /// Verified rows, for `auth.token_cache_ttl`.
    cache: Cache<String, Arc<Cached>>,
    /// Bumped by every `forget` (under this lock, as is every insert), so a
    /// lookup that raced a revocation does not put the revoked row back.
    generation: Mutex<u64>,
    /// When this was built: the origin of `Cached::noted`.
    epoch: Instant,
    /// Ids revoked lately, and a signal bumped on each revocation: what the
    /// streams opened with a token wait on (`revoked`).
    revoked: Arc<Mutex<HashMap<String, Instant>>>,
    revocations: tokio::sync::watch::Sender<u64>,
}

struct Cached {
    /// The row and the caller it stands for (built once: every request
    /// shares it); `None`: no such token (remembered too, so unknown ids
    /// cost no query).
    row: Option<(TokenRow, Caller)>,
    /// Milliseconds after `epoch` of the last `last_used` write, 0 if none.
    noted: AtomicU64,
}

/// A freshly created token: the only time the secret exists in the clear.
pub struct NewToken {
    pub token: String,
    pub row: TokenRow,
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Whether `secret` hashes to `stored` (a `hash` output), in constant time
/// and without allocating: it runs on every request.
fn hash_matches(secret: &str, stored: &str) -> bool {
    let mut hex = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(secret.as_bytes()), &mut hex)
        .expect("a SHA-256 digest is 64 hex digits");
    bool::from(hex.ct_eq(stored.as_bytes()))
}

/// Splits `tg_<id>_<secret>`; anything else is not a personal token.
pub(super) fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let ok = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    (ok(id, 12) && ok(secret, 64)).then_some((id, secret))
}

impl PersonalTokens {
    pub fn new(store: Store, cache_ttl: Duration) -> Self {
        Self {
            store,
            cache: Cache::builder()
                .max_capacity(CACHE_CAPACITY)
                .time_to_live(cache_ttl)
                .build(),
            generation: Mutex::new(0),
            epoch: Instant::now(),
            revoked: Arc::default(),
            revocations: tokio::sync::watch::Sender::new(0),
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
        if let Some(verdict) = self.cached(id, secret) {
            return verdict;
        }
        let generation = *self.generation.lock().expect("token cache generation");
        let row = self
            .store
            .token(id)
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?;
        self.remember(id, row, generation);
        // Not cached only when a revocation raced the read: refuse this once.
        self.cached(id, secret)
            .unwrap_or(Err(AuthError::InvalidToken("the token was revoked")))
    }

    /// The verdict on a cached token; `None` when it is not cached (or stale).
    fn cached(&self, id: &str, secret: &str) -> Option<Result<Caller, AuthError>> {
        let entry = self.cache.get(id)?;
        let Some((row, caller)) = &entry.row else {
            return Some(Err(AuthError::InvalidToken("unknown token")));
        };
        if !hash_matches(secret, &row.secret_hash) {
            return Some(Err(AuthError::InvalidToken("unknown token")));
        }
        if row.revoked_ms.is_some() {
            return Some(Err(AuthError::InvalidToken("the token was revoked")));
        }
        if row.expires_ms.is_some_and(|at| at <= self.store.now_ms()) {
            return Some(Err(AuthError::InvalidToken("the token expired")));
        }
        self.note_use(row, &entry.noted);
        Some(Ok(caller.clone()))
    }

    /// Caches a row read from the store, unless a `forget` came in meanwhile.
    fn remember(&self, id: &str, row: Option<TokenRow>, generation: u64) {
        let row = row.map(|row| {
            let caller = Caller::from(Identity {
                user: row.user_name.clone(),
                scopes: row.scopes.clone(),
                token_id: Some(row.id.clone()),
                claims: Default::default(),
            });
            (row, caller)
        });
        let entry = Arc::new(Cached {
            row,
            noted: AtomicU64::new(0),
        });
        let current = self.generation.lock().expect("token cache generation");
        if *current == generation {
            self.cache.insert(id.to_owned(), entry);
        }
    }

    /// Records `last_used` at most once a minute per token while it stays
    /// cached (so at least once per cache TTL), off the request path.
    fn note_use(&self, row: &TokenRow, noted: &AtomicU64) {
        // +1: 0 means "never noted".
        let now = self.epoch.elapsed().as_millis() as u64 + 1;
        let last = noted.load(Ordering::Relaxed);
        if last != 0 && now - last < NOTE_USE_EVERY.as_millis() as u64 {
            return;
        }
        if noted
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return; // another request is noting it
        }
        let store = self.store.clone();
        let id = row.id.clone();
        tokio::spawn(async move {
            if let Err(error) = store.mark_token_used(&id).await {
                tracing::warn!(%error, "token last-used time not recorded");
            }
        });
    }

    /// Forgets a cached token after its revocation, here or elsewhere, and
    /// ends the streams opened with it.
    pub async fn forget(&self, id: &str) {
        {
            let mut generation = self.generation.lock().expect("token cache generation");
            *generation += 1;
            self.cache.invalidate(id);
        }
        let mut revoked = self.revoked.lock().expect("revoked tokens");
        revoked.retain(|_, at| at.elapsed() < REVOKED_KEPT);
        revoked.insert(id.to_owned(), Instant::now());
        drop(revoked);
        self.revocations.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Resolves once the token `id` is revoked (from now on, or in the last
    /// minute): a stream opened with it ends then.
    pub fn revoked(&self, id: &str) -> impl Future<Output = ()> + Send + 'static {
        // Subscribed before looking, so a revocation in between still wakes it.
        let mut changes = self.revocations.subscribe();
        let revoked = self.revoked.clone();
        let id = id.to_owned();
        async move {
            loop {
                if revoked.lock().expect("revoked tokens").contains_key(&id) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return std::future::pending().await;
                }
            }
        }
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

    #[test]
    fn a_secret_matches_only_its_own_hash() {
        let stored = hash("right");
        assert!(hash_matches("right", &stored));
        assert!(!hash_matches("wrong", &stored));
        assert!(!hash_matches("right", &stored[..63]));
        assert!(!hash_matches("right", ""));
    }
}
