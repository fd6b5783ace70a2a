//! The HTTP surface: the MCP endpoint (rmcp's service behind the guard),
//! health probes, OAuth metadata, the accept loop, and the one ordered
//! middleware stack around them. Knows HTTP; never interprets MCP methods
//! beyond what routing a refusal needs.

mod authority;
mod batch;
mod collapse;
mod compress;
mod cors;
mod edge;
mod envelope;
pub mod error;
mod forwarded;
mod front;
pub(crate) mod guard;
mod health;
pub mod limits;
mod refusal;
mod serve;
mod stack;
mod throttle;

use std::sync::Arc;

use axum::{Router, routing::get};
use tower_http::trace::TraceLayer;

pub use edge::{ClientInfo, EdgeConfig};
pub use envelope::Envelope;
pub use front::Front;
pub use guard::{Gate, GuardConfig, Refusal};
pub use health::Health;
pub use limits::{RateLimits, StreamCaps};
pub use refusal::ScopeRefusal;
pub use serve::{ServeOptions, serve};

use crate::{
    auth::{self, AuthState},
    mcp::Engine,
};

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

/// The whole HTTP stack, one per listener (`front.rs` lists its steps).
/// `metrics`: the `/metrics` route, when it is served on this listener.
pub fn front(parts: HttpParts, metrics: Option<Router>) -> Arc<Front> {
    // The MCP endpoint: its own steps (capacity, rate limits, authentication,
    // the input guard, observation) run in order; `stack.rs` lists them.
    let mcp = stack::Steps::new(
        parts.mcp,
        parts.max_in_flight,
        parts.rate_limits,
        parts.auth.clone(),
        parts.guard,
        parts.observer.clone(),
    );
    let metadata = Router::new()
        .route(METADATA_PATH, get(auth::protected_resource_metadata))
        .route(
            &format!("{METADATA_PATH}/{{*resource}}"),
            get(auth::protected_resource_metadata),
        )
        .with_state(parts.auth);
    // One debug-level span per request to these routes (tower-http's;
    // failures are not logged here: an ERROR line per shed request would only
    // add to an overload). The MCP endpoint's requests have the observe
    // step's span instead: through this layer each also paid for a second
    // span and a wrapper around its reply body.
    let routes = Router::new()
        .route(health::PROBES[0], get(health::healthz))
        .route(health::PROBES[1], get(health::readyz))
        .with_state(parts.health)
        .merge(metadata)
        .layer(TraceLayer::new_for_http().on_failure(()));
    Arc::new(Front {
        observer: parts.observer,
        edge: edge::Edge {
            config: parts.edge,
            compression: compress::Compression::new(parts.compression_min_bytes),
        },
        cors: cors::BrowserCors::new(&parts.browser_origins),
        mcp_path: parts.mcp_path,
        mcp,
        routes,
        metrics,
    })
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
