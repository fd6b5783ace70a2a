//! `[[upstreams]]`: MCP servers the team already runs, fronted by teamgate
//! with every policy it applies to its own tools (config/examples/upstreams.toml).

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};

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
    /// Run a stdio server in a sandbox (`crate::sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::SandboxConfig>,
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
    #[serde(default = "default_timeout", with = "super::duration")]
    pub timeout: Duration,
    /// While the upstream is unreachable: `hide` its tools, or keep them
    /// listed and answer each call with a tool `error`.
    #[serde(default)]
    pub on_unavailable: OnUnavailable,
    /// The protocol revision teamgate speaks to it: "2025-11-25"
    /// (`initialize`, a session) or "2026-07-28" (`server/discover`,
    /// stateless; what its own tasks need, docs/upstreams.md).
    #[serde(default)]
    pub protocol: UpstreamProtocol,
    /// Pin each tool's definition on first sight and withhold a changed one
    /// until `teamgate upstreams approve`; false: changes pass straight through.
    #[serde(default = "pin_by_default")]
    pub pin: bool,
    /// `oauth`: each member connects their own account at the upstream's
    /// authorization server (portal, Connections) and their calls carry
    /// their own access token; `auto` (the default): the same once a `url`
    /// upstream without an `Authorization` header answers 401 with RFC 9728
    /// metadata; `none`: only `headers`, a 401 stays an error.
    #[serde(default)]
    pub auth: UpstreamAuth,
    /// With `auth = "oauth"` or `"auto"`: the client and scopes teamgate asks for.
    #[serde(default)]
    pub oauth: UpstreamOauth,
}

/// How teamgate authenticates to an upstream beyond its `headers`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamAuth {
    /// Member OAuth once the upstream asks for it (a 401 with RFC 9728
    /// metadata), if it has a `url` and no `Authorization` header.
    #[default]
    Auto,
    None,
    Oauth,
}

/// `[upstreams.oauth]`: the member OAuth flow teamgate runs (issue 29).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOauth {
    /// Scopes asked for; empty: the upstream's `scopes_supported`, if any.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// A client registered beforehand at the authorization server (public,
    /// PKCE); empty: teamgate registers itself (RFC 7591).
    #[serde(default)]
    pub client_id: String,
}

/// `[upstreams.tools]`: which of the upstream's tools are offered (glob
/// lists over its own names), and `[upstreams.tools.NAME]` overrides.
/// serde cannot deny unknown keys beside `flatten`: a misspelt list is
/// still refused, as an override that is not a table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UpstreamTools {
    /// Empty: every tool.
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// One tool's overrides, by the upstream's own name of it.
    #[serde(flatten)]
    pub overrides: BTreeMap<String, ToolOverride>,
}

/// `[upstreams.tools.NAME]`: teamgate's policies for one upstream tool,
/// as a declared tool has them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// The exposed name, instead of `prefix + name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
    /// Replaces the upstream's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Annotation hints; unset ones keep the upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Scopes a caller needs for this tool (before the upstream's `scopes`).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Ask the user before each run. Unset: asked when the upstream
    /// annotates the tool `destructiveHint: true` and not `readOnlyHint`;
    /// `false` turns that off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<bool>,
    /// Each call waits for a member of a group to approve it on the portal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<super::ToolApproval>,
    /// Cache results this long; only with `read_only = true`.
    #[serde(
        default,
        with = "super::duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_ttl: Option<Duration>,
    /// Instead of the upstream's `timeout`.
    #[serde(
        default,
        with = "super::duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Per caller, as `rate_limit.tools` entries are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<ToolRate>,
    /// Arguments filled from the caller: `"user"` or `"claim:<name>"`,
    /// hidden from the schema members see.
    #[serde(default)]
    pub from_caller: BTreeMap<String, String>,
}

/// `per_minute` calls a minute on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRate {
    pub per_minute: u32,
    pub burst: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnUnavailable {
    #[default]
    Hide,
    Error,
}

/// The protocol revision of an upstream's connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpstreamProtocol {
    #[default]
    #[serde(rename = "2025-11-25")]
    V2025,
    #[serde(rename = "2026-07-28")]
    V2026,
}

fn pin_by_default() -> bool {
    true
}

fn default_timeout() -> Duration {
    Duration::from_secs(60)
}

impl UpstreamConfig {
    /// The exposed name of the upstream's tool `name`: its `rename`, else
    /// the prefixed name.
    pub fn exposed(&self, name: &str) -> String {
        if let Some(rename) = self
            .tools
            .overrides
            .get(name)
            .and_then(|o| o.rename.as_ref())
        {
            return rename.clone();
        }
        self.prefixed(name)
    }

    /// The per-caller quotas of this upstream's tools, by exposed name.
    pub fn rate_limits(&self) -> impl Iterator<Item = (String, ToolRate)> + '_ {
        let overrides = &self.tools.overrides;
        overrides
            .iter()
            .filter_map(|(tool, o)| Some((self.exposed(tool), o.rate_limit?)))
    }

    /// The declared-tool policies (`from_caller`, `confirm`, `cache_ttl`)
    /// of this upstream's overridden tools, by exposed name; only those
    /// fields are set.
    pub fn policies(&self) -> Vec<super::ToolDecl> {
        let overrides = &self.tools.overrides;
        overrides
            .iter()
            .filter(|(_, o)| {
                o.confirm == Some(true)
                    || o.cache_ttl.is_some()
                    || !o.from_caller.is_empty()
                    || o.approval.is_some()
            })
            .map(|(tool, o)| super::ToolDecl {
                name: self.exposed(tool),
                title: None,
                description: String::new(),
                input_schema: serde_json::Map::new(),
                output_schema: None,
                scopes: o.scopes.clone(),
                confirm: o.confirm == Some(true),
                read_only: o.read_only,
                destructive: o.destructive,
                idempotent: o.idempotent,
                open_world: o.open_world,
                from_caller: o.from_caller.clone(),
                cache_ttl: o.cache_ttl,
                task: None,
                approval: o.approval.clone(),
                ui: None,
                task_retry: 0,
            })
            .collect()
    }

    /// The exposed names of the tools whose operator turned confirmation off
    /// (`confirm = false`): an upstream's destructive annotation does not
    /// ask for them.
    pub fn unconfirmed(&self) -> Vec<String> {
        (self.tools.overrides.iter())
            .filter(|(_, o)| o.confirm == Some(false))
            .map(|(tool, _)| self.exposed(tool))
            .collect()
    }

    /// Whether a 401 with OAuth metadata switches this upstream to member
    /// OAuth (`auth = "auto"`, a `url`, no `Authorization` header: an
    /// operator who set one chose a shared credential, and its 401 is an error).
    pub fn may_detect_oauth(&self) -> bool {
        self.auth == UpstreamAuth::Auto
            && !self.url.is_empty()
            && !(self.headers.keys()).any(|h| h.eq_ignore_ascii_case("authorization"))
    }

    /// `name` with this upstream's prefix (prompts, and tools not renamed).
    pub fn prefixed(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{name}"),
            None => format!("{}_{name}", self.name),
        }
    }
}
