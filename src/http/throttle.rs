//! The MCP endpoint's rate limits, checked by the caller step
//! (`caller.rs`): per client address before authentication (for requests
//! without valid credentials), per caller after it. The same per-address
//! quota stands in front of the portal's and the authorization server's
//! open routes (`open_route`).

use std::{net::IpAddr, sync::Arc};

use axum::{
    Json,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde_json::json;

use super::{error::HttpError, limits::RateLimits};
use crate::protocol::ClientInfo;
use crate::registry::Caller;

/// The client's address as the quota key; written out only when a quota is
/// spent (most requests carry credentials that work).
fn address(request: &Request) -> Option<IpAddr> {
    // The edge step records the client on every request it lets through.
    request.extensions().get::<ClientInfo>().map(|c| c.ip)
}

/// The quota key of an address: an IPv4 address itself (an IPv4-mapped
/// IPv6 one too), an IPv6 address's /64, since one host holds a whole /64
/// and would otherwise have 2^64 quotas.
fn address_key(address: Option<IpAddr>) -> String {
    match address.map(|ip| ip.to_canonical()) {
        Some(IpAddr::V6(v6)) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            format!("{}/64", std::net::Ipv6Addr::from(bits))
        }
        Some(ip) => ip.to_string(),
        None => String::new(),
    }
}

/// Spends one of the address's unauthenticated requests; `Some` refusal,
/// naming the address and `what` was too many, once they are spent.
fn spend(limits: &RateLimits, address: Option<IpAddr>, what: &str) -> Option<Response> {
    let key = address_key(address);
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

/// The portal's and the authorization server's open routes (`stack.rs`,
/// step 8): every request spends its address's unauthenticated quota, as a
/// request without credentials at the MCP endpoint does. The refusal is an
/// RFC 6749 error object (these are OAuth and sign-in routes), with
/// `Retry-After`.
pub(super) async fn open_route(
    State(limits): State<Arc<RateLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let key = address_key(address(&request));
    let Err(wait) = limits.check_address(&key) else {
        return next.run(request).await;
    };
    // Whole seconds, rounded up: a client retrying earlier is refused again.
    let seconds = wait.as_millis().div_ceil(1000).max(1) as u64;
    let body = json!({
        "error": "temporarily_unavailable",
        "error_description": format!(
            "too many sign-in, registration or token requests from {key}; retry in {seconds} s"
        ),
    });
    let mut response = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, seconds.into());
    response
}

/// After authentication: the caller's own quota; `Some` refusal once it is
/// spent.
pub(super) fn over_quota(limits: &RateLimits, caller: &Caller) -> Option<Response> {
    let wait = limits.check_caller(&caller.user).err()?;
    let message = format!("{} is over its request rate", caller.user);
    Some(HttpError::TooManyRequests(wait, message).into_response())
}

#[cfg(test)]
mod tests {
    use super::address_key;

    #[test]
    fn an_ipv6_address_is_keyed_by_its_64() {
        let key = |s: &str| address_key(Some(s.parse().unwrap()));
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff::9"), key("2001:db8:1:2::1"));
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(key("203.0.113.7"), "203.0.113.7");
    }
}
