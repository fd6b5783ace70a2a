//! The MCP endpoint's own steps (`stack.rs`, steps 9 to 14) as one tower
//! service: batches, capacity, the caller, the guard, observe, then the
//! engine. Each step is an async function handed the rest as `next`, and
//! can answer in its place.
//!
//! One service whose states sit behind one `Arc`, cloned once per request,
//! rather than a layer per step: axum clones a route's service for every
//! request and each nested step cloned what was below it again, so the same
//! reference counts moved a dozen times per call between the cores' caches
//! (BENCHMARKS.md, issue 67's fifteenth session). Nothing is boxed between
//! the steps either; the engine's future, the largest, is boxed where it
//! starts, so the steps' own future stays small as each is moved.

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
use tokio::sync::Semaphore;
use tower::Service;

use super::{
    GuardConfig, batch, caller,
    error::HttpError,
    guard,
    limits::RateLimits,
    observe::{self, Observer},
};
use crate::{auth::AuthState, mcp::Engine, registry::RequestFacts};

/// What the endpoint's steps read, built once per listener.
pub(super) struct Steps {
    pub(super) guard: GuardConfig,
    /// `limits.max_in_flight` slots (step 10).
    pub(super) capacity: Semaphore,
    pub(super) limits: Arc<RateLimits>,
    pub(super) auth: AuthState,
    pub(super) observer: Arc<Observer>,
    pub(super) engine: Engine,
}

/// The endpoint, served at the MCP path and at each toolset's.
#[derive(Clone)]
pub(super) struct Endpoint(Arc<Steps>);

impl Endpoint {
    pub(super) fn new(steps: Steps) -> Self {
        Self(Arc::new(steps))
    }
}

impl Service<Request> for Endpoint {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Step 10 refuses at once instead of making anyone wait here.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let steps = self.0.clone();
        Box::pin(async move { Ok(steps.batches(request).await) })
    }
}

impl Steps {
    /// Step 9: a batch the guard set aside is served element by element,
    /// each through steps 10 to 14 as a request of its own (`batch.rs`).
    async fn batches(&self, request: Request) -> Response {
        let gate = self.guard.gate.as_deref();
        batch::batches(gate, request, |request| self.capacity(request)).await
    }

    /// Step 10: over `limits.max_in_flight` requests are refused at once
    /// (503) instead of queueing. The slot is held until the response head,
    /// so open streams never count.
    async fn capacity(&self, request: Request) -> Response {
        let Ok(_slot) = self.capacity.try_acquire() else {
            let refusal = HttpError::Unavailable("the server is at capacity; retry shortly".into());
            return refusal.into_response();
        };
        caller::caller(&self.limits, &self.auth, request, |request| {
            self.guarded(request)
        })
        .await
    }

    /// Steps 12 and 13: the guard (`guard.rs`), then observe (`observe.rs`).
    async fn guarded(&self, request: Request) -> Response {
        guard::guard(&self.guard, request, |request| {
            observe::observe(&self.observer, request, |request| self.engine(request))
        })
        .await
    }

    /// Step 14: the engine; its refusals reach the wire through `HttpError`.
    async fn engine(&self, request: Request) -> Response {
        let id = request
            .extensions()
            .get::<Arc<RequestFacts>>()
            .and_then(|facts| facts.id.clone());
        // Boxed where it starts: the engine's future is the request's
        // largest, and inline every step above would hold it and move it
        // as it starts the next, and axum's box would copy it whole
        // (BENCHMARKS.md, issue 67, sixteenth session).
        Box::pin(self.engine.serve(request))
            .await
            .unwrap_or_else(|refusal| HttpError::from_engine(refusal, id))
    }
}
