//! Members' OAuth tokens for upstreams with `auth = "oauth"` (issue 29):
//! what the portal's flow stores in the vault, sealed like a slot's value
//! under the reserved name `oauth:<upstream>`, and what a call reads back
//! to send `Authorization: Bearer` as the member. [`MemberOauth`] is what
//! the upstreams and the portal share at run time: which upstreams were
//! found to need each member's OAuth (`auth = "auto"`, a 401 with RFC 9728
//! metadata), and word that a member just connected one.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use oauth2::{TokenResponse, basic::BasicTokenResponse};
use serde::{Deserialize, Serialize};

/// The vault's name of a member's token set for `upstream`.
pub fn token_slot(upstream: &str) -> String {
    format!("oauth:{upstream}")
}

/// The vault owner of teamgate's own client registrations (no member can
/// be named this: member names come from sign-in and never hold a space).
pub const CLIENT_OWNER: &str = "teamgate oauth clients";

/// The portal page that starts the member's flow for `upstream`.
pub fn start_path(upstream: &str) -> String {
    format!("/portal/connections/oauth/{upstream}/start")
}

/// Told the upstream's name when a member connected their account there.
pub type OnConnected = Arc<dyn Fn(&str) + Send + Sync>;

/// Upstreams found at run time to need each member's OAuth, shared by the
/// upstreams (which find them) and the portal (which connects members);
/// clones share the state.
#[derive(Clone, Default)]
pub struct MemberOauth(Arc<Shared>);

#[derive(Default)]
struct Shared {
    /// Whether members can connect at all: `[portal]` on and a vault to keep
    /// their tokens in.
    possible: bool,
    /// Found upstreams and the scopes their metadata lists.
    found: Mutex<BTreeMap<String, Vec<String>>>,
    connected: Mutex<Option<OnConnected>>,
    /// `tools.http_allowlist`, where upstreams' OAuth requests may go.
    allowlist: Mutex<Vec<String>>,
}

impl MemberOauth {
    pub fn new(possible: bool) -> Self {
        Self(Arc::new(Shared {
            possible,
            ..Shared::default()
        }))
    }

    /// Whether members can connect their accounts (else an upstream found to
    /// need OAuth stays unavailable).
    pub fn possible(&self) -> bool {
        self.0.possible
    }

    /// The configuration's `tools.http_allowlist` (at build and each reload).
    pub fn allow(&self, allowlist: &[String]) {
        *self.0.allowlist.lock().expect("member oauth lock") = allowlist.to_vec();
    }

    /// Where the OAuth requests of the upstream at `url` may go.
    pub fn reach(&self, url: &str) -> super::oauth_reach::Reach {
        let allowlist = self.0.allowlist.lock().expect("member oauth lock");
        super::oauth_reach::Reach::new(url, &allowlist)
    }

    /// `upstream` answered 401 with OAuth metadata listing `scopes`.
    pub fn found(&self, upstream: &str, scopes: Vec<String>) {
        let mut found = self.0.found.lock().expect("member oauth lock");
        found.insert(upstream.to_owned(), scopes);
    }

    /// `upstream` stopped (removed, or its configuration changed).
    pub fn forget(&self, upstream: &str) {
        self.0
            .found
            .lock()
            .expect("member oauth lock")
            .remove(upstream);
    }

    /// Whether `upstream` was found to need OAuth.
    pub fn is_found(&self, upstream: &str) -> bool {
        let found = self.0.found.lock().expect("member oauth lock");
        found.contains_key(upstream)
    }

    /// Called with the upstream's name whenever a member connects one.
    pub fn on_connected(&self, on: OnConnected) {
        *self.0.connected.lock().expect("member oauth lock") = Some(on);
    }

    /// A member just connected their account at `upstream` (the portal).
    pub fn connected(&self, upstream: &str) {
        let on = self.0.connected.lock().expect("member oauth lock").clone();
        if let Some(on) = on {
            on(upstream);
        }
    }
}

/// A member's tokens at one upstream's authorization server, with what a
/// refresh and a revocation need.
#[derive(Clone, Serialize, Deserialize)]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds; `None`: the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    pub client_id: String,
    /// The RFC 8707 resource the tokens are for (the upstream's URL).
    pub resource: String,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("expires_at", &self.expires_at)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// The token set of a vault value; `None` when it is not one.
    pub fn read(value: &str) -> Option<Self> {
        serde_json::from_str(value).ok()
    }

    pub fn write(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether the access token ends within `margin` seconds of `now`.
    pub fn expiring(&self, now: i64, margin: i64) -> bool {
        self.expires_at.is_some_and(|at| at - margin <= now)
    }

    /// The fields of a token endpoint's answer over this set (a refresh
    /// that returns no new refresh token keeps the old one).
    pub fn updated(&self, answer: &BasicTokenResponse, now: i64) -> Self {
        let refresh_token = (answer.refresh_token().map(|t| t.secret().clone()))
            .or_else(|| self.refresh_token.clone());
        let expires_at = (answer.expires_in())
            .map(|d| now.saturating_add(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)));
        Self {
            access_token: answer.access_token().secret().clone(),
            refresh_token,
            expires_at,
            ..self.clone()
        }
    }

    /// The values to scrub from a result.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.access_token.clone()];
        out.extend(self.refresh_token.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refresh_keeps_what_it_does_not_replace() {
        let set = TokenSet {
            access_token: "a".into(),
            refresh_token: Some("r".into()),
            expires_at: Some(100),
            token_endpoint: "http://as/token".into(),
            revocation_endpoint: None,
            client_id: "c".into(),
            resource: "http://up/mcp".into(),
        };
        assert!(set.expiring(50, 60) && !set.expiring(30, 60));
        let answer = json!({"access_token": "b", "token_type": "Bearer", "expires_in": 10});
        let new = set.updated(&serde_json::from_value(answer).unwrap(), 200);
        assert_eq!(
            (new.access_token.as_str(), new.expires_at),
            ("b", Some(210))
        );
        assert_eq!(new.refresh_token.as_deref(), Some("r"));
        // An answer with no access token is no token response at all.
        assert!(serde_json::from_value::<BasicTokenResponse>(json!({"error": "x"})).is_err());
        assert!(TokenSet::read(&set.write()).is_some() && TokenSet::read("{").is_none());
        assert!(!format!("{set:?}").contains("\"a\""));
    }
}
