//! The outer half of a request's observation: the MCP requests refused
//! before they reached the engine (Host or Origin, 401, 404, 413, 429, ...),
//! which the inner half (`observe.rs`) never sees.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Instant,
};

use axum::{
    extract::Request,
    http::{HeaderValue, Method, header},
    response::Response,
};

use super::observe::{Observer, Reached};
use crate::protocol::{ProtocolEra, names, value_text};

/// A request to the MCP endpoint, watched for a refusal before the engine.
pub(super) struct Watch {
    started: Instant,
    reached: Arc<Reached>,
    // Kept as they came (a cheap clone); read as text only for a refusal.
    mcp_method: Option<HeaderValue>,
    mcp_version: Option<HeaderValue>,
    http_method: Method,
}

impl Watch {
    /// The outer half (`front.rs`, step 4) begins: requests to the MCP
    /// endpoint are watched, the others pass unwatched.
    pub(super) fn start(observer: &Observer, request: &mut Request) -> Option<Self> {
        if request.uri().path() != observer.mcp_path {
            return None;
        }
        let reached = Arc::new(Reached::default());
        request.extensions_mut().insert(reached.clone());
        Some(Self {
            started: Instant::now(),
            reached,
            mcp_method: request.headers().get(names::MCP_METHOD).cloned(),
            mcp_version: request.headers().get(names::MCP_PROTOCOL_VERSION).cloned(),
            http_method: request.method().clone(),
        })
    }

    /// Counts 401/403 and 429 refusals, and describes the request when it
    /// was refused before reaching the engine.
    pub(super) fn finish(self, observer: &Observer, response: Response) -> Response {
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
        if self.reached.0.load(Ordering::Relaxed) {
            return response;
        }
        let method = match value_text(self.mcp_method.as_ref()) {
            m if m.is_empty() => self.http_method.as_str().to_owned(),
            m => m,
        };
        let version = value_text(self.mcp_version.as_ref());
        let post = self.http_method == Method::POST;
        let outcome = format!("http_{status}");
        let era = ProtocolEra::label(ProtocolEra::of(&version));
        let elapsed = self.started.elapsed();
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
}
