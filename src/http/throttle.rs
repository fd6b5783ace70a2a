//! Rate-limit steps of the MCP endpoint (`stack.rs`): per client address
//! before authentication (for requests without valid credentials), per
//! caller after it.

use std::net::{IpAddr, SocketAddr};

use std::future::Future;

use axum::{
    extract::{ConnectInfo, Request},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};

use super::{edge::ClientInfo, error::HttpError, limits::RateLimits};
use crate::registry::Caller;

/// The client's address as the quota key; written out only when a quota is
/// spent (most requests carry credentials that work).
fn address(request: &Request) -> Option<IpAddr> {
    request
        .extensions()
        .get::<ClientInfo>()
        .map(|c| c.ip)
        .or_else(|| {
            request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip())
        })
}

fn key(address: Option<IpAddr>) -> String {
    address.map(|ip| ip.to_string()).unwrap_or_default()
}

/// Before authentication: a request with no credentials spends its
/// address's quota up front; one whose credentials fail spends it after.
pub async fn unauthenticated<F: Future<Output = Response>>(
    limits: &RateLimits,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let address = address(&request);
    let has_credentials = request.headers().contains_key(header::AUTHORIZATION);
    if !has_credentials && let Err(wait) = limits.check_address(&key(address)) {
        return HttpError::TooManyRequests(
            wait,
            format!("too many unauthenticated requests from {}", key(address)),
        )
        .into_response();
    }
    let response = next(request).await;
    if has_credentials
        && response.status() == StatusCode::UNAUTHORIZED
        && let Err(wait) = limits.check_address(&key(address))
    {
        return HttpError::TooManyRequests(
            wait,
            format!("too many failed authentications from {}", key(address)),
        )
        .into_response();
    }
    response
}

/// After authentication: each caller has its own bucket.
pub async fn callers<F: Future<Output = Response>>(
    limits: &RateLimits,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    if let Some(caller) = request.extensions().get::<Caller>()
        && let Err(wait) = limits.check_caller(&caller.user)
    {
        return HttpError::TooManyRequests(
            wait,
            format!("{} is over its request rate", caller.user),
        )
        .into_response();
    }
    next(request).await
}
