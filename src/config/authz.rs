//! `[authorization_server]`: teamgate as the OAuth 2.1 authorization server
//! of its own MCP endpoint (issue 28), signing members in through the
//! portal's identity provider. Requires `[portal]`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConfigError, PortalConfig};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizationServerConfig {
    /// Serve `/authorize`, `/token`, `/register`, `/revoke` and the metadata.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Lifetime of an access token (a JWT signed by teamgate, ES256).
    #[serde(default = "default_access_ttl", with = "super::duration")]
    pub access_token_ttl: Duration,
    /// Lifetime of a refresh token; each use rotates it.
    #[serde(default = "default_refresh_ttl", with = "super::duration")]
    pub refresh_token_ttl: Duration,
    /// How long one signing key signs before a new one replaces it (the old
    /// one stays published until its last token expires).
    #[serde(default = "default_rotation", with = "super::duration")]
    pub key_rotation: Duration,
    /// RFC 7591 dynamic client registration at `/register` (older clients).
    #[serde(default = "yes")]
    pub dynamic_registration: bool,
    /// Hosts whose https Client ID Metadata Documents are fetched (exact
    /// names, or `*.example.com`); empty: no CIMD client is accepted.
    #[serde(default)]
    pub cimd_hosts: Vec<String>,
    /// Largest Client ID Metadata Document read.
    #[serde(default = "default_cimd_bytes")]
    pub cimd_max_bytes: usize,
    /// How long fetching a Client ID Metadata Document may take.
    #[serde(default = "default_cimd_timeout", with = "super::duration")]
    pub cimd_timeout: Duration,
    /// TESTING ONLY (off by default): also fetch client ids on a loopback
    /// host (`127.0.0.1`, `[::1]`, `localhost`) over http, or over https with
    /// the certificate not checked; other hosts are unaffected. Refused
    /// unless `server.public_url` is itself on loopback, warned about when on.
    #[serde(default)]
    pub cimd_testing_loopback: bool,
}

fn yes() -> bool {
    true
}
fn default_access_ttl() -> Duration {
    Duration::from_secs(15 * 60)
}
fn default_refresh_ttl() -> Duration {
    Duration::from_secs(30 * 24 * 3600)
}
fn default_rotation() -> Duration {
    Duration::from_secs(30 * 24 * 3600)
}
fn default_cimd_bytes() -> usize {
    16 * 1024
}
fn default_cimd_timeout() -> Duration {
    Duration::from_secs(5)
}

impl AuthorizationServerConfig {
    /// Whether `host` is on the CIMD allowlist.
    pub fn cimd_host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.cimd_hosts.iter().any(|entry| {
            let entry = entry.to_ascii_lowercase();
            match entry.strip_prefix("*.") {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == entry,
            }
        })
    }

    /// The cross-key rules, with `[portal]` and `server.public_url`.
    pub(super) fn validate(
        &self,
        portal: Option<&PortalConfig>,
        public_url: &str,
    ) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| {
            Err(ConfigError::Invalid {
                key: format!("authorization_server.{key}"),
                why: why.to_owned(),
            })
        };
        if !self.enabled {
            return Ok(());
        }
        if !portal.is_some_and(|p| p.enabled) {
            return invalid(
                "enabled",
                "requires an enabled [portal]: members sign in through its identity provider",
            );
        }
        if !(public_url.starts_with("https://") || public_url.starts_with("http://")) {
            return Err(ConfigError::Invalid {
                key: "server.public_url".into(),
                why: "must be set when [authorization_server] is enabled: it is the tokens' \
                      issuer and audience"
                    .into(),
            });
        }
        if self.access_token_ttl < Duration::from_secs(30)
            || self.access_token_ttl > Duration::from_secs(24 * 3600)
        {
            return invalid("access_token_ttl", "must be between 30s and 24h");
        }
        if self.refresh_token_ttl <= self.access_token_ttl {
            return invalid("refresh_token_ttl", "must be longer than access_token_ttl");
        }
        if self.key_rotation < Duration::from_secs(3600) {
            return invalid("key_rotation", "must be at least 1h");
        }
        if !(512..=1024 * 1024).contains(&self.cimd_max_bytes) {
            return invalid("cimd_max_bytes", "must be between 512 and 1048576");
        }
        if self.cimd_timeout.is_zero() || self.cimd_timeout > Duration::from_secs(30) {
            return invalid("cimd_timeout", "must be above zero and at most 30s");
        }
        if self.cimd_testing_loopback && !on_loopback(public_url) {
            return invalid(
                "cimd_testing_loopback",
                "is for tests only: it is refused unless server.public_url is on a loopback address",
            );
        }
        for (i, host) in self.cimd_hosts.iter().enumerate() {
            let name = host.strip_prefix("*.").unwrap_or(host);
            let ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            if !ok {
                return invalid(
                    &format!("cimd_hosts[{i}]"),
                    "must be a host name (no scheme, port or path), or *.domain",
                );
            }
        }
        Ok(())
    }
}

/// Whether `url`'s host is a loopback address (or `localhost`).
fn on_loopback(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cimd_hosts_match_exactly_or_by_subdomain() {
        let config: AuthorizationServerConfig = serde_json::from_value(serde_json::json!({
            "cimd_hosts": ["claude.ai", "*.example.com"],
        }))
        .unwrap();
        assert!(config.cimd_host_allowed("claude.ai"));
        assert!(config.cimd_host_allowed("Apps.Example.com"));
        assert!(!config.cimd_host_allowed("example.com"));
        assert!(!config.cimd_host_allowed("evilclaude.ai"));
    }

    #[test]
    fn the_testing_loopback_switch_is_off_by_default_and_refused_off_loopback() {
        assert!(
            !serde_json::from_value::<AuthorizationServerConfig>(serde_json::json!({}))
                .unwrap()
                .cimd_testing_loopback
        );
        assert!(on_loopback("http://127.0.0.1:8080/mcp") && on_loopback("http://[::1]/mcp"));
        assert!(on_loopback("https://localhost/mcp"));
        assert!(!on_loopback("https://mcp.example.com/mcp") && !on_loopback("not a url"));
    }
}
