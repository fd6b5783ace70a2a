//! OAuth 2.1 resource server: JWT access tokens from configured issuers.
//!
//! Keys come from each issuer's JWKS (configured, or found through OIDC /
//! RFC 8414 discovery), are cached, and are refetched when a token names an
//! unknown `kid`, at most once per `jwks_refresh_min_interval`. Only the
//! issuer's allowlisted asymmetric algorithms verify: `none` and HMAC never
//! do, and a key only verifies the algorithm family it belongs to. The
//! audience must be this server (RFC 8707): a token for another resource is
//! refused, and no token is ever passed on.

use std::{
    collections::HashMap,
    str::FromStr,
    time::{Duration, Instant},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::JwkSet};
use serde_json::{Map, Value};
use tokio::sync::{Mutex, RwLock};

use super::AuthError;
use crate::{
    body::read_response,
    config::{IssuerConfig, OAuthConfig},
    registry::{Caller, Identity},
};

/// Largest key set accepted from an issuer.
const MAX_JWKS_BYTES: usize = 256 * 1024;

pub struct OAuth {
    issuers: Vec<Issuer>,
    leeway: u64,
}

struct Issuer {
    config: IssuerConfig,
    algorithms: Vec<Algorithm>,
    http: reqwest::Client,
    keys: RwLock<HashMap<String, DecodingKey>>,
    /// When the key set was last fetched (successfully or not).
    last_fetch: Mutex<Option<Instant>>,
    min_interval: Duration,
}

impl OAuth {
    pub fn new(config: &OAuthConfig) -> Self {
        let http = crate::outbound::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .expect("HTTP client");
        let issuers = config
            .issuers
            .iter()
            .map(|c| Issuer {
                algorithms: c
                    .algorithms
                    .iter()
                    .filter_map(|a| Algorithm::from_str(a).ok())
                    .collect(),
                config: c.clone(),
                http: http.clone(),
                keys: RwLock::default(),
                last_fetch: Mutex::default(),
                min_interval: config.jwks_refresh_min_interval,
            })
            .collect();
        Self {
            issuers,
            leeway: config.leeway.as_secs(),
        }
    }

    /// Seconds of clock skew allowed on `exp` and `nbf`.
    pub fn leeway(&self) -> u64 {
        self.leeway
    }

    pub fn is_enabled(&self) -> bool {
        !self.issuers.is_empty()
    }

    pub fn issuer_urls(&self) -> Vec<String> {
        self.issuers
            .iter()
            .map(|i| i.config.issuer.clone())
            .collect()
    }

    /// The caller `token` stands for, if it is a valid access token for `resource`.
    /// The caller of `token`, an access token for `resource` (the endpoint
    /// asked; `toolset` is its `/<name>` when it is a toolset's).
    pub async fn verify(
        &self,
        token: &str,
        resource: &str,
        toolset: &str,
    ) -> Result<Caller, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::InvalidToken("malformed token"))?;
        let unverified =
            unverified_claims(token).ok_or(AuthError::InvalidToken("malformed token"))?;
        let iss = unverified
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let issuer =
            self.issuers
                .iter()
                .find(|i| i.config.issuer == iss)
                .ok_or(AuthError::InvalidToken(
                    "the token's issuer is not trusted here",
                ))?;
        if !issuer.algorithms.contains(&header.alg) {
            return Err(AuthError::InvalidToken(
                "the token's signing algorithm is not allowed",
            ));
        }
        let kid = header.kid.clone().unwrap_or_default();
        let key = issuer.key(&kid).await?;

        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[issuer.config.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway;
        // The audience is compared below, with RFC 8707 normalisation.
        validation.validate_aud = false;
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                AuthError::InvalidToken(match e.kind() {
                    ErrorKind::ExpiredSignature => "the token expired",
                    ErrorKind::ImmatureSignature => "the token is not valid yet",
                    ErrorKind::InvalidIssuer => "the token's issuer is not trusted here",
                    ErrorKind::InvalidSignature => "the token's signature does not verify",
                    ErrorKind::InvalidAlgorithm => {
                        "the token's signing algorithm does not match its key"
                    }
                    ErrorKind::MissingRequiredClaim(_) => "the token lacks exp, iss or aud",
                    _ => "the token does not verify",
                })
            })?;
        let claims = data.claims;
        // A toolset's endpoint is its own resource: with a configured
        // audience, that audience and the endpoint's `/<name>` (issue 60).
        let audience = &issuer.config.audience;
        let expected = if audience.is_empty() {
            resource.to_owned()
        } else if toolset.is_empty() {
            audience.clone()
        } else {
            format!("{}{toolset}", audience.trim_end_matches('/'))
        };
        let expected = expected.as_str();
        if !audiences(&claims)
            .iter()
            .any(|aud| normalise(aud) == normalise(expected))
        {
            return Err(AuthError::InvalidToken(
                "the token was issued for another resource",
            ));
        }
        let name = claims
            .get(&issuer.config.user_claim)
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or(AuthError::InvalidToken("the token names no user"))?;
        // Qualified by the issuer unless configured otherwise: an issuer's
        // `alice` is not another issuer's, nor the personal tokens' `alice`.
        let user = match &issuer.config.user_prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => format!("{}#{name}", issuer.config.issuer),
        };
        Ok(Identity {
            user,
            scopes: scopes(&claims),
            token_id: None,
            claims,
        }
        .into())
    }
}

impl Issuer {
    async fn key(&self, kid: &str) -> Result<DecodingKey, AuthError> {
        if let Some(key) = self.keys.read().await.get(kid) {
            return Ok(key.clone());
        }
        {
            // Rate bound: an attacker sending random kids must not make us
            // hammer the identity provider.
            let mut last = self.last_fetch.lock().await;
            if last.is_some_and(|at| at.elapsed() < self.min_interval) {
                return Err(AuthError::InvalidToken(
                    "the token's signing key is unknown",
                ));
            }
            *last = Some(Instant::now());
        }
        match self.fetch().await {
            Ok(keys) => *self.keys.write().await = keys,
            Err(error) => {
                tracing::warn!(issuer = %self.config.issuer, %error, "cannot fetch the issuer's keys");
                return Err(AuthError::Unavailable(format!(
                    "the keys of {} cannot be fetched",
                    self.config.issuer
                )));
            }
        }
        self.keys
            .read()
            .await
            .get(kid)
            .cloned()
            .ok_or(AuthError::InvalidToken(
                "the token's signing key is unknown",
            ))
    }

    async fn fetch(&self) -> anyhow::Result<HashMap<String, DecodingKey>> {
        let url = if self.config.jwks_url.is_empty() {
            self.discover().await?
        } else {
            self.config.jwks_url.clone()
        };
        let body = self.get_json(&url).await?;
        let set: JwkSet = serde_json::from_value(body)?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            // Symmetric keys never verify here: that is the HMAC/RSA confusion.
            if matches!(
                jwk.algorithm,
                jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
            ) {
                continue;
            }
            if let (Some(kid), Ok(key)) = (jwk.common.key_id.clone(), DecodingKey::from_jwk(jwk)) {
                keys.insert(kid, key);
            }
        }
        Ok(keys)
    }

    async fn discover(&self) -> anyhow::Result<String> {
        let base = self.config.issuer.trim_end_matches('/');
        for path in [
            "/.well-known/openid-configuration",
            "/.well-known/oauth-authorization-server",
        ] {
            if let Ok(doc) = self.get_json(&format!("{base}{path}")).await
                && let Some(uri) = doc.get("jwks_uri").and_then(Value::as_str)
            {
                return Ok(uri.to_owned());
            }
        }
        anyhow::bail!("no jwks_uri in the issuer's metadata")
    }

    async fn get_json(&self, url: &str) -> anyhow::Result<Value> {
        let response = self.http.get(url).send().await?.error_for_status()?;
        // Read no further than the limit, rather than all of it and then check.
        let bytes = read_response(response, MAX_JWKS_BYTES).await?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}

/// The payload, read without verification: only to pick the issuer.
pub(super) fn unverified_claims(token: &str) -> Option<Map<String, Value>> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

fn audiences(claims: &Map<String, Value>) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(aud)) => vec![aud.clone()],
        Some(Value::Array(auds)) => auds
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// RFC 8707 canonical form: lowercase scheme and host, no trailing slash.
pub(super) fn normalise(url: &str) -> String {
    let url = url.trim_end_matches('/');
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
            let path = if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            };
            format!(
                "{}://{}{path}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase()
            )
        }
        None => url.to_owned(),
    }
}

/// `scope` (space-separated) or `scp` (array or string).
fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let split = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => split(s),
        (_, Some(Value::Array(a))) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(s))) => split(s),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_compare_in_canonical_form() {
        assert_eq!(
            normalise("HTTPS://MCP.Example.com/mcp/"),
            "https://mcp.example.com/mcp"
        );
        assert_ne!(
            normalise("https://mcp.example.com/MCP"),
            normalise("https://mcp.example.com/mcp")
        );
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            scopes(&claims(serde_json::json!({"scope": "a b"}))),
            ["a", "b"]
        );
        assert_eq!(
            scopes(&claims(serde_json::json!({"scp": ["a", "b"]}))),
            ["a", "b"]
        );
        assert!(scopes(&claims(serde_json::json!({}))).is_empty());
    }
}
