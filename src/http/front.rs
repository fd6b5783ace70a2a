//! The service every connection runs: the whole HTTP stack as one future.
//!
//! In order, outermost first:
//!
//! 1. observe: describe the MCP requests refused anywhere below (Host or
//!    Origin, 401, 429, ...), which the engine never sees;
//! 2. edge: refuse a foreign Host or Origin before anything reads the request
//!    (DNS rebinding), record who the client is, and on the way out compress
//!    JSON above the threshold, never SSE (see compress.rs);
//! 3. a panic anywhere below becomes a 500, never a dropped connection;
//! 4. CORS for browser requests of the allowed origins (tower-http's layer);
//!    requests without `Origin` get the headers it would have added;
//! 5. the MCP path to its own steps (`stack.rs`); `/metrics` and the
//!    metadata document to their routers.
//!
//! The health probes are answered before all of it: the kubelet sends the
//! pod's address as Host (`health.rs`). `/metrics`, when served on this
//! listener, is routed in step 5 like the rest, Host check included; a
//! scraper that sends no public Host name uses `telemetry.metrics.listen`.
//!
//! These were tower layers around an axum router. Each cost per request a
//! clone of the service below it (reference counts shared by both workers),
//! a boxed future, and a move of the futures nested in it; here a request
//! costs one reference count and one box (BENCHMARKS.md).

use std::{
    convert::Infallible,
    net::SocketAddr,
    panic::AssertUnwindSafe,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{self, header},
    response::Response,
};
use futures::{FutureExt, future::BoxFuture};
use hyper::body::Incoming;
use tower::{Layer, Service, ServiceExt};
use tower_http::catch_panic::{DefaultResponseForPanic, ResponseForPanic};

use super::{cors::BrowserCors, edge, health, stack::Steps};
use crate::telemetry::{METRICS_PATH, Observer, observe_outer};

/// What every request shares: built once, behind one `Arc`.
pub struct Front {
    pub(super) observer: Observer,
    pub(super) edge: edge::Edge,
    pub(super) cors: BrowserCors,
    pub(super) mcp_path: String,
    pub(super) mcp: Steps,
    /// The probes and the protected-resource metadata.
    pub(super) routes: Router,
    /// `/metrics` when it is served on this listener.
    pub(super) metrics: Option<Router>,
}

/// The service of one connection: the shared stack and the peer's address.
#[derive(Clone)]
pub struct Connection {
    front: Arc<Front>,
    peer: SocketAddr,
}

impl Front {
    pub fn connection(self: &Arc<Self>, peer: SocketAddr) -> Connection {
        Connection {
            front: self.clone(),
            peer,
        }
    }

    async fn serve(self: Arc<Self>, peer: SocketAddr, request: Request) -> Response {
        if health::PROBES.contains(&request.uri().path()) {
            let Ok(response) = self.routes.clone().oneshot(request).await;
            return response;
        }
        let front = &self;
        observe_outer(&front.observer, request, |request| {
            edge::edge(&front.edge, peer, request, |request| front.guarded(request))
        })
        .await
    }

    /// Steps 3 to 5.
    async fn guarded(self: &Arc<Self>, request: Request) -> Response {
        let routed = AssertUnwindSafe(self.browser_or_plain(request)).catch_unwind();
        match routed.await {
            Ok(response) => response,
            Err(panic) => DefaultResponseForPanic::default()
                .response_for_panic(panic)
                .map(Body::new),
        }
    }

    async fn browser_or_plain(self: &Arc<Self>, request: Request) -> Response {
        if request.headers().contains_key(header::ORIGIN) {
            // Browsers only: the layer and its boxed future are built per request.
            let routes = Routes(self.clone());
            let cors = self.cors.layer.layer(routes);
            let Ok(response) = cors.oneshot(request).await;
            return response;
        }
        let mut response = self.route(request).await;
        self.cors.add_plain(&mut response);
        response
    }

    async fn route(&self, request: Request) -> Response {
        if request.uri().path() == self.mcp_path {
            return self.mcp.serve_or_batch(request).await;
        }
        if let Some(metrics) = &self.metrics
            && request.uri().path() == METRICS_PATH
        {
            let Ok(response) = metrics.clone().oneshot(request).await;
            return response;
        }
        let Ok(response) = self.routes.clone().oneshot(request).await;
        response
    }
}

/// Step 5 as a service, for tower-http's CORS layer.
#[derive(Clone)]
struct Routes(Arc<Front>);

impl Service<Request> for Routes {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let front = self.0.clone();
        async move { Ok(front.route(request).await) }.boxed()
    }
}

/// hyper's own service trait, which takes `&self`: no per-request clone of
/// the connection's service, unlike tower's.
impl hyper::service::Service<http::Request<Incoming>> for Connection {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let request = request.map(Body::new);
        self.front.clone().serve(self.peer, request).map(Ok).boxed()
    }
}
