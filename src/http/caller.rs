//! The MCP endpoint's caller step (`stack.rs`, step 11), one tower layer:
//! unauthenticated traffic spends its address's quota before any credential
//! is checked, so guessing costs quota (`throttle.rs`); then who is calling,
//! 401 before any body is read (`authenticate.rs`); then the caller's own
//! quota. The `Caller` goes into the request's extensions.
//!
//! One layer, not three `from_fn` steps: each of those boxes the rest of the
//! stack and clones it on every request, and three in a row showed in the
//! profile (`memmove`, `clone_box`; BENCHMARKS.md).

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    extract::Request,
    response::{IntoResponse, Response},
};
use futures::future::BoxFuture;
use tower::{Layer, Service};

use super::{
    authenticate,
    body::{close, request_id, unread},
    error::HttpError,
    limits::RateLimits,
    throttle,
};
use crate::auth::AuthState;

/// The caller step's states, shared by every request.
#[derive(Clone)]
pub(super) struct CallerLayer {
    limits: Arc<RateLimits>,
    auth: Arc<AuthState>,
}

impl CallerLayer {
    pub(super) fn new(limits: Arc<RateLimits>, auth: Arc<AuthState>) -> Self {
        Self { limits, auth }
    }
}

impl<S> Layer<S> for CallerLayer {
    type Service = CallerStep<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallerStep {
            inner,
            limits: self.limits.clone(),
            auth: self.auth.clone(),
        }
    }
}

/// The step around the rest of the endpoint (`inner`).
#[derive(Clone)]
pub(super) struct CallerStep<S> {
    inner: S,
    limits: Arc<RateLimits>,
    auth: Arc<AuthState>,
}

impl<S> Service<Request> for CallerStep<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service that was made ready serves this request (tower's rule).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let limits = self.limits.clone();
        let auth = self.auth.clone();
        Box::pin(async move {
            let anonymous = throttle::Anonymous::of(&request);
            let unread = unread(&request);
            let (mut parts, body) = request.into_parts();
            let admitted = match anonymous.check(&limits) {
                Some(refusal) => Err(refusal),
                None => match authenticate::authenticate(&auth, &parts).await {
                    Ok(caller) => throttle::over_quota(&limits, &caller).map_or(Ok(caller), Err),
                    // The database did not answer: the caller may be fine,
                    // so the 503 carries the request's id like any other.
                    Err(error @ HttpError::Unavailable(_)) => {
                        let id = request_id(body).await;
                        let refusal = error.into_response_with_id(id);
                        return Ok(anonymous.after(&limits, refusal));
                    }
                    Err(error) => Err(error.into_response()),
                },
            };
            let response = match admitted {
                Ok(caller) => {
                    parts.extensions.insert(caller);
                    inner.call(Request::from_parts(parts, body)).await?
                }
                Err(refusal) if unread => close(refusal),
                Err(refusal) => refusal,
            };
            Ok(anonymous.after(&limits, response))
        })
    }
}
