//! The configuration tree and its validation.
//!
//! Loading (defaults, files, environment) lives in [`load`]; this file only
//! describes the shape. Every struct denies unknown keys so a typo stops
//! start-up instead of being silently ignored.

mod capabilities;
mod load;
mod secret;
mod validate;

use std::{net::SocketAddr, time::Duration};

use serde::{Deserialize, Serialize};

pub use capabilities::{
    CommandToolConfig, DocsSourceConfig, FilesSourceConfig, HttpToolConfig, PromptArgumentConfig,
    PromptConfig, PromptFilesConfig, ReloadConfig, SourcesConfig, ToolDecl, ToolsConfig,
};
pub use load::{ConfigError, ConfigSources, EMBEDDED_DEFAULT};
pub use secret::{DatabaseUrl, Secret};
pub use validate::allowed as url_allowed;

/// The whole configuration, as `serve`, `stdio` and `check-config` see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub mcp: McpConfig,
    pub log: LogConfig,
    pub store: StoreConfig,
    pub providers: ProvidersConfig,
    pub tools: ToolsConfig,
    pub sources: SourcesConfig,
    pub prompts: Vec<PromptConfig>,
    pub prompt_files: PromptFilesConfig,
    pub reload: ReloadConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite://path` (default, created on first start) or `postgres://...`.
    pub url: DatabaseUrl,
    /// A legacy session unused this long is deleted.
    #[serde(with = "humantime_serde")]
    pub session_idle_ttl: Duration,
    /// A session with no request or stream this long leaves memory; its
    /// next request restores it from the store.
    #[serde(with = "humantime_serde")]
    pub session_memory_idle: Duration,
    /// Live legacy sessions allowed in total and per owner.
    pub max_sessions: i64,
    pub max_sessions_per_owner: i64,
    /// How often expired sessions and old stream events are deleted.
    #[serde(with = "humantime_serde")]
    pub purge_interval: Duration,
    /// Stream events kept for `Last-Event-ID` resumption: at most this many,
    /// and none older than `events_max_age`.
    pub events_max: usize,
    #[serde(with = "humantime_serde")]
    pub events_max_age: Duration,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address the HTTP listener binds.
    pub listen: SocketAddr,
    /// Extra `Host` values accepted besides loopback names (DNS-rebinding guard).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the endpoint; a present `Origin` not
    /// listed here is refused with 403.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Deepest accepted JSON nesting in a request body.
    pub max_json_depth: usize,
    /// How long in-flight requests may run after a shutdown signal.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Path of the Streamable HTTP endpoint.
    pub path: String,
    /// `serverInfo.name` reported to clients.
    pub server_name: String,
    /// Instructions returned by `initialize` and `server/discover`.
    pub instructions: String,
    /// Interval of SSE keep-alive comments on open streams.
    #[serde(with = "humantime_serde")]
    pub sse_keep_alive: Duration,
    /// `retry:` hint sent in SSE priming events.
    #[serde(with = "humantime_serde")]
    pub sse_retry: Duration,
    /// Answer with one JSON body when a call emits nothing before its result.
    pub json_responses: bool,
    /// Serve the 2025-era `initialize` handshake with sessions.
    pub legacy_sessions: bool,
    /// Keys sealing MRTR `requestState`; the first seals, all open (rotation).
    pub request_state_keys: Vec<Secret>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `auto` (JSON unless stderr is a terminal), `json` or `pretty`.
    pub format: LogFormat,
    /// A `tracing` filter directive such as `info` or `teamgate=debug,info`.
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Auto,
    Json,
    Pretty,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersConfig {
    pub builtin: BuiltinConfig,
    pub conformance: ConformanceConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinConfig {
    /// Offer the built-in `teamgate_info` tool and the server-guide prompt.
    pub enabled: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConformanceConfig {
    /// Expose the official conformance suite's fixtures. Test use only.
    pub enabled: bool,
}

impl Config {
    /// Checks that span several keys; serde has already checked each key alone.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid {
            key: key.to_owned(),
            why,
        };
        if !self.mcp.path.starts_with('/') || self.mcp.path.len() < 2 {
            return Err(invalid(
                "mcp.path",
                format!(
                    "must be an absolute path like \"/mcp\", got {:?}",
                    self.mcp.path
                ),
            ));
        }
        if self.server.max_body_bytes < 1024 {
            return Err(invalid(
                "server.max_body_bytes",
                "must be at least 1024 bytes".into(),
            ));
        }
        if !(2..=1024).contains(&self.server.max_json_depth) {
            return Err(invalid(
                "server.max_json_depth",
                "must be between 2 and 1024".into(),
            ));
        }
        if self.mcp.sse_keep_alive.is_zero() {
            return Err(invalid(
                "mcp.sse_keep_alive",
                "must be greater than zero".into(),
            ));
        }
        for (i, key) in self.mcp.request_state_keys.iter().enumerate() {
            if key.expose().len() < 32 {
                return Err(invalid(
                    &format!("mcp.request_state_keys[{i}]"),
                    "must be at least 32 characters of secret material".into(),
                ));
            }
        }
        let store = &self.store;
        if !store.url.is_supported() {
            return Err(invalid(
                "store.url",
                "must start with sqlite:// or postgres://".into(),
            ));
        }
        if store.session_memory_idle > store.session_idle_ttl {
            return Err(invalid(
                "store.session_memory_idle",
                "must not exceed store.session_idle_ttl".into(),
            ));
        }
        if store.max_sessions < 1 || store.max_sessions_per_owner < 1 || store.events_max < 1 {
            return Err(invalid(
                "store",
                "max_sessions, max_sessions_per_owner and events_max must be at least 1".into(),
            ));
        }
        if store.purge_interval.is_zero() {
            return Err(invalid(
                "store.purge_interval",
                "must be greater than zero".into(),
            ));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map_err(|e| invalid("log.level", e.to_string()))?;
        validate::capabilities(self)
    }
}
