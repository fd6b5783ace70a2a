//! The MCP endpoint's caller step (`endpoint.rs`, step 11): unauthenticated
//! traffic spends its address's quota before any credential is checked, so
//! guessing costs quota (`throttle.rs`); then who is calling, 401 before any
//! body is read (`authenticate.rs`); then the caller's own quota. The
//! `Caller` goes into the request's extensions.

use std::future::Future;

use axum::{
    extract::Request,
    response::{IntoResponse, Response},
};

use super::{
    authenticate,
    body::{close, request_id, unread},
    error::HttpError,
    limits::RateLimits,
    throttle,
};
use crate::auth::AuthState;

/// The caller step: `next` serves an admitted request, its `Caller` in the
/// extensions; a refused one is answered here.
pub(super) async fn caller<F>(
    limits: &RateLimits,
    auth: &AuthState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let anonymous = throttle::Anonymous::of(&request);
    let unread = unread(&request);
    let (mut parts, body) = request.into_parts();
    let admitted = match anonymous.check(limits) {
        Some(refusal) => Err(refusal),
        None => match authenticate::authenticate(auth, &parts).await {
            Ok(caller) => throttle::over_quota(limits, &caller).map_or(Ok(caller), Err),
            // The database did not answer: the caller may be fine, so the
            // 503 carries the request's id like any other.
            Err(error @ HttpError::Unavailable(_)) => {
                let id = request_id(body).await;
                let refusal = error.into_response_with_id(id);
                return anonymous.after(limits, refusal);
            }
            Err(error) => Err(error.into_response()),
        },
    };
    let response = match admitted {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next(Request::from_parts(parts, body)).await
        }
        Err(refusal) if unread => close(refusal),
        Err(refusal) => refusal,
    };
    anonymous.after(limits, response)
}
