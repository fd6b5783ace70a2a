//! `[portal]`: the team's sign-in (OpenID Connect) and the web pages under
//! `/portal` where members make their own tokens and admins see the team.

use std::{collections::BTreeMap, time::Duration};

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

/// Who a grant is for: exactly one of `group`, `claim` with `value`, or
/// `email_domain` (providers without groups, e.g. Google Workspace).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortalGrant {
    /// An identity-provider group: a value of `groups_claim`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// An ID token claim that must hold `value` (a string, or a list holding it), e.g. `hd`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub claim: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// The domain of the member's `email`, only when the token says `email_verified: true`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email_domain: String,
    /// Token scopes its members may grant (e.g. `tools:*`, `prompts:review`).
    pub scopes: Vec<String>,
}

impl PortalGrant {
    /// Whether a member with these groups and claim values (`PortalConfig::claims_read`) gets it.
    pub fn matches(&self, groups: &[String], claims: &BTreeMap<String, Vec<String>>) -> bool {
        let held = |claim: &str| claims.get(claim).into_iter().flatten();
        if !self.group.is_empty() {
            groups.contains(&self.group)
        } else if !self.claim.is_empty() {
            held(&self.claim).any(|v| *v == self.value)
        } else {
            // ASCII case folded: domains are case-insensitive.
            held("email").any(|email| {
                (email.rsplit_once('@'))
                    .is_some_and(|(_, d)| d.eq_ignore_ascii_case(&self.email_domain))
            })
        }
    }

    /// Who it is for, as the admin pages and messages name it.
    pub fn who(&self) -> String {
        if !self.group.is_empty() {
            self.group.clone()
        } else if !self.claim.is_empty() {
            format!("{} = {}", self.claim, self.value)
        } else {
            format!("e-mail @{}", self.email_domain)
        }
    }
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

    /// The ID token claims whose values the grants match on besides the
    /// groups: each `claim`, and `email` when a grant names an `email_domain`.
    pub fn claims_read(&self) -> Vec<&str> {
        let mut names: Vec<&str> = (self.grants.iter())
            .filter(|g| g.group.is_empty())
            .map(|g| {
                if g.claim.is_empty() {
                    "email"
                } else {
                    g.claim.as_str()
                }
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The scopes a member with these groups and claim values may grant,
    /// sorted, without repeats.
    pub fn grantable(
        &self,
        groups: &[String],
        claims: &BTreeMap<String, Vec<String>>,
    ) -> Vec<String> {
        let mut scopes: Vec<String> = self
            .grants
            .iter()
            .filter(|g| g.matches(groups, claims))
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
            let named = [&grant.group, &grant.claim, &grant.email_domain];
            if named.iter().filter(|v| !v.trim().is_empty()).count() != 1 {
                return invalid(
                    &format!("grants[{i}]"),
                    "must name exactly one of group, claim (with value) or email_domain",
                );
            }
            if grant.claim.trim().is_empty() != grant.value.trim().is_empty() {
                return invalid(
                    &format!("grants[{i}].value"),
                    "goes with claim, and claim with value",
                );
            }
            if grant.email_domain.contains('@') {
                return invalid(&format!("grants[{i}].email_domain"), "is the part after @");
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
