//! `[[upstreams]]`: MCP servers the team already runs, fronted by teamgate
//! with every policy it applies to its own tools (config/examples/upstreams.toml).

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// One upstream MCP server: remote (`url`) or a local program (`command`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Letters, digits and `-`; names the upstream in logs, metrics and the CLI.
    pub name: String,
    /// A remote server's Streamable HTTP endpoint; under `tools.http_allowlist`.
    #[serde(default)]
    pub url: String,
    /// Headers sent to `url`; `${NAME}` reads environment variable NAME (a secret,
    /// scrubbed from every result). A member's own credential is never sent.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A stdio server's program (absolute path or a name found on PATH); never a shell.
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Environment variables passed through from teamgate's environment.
    #[serde(default)]
    pub env: Vec<String>,
    /// Environment variables passed through and scrubbed from every result.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// Prepended to the upstream's tool names; default `<name>_`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Which of the upstream's tools are offered (names before the prefix).
    #[serde(default)]
    pub tools: UpstreamTools,
    /// Scopes a caller needs for every tool of this upstream; empty: the
    /// default `tools:<exposed name>` of each.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// How long one call may take.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// While the upstream is unreachable: `hide` its tools, or keep them
    /// listed and answer each call with a tool `error`.
    #[serde(default)]
    pub on_unavailable: OnUnavailable,
}

/// `[upstreams.tools]`: glob lists over the upstream's own tool names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTools {
    /// Empty: every tool.
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnUnavailable {
    #[default]
    Hide,
    Error,
}

fn default_timeout() -> Duration {
    Duration::from_secs(60)
}

impl UpstreamConfig {
    /// The exposed name of the upstream's tool `name`.
    pub fn exposed(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => format!("{}_{name}", self.name),
        }
    }
}

/// Checks each upstream on its own and the list as a whole; every key named.
pub(super) fn validate(
    upstreams: &[UpstreamConfig],
    allowlist: &[String],
) -> Result<(), ConfigError> {
    let invalid = |i: usize, key: &str, why: String| ConfigError::Invalid {
        key: format!("upstreams[{i}].{key}"),
        why,
    };
    let mut seen = std::collections::HashSet::new();
    for (i, upstream) in upstreams.iter().enumerate() {
        let name = &upstream.name;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(invalid(
                i,
                "name",
                format!("{name:?}: use letters, digits and '-'"),
            ));
        }
        if !seen.insert(name.as_str()) {
            return Err(invalid(i, "name", format!("{name:?} is used twice")));
        }
        match (upstream.url.is_empty(), upstream.command.is_empty()) {
            (false, false) => {
                return Err(invalid(
                    i,
                    "url",
                    "set either url or command, not both".into(),
                ));
            }
            (true, true) => {
                return Err(invalid(
                    i,
                    "url",
                    "set url (a remote server) or command (a stdio server)".into(),
                ));
            }
            (false, true) => {
                let url = url::Url::parse(&upstream.url)
                    .map_err(|e| invalid(i, "url", format!("{:?}: {e}", upstream.url)))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(invalid(i, "url", "only http and https URLs".into()));
                }
                if !super::url_allowed(&upstream.url, allowlist) {
                    return Err(invalid(
                        i,
                        "url",
                        format!(
                            "{:?} is not under any base URL of tools.http_allowlist",
                            upstream.url
                        ),
                    ));
                }
            }
            (true, false) => {
                if !upstream.headers.is_empty() {
                    return Err(invalid(
                        i,
                        "headers",
                        "headers are for a url upstream".into(),
                    ));
                }
            }
        }
        for (key, globs) in [
            ("tools.include", &upstream.tools.include),
            ("tools.exclude", &upstream.tools.exclude),
        ] {
            for glob in globs {
                globset::Glob::new(glob).map_err(|e| invalid(i, key, format!("{glob:?}: {e}")))?;
            }
        }
        if upstream.timeout.is_zero() {
            return Err(invalid(i, "timeout", "must be more than 0".into()));
        }
    }
    Ok(())
}
