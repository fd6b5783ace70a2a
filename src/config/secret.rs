//! A configuration value that must never be printed.

use std::fmt;

use anyhow::Context;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Shown as `"<redacted>"` by `Debug`, `Display` and `Serialize`, so an
/// effective-config dump or a log line cannot leak it; only [`Secret::expose`]
/// gives the value, and callers use it where the secret is consumed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is a stand-in copied from an example rather than a
    /// secret: `CHANGE-ME…` (deploy/k8s/secret.example.yaml), a `<…>` hint,
    /// or a handful of characters repeated. Long enough is not secret enough.
    pub fn is_placeholder(value: &str) -> bool {
        let folded: String = (value.chars())
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let hint = value.trim_start().starts_with('<') && value.trim_end().ends_with('>');
        let distinct: std::collections::BTreeSet<char> = value.chars().collect();
        ["changeme", "replaceme"]
            .iter()
            .any(|stand_in| folded.contains(stand_in))
            || hint
            || distinct.len() < 4
    }
}

const REDACTED: &str = "<redacted>";

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// A database URL whose password is never printed.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_supported(&self) -> bool {
        ["sqlite:", "postgres:", "postgresql:"]
            .iter()
            .any(|scheme| self.0.starts_with(scheme))
    }

    pub fn is_postgres(&self) -> bool {
        self.0.starts_with("postgres")
    }

    /// The URL with any password replaced by `<redacted>`.
    pub fn masked(&self) -> String {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return self.0.clone();
        };
        // The last `@` ends the user information, as URL parsers (and
        // `passwords`) read it: a password may hold an `@` of its own.
        let Some((userinfo, host)) = rest.rsplit_once('@') else {
            return self.0.clone();
        };
        match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:{REDACTED}@{host}"),
            None => self.0.clone(),
        }
    }
}

impl DatabaseUrl {
    /// The URL's password as written and percent-decoded (none when the URL
    /// has none): either form could appear in a driver's message.
    pub fn passwords(&self) -> Vec<String> {
        let password = self
            .0
            .split_once("://")
            .and_then(|(_, rest)| rest.rsplit_once('@'))
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .map(|(_, password)| password)
            .filter(|p| !p.is_empty());
        let Some(password) = password else {
            return Vec::new();
        };
        let decoded = percent_encoding::percent_decode_str(password).decode_utf8_lossy();
        let mut forms = vec![password.to_owned(), decoded.into_owned()];
        forms.dedup();
        forms
    }
}

impl super::Config {
    /// Secret values teamgate holds in its own configuration: request-state
    /// keys, the metrics token, the store's password. The registry scrubs
    /// them from tool results like the declared tools' secrets.
    pub fn held_secrets(&self) -> Vec<String> {
        let mut held: Vec<String> = self
            .mcp
            .request_state_keys
            .iter()
            .map(|k| k.expose().to_owned())
            .collect();
        held.push(self.telemetry.metrics.token.expose().to_owned());
        held.extend(self.store.url.passwords());
        if let Some(portal) = &self.portal {
            held.push(portal.client_secret.expose().to_owned());
        }
        held.extend(self.credentials.keys.iter().map(|k| k.expose().to_owned()));
        if let Some(hook) = &self.audit.ship.webhook {
            held.push(hook.secret.expose().to_owned());
        }
        held.retain(|s| !s.is_empty());
        held
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl Serialize for DatabaseUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.masked())
    }
}

/// Environment variable `name`, or an error naming the configuration key
/// that reads it: the one message `serve` and `check-config` both give.
pub fn env_value(key: &str, name: &str) -> anyhow::Result<String> {
    std::env::var(name)
        .map_err(|_| anyhow::anyhow!("{key}: environment variable {name} is not set"))
}

/// Replaces `${NAME}` with environment variable NAME, recording its value as
/// a secret. A variable that is not set stops the build naming the key.
pub fn resolve_env(template: &str, key: &str, secrets: &mut Vec<String>) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let end = rest[start..]
            .find('}')
            .map(|e| e + start)
            .with_context(|| format!("{key}: unclosed ${{"))?;
        let name = &rest[start + 2..end];
        if name.starts_with("user:") {
            anyhow::bail!("{key}: ${{{name}}} is a member's value, which is not read here");
        }
        let value = env_value(key, name)?;
        secrets.push(value.clone());
        out.push_str(&rest[..start]);
        out.push_str(&value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("hunter2-hunter2");
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"<redacted>\"");
        assert_eq!(s.expose(), "hunter2-hunter2");
    }

    #[test]
    fn database_urls_hide_only_the_password() {
        let url = DatabaseUrl::new("postgres://app:s3cret@db:5432/teamgate");
        assert_eq!(url.masked(), "postgres://app:<redacted>@db:5432/teamgate");
        assert_eq!(
            format!("{url:?}"),
            "postgres://app:<redacted>@db:5432/teamgate"
        );
        assert_eq!(
            DatabaseUrl::new("sqlite://data/x.db").masked(),
            "sqlite://data/x.db"
        );
        assert_eq!(url.passwords(), ["s3cret"]);
        assert_eq!(
            DatabaseUrl::new("postgres://a:p%40ss@db/x").passwords(),
            ["p%40ss", "p@ss"]
        );
        // A password holding `@`: none of it is printed (its tail once was).
        let url = DatabaseUrl::new("postgres://app:p@ss@word@db/x");
        assert_eq!(url.masked(), "postgres://app:<redacted>@db/x");
        assert_eq!(url.passwords(), ["p@ss@word"]);
        assert!(
            DatabaseUrl::new("sqlite://data/x.db")
                .passwords()
                .is_empty()
        );
    }
}
