//! Browser sessions: an opaque random cookie whose sha256 keys a store row
//! (`store::PortalSessions`), and the signed-in member as an extractor;
//! `Checked`, the member's form with its CSRF token checked, is what every
//! state-changing route takes. Behind https the cookie is `__Host-`
//! prefixed and `Secure`.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::request::Parts,
};
use axum_extra::extract::{
    Form,
    cookie::{Cookie, CookieJar, SameSite},
};
use serde::{Deserialize, de::DeserializeOwned};
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

/// A portal cookie kept `seconds` (0: cleared): the whole site, never read
/// by script, sent on top-level navigation (the provider's redirect back),
/// `Secure` behind https.
pub(super) fn session_cookie(
    name: &'static str,
    value: String,
    secure: bool,
    seconds: i64,
) -> Cookie<'static> {
    Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(time::Duration::seconds(seconds))
        .build()
}

impl Portal {
    fn cookie_name(&self) -> &'static str {
        if self.secure { SECURE_COOKIE } else { COOKIE }
    }

    /// The session cookie carrying `value` for `lifetime`; `None` clears it.
    pub(super) fn cookie(&self, value: Option<(&str, Duration)>) -> Cookie<'static> {
        let (value, lifetime) = value.unwrap_or_default();
        let seconds = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX);
        session_cookie(self.cookie_name(), value.to_owned(), self.secure, seconds)
    }

    /// The session cookie's value in a request, if any.
    pub(super) fn cookie_in<'j>(&self, jar: &'j CookieJar) -> Option<&'j str> {
        (jar.get(self.cookie_name()).map(Cookie::value))
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
        let jar = CookieJar::from_headers(&parts.headers);
        let value = portal.cookie_in(&jar).ok_or(PortalError::NotSignedIn)?;
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

/// A form that carries the session's CSRF token.
pub(crate) trait Posted: DeserializeOwned {
    fn csrf(&self) -> &str;
}

/// A form with only the CSRF token.
#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

impl Posted for CsrfOnly {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// A form's fields as sent, in order, repeats kept.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct Fields(pub Vec<(String, String)>);

impl Fields {
    /// The first value of `name`, or "".
    pub(crate) fn get(&self, name: &str) -> &str {
        (self.0.iter().find(|(k, _)| k == name)).map_or("", |(_, v)| v.as_str())
    }
}

impl Posted for Fields {
    fn csrf(&self) -> &str {
        self.get("csrf")
    }
}

/// The signed-in member and their form, its CSRF token this session's:
/// what every state-changing portal route takes.
pub(crate) struct Checked<T>(pub Member, pub T);

impl<T: Posted + Send> FromRequest<Arc<Portal>> for Checked<T> {
    type Rejection = PortalError;

    async fn from_request(request: Request, portal: &Arc<Portal>) -> Result<Self, PortalError> {
        let (mut parts, body) = request.into_parts();
        let member = Member::from_request_parts(&mut parts, portal).await?;
        let request = Request::from_parts(parts, body);
        let Form(form) = (Form::<T>::from_request(request, portal).await)
            .map_err(|_| PortalError::BadRequest("the form cannot be read".into()))?;
        member.check_csrf(form.csrf())?;
        Ok(Self(member, form))
    }
}
