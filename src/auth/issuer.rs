//! teamgate's own access tokens, when it is the authorization server
//! (`[authorization_server]`): ES256 JWTs whose issuer and audience are
//! `server.public_url`, signed with P-256 keys kept in the store so every
//! replica signs and verifies with the same set. A key signs for
//! `key_rotation`, then a new one is made; the old one stays published (and
//! verifying) until the last token it signed has expired. A token names its
//! grant, and a revoked grant's tokens are refused at once.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair},
};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use super::AuthError;
use crate::{
    registry::{Caller, Identity},
    store::{OAuthKeyRow, OAuthRepo, Store, StoreError},
};

/// How long the key set read from the store is used before it is read again.
const KEYS_FRESH: Duration = Duration::from_secs(30);

/// What a newly signed access token is.
pub struct Signed {
    pub token: String,
    pub expires_in: u64,
}

pub struct OwnIssuer {
    pub(super) store: Store,
    pub(super) issuer: String,
    access_ttl: Duration,
    rotation: Duration,
    cache: Mutex<Option<(Instant, Vec<OAuthKeyRow>)>>,
    decoding: Mutex<HashMap<String, DecodingKey>>,
}

impl OwnIssuer {
    /// `public_url` is both the issuer and the only audience.
    pub fn new(store: Store, public_url: &str, access_ttl: Duration, rotation: Duration) -> Self {
        Self {
            store,
            issuer: public_url.trim_end_matches('/').to_owned(),
            access_ttl,
            rotation,
            cache: Mutex::default(),
            decoding: Mutex::default(),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn access_ttl(&self) -> Duration {
        self.access_ttl
    }

    /// Keys still published: those whose tokens may not have expired yet.
    fn published_since(&self, now: i64) -> i64 {
        now - (self.rotation + self.access_ttl).as_millis() as i64
    }

    /// The published keys, newest first; re-read when stale or `force`d.
    async fn keys(&self, force: bool) -> Result<Vec<OAuthKeyRow>, StoreError> {
        let mut cache = self.cache.lock().await;
        if let Some((at, keys)) = cache.as_ref()
            && !force
            && at.elapsed() < KEYS_FRESH
        {
            return Ok(keys.clone());
        }
        let keys = self
            .store
            .oauth_keys(self.published_since(self.store.now_ms()))
            .await?;
        *cache = Some((Instant::now(), keys.clone()));
        Ok(keys)
    }

    /// The key that signs now, made (and stored) when none is young enough.
    async fn signing_key(&self) -> Result<OAuthKeyRow, AuthError> {
        let unavailable = |e: StoreError| AuthError::Unavailable(e.to_string());
        let now = self.store.now_ms();
        let young = |k: &OAuthKeyRow| k.created_ms > now - self.rotation.as_millis() as i64;
        if let Some(key) = self.keys(false).await.map_err(unavailable)?.first()
            && young(key)
        {
            return Ok(key.clone());
        }
        // Another replica may have made one meanwhile.
        if let Some(key) = self.keys(true).await.map_err(unavailable)?.first()
            && young(key)
        {
            return Ok(key.clone());
        }
        let key = new_key(now).map_err(|_| AuthError::Unavailable("key generation".into()))?;
        self.store.add_oauth_key(&key).await.map_err(unavailable)?;
        let _ = self.store.purge_oauth_keys(self.published_since(now)).await;
        self.keys(true).await.map_err(unavailable)?;
        tracing::info!(kid = %key.kid, "authorization server: new signing key");
        Ok(key)
    }

    /// An access token for `member` with `scopes`, under `grant`.
    pub async fn sign(
        &self,
        member: &str,
        scopes: &[String],
        grant: &str,
        client_id: &str,
    ) -> Result<Signed, AuthError> {
        let key = self.signing_key().await?;
        let der = STANDARD
            .decode(&key.private_pkcs8)
            .map_err(|_| AuthError::Unavailable("a stored signing key is corrupt".into()))?;
        let now = self.store.now_ms() / 1000;
        // RFC 8707: the audience is the endpoint the token was asked for; a
        // toolset's grant carries its `toolset:<name>` scope (issue 60).
        let toolset = scopes
            .iter()
            .find_map(|s| s.strip_prefix(crate::registry::TOOLSET_SCOPE));
        let audience = match toolset {
            Some(name) => super::toolset_resource(&self.issuer, name),
            None => self.issuer.clone(),
        };
        let claims = json!({
            "iss": self.issuer,
            "aud": audience,
            "sub": member,
            "member": member,
            "scope": scopes.join(" "),
            "client_id": client_id,
            "grant": grant,
            "iat": now,
            "nbf": now,
            "exp": now + self.access_ttl.as_secs() as i64,
            "jti": hex::encode(rand::random::<[u8; 16]>()),
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(key.kid.clone());
        header.typ = Some("at+jwt".into());
        let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&der))
            .map_err(|_| AuthError::Unavailable("signing failed".into()))?;
        Ok(Signed {
            token,
            expires_in: self.access_ttl.as_secs(),
        })
    }

    /// The JWK set published at `/.well-known/jwks.json`.
    /// Read from the store each time: another replica may have just rotated.
    pub async fn jwks(&self) -> Result<Value, StoreError> {
        let keys = self.keys(true).await?;
        let keys: Vec<Value> = keys
            .iter()
            .map(|k| {
                json!({
                    "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
                    "kid": k.kid, "x": k.public_x, "y": k.public_y,
                })
            })
            .collect();
        Ok(json!({ "keys": keys }))
    }

    /// Whether a token claims to be teamgate's own (its `iss`).
    pub fn is_own(&self, claims: &Map<String, Value>) -> bool {
        claims.get("iss").and_then(Value::as_str) == Some(self.issuer.as_str())
    }

    async fn decoding_key(&self, kid: &str) -> Result<DecodingKey, AuthError> {
        if let Some(key) = self.decoding.lock().await.get(kid) {
            return Ok(key.clone());
        }
        let unavailable = |e: StoreError| AuthError::Unavailable(e.to_string());
        let mut keys = self.keys(false).await.map_err(unavailable)?;
        if !keys.iter().any(|k| k.kid == kid) {
            keys = self.keys(true).await.map_err(unavailable)?;
        }
        let row = keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(AuthError::InvalidToken(
                "the token's signing key is unknown",
            ))?;
        let key = DecodingKey::from_ec_components(&row.public_x, &row.public_y)
            .map_err(|_| AuthError::Unavailable("a stored signing key is corrupt".into()))?;
        self.decoding
            .lock()
            .await
            .insert(kid.to_owned(), key.clone());
        Ok(key)
    }

    /// The caller of one of teamgate's own tokens, for `resource`.
    pub async fn verify(
        &self,
        token: &str,
        resource: &str,
        leeway: u64,
    ) -> Result<Caller, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::InvalidToken("malformed token"))?;
        if header.alg != Algorithm::ES256 {
            return Err(AuthError::InvalidToken(
                "the token's signing algorithm is not allowed",
            ));
        }
        let key = self
            .decoding_key(header.kid.as_deref().unwrap_or_default())
            .await?;
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[self.issuer.as_str()]);
        // The audience is compared below with the endpoint asked.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = leeway;
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                AuthError::InvalidToken(match e.kind() {
                    ErrorKind::ExpiredSignature => "the token expired",
                    ErrorKind::InvalidAudience => "the token was issued for another resource",
                    ErrorKind::InvalidSignature => "the token's signature does not verify",
                    _ => "the token does not verify",
                })
            })?;
        let claims = data.claims;
        // The audience is the endpoint asked (`/mcp`, or a toolset's),
        // whatever URL form the request used.
        let resource = super::jwt::normalise(resource);
        let audience = claims
            .get("aud")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if super::jwt::normalise(audience) != resource {
            return Err(AuthError::InvalidToken(
                "the token was issued for another resource",
            ));
        }
        let member = claims
            .get("member")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .ok_or(AuthError::InvalidToken("the token names no member"))?
            .to_owned();
        let grant = claims.get("grant").and_then(Value::as_str).unwrap_or("");
        let live = self
            .store
            .oauth_grant(grant)
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?
            .is_some_and(|g| g.revoked_ms.is_none() && g.member == member);
        if !live {
            return Err(AuthError::InvalidToken("the token's grant was revoked"));
        }
        let scopes = claims
            .get("scope")
            .and_then(Value::as_str)
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        Ok(Identity {
            user: member,
            scopes,
            token_id: None,
            claims,
        }
        .into())
    }
}

impl OwnIssuer {
    /// The grant of one of teamgate's own tokens (signature checked, expiry
    /// not: a revocation may come after it), for `/revoke`.
    pub async fn grant_of(&self, token: &str) -> Option<String> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        let key = self.decoding_key(header.kid.as_deref()?).await.ok()?;
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[self.issuer.as_str()]);
        // A toolset's token has that endpoint as its audience: any of ours.
        validation.validate_aud = false;
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).ok()?;
        data.claims.get("grant")?.as_str().map(str::to_owned)
    }
}

/// A fresh P-256 key pair as a store row.
fn new_key(now_ms: i64) -> Result<OAuthKeyRow, ring::error::Unspecified> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| ring::error::Unspecified)?;
    // Uncompressed point: 0x04, x (32 bytes), y (32 bytes).
    let point = pair.public_key().as_ref();
    if point.len() != 65 {
        return Err(ring::error::Unspecified);
    }
    Ok(OAuthKeyRow {
        kid: hex::encode(rand::random::<[u8; 8]>()),
        private_pkcs8: STANDARD.encode(pkcs8.as_ref()),
        public_x: URL_SAFE_NO_PAD.encode(&point[1..33]),
        public_y: URL_SAFE_NO_PAD.encode(&point[33..65]),
        created_ms: now_ms,
    })
}
