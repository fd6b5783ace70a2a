//! The whole HTTP stack in one place: which layer runs where, outermost first.
//!
//! Every listener serves one axum `Router` built here. A request meets:
//!
//! 1. catch-panic (tower-http): a panic anywhere below becomes a 500 with a
//!    JSON-RPC body, never a dropped connection;
//! 2. trace (tower-http): a debug-level span per request (the MCP endpoint's
//!    own span, with the method and outcome, is step 13);
//! 3. the health probes, answered here, before the Host check: the kubelet
//!    sends the pod's address as Host, and they carry nothing a rebinding
//!    attack could use (`health.rs`);
//! 4. observe-refusals: describes the MCP requests refused anywhere below
//!    (Host or Origin, 401, 429, ...), which the engine never sees
//!    (`refusals.rs`);
//! 5. edge: a foreign Host or Origin is refused before anything reads the
//!    request (DNS rebinding); who the client is, behind trusted proxies
//!    (`edge.rs`, `forwarded.rs`); steps 4 and 5 are one layer (`front.rs`);
//! 6. compression (tower-http): JSON above `limits.compression_min_bytes`;
//!    its default predicate never compresses SSE;
//! 7. CORS (tower-http) for browser clients of the allowed origins;
//! 8. the routes: the MCP endpoint, the protected-resource metadata,
//!    when served on this listener, `/metrics`, and when configured the
//!    portal's pages under `/portal` (`portal/`, its own headers and CSRF);
//!    the portal's and the authorization server's open routes (sign-in,
//!    `/register`, `/authorize`, `/token`, `/revoke`) first spend the
//!    client address's unauthenticated quota, the MCP endpoint's (`throttle.rs`),
//!    so one address cannot use up the registration cap or fill the store.
//!
//! The MCP endpoint's own steps, one service whose states are shared behind
//! one reference (`endpoint.rs`), each able to answer in place of the rest:
//!
//! 9. batches: a 2025-03-26 JSON-RPC batch is served element by element,
//!    each through steps 10 to 14 as a request of its own (`batch.rs`);
//! 10. capacity: over `limits.max_in_flight` requests are refused at
//!     once (503) instead of queueing; a slot is held until the response head,
//!     so open streams never count;
//! 11. the caller (`caller.rs`): unauthenticated traffic is
//!     limited per client address before any credential is checked, so
//!     guessing costs quota (`throttle.rs`); then who is calling, 401 before
//!     any body is read (`authenticate.rs`); then the caller's own quota;
//! 12. the guard reads the body once (size, time, syntax, depth) and
//!     decides the protocol era (`guard.rs`);
//! 13. observe: one span and the measurements per request the engine serves
//!     (`observe.rs`, the reply watched to its end in `watched.rs`);
//! 14. the engine (`mcp::Engine`): the endpoint, session owners and caps
//!     (`mcp/admission.rs`), stream caps, then rmcp and teamgate's handler,
//!     its reply shaped (`mcp/reply.rs`); its refusals reach the wire
//!     through `HttpError` (`error.rs`).

use std::{any::Any, sync::Arc};

use axum::{
    Router,
    http::{HeaderName, HeaderValue, Method},
    middleware::from_fn_with_state,
    response::{IntoResponse, Response},
    routing::get,
};
use tokio::sync::Semaphore;
use tower::ServiceBuilder;
use tower_http::{
    catch_panic::CatchPanicLayer,
    compression::{CompressionLayer, DefaultPredicate, Predicate, predicate::SizeAbove},
    cors::{AllowOrigin, CorsLayer},
    trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer},
};
use tracing::Level;

use super::{
    HttpParts, METADATA_PATH, edge,
    endpoint::{Endpoint, Steps},
    error::HttpError,
    front::FrontLayer,
    health, throttle,
};
use crate::auth;

/// The router of one listener. `metrics`: the `/metrics` route, when it is
/// served on this listener (a scraper that sends no public Host name uses
/// `telemetry.metrics.listen` instead).
pub fn router(parts: HttpParts, metrics: Option<Router>) -> Router {
    let HttpParts {
        mcp_path,
        mcp,
        guard,
        health,
        auth,
        edge,
        browser_origins,
        rate_limits,
        max_in_flight,
        compression_min_bytes,
        observer,
        portal,
        portal_open,
    } = parts;
    let rate_limits = Arc::new(rate_limits);
    let observer = Arc::new(observer);

    // Steps 9 to 14: one service (`endpoint.rs`).
    let endpoint = Endpoint::new(Steps {
        guard,
        capacity: Semaphore::new(max_in_flight),
        limits: rate_limits.clone(),
        auth: auth.clone(),
        observer: observer.clone(),
        engine: mcp,
    });

    // A toolset's endpoint is the same service at `<mcp_path>/<name>`; the
    // engine tells which (`mcp/endpoint.rs`).
    let toolsets = format!("{}/{{toolset}}", mcp_path.trim_end_matches('/'));
    let mut routes = Router::new()
        .route_service(&toolsets, endpoint.clone())
        .route_service(&mcp_path, endpoint)
        .route(METADATA_PATH, get(auth::protected_resource_metadata))
        .route(
            &format!("{METADATA_PATH}/{{*resource}}"),
            get(auth::protected_resource_metadata),
        )
        .with_state(auth);
    if let Some(metrics) = metrics {
        routes = routes.merge(metrics);
    }
    if let Some(portal) = portal {
        routes = routes.merge(portal);
    }
    if let Some(open) = portal_open {
        let per_address = from_fn_with_state(rate_limits, throttle::open_route);
        routes = routes.merge(open.route_layer(per_address));
    }

    // Steps 4 to 7, in order (on the routes above only: not on the probes).
    let compress_when = DefaultPredicate::new().and(SizeAbove::new(compression_min_bytes.into()));
    let edge_steps = ServiceBuilder::new()
        .layer(FrontLayer::new(observer, edge))
        .layer(CompressionLayer::new().compress_when(compress_when))
        .layer(cors(&browser_origins));
    let routes = routes.route_layer(edge_steps);

    // Steps 1 to 3.
    let probes = Router::new()
        .route(health::PROBES[0], get(health::healthz))
        .route(health::PROBES[1], get(health::readyz))
        .with_state(health);
    let outer = ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(panicked))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::DEBUG))
                .on_response(DefaultOnResponse::new().level(Level::DEBUG))
                // An error line per shed request would only add to an overload.
                .on_failure(()),
        );
    probes.merge(routes).layer(outer)
}

/// Step 1: a panic is a bug of ours; the client gets a JSON-RPC error and the
/// log the message.
fn panicked(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    tracing::error!(panic = message, "request handler panicked");
    HttpError::Internal.into_response()
}

/// Step 7: CORS for browser clients of `origins` (the public URL's origin
/// and `server.allowed_origins`); the MCP headers a browser client sends
/// and reads.
fn cors(origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    let allowed = [
        "authorization",
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    ];
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, parts| {
            origins.contains(origin) || edge::any_origin(parts.uri.path())
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers(allowed.map(HeaderName::from_static))
        .expose_headers([
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("www-authenticate"),
        ])
        .max_age(std::time::Duration::from_secs(600))
}
