//! CORS for browser clients of the allowed origins, and nothing for the
//! rest: requests without `Origin` (every SDK client, curl, proxies' probes)
//! get the two headers tower-http's layer would add to them, computed once,
//! instead of a per-request copy of the layer and its header building.
//! `front.rs` decides which of the two a request gets.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderName, HeaderValue, Method, header},
    response::Response,
};
use futures::FutureExt;
use tower::{Layer, ServiceExt, service_fn};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// tower-http's CORS for `origins`, applied only to requests with `Origin`.
pub struct BrowserCors {
    /// For requests with `Origin` (`front.rs` wraps its routes in it).
    pub(super) layer: Arc<CorsLayer>,
    /// What the layer adds to a response to a request without `Origin`.
    plain: Arc<[(HeaderName, HeaderValue)]>,
}

impl BrowserCors {
    pub fn new(origins: &[String]) -> Self {
        let layer = cors(origins);
        // Asked once of the layer itself, so the shortcut cannot drift from it.
        let probe = layer
            .clone()
            .layer(service_fn(|_: Request| async {
                Ok::<_, Infallible>(Response::new(Body::empty()))
            }))
            .oneshot(Request::new(Body::empty()))
            .now_or_never();
        let plain = match probe {
            Some(Ok(response)) => response
                .headers()
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
            None => Arc::from([]),
        };
        Self {
            layer: Arc::new(layer),
            plain,
        }
    }
}

impl BrowserCors {
    /// Adds what the layer adds to the response of a request without
    /// `Origin`. As tower-http does: Vary adds to what is there, the rest
    /// replace.
    pub fn add_plain(&self, response: &mut Response) {
        for (name, value) in self.plain.iter() {
            if name == header::VARY {
                response.headers_mut().append(name.clone(), value.clone());
            } else {
                response.headers_mut().insert(name.clone(), value.clone());
            }
        }
    }
}

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
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers(allowed.map(HeaderName::from_static))
        .expose_headers([
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("www-authenticate"),
        ])
        .max_age(Duration::from_secs(600))
}
