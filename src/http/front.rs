//! Steps 4 and 5 of the stack (`stack.rs`) as one tower layer: the MCP
//! requests refused before the engine are described (`refusals.rs`), and a
//! foreign Host or Origin is refused before anything reads the request
//! (`edge.rs`).
//!
//! A layer of its own, not two `from_fn` steps: both decide on the
//! request's head alone, so the service below is called in place, never
//! cloned per request as an async step must (its future owns what it
//! calls); that clone took the compression and CORS layers, the endpoint's
//! reference and a box for each step (BENCHMARKS.md, issue 67's fifteenth
//! session).

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    body::{Body, Bytes},
    extract::Request,
    response::Response,
};
use futures::{
    TryFutureExt,
    future::{BoxFuture, FutureExt},
};
use tower::{BoxError, Layer, Service};

use super::{edge, edge::EdgeConfig, observe::Observer, refusals::Watch};

/// The front steps' states, shared by every request.
#[derive(Clone)]
pub(super) struct FrontLayer(Arc<Front>);

struct Front {
    observer: Arc<Observer>,
    edge: EdgeConfig,
}

impl FrontLayer {
    pub(super) fn new(observer: Arc<Observer>, edge: EdgeConfig) -> Self {
        Self(Arc::new(Front { observer, edge }))
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = FrontStep<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FrontStep {
            inner,
            front: self.0.clone(),
        }
    }
}

/// The steps around the routes (`inner`).
#[derive(Clone)]
pub(super) struct FrontStep<S> {
    inner: S,
    front: Arc<Front>,
}

impl<S, B> Service<Request> for FrontStep<S>
where
    S: Service<Request, Response = http::Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let front = &self.front;
        let watch = Watch::start(&front.observer, &mut request);
        let served = match edge::check(&front.edge, &mut request) {
            Some(refusal) => futures::future::ready(Ok(refusal)).left_future(),
            // The service made ready serves the request (tower's rule).
            None => self
                .inner
                .call(request)
                .map_ok(|response| response.map(Body::new))
                .right_future(),
        };
        let Some(watch) = watch else {
            return served.boxed();
        };
        let front = front.clone();
        Box::pin(async move {
            let Ok(response) = served.await;
            Ok(watch.finish(&front.observer, response))
        })
    }
}
