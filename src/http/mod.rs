//! The HTTP surface: the MCP endpoint (the engine behind the guard),
//! health probes, OAuth metadata, the accept loop, and the one ordered
//! middleware stack around them. Knows HTTP and JSON-RPC framing; never
//! names an MCP method (`tests/api/tidy/transport.rs` checks). Observes
//! the requests it serves (`observe.rs`, `refusals.rs`, `watched.rs`).

mod authenticate;
mod authority;
mod batch;
pub(crate) mod body;
mod caller;
mod edge;
mod endpoint;
pub mod error;
mod forwarded;
mod front;
pub(crate) mod guard;
mod health;
mod lease;
pub mod limits;
mod observe;
mod refusals;
mod serve;
mod stack;
mod throttle;
mod watched;

use std::{sync::Arc, time::Duration};

pub use edge::EdgeConfig;
pub use health::Health;
pub use lease::{QuotaLeases, WINDOW_MS as QUOTA_WINDOW_MS};
pub use limits::RateLimits;
pub use observe::Observer;
pub use serve::{ServeOptions, serve};
pub use stack::router;

use crate::{
    auth::AuthState,
    mcp::{Engine, Gate},
    protocol::names,
};

/// RFC 9728 protected-resource metadata (root and path-inserted forms).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Everything the router needs, built by `App`.
pub struct HttpParts {
    pub mcp_path: String,
    /// The engine: session policy, then rmcp and teamgate's handler.
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
    pub observer: Observer,
    /// The portal's pages under `/portal` (`portal/`), when configured.
    pub portal: Option<axum::Router>,
    /// The portal's and the authorization server's routes anyone can call
    /// before signing in (sign-in, registration, tokens), when configured:
    /// behind the per-address limit on unauthenticated traffic.
    pub portal_open: Option<axum::Router>,
}

/// The guard's settings (`guard.rs`, `body.rs`, `batch.rs`).
pub struct GuardConfig {
    /// For batches: the protocol version of the session they are sent in.
    pub gate: Option<Arc<dyn Gate>>,
    pub max_body_bytes: usize,
    pub max_json_depth: usize,
    pub body_timeout: Duration,
    /// How long after it arrives a POSTed message must be answered: the
    /// deadline in its facts (`limits.tool_timeout`).
    pub answer_within: Duration,
}

impl GuardConfig {
    pub fn from_config(config: &crate::config::Config, gate: Option<Arc<dyn Gate>>) -> Self {
        Self {
            gate,
            max_body_bytes: config.server.max_body_bytes,
            max_json_depth: config.server.max_json_depth,
            body_timeout: config.server.body_read_timeout,
            answer_within: config.limits.tool_timeout,
        }
    }
}
