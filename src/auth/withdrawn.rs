//! When an OAuth caller's credential stops being good, so a stream it opened
//! (a 2025-era GET stream, a `subscriptions/listen`) ends then rather than
//! outliving it: at the access token's `exp`, for teamgate's own tokens and
//! for external issuers' JWTs alike, and for teamgate's own tokens also when
//! their grant is revoked (at `/revoke`, on the portal, on any replica).
//! Personal tokens have their own signal (`PersonalTokens::revoked`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::{BoxFuture, FutureExt};
use serde_json::{Map, Value};

use super::{Authenticator, OwnIssuer};
use crate::store::OAuthRepo;

/// How often an open stream's own grant is looked up: a revocation on any
/// replica ends the stream within this. One primary-key read per stream.
const GRANT_CHECK: Duration = Duration::from_secs(2);

impl Authenticator {
    /// Resolves when the OAuth access token with `claims` expires or (one of
    /// teamgate's own) its grant is revoked; `None` for a caller without claims.
    pub fn oauth_withdrawn(&self, claims: &Map<String, Value>) -> Option<BoxFuture<'static, ()>> {
        if claims.is_empty() {
            return None;
        }
        // The same tolerance the token was accepted with (`auth.oauth.leeway`).
        let leeway = Duration::from_secs(self.oauth.leeway());
        let expiry = claims.get("exp").and_then(Value::as_f64).map(|exp| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let left = (Duration::from_secs_f64(exp.clamp(0.0, 1e12)) + leeway).saturating_sub(now);
            tokio::time::sleep(left).boxed()
        });
        let revoked = (self.own.as_ref()).and_then(|own| own.grant_withdrawn(claims));
        match (expiry, revoked) {
            (Some(expiry), Some(revoked)) => Some(
                async move {
                    futures::future::select(expiry, revoked).await;
                }
                .boxed(),
            ),
            (Some(one), None) | (None, Some(one)) => Some(one),
            (None, None) => None,
        }
    }
}

impl OwnIssuer {
    /// For a token this server issued: resolves once its grant is revoked,
    /// gone, or no longer the member's.
    fn grant_withdrawn(&self, claims: &Map<String, Value>) -> Option<BoxFuture<'static, ()>> {
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return None;
        }
        let grant = claims.get("grant")?.as_str()?.to_owned();
        let member = claims.get("member")?.as_str()?.to_owned();
        let store = self.store.clone();
        Some(
            async move {
                let mut ticks = tokio::time::interval(GRANT_CHECK);
                loop {
                    ticks.tick().await;
                    match store.oauth_grant(&grant).await {
                        Ok(Some(row)) if row.revoked_ms.is_none() && row.member == member => {}
                        // A database that does not answer ends nothing: checked again.
                        Err(_) => {}
                        Ok(_) => return,
                    }
                }
            }
            .boxed(),
        )
    }
}
