//! The HTTP surface: the MCP endpoint (rmcp's service behind the guard),
//! health probes, OAuth metadata, the accept loop, and the one ordered
//! middleware stack around them. Knows HTTP; never interprets MCP methods
//! beyond what routing a refusal needs.

mod authority;
mod batch;
mod collapse;
mod edge;
mod envelope;
pub mod error;
mod forwarded;
pub(crate) mod guard;
mod health;
pub mod limits;
mod refusal;
mod serve;
mod stack;
mod throttle;

use std::sync::Arc;

pub use edge::{ClientInfo, EdgeConfig};
pub use envelope::Envelope;
pub use guard::{Gate, GuardConfig, Refusal};
pub use health::Health;
pub use limits::{RateLimits, StreamCaps};
pub use refusal::ScopeRefusal;
pub use serve::{ServeOptions, serve};
pub use stack::router;

use crate::{auth::AuthState, mcp::Engine};

/// RFC 9728 protected-resource metadata (root and path-inserted forms).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Everything the router needs, built by `App`.
pub struct HttpParts {
    pub mcp_path: String,
    /// rmcp, with `subscriptions/listen` streams served beside it.
    pub mcp: Engine,
    pub guard: GuardConfig,
    pub health: Health,
    pub auth: AuthState,
    pub edge: EdgeConfig,
    pub browser_origins: Vec<String>,
    pub rate_limits: RateLimits,
    pub max_in_flight: usize,
    pub compression_min_bytes: u16,
    /// Spans and metrics of requests that reach the engine.
    pub observer: crate::telemetry::Observer,
}

impl GuardConfig {
    pub fn from_config(
        config: &crate::config::Config,
        gate: Option<Arc<dyn Gate>>,
        streams: StreamCaps,
        rate_limits: RateLimits,
    ) -> Self {
        Self {
            gate,
            streams,
            rate_limits,
            max_body_bytes: config.server.max_body_bytes,
            max_json_depth: config.server.max_json_depth,
            body_timeout: config.server.body_read_timeout,
            json_responses: config.mcp.json_responses,
            collapse_wait: config.mcp.sse_keep_alive,
        }
    }
}

/// The headers read on every MCP request, as names parsed once: a lookup by
/// `&str` validates and lower-cases the name on each call.
pub mod names {
    use axum::http::HeaderName;

    pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
    pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
    pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
    pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
}

/// A header's value as text for logs, metrics and the audit trail: empty
/// when absent or not text, and at most 200 characters, so a client cannot
/// bloat a record through its headers.
pub fn header_text(
    headers: &axum::http::HeaderMap,
    name: impl axum::http::header::AsHeaderName,
) -> String {
    value_text(headers.get(name))
}

/// [`header_text`] of a value already taken from its headers.
pub fn value_text(value: Option<&axum::http::HeaderValue>) -> String {
    let value = value.and_then(|v| v.to_str().ok());
    clip(value.unwrap_or_default(), 200).to_owned()
}

/// `text` cut to at most `max` characters, on a character boundary. Most
/// values are far shorter, and their byte length already proves it.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
