//! Requests an upstream sends to teamgate as its client (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`), relayed to the member whose call
//! the upstream is serving, and only to that member.
//!
//! Routing (which member call an upstream request belongs to):
//! - Streamable HTTP upstreams: rmcp marks each inbound request with the
//!   response stream it arrived on (SEP-2260, `InboundStreamOrigin`). A
//!   request on the stream of one of teamgate's `tools/call` requests goes to
//!   that call; one on the standalone stream is refused.
//! - stdio upstreams (no marker): routed only when it is unambiguous, i.e.
//!   every call in flight on that upstream belongs to the same member and the
//!   same 2025-era session (a 2026-07-28 call is a session of its own); with
//!   calls of two members or sessions, or none, the request is refused.
//!
//! A call is registered before its request is sent upstream, so an upstream
//! can never ask "between" a call's start and its registration. Refusals,
//! a member client that did not declare the capability, and every wait
//! (bounded by `RELAY_TIMEOUT`) are JSON-RPC errors to the upstream.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ErrorData, RoleClient,
    model::{ErrorCode, RequestId},
    service::{InboundStreamOrigin, RequestContext},
};
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

/// How long a relayed request may wait for the member's answer; also how
/// long a 2026-07-28 call waits parked for the client's retry.
pub(super) const RELAY_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests of one upstream call queued for its member at most.
pub(super) const ASKS_QUEUE: usize = 4;
/// How long an associated request waits for its call's id to be recorded
/// (the request id is known only once rmcp has queued the call).
const SETTLE: Duration = Duration::from_secs(2);

/// What the upstream asks its client for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Elicitation,
    Sampling,
    Roots,
}

impl Kind {
    pub(super) fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// Whether the member's client declared what this request needs (URL
    /// elicitation needs `elicitation.url`; form, the default, any elicitation).
    pub(super) fn declared(self, capabilities: &Value, params: &Value) -> bool {
        match self {
            Self::Elicitation if params["mode"] == "url" => {
                !capabilities["elicitation"]["url"].is_null()
            }
            Self::Elicitation => !capabilities["elicitation"].is_null(),
            Self::Sampling => !capabilities["sampling"].is_null(),
            Self::Roots => !capabilities["roots"].is_null(),
        }
    }
}

/// One request of the upstream, waiting for the member's answer.
pub(super) struct Ask {
    pub(super) kind: Kind,
    pub(super) params: Value,
    pub(super) answer: oneshot::Sender<Result<Value, ErrorData>>,
}

/// Who a call belongs to: the user and, on a 2025-era session, its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pub(super) user: String,
    /// `None` for a 2026-07-28 call: it shares a session with no other call.
    pub(super) session: Option<String>,
}

struct Route {
    member: Member,
    /// teamgate's request id toward the upstream, once rmcp assigned it.
    upstream_id: Option<RequestId>,
    asks: mpsc::Sender<Ask>,
}

/// One connection's member calls in flight, by who they belong to: the
/// routes alone (the calls themselves are `forward.rs`'s).
#[derive(Default)]
pub(super) struct Relay {
    routes: Mutex<BTreeMap<u64, Route>>,
    next: AtomicU64,
    settled: Notify,
}

pub(super) fn refuse(code: ErrorCode, message: String) -> ErrorData {
    ErrorData::new(code, message, None)
}

impl Relay {
    /// Registers a call before its request is sent; returns its slot.
    pub(super) fn open(&self, member: Member, asks: mpsc::Sender<Ask>) -> u64 {
        let slot = self.next.fetch_add(1, Ordering::Relaxed);
        let route = Route {
            member,
            upstream_id: None,
            asks,
        };
        self.routes.lock().expect("relay lock").insert(slot, route);
        slot
    }

    /// Records the id rmcp gave the call's request.
    pub(super) fn settle(&self, slot: u64, id: RequestId) {
        if let Some(route) = self.routes.lock().expect("relay lock").get_mut(&slot) {
            route.upstream_id = Some(id);
        }
        self.settled.notify_waiters();
    }

    /// Whether a member call is in flight.
    pub(super) fn busy(&self) -> bool {
        !self.routes.lock().expect("relay lock").is_empty()
    }

    pub(super) fn close(&self, slot: u64) {
        self.routes.lock().expect("relay lock").remove(&slot);
        self.settled.notify_waiters();
    }

    /// The call an upstream request belongs to, by the rules above.
    async fn route(
        &self,
        kind: Kind,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<mpsc::Sender<Ask>, ErrorData> {
        let refused = |why: &str| {
            refuse(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "teamgate relays {} only within a member's call: {why}",
                    kind.method()
                ),
            )
        };
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let settled = self.settled.notified();
            {
                let routes = self.routes.lock().expect("relay lock");
                match origin {
                    Some(InboundStreamOrigin::Unassociated) => {
                        return Err(refused("the request is related to no call"));
                    }
                    Some(InboundStreamOrigin::OutboundRequest(id)) => {
                        let found = routes
                            .values()
                            .find(|r| r.upstream_id.as_ref() == Some(id));
                        if let Some(route) = found {
                            return Ok(route.asks.clone());
                        }
                        if routes.values().all(|r| r.upstream_id.is_some()) {
                            return Err(refused("its call is no longer running"));
                        }
                    }
                    None => return unambiguous(&routes).ok_or_else(|| refused(
                        "no single member's call is running on this upstream, and it does not say which call it serves",
                    )),
                }
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return Err(refused("its call is not running"));
            }
        }
    }

    /// Relays one upstream request to its member and waits (bounded) for
    /// the answer. Called from the upstream connection's client handler.
    pub(super) async fn relay(
        &self,
        kind: Kind,
        params: Value,
        context: &RequestContext<RoleClient>,
    ) -> Result<Value, ErrorData> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let asks = self.route(kind, origin).await?;
        let (answer, answered) = oneshot::channel();
        let ask = Ask {
            kind,
            params,
            answer,
        };
        if asks.try_send(ask).is_err() {
            return Err(refuse(
                ErrorCode::INTERNAL_ERROR,
                "too many requests are waiting for this call's member".into(),
            ));
        }
        let ended = || {
            refuse(
                ErrorCode::INTERNAL_ERROR,
                "the member's call ended before the client answered".into(),
            )
        };
        tokio::select! {
            answered = tokio::time::timeout(RELAY_TIMEOUT, answered) => match answered {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(ended()),
                Err(_) => Err(refuse(
                    ErrorCode::INTERNAL_ERROR,
                    format!("the member's client did not answer {} in time", kind.method()),
                )),
            },
            // The upstream cancelled its request: the answer no longer matters.
            () = context.ct.cancelled() => Err(ended()),
        }
    }
}

/// The call every route in flight belongs to, when they all belong to one
/// member and one 2025-era session (or there is exactly one).
fn unambiguous(routes: &BTreeMap<u64, Route>) -> Option<mpsc::Sender<Ask>> {
    let (_, first) = routes.iter().next()?;
    let one = routes.len() == 1
        || (first.member.session.is_some() && routes.values().all(|r| r.member == first.member));
    one.then(|| first.asks.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(user: &str, session: Option<&str>) -> Member {
        Member {
            user: user.into(),
            session: session.map(Into::into),
        }
    }

    #[tokio::test]
    async fn an_unmarked_request_goes_only_to_a_single_members_session() {
        let relay = Relay::default();
        assert!(relay.route(Kind::Roots, None).await.is_err(), "no call");
        let (tx, _rx) = mpsc::channel(1);
        let a = relay.open(member("ann", Some("s1")), tx.clone());
        assert!(relay.route(Kind::Roots, None).await.is_ok(), "one call");
        let b = relay.open(member("ann", Some("s1")), tx.clone());
        assert!(relay.route(Kind::Roots, None).await.is_ok(), "one session");
        let c = relay.open(member("bob", Some("s2")), tx.clone());
        assert!(relay.route(Kind::Roots, None).await.is_err(), "two members");
        relay.close(c);
        relay.close(b);
        relay.close(a);
        relay.open(member("ann", None), tx.clone());
        relay.open(member("ann", None), tx);
        assert!(
            relay.route(Kind::Roots, None).await.is_err(),
            "two 2026-07-28 calls are two sessions"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_marked_request_goes_to_its_call_or_is_refused() {
        let relay = Relay::default();
        let (tx, _rx) = mpsc::channel(1);
        let slot = relay.open(member("ann", Some("s1")), tx.clone());
        relay.open(member("bob", Some("s2")), tx);
        relay.settle(slot, RequestId::Number(7));
        let mine = InboundStreamOrigin::OutboundRequest(RequestId::Number(7));
        let other = InboundStreamOrigin::OutboundRequest(RequestId::Number(8));
        assert!(relay.route(Kind::Sampling, Some(&mine)).await.is_ok());
        // bob's call has no id yet: an unknown id waits for it, then gives up.
        assert!(relay.route(Kind::Sampling, Some(&other)).await.is_err());
        let loose = InboundStreamOrigin::Unassociated;
        assert!(relay.route(Kind::Sampling, Some(&loose)).await.is_err());
    }
}
