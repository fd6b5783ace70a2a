//! A configuration value that must never be printed.

use std::fmt;

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
        let Some((userinfo, host)) = rest.split_once('@') else {
            return self.0.clone();
        };
        match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:{REDACTED}@{host}"),
            None => self.0.clone(),
        }
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
    }
}
