//! `[portal]`: the team's sign-in (OpenID Connect) and the web pages under
//! `/portal` where members make their own tokens and admins see the team.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

/// Where the identity provider sends the browser back, under `server.public_url`'s origin.
pub const CALLBACK_PATH: &str = "/portal/callback";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortalConfig {
    /// Serve the portal; off, nothing under `/portal` exists.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The OpenID provider's issuer URL (its discovery document is read at start).
    pub issuer: String,
    /// The portal's client at that provider.
    pub client_id: String,
    /// A secret: set it through the environment, `TEAMGATE__PORTAL__CLIENT_SECRET`.
    #[serde(default = "no_secret")]
    pub client_secret: Secret,
    /// Scopes asked of the provider (`openid` is always asked).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The ID token claim naming the member.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// The ID token claim listing the member's groups (an array of strings).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Members (by name) or `group:<name>` entries who see the admin pages.
    #[serde(default)]
    pub admins: Vec<String>,
    /// Which token scopes the members of each group may grant themselves.
    #[serde(default)]
    pub grants: Vec<PortalGrant>,
    /// A browser session unused this long ends.
    #[serde(default = "default_idle", with = "super::duration")]
    pub session_idle: Duration,
    /// A browser session ends this long after sign-in, used or not.
    #[serde(default = "default_absolute", with = "super::duration")]
    pub session_absolute: Duration,
    /// The longest lifetime a member may give a token made in the portal.
    #[serde(default = "default_token_lifetime", with = "super::duration")]
    pub max_token_lifetime: Duration,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortalGrant {
    /// An identity-provider group.
    pub group: String,
    /// Token scopes its members may grant (e.g. `tools:*`, `prompts:review`).
    pub scopes: Vec<String>,
}

fn yes() -> bool {
    true
}
fn no_secret() -> Secret {
    Secret::new("")
}
fn default_scopes() -> Vec<String> {
    vec!["openid".into(), "profile".into(), "email".into()]
}
fn default_user_claim() -> String {
    "preferred_username".into()
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_idle() -> Duration {
    Duration::from_secs(2 * 3600)
}
fn default_absolute() -> Duration {
    Duration::from_secs(12 * 3600)
}
fn default_token_lifetime() -> Duration {
    Duration::from_secs(365 * 24 * 3600)
}

impl PortalConfig {
    /// The redirect URL registered at the provider: the origin of `public_url` + `/portal/callback`.
    pub fn redirect_url(public_url: &str) -> Option<String> {
        let (scheme, rest) = public_url.split_once("://")?;
        let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
        Some(format!("{scheme}://{authority}{CALLBACK_PATH}"))
    }

    /// The scopes the members of `groups` may grant, sorted, without repeats.
    pub fn grantable(&self, groups: &[String]) -> Vec<String> {
        let mut scopes: Vec<String> = self
            .grants
            .iter()
            .filter(|g| groups.contains(&g.group))
            .flat_map(|g| g.scopes.iter().cloned())
            .collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }

    /// Whether a member (with these groups) sees the admin pages.
    pub fn is_admin(&self, member: &str, groups: &[String]) -> bool {
        self.admins
            .iter()
            .any(|entry| match entry.strip_prefix("group:") {
                Some(group) => groups.iter().any(|g| g == group),
                None => entry == member,
            })
    }

    /// The cross-key rules, with `server.public_url`.
    pub(super) fn validate(&self, public_url: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| {
            Err(ConfigError::Invalid {
                key: format!("portal.{key}"),
                why: why.to_owned(),
            })
        };
        if !self.enabled {
            return Ok(());
        }
        match url::Url::parse(&self.issuer) {
            Ok(u) if matches!(u.scheme(), "https" | "http") && u.host().is_some() => {}
            _ => return invalid("issuer", "must be the provider's http(s) issuer URL"),
        }
        if self.client_id.trim().is_empty() {
            return invalid("client_id", "must name the portal's client at the provider");
        }
        if public_url.is_empty() || Self::redirect_url(public_url).is_none() {
            return Err(ConfigError::Invalid {
                key: "server.public_url".into(),
                why: "must be set when [portal] is enabled: the sign-in redirect URL is \
                      <its origin>/portal/callback"
                    .into(),
            });
        }
        for (key, value) in [
            ("user_claim", &self.user_claim),
            ("groups_claim", &self.groups_claim),
        ] {
            if value.trim().is_empty() {
                return invalid(key, "must name an ID token claim");
            }
        }
        for (i, admin) in self.admins.iter().enumerate() {
            if admin.trim().is_empty() || admin.strip_prefix("group:") == Some("") {
                return invalid(
                    &format!("admins[{i}]"),
                    "must be a member name or group:<name>",
                );
            }
        }
        for (i, grant) in self.grants.iter().enumerate() {
            if grant.group.trim().is_empty() {
                return invalid(&format!("grants[{i}].group"), "must name a group");
            }
            if grant.scopes.iter().any(|s| s.trim().is_empty()) {
                return invalid(&format!("grants[{i}].scopes"), "holds an empty scope");
            }
        }
        if self.session_idle.is_zero() || self.session_absolute < self.session_idle {
            return invalid(
                "session_absolute",
                "must be at least session_idle, and session_idle above zero",
            );
        }
        if self.max_token_lifetime.is_zero() {
            return invalid("max_token_lifetime", "must be greater than zero");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_url_is_the_public_origin_and_the_callback() {
        assert_eq!(
            PortalConfig::redirect_url("https://mcp.example.com/mcp").as_deref(),
            Some("https://mcp.example.com/portal/callback")
        );
        assert_eq!(PortalConfig::redirect_url("mcp.example.com"), None);
    }
}
