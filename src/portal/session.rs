//! Browser sessions: an opaque random cookie whose sha256 keys a store row
//! (`store::PortalSessions`), its CSRF token, and the signed-in member as
//! an extractor. Behind https the cookie is `__Host-` prefixed and `Secure`.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, HeaderValue, header, request::Parts},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Portal, PortalError};
use crate::{
    protocol::ClientInfo,
    store::{PortalSession, PortalSessions, SignInClaims},
};

const COOKIE: &str = "teamgate_portal";
/// How long a pre-login row (`GET /portal/login`: the login's state, PKCE
/// verifier and nonce) lives: a sign-in at the provider takes minutes, and
/// anyone can make one. Signing in replaces it with a full session.
const PRE_LOGIN_TTL: Duration = Duration::from_secs(600);
const SECURE_COOKIE: &str = "__Host-teamgate_portal";

/// A fresh random value (cookie, CSRF token).
pub(super) fn random() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

pub(super) fn hash(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

impl Portal {
    fn cookie_name(&self) -> &'static str {
        if self.secure { SECURE_COOKIE } else { COOKIE }
    }

    /// The `Set-Cookie` value carrying `value` for `lifetime`; `None`
    /// clears the cookie.
    pub(super) fn cookie(&self, value: Option<(&str, Duration)>) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let text = match value {
            Some((value, lifetime)) => format!(
                "{}={value}; Path=/; HttpOnly; SameSite=Lax{secure}; Max-Age={}",
                self.cookie_name(),
                lifetime.as_secs()
            ),
            None => format!(
                "{}=; Path=/; HttpOnly; SameSite=Lax{secure}; Max-Age=0",
                self.cookie_name()
            ),
        };
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The cookie's value in a request, if any.
    pub(super) fn cookie_in<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
            .filter(|value| value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()))
    }

    /// How long a session row lives: a pre-login one (`login` given)
    /// minutes, a signed-in one `session_absolute`.
    pub(super) fn lifetime(&self, pre_login: bool) -> Duration {
        if pre_login {
            PRE_LOGIN_TTL
        } else {
            self.portal.session_absolute
        }
    }

    /// A new session row (signed in when `member` is not empty, pre-login
    /// when `login` is given); its cookie value.
    pub(super) async fn open_session(
        &self,
        member: &str,
        (groups, claims): (&[String], SignInClaims),
        login: Option<(&str, &str, &str)>,
    ) -> Result<String, PortalError> {
        let value = random();
        let now = self.store.now_ms();
        let session = PortalSession {
            id_hash: hash(&value),
            member: member.to_owned(),
            groups: groups.to_vec(),
            claims,
            csrf: random(),
            created_ms: now,
            last_seen_ms: now,
            expires_ms: now + self.lifetime(login.is_some()).as_millis() as i64,
        };
        self.store.create_portal_session(&session, login).await?;
        Ok(value)
    }

    pub(super) fn idle_ms(&self) -> i64 {
        self.portal.session_idle.as_millis() as i64
    }
}

/// The signed-in member of a request.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub session: PortalSession,
    pub admin: bool,
    /// The authorization server is on: the page of connected clients exists.
    pub clients_page: bool,
    /// The client's address, for the audit trail.
    pub address: String,
}

impl Member {
    pub(crate) fn name(&self) -> &str {
        &self.session.member
    }

    /// Refuses a form whose CSRF token is not this session's.
    pub(crate) fn check_csrf(&self, sent: &str) -> Result<(), PortalError> {
        let expected = self.session.csrf.as_bytes();
        if sent.len() == expected.len() && bool::from(sent.as_bytes().ct_eq(expected)) {
            Ok(())
        } else {
            Err(PortalError::Csrf)
        }
    }

    pub(crate) fn require_admin(&self) -> Result<(), PortalError> {
        if self.admin {
            Ok(())
        } else {
            Err(PortalError::NotAdmin)
        }
    }
}

pub(super) fn address(parts: &Parts) -> String {
    parts
        .extensions
        .get::<ClientInfo>()
        .map(|client| client.ip.to_string())
        .unwrap_or_default()
}

impl FromRequestParts<Arc<Portal>> for Member {
    type Rejection = PortalError;

    async fn from_request_parts(
        parts: &mut Parts,
        portal: &Arc<Portal>,
    ) -> Result<Self, Self::Rejection> {
        let value = portal
            .cookie_in(&parts.headers)
            .ok_or(PortalError::NotSignedIn)?;
        let session = portal
            .store
            .portal_session(&hash(value), portal.idle_ms())
            .await?
            .filter(|s| !s.member.is_empty())
            .ok_or(PortalError::NotSignedIn)?;
        let admin = portal.portal.is_admin(&session.member, &session.groups);
        Ok(Self {
            session,
            admin,
            clients_page: portal.authz.is_some(),
            address: address(parts),
        })
    }
}
