//! The HTTP surface: the MCP endpoint (rmcp's service behind the guard),
//! health probes, and the ordered middleware stack around them.
//! Knows HTTP; never interprets MCP methods (that is `mcp`'s job).

mod collapse;
pub mod error;
mod guard;
mod health;

use std::{sync::Arc, time::Duration};

use axum::{Router, middleware, routing::get};
use tower_http::{catch_panic::CatchPanicLayer, trace::TraceLayer};

pub use guard::{Admission, GuardConfig};
pub use health::Health;

use crate::mcp::{McpHandler, Sessions, StreamableHttpService};

/// Time a POST body may take to arrive before the request is dropped.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything the router needs, built by `App::build`.
pub struct HttpParts {
    pub mcp_path: String,
    pub mcp: StreamableHttpService<McpHandler, Sessions>,
    pub guard: GuardConfig,
    pub health: Health,
}

impl GuardConfig {
    pub fn from_config(
        config: &crate::config::Config,
        admission: Option<Arc<dyn Admission>>,
    ) -> Self {
        Self {
            admission,
            max_body_bytes: config.server.max_body_bytes,
            max_json_depth: config.server.max_json_depth,
            body_timeout: BODY_TIMEOUT,
            json_responses: config.mcp.json_responses,
            collapse_wait: config.mcp.sse_keep_alive,
        }
    }
}

/// The router with its middleware stack, outermost layer first.
pub fn router(parts: HttpParts) -> Router {
    let guard = Arc::new(parts.guard);
    let mcp = Router::new()
        .route_service(&parts.mcp_path, parts.mcp)
        // Reads and checks the body once, before the engine parses it, and
        // gives every error reply the JSON-RPC shape.
        .layer(middleware::from_fn_with_state(guard, guard::guard));
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(parts.health)
        .merge(mcp)
        // Outermost: a panic anywhere below becomes a 500, never a dropped
        // connection; the trace span then covers the whole request.
        .layer(TraceLayer::new_for_http())
        .layer(CatchPanicLayer::new())
}
