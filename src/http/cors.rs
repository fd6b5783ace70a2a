//! CORS for browser clients of the allowed origins, and nothing for the
//! rest: requests without `Origin` (every SDK client, curl, proxies' probes)
//! get the two headers tower-http's layer would add to them, computed once,
//! instead of a per-request copy of the layer and its header building.

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Duration,
};

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderName, HeaderValue, Method, header},
    response::Response,
};
use futures::{
    FutureExt,
    future::{BoxFuture, Either},
};
use tower::{Layer, Service, ServiceExt, service_fn};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// tower-http's CORS for `origins`, applied only to requests with `Origin`.
#[derive(Clone)]
pub struct BrowserCors {
    /// Shared: the stack around the router, this included, is cloned for
    /// every request, and a `CorsLayer` clone copies its header lists.
    layer: Arc<CorsLayer>,
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

impl<S> Layer<S> for BrowserCors {
    type Service = BrowserOnly<S>;

    fn layer(&self, inner: S) -> BrowserOnly<S> {
        BrowserOnly {
            cors: self.clone(),
            inner,
        }
    }
}

#[derive(Clone)]
pub struct BrowserOnly<S> {
    cors: BrowserCors,
    inner: S,
}

pin_project_lite::pin_project! {
    /// `inner`'s response with `headers` appended.
    pub struct Plain<F> {
        #[pin]
        inner: F,
        headers: Arc<[(HeaderName, HeaderValue)]>,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for Plain<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Ok(mut response) = ready!(this.inner.poll(cx));
        // As tower-http does: Vary adds to what is there, the rest replace.
        for (name, value) in this.headers.iter() {
            if name == header::VARY {
                response.headers_mut().append(name.clone(), value.clone());
            } else {
                response.headers_mut().insert(name.clone(), value.clone());
            }
        }
        Poll::Ready(Ok(response))
    }
}

impl<S> Service<Request> for BrowserOnly<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<BoxFuture<'static, Result<Response, Infallible>>, Plain<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.headers().contains_key(header::ORIGIN) {
            let cors = self.cors.layer.layer(self.inner.clone());
            return Either::Left(cors.oneshot(request).boxed());
        }
        Either::Right(Plain {
            inner: self.inner.call(request),
            headers: self.cors.plain.clone(),
        })
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
