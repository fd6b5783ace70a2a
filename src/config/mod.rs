//! The configuration tree and its validation.
//!
//! Loading (defaults, files, environment) lives in [`load`]; this file only
//! describes the shape. Every struct denies unknown keys so a typo stops
//! start-up instead of being silently ignored.

mod approvals;
mod apps;
mod audit;
mod authz;
mod capabilities;
mod check;
mod credentials;
mod decl;
mod duration;
mod environment;
mod every_error;
mod guardrails;
mod load;
mod openapi;
mod paths;
mod portal;
mod quotas;
mod rules;
mod sandbox;
mod secret;
mod skills;
mod sql;
mod suggest;
mod tasks;
mod toolsets;
mod upstreams;
mod upstreams_check;
mod validate;

use std::{net::SocketAddr, time::Duration};

use serde::{Deserialize, Serialize};

pub use apps::{AppCsp, AppPages, ToolUi, UiVisibility};
pub use audit::{AuditConfig, AuditShipConfig, AuditWebhookConfig, SHIPPED_FIELDS};
pub use authz::AuthorizationServerConfig;
pub use capabilities::{
    CommandToolConfig, DocsSourceConfig, FilesSourceConfig, HttpToolConfig, PromptArgumentConfig,
    PromptConfig, PromptFilesConfig, ReloadConfig, SourcesConfig, ToolsConfig,
};
pub use credentials::{CredentialsConfig, SlotConfig, member_slots};
pub use decl::{ToolApproval, ToolDecl};
pub use guardrails::{Detect, Failure, GuardAction, GuardrailConfig, Phase};
pub use load::{ConfigError, ConfigSources};
pub use openapi::{OpenApiSourceConfig, OpenApiToolOverride};
pub use portal::{CALLBACK_PATH as PORTAL_CALLBACK_PATH, PortalConfig, PortalGrant};
pub use quotas::SharedQuotas;
pub use sandbox::{SandboxConfig, SizeError};
pub use secret::{DatabaseUrl, Secret, env_value, resolve_env};
pub use sql::{SqlParameter, SqlSourceConfig, SqlToolConfig, SqlType, placeholders};
use tasks::task_retries;
pub use tasks::{TaskMode, TasksConfig};
pub use toolsets::{Discovery, ToolsetConfig};
pub use upstreams::{
    OnUnavailable, ToolOverride, ToolRate, UpstreamAuth, UpstreamConfig, UpstreamOauth,
    UpstreamProtocol, UpstreamTools,
};
pub use validate::{allowed as url_allowed, rendered_allowed as rendered_url_allowed};

/// `config/default.toml`, compiled in so the binary starts with no files.
/// Here, beside the shape it fills, so `load` and `every_error` both read
/// it without reading each other.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../config/default.toml");

/// The whole configuration, as `serve`, `stdio` and `check-config` see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub mcp: McpConfig,
    pub log: LogConfig,
    pub limits: LimitsConfig,
    pub rate_limit: RateLimitConfig,
    pub store: StoreConfig,
    pub auth: AuthConfig,
    pub audit: AuditConfig,
    pub providers: ProvidersConfig,
    pub tools: ToolsConfig,
    pub sources: SourcesConfig,
    pub prompts: Vec<PromptConfig>,
    pub prompt_files: PromptFilesConfig,
    pub reload: ReloadConfig,
    pub telemetry: TelemetryConfig,
    /// MCP servers fronted by teamgate (`upstreams.rs`).
    pub upstreams: Vec<UpstreamConfig>,
    /// Curated endpoints at `<mcp.path>/<name>` (`toolsets.rs`).
    pub toolsets: Vec<ToolsetConfig>,
    /// Content checks on tool arguments and results (`guardrails.rs`).
    pub guardrails: Vec<GuardrailConfig>,
    /// Team sign-in and the web portal (`portal.rs`); absent: no `/portal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portal: Option<PortalConfig>,
    /// teamgate as the OAuth authorization server of its own endpoint
    /// (`authz.rs`); absent: none. Requires `[portal]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<AuthorizationServerConfig>,
    /// Durable task-augmented tool calls (`tasks.rs`).
    pub tasks: TasksConfig,
    /// Per-member secret slots and the keys sealing their values (`credentials.rs`).
    pub credentials: CredentialsConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Base URL of an OTLP/HTTP (protobuf) receiver, e.g.
    /// `http://otel-collector:4318`; empty: nothing is exported.
    pub otlp_endpoint: String,
    /// `service.name` of the exported traces and metrics.
    pub service_name: String,
    /// How often metrics are pushed to the OTLP endpoint.
    #[serde(with = "self::duration")]
    pub export_interval: Duration,
    pub metrics: MetricsConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve Prometheus text at `/metrics`.
    pub enabled: bool,
    /// Empty: `/metrics` is served on `server.listen`; an address: on its own listener.
    pub listen: String,
    /// When set, a scrape must send `Authorization: Bearer <token>`.
    pub token: Secret,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Every request carries a personal token or an OAuth access token.
    Required,
    /// No authentication; allowed on loopback binds only.
    None,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    pub mode: AuthMode,
    /// Scopes of a personal token created without `--scope`.
    pub default_token_scopes: Vec<String>,
    /// How long a verified token is trusted before it is looked up again
    /// (revocation on this or another replica invalidates it at once).
    #[serde(with = "self::duration")]
    pub token_cache_ttl: Duration,
    pub oauth: OAuthConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// Identity providers whose JWT access tokens are accepted.
    pub issuers: Vec<IssuerConfig>,
    /// Tolerance for `exp` and `nbf` against clock skew.
    #[serde(with = "self::duration")]
    pub leeway: Duration,
    /// Least time between two JWKS fetches of one issuer (unknown `kid`).
    #[serde(with = "self::duration")]
    pub jwks_refresh_min_interval: Duration,
    /// Scopes listed in the protected-resource metadata.
    pub scopes_supported: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The `iss` claim, e.g. `https://login.example.com/realms/team`.
    pub issuer: String,
    /// Where the keys are; empty: discovered from the issuer's metadata.
    #[serde(default)]
    pub jwks_url: String,
    /// Required in `aud`; empty: this server's resource URL (RFC 8707).
    #[serde(default)]
    pub audience: String,
    /// Accepted signature algorithms (asymmetric only).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// The claim naming the member.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// Put before the claim's value to make the member's name. Unset: the
    /// issuer and `#` (`https://login.example.com/realms/team#alice`), so no
    /// two issuers' users, nor a personal token's user, are the same member;
    /// `""` makes them the same on purpose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_prefix: Option<String>,
}

fn default_algorithms() -> Vec<String> {
    vec!["RS256".into(), "ES256".into()]
}

fn default_user_claim() -> String {
    "sub".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Requests being processed at once (streams excluded); beyond: 503.
    pub max_in_flight: usize,
    /// Open long-lived streams (GET streams, subscriptions) in total and per caller.
    pub max_streams: usize,
    pub max_streams_per_caller: usize,
    /// How long a tool call may run (a tool can declare its own).
    #[serde(with = "self::duration")]
    pub tool_timeout: Duration,
    /// JSON responses larger than this are compressed when the client accepts it.
    pub compression_min_bytes: u16,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Requests per caller (personal token user or OAuth user).
    pub per_caller_per_minute: u32,
    pub per_caller_burst: u32,
    /// Requests without valid credentials, per client address.
    pub unauthenticated_per_minute: u32,
    pub unauthenticated_burst: u32,
    /// Tighter limits for single tools, per caller.
    pub tools: Vec<ToolRateLimit>,
    /// Counted across replicas in the store (issue 64).
    pub shared: SharedQuotas,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRateLimit {
    pub tool: String,
    pub per_minute: u32,
    pub burst: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite://path` (default, created on first start) or `postgres://...`.
    pub url: DatabaseUrl,
    /// How long a request waits for the database (a connection, the answer
    /// of a request's lookup) before it gets 503 naming the database.
    #[serde(with = "self::duration")]
    pub timeout: Duration,
    /// A database connection is closed this long after it opened, once it
    /// is free (the next request opens another), so what it holds after a
    /// load leaves memory.
    #[serde(with = "self::duration")]
    pub connection_lifetime: Duration,
    /// A legacy session unused this long is deleted.
    #[serde(with = "self::duration")]
    pub session_idle_ttl: Duration,
    /// A session with no request or stream this long leaves memory; its
    /// next request restores it from the store.
    #[serde(with = "self::duration")]
    pub session_memory_idle: Duration,
    /// Live legacy sessions allowed in total and per owner.
    pub max_sessions: i64,
    pub max_sessions_per_owner: i64,
    /// Idle legacy sessions' workers kept in memory at most; past it the
    /// least recently used leaves, to be restored by its next request.
    pub max_sessions_in_memory: usize,
    /// How often expired sessions and old stream events are deleted.
    #[serde(with = "self::duration")]
    pub purge_interval: Duration,
    /// Stream events kept for `Last-Event-ID` resumption: at most this many,
    /// and none older than `events_max_age`.
    pub events_max: usize,
    #[serde(with = "self::duration")]
    pub events_max_age: Duration,
}

/// The forwarding header a trusted proxy sets. Only that one is believed: a
/// proxy passes the other through from the client unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    /// `X-Forwarded-For`, `-Proto` and `-Host` (nginx, Caddy, most ingresses).
    XForwardedFor,
    /// RFC 7239 `Forwarded`.
    Forwarded,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address the HTTP listener binds.
    pub listen: SocketAddr,
    /// The endpoint's URL as clients reach it (e.g. `https://mcp.example.com/mcp`);
    /// empty: derived from the request on loopback.
    pub public_url: String,
    /// Peers (CIDRs) whose forwarded headers are believed.
    pub trusted_proxies: Vec<String>,
    /// Which header those proxies set; the other is never read.
    pub forwarded_header: ForwardedHeader,
    /// A client must send its request head within this time (slowloris).
    #[serde(with = "self::duration")]
    pub header_read_timeout: Duration,
    /// A request body must arrive within this time.
    #[serde(with = "self::duration")]
    pub body_read_timeout: Duration,
    /// Open connections at most; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Also accept HTTP/2 over cleartext (prior knowledge); HTTP/1.1 only when off.
    pub h2c: bool,
    /// After SIGTERM, keep accepting this long with /readyz false, so load
    /// balancers stop sending traffic before the listener closes.
    #[serde(with = "self::duration")]
    pub drain_delay: Duration,
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
    #[serde(with = "self::duration")]
    pub shutdown_grace: Duration,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Path of the Streamable HTTP endpoint.
    pub path: String,
    /// `serverInfo.name` reported to clients.
    pub server_name: String,
    /// How clients find tools at `path`: `list` or `search` (as a toolset's).
    pub discovery: Discovery,
    /// Tools `tools/list` shows at `path` even in search mode (globs).
    pub always: Vec<String>,
    /// Instructions returned by `initialize` and `server/discover`.
    pub instructions: String,
    /// Interval of SSE keep-alive comments on open streams.
    #[serde(with = "self::duration")]
    pub sse_keep_alive: Duration,
    /// `retry:` hint sent in SSE priming events.
    #[serde(with = "self::duration")]
    pub sse_retry: Duration,
    /// A 2025-era call whose stream ends before its answer and is not
    /// resumed within this time is cancelled.
    #[serde(with = "self::duration")]
    pub disconnect_grace: Duration,
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
    /// One line per served MCP request (target `teamgate::request`).
    pub requests: bool,
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
