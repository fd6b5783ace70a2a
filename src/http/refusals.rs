//! The outer half of a request's observation: the MCP requests refused
//! before they reached the engine (Host or Origin, 401, 404, 413, 429, ...),
//! which the inner half (`observe.rs`) never sees.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Instant,
};

use axum::{
    extract::{Request, State},
    http::{Method, header},
    middleware::Next,
    response::Response,
};

use super::observe::{Observer, Reached};
use crate::protocol::{ProtocolEra, names, value_text};

/// The outer half (`http/stack.rs`): describes requests to the MCP endpoint
/// that were refused before reaching the engine, and counts 401/403 and 429
/// refusals.
pub(super) async fn observe_refusals(
    State(observer): State<Arc<Observer>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.uri().path() != observer.mcp_path {
        return next.run(request).await;
    }
    let started = Instant::now();
    let reached = Arc::new(Reached::default());
    request.extensions_mut().insert(reached.clone());
    // Kept as they came (a cheap clone); read as text only for a refusal.
    let mcp_method = request.headers().get(names::MCP_METHOD).cloned();
    let mcp_version = request.headers().get(names::MCP_PROTOCOL_VERSION).cloned();
    let http_method = request.method().clone();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let metrics = &observer.metrics;
    // A 403 is an authorization failure when it carries a challenge
    // (insufficient scope, decided by the engine, so also on requests that
    // reached it); the edge's Host/Origin refusals do not.
    let challenged = response.headers().contains_key(header::WWW_AUTHENTICATE);
    match status {
        401 => metrics.auth_failure(status),
        403 if challenged => metrics.auth_failure(status),
        429 => metrics.rate_limited(),
        _ => {}
    }
    if reached.0.load(Ordering::Relaxed) {
        return response;
    }
    let method = match value_text(mcp_method.as_ref()) {
        m if m.is_empty() => http_method.as_str().to_owned(),
        m => m,
    };
    let version = value_text(mcp_version.as_ref());
    let post = http_method == Method::POST;
    let outcome = format!("http_{status}");
    let era = ProtocolEra::label(ProtocolEra::of(&version));
    let elapsed = started.elapsed();
    let span = tracing::info_span!(
        "mcp.request",
        otel.kind = "server",
        otel.status_code = "ERROR",
        mcp.method = %method,
        protocol_version = %version,
        era,
        outcome = %outcome,
        latency_ms = elapsed.as_secs_f64() * 1000.0,
    );
    span.in_scope(|| tracing::info!("mcp request refused"));
    metrics.request(
        &method,
        era,
        &outcome,
        post.then_some(elapsed.as_secs_f64()),
    );
    response
}
