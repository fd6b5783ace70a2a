//! Who is calling: personal tokens and OAuth access tokens become a
//! `Caller` in the request's extensions; everything else reads it there.
//! Knows nothing of MCP methods, sessions or SQL beyond the token store.

mod issuer;
mod jwt;
mod metadata;
mod tokens;
mod withdrawn;

pub use issuer::{OwnIssuer, Signed};
pub use jwt::OAuth;
pub use metadata::{
    challenge, endpoint_suffix, protected_resource_metadata, resource_url, toolset_resource,
};
pub use tokens::{NewToken, PersonalTokens};

use std::sync::Arc;

use http::request::Parts;

use crate::{
    audit::Auditor,
    config::{AuthConfig, AuthMode},
    registry::Caller,
};

/// Whether two resource URLs name the same endpoint (RFC 8707 comparison).
pub fn same_resource(a: &str, b: &str) -> bool {
    jwt::normalise(a) == jwt::normalise(b)
}

/// What the authentication step (`http/authenticate.rs`) and the metadata
/// document need.
#[derive(Clone)]
pub struct AuthState {
    pub authenticator: Arc<Authenticator>,
    pub auditor: Auditor,
    pub scopes_supported: Arc<Vec<String>>,
    pub now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("authentication required: send Authorization: Bearer <token>")]
    Missing,
    #[error("only Bearer tokens are accepted")]
    NotBearer,
    #[error("tokens are never accepted in the query string; send Authorization: Bearer <token>")]
    InQuery,
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    #[error("the token cannot be checked right now: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The RFC 6750 error code for the challenge, if any.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Self::Missing | Self::NotBearer | Self::Unavailable(_) => None,
            Self::InQuery => Some("invalid_request"),
            Self::InvalidToken(_) => Some("invalid_token"),
        }
    }
}

/// Verifies whatever credential a request carries.
pub struct Authenticator {
    mode: AuthMode,
    pub tokens: std::sync::Arc<PersonalTokens>,
    pub oauth: OAuth,
    /// teamgate's own tokens, when it is the authorization server.
    pub own: Option<Arc<OwnIssuer>>,
    public_url: String,
    mcp_path: String,
}

impl Authenticator {
    pub fn new(
        config: &AuthConfig,
        tokens: std::sync::Arc<PersonalTokens>,
        public_url: &str,
        mcp_path: &str,
    ) -> Self {
        Self {
            mode: config.mode,
            tokens,
            oauth: OAuth::new(&config.oauth),
            own: None,
            public_url: public_url.to_owned(),
            mcp_path: mcp_path.to_owned(),
        }
    }

    /// Also accept teamgate's own access tokens (`[authorization_server]`).
    pub fn with_own_issuer(mut self, own: Option<Arc<OwnIssuer>>) -> Self {
        self.own = own;
        self
    }

    /// The authorization servers the metadata lists: teamgate's own first.
    pub fn authorization_servers(&self) -> Vec<String> {
        let own = self.own.iter().map(|o| o.issuer().to_owned());
        own.chain(self.oauth.issuer_urls()).collect()
    }

    pub fn required(&self) -> bool {
        self.mode == AuthMode::Required
    }

    /// This endpoint's URL as the request reached it (the token audience).
    pub fn resource(&self, parts: &Parts) -> String {
        resource_url(&self.public_url, &self.mcp_path, parts)
    }

    pub async fn authenticate(&self, parts: &Parts) -> Result<Caller, AuthError> {
        if !self.required() {
            return Ok(Caller::anonymous());
        }
        let query_token = parts
            .uri
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv.starts_with("access_token=")));
        if query_token {
            return Err(AuthError::InQuery);
        }
        let mut values = parts.headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(AuthError::Missing);
        };
        let value = value
            .to_str()
            .map_err(|_| AuthError::InvalidToken("malformed header"))?;
        let (scheme, token) = value.split_once(' ').ok_or(AuthError::NotBearer)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::NotBearer);
        }
        let token = token.trim();
        if let Some((id, secret)) = tokens::parse(token) {
            return self.tokens.verify(id, secret).await;
        }
        if let Some(own) = &self.own
            && token.matches('.').count() == 2
            && jwt::unverified_claims(token).is_some_and(|claims| own.is_own(&claims))
        {
            return own
                .verify(token, &self.resource(parts), self.oauth.leeway())
                .await;
        }
        if self.oauth.is_enabled() && token.matches('.').count() == 2 {
            let suffix = endpoint_suffix(&self.mcp_path, parts);
            return (self.oauth)
                .verify(token, &self.resource(parts), &suffix)
                .await;
        }
        Err(AuthError::InvalidToken(
            "not a teamgate token or an access token from a trusted issuer",
        ))
    }
}
