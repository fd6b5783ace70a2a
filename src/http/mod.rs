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

pub use guard::{Gate, GuardConfig, Refusal};
pub use health::Health;

use crate::{
    auth::{self, AuthState},
    mcp::{McpHandler, Sessions, StreamableHttpService},
};

/// RFC 9728 protected-resource metadata (root and path-inserted forms).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Time a POST body may take to arrive before the request is dropped.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything the router needs, built by `App::build`.
pub struct HttpParts {
    pub mcp_path: String,
    pub mcp: StreamableHttpService<McpHandler, Sessions>,
    pub guard: GuardConfig,
    pub health: Health,
    pub auth: AuthState,
    /// Spans and metrics of requests that reach the engine.
    pub observer: crate::telemetry::Observer,
}

impl GuardConfig {
    pub fn from_config(config: &crate::config::Config, gate: Option<Arc<dyn Gate>>) -> Self {
        Self {
            gate,
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
        // Innermost: one span and the measurements per request the engine serves.
        .layer(middleware::from_fn_with_state(
            parts.observer,
            crate::telemetry::observe,
        ))
        // Inner: reads and checks the body once (size, syntax, depth), then
        // session ownership, scopes and audit room; gives every error reply
        // the JSON-RPC shape.
        .layer(middleware::from_fn_with_state(guard, guard::guard))
        // Outer: who is calling, before any body is read (401 is cheap).
        .layer(middleware::from_fn_with_state(
            parts.auth.clone(),
            auth::authenticate,
        ));
    let metadata = Router::new()
        .route(METADATA_PATH, get(auth::protected_resource_metadata))
        .route(
            &format!("{METADATA_PATH}/{{*resource}}"),
            get(auth::protected_resource_metadata),
        )
        .with_state(parts.auth);
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .with_state(parts.health)
        .merge(metadata)
        .merge(mcp)
        // Outermost: a panic anywhere below becomes a 500, never a dropped
        // connection; the trace span then covers the whole request.
        .layer(TraceLayer::new_for_http())
        .layer(CatchPanicLayer::new())
}
