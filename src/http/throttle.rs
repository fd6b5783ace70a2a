//! The MCP endpoint's rate limits, checked by the caller step
//! (`caller.rs`): per client address before authentication (for requests
//! without valid credentials), per caller after it.

use std::net::IpAddr;

use axum::{
    extract::Request,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};

use super::{error::HttpError, limits::RateLimits};
use crate::protocol::ClientInfo;
use crate::registry::Caller;

/// The client's address as the quota key; written out only when a quota is
/// spent (most requests carry credentials that work).
fn address(request: &Request) -> Option<IpAddr> {
    // The edge step records the client on every request it lets through.
    request.extensions().get::<ClientInfo>().map(|c| c.ip)
}

/// Spends one of the address's unauthenticated requests; `Some` refusal,
/// naming the address and `what` was too many, once they are spent.
fn spend(limits: &RateLimits, address: Option<IpAddr>, what: &str) -> Option<Response> {
    let key = address.map(|ip| ip.to_string()).unwrap_or_default();
    let wait = limits.check_address(&key).err()?;
    Some(HttpError::TooManyRequests(wait, format!("too many {what} from {key}")).into_response())
}

/// Before authentication: a request with no credentials spends its
/// address's quota up front; one whose credentials fail spends it after.
pub(super) struct Anonymous {
    address: Option<IpAddr>,
    has_credentials: bool,
}

impl Anonymous {
    pub(super) fn of(request: &Request) -> Self {
        Self {
            address: address(request),
            has_credentials: request.headers().contains_key(header::AUTHORIZATION),
        }
    }

    /// A request without credentials spends its address's quota now (the
    /// refusal, once it is spent); one with credentials spends it only if
    /// they fail (`after`).
    pub(super) fn check(&self, limits: &RateLimits) -> Option<Response> {
        if self.has_credentials {
            return None;
        }
        spend(limits, self.address, "unauthenticated requests")
    }

    /// A failed authentication costs the address quota: guessing tokens is
    /// limited like anonymous traffic.
    pub(super) fn after(&self, limits: &RateLimits, response: Response) -> Response {
        if self.has_credentials
            && response.status() == StatusCode::UNAUTHORIZED
            && let Some(refusal) = spend(limits, self.address, "failed authentications")
        {
            return refusal;
        }
        response
    }
}

/// After authentication: the caller's own quota; `Some` refusal once it is
/// spent.
pub(super) fn over_quota(limits: &RateLimits, caller: &Caller) -> Option<Response> {
    let wait = limits.check_caller(&caller.user).err()?;
    let message = format!("{} is over its request rate", caller.user);
    Some(HttpError::TooManyRequests(wait, message).into_response())
}
