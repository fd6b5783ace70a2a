//! The MCP endpoint's own middleware, in one async function that the
//! connection's future (`front.rs`) runs in place.
//!
//! The steps run in this order, each able to answer in place of the rest:
//!
//! 1. capacity: over `limits.max_in_flight`, refuse at once (503) instead of
//!    queueing; a slot is held until the response head, so open streams
//!    never count;
//! 2. unauthenticated traffic is limited per client address before any
//!    credential is checked, so guessing costs quota (a failed credential
//!    spends it on the way out);
//! 3. authentication: who is calling, 401 before any body is read;
//! 4. each caller's own quota, now that the caller is known;
//! 5. the guard reads and checks the body once (size, time, syntax, depth),
//!    then session ownership, per-tool quotas, stream caps and audit room,
//!    and gives every error reply the JSON-RPC shape (scopes are decided by
//!    the engine; the guard turns its refusal into the 403);
//! 6. observe: one span and the measurements per request the engine serves
//!    (refusals above are counted where they happen);
//! 7. the engine.
//!
//! A JSON-RPC batch of a 2025-03-26 session is set aside by the guard and
//! its elements each run all of these steps (`serve_or_batch`, `batch.rs`).
//!
//! They were six tower layers, then six async functions each wrapping the
//! next. Now each step is a check before the engine and, where it has one,
//! a step after it, written in a row in one async function: its future is
//! the size of its largest step, not the sum of all of them, and nothing
//! nested is moved as the request starts (the profile showed those copies
//! on every call; BENCHMARKS.md).

use axum::{
    extract::Request,
    response::{IntoResponse, Response},
};
use tokio::sync::Semaphore;
use tracing::Instrument;

use super::{
    batch,
    error::HttpError,
    guard,
    limits::RateLimits,
    throttle::{self, Anonymous},
};
use crate::{
    auth::{self, AuthState},
    mcp::Engine,
    telemetry::{Observer, Observing},
};

/// The MCP endpoint: the steps above in front of the engine.
pub struct Steps {
    in_flight: Semaphore,
    rate_limits: RateLimits,
    auth: AuthState,
    guard: guard::GuardConfig,
    observer: Observer,
    engine: Engine,
}

impl Steps {
    pub fn new(
        engine: Engine,
        max_in_flight: usize,
        rate_limits: RateLimits,
        auth: AuthState,
        guard: guard::GuardConfig,
        observer: Observer,
    ) -> Self {
        Self {
            in_flight: Semaphore::new(max_in_flight),
            rate_limits,
            auth,
            guard,
            observer,
            engine,
        }
    }

    /// Part of the connection's one future (`front.rs`), not boxed apart.
    pub async fn serve(&self, request: Request) -> Response {
        let Ok(_slot) = self.in_flight.try_acquire() else {
            let message = "the server is at capacity; retry shortly".to_owned();
            return HttpError::Unavailable(message).into_response();
        };
        let limits = &self.rate_limits;
        let anonymous = Anonymous::of(&request);
        if let Some(refusal) = anonymous.check(limits) {
            return refusal;
        }
        let response = match self.admit(request).await {
            Ok(admitted) => {
                let guard::Admitted { request, after } = admitted;
                let (request, observing) = Observing::start(request);
                let span = observing.span().clone();
                let response = self.engine.serve(request).instrument(span).await;
                let response = observing.finish(&self.observer, response);
                guard::finish(&self.guard, after, response).await
            }
            Err(refusal) => refusal,
        };
        anonymous.after(limits, response)
    }

    /// [`serve`](Self::serve), and a 2025-03-26 batch the guard set aside:
    /// each element through all of the steps, as a request of its own
    /// (boxed: rare, and kept out of every other request's future).
    pub async fn serve_or_batch(&self, request: Request) -> Response {
        let mut response = self.serve(request).await;
        if response.status() != axum::http::StatusCode::BAD_REQUEST {
            return response;
        }
        let Some(deferred) = batch::take(&mut response) else {
            return response;
        };
        let gate = self.guard.gate.as_deref();
        let serve = |element| -> batch::Served<'_> { Box::pin(self.serve(element)) };
        Box::pin(batch::serve(deferred, gate, serve)).await
    }

    /// Steps 3 to 5: who is calling, their quota, the guard's checks.
    async fn admit(&self, request: Request) -> Result<guard::Admitted, Response> {
        let request = auth::authenticate(&self.auth, request).await?;
        if let Some(refusal) = throttle::callers(&self.rate_limits, &request) {
            return Err(refusal);
        }
        guard::admit(&self.guard, request).await
    }
}
