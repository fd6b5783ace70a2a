//! A member's request for an upstream's prompt, resource or completion
//! (not a tool call, `forward.rs`) forwarded to it: with the member's
//! cancellation and teamgate's timeout, an unfinished request cancelled
//! upstream, the upstream's errors scrubbed of its secrets.

use rmcp::{
    RoleClient,
    model::{CancelledNotificationParam, ClientRequest, ServerResult},
    service::{Peer, PeerRequestOptions, ServiceError},
};

use super::link::{Link, Status};
use crate::{protocol::McpError, registry::CallContext};

/// The upstream's answer to `request`, within its `timeout` and as long as
/// the member waits (`cx`); an unfinished request is cancelled upstream.
/// Upstream errors pass on, scrubbed of the upstream's secrets.
pub(super) async fn forward(
    link: &Link,
    request: ClientRequest,
    cx: Option<&CallContext>,
) -> Result<ServerResult, McpError> {
    let name = &link.config.name;
    let unavailable = |why: &str| {
        McpError::internal_error(
            format!("the upstream server {name} is unavailable ({why}); try again shortly"),
            None,
        )
    };
    let peer = peer(link).ok_or_else(|| unavailable("down"))?;
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| unavailable(&link.scrubber.text(&e.to_string())))?;
    let mut cancel = CancelOnDrop(Some((handle.peer.clone(), handle.id.clone())));
    let never = tokio_util::sync::CancellationToken::new();
    let cancelled = cx.map_or(&never, |cx| cx.cancellation());
    let answer = tokio::select! {
        answer = tokio::time::timeout(link.config.timeout, handle.rx) => answer,
        () = cancelled.cancelled() => return Err(McpError::internal_error("cancelled", None)),
    };
    let answer = match answer {
        Err(_) => {
            let limit = link.config.timeout;
            return Err(McpError::internal_error(
                format!("the upstream server {name} did not answer within {limit:?}"),
                None,
            ));
        }
        Ok(Err(_)) => return Err(unavailable("the connection closed")),
        Ok(Ok(answer)) => answer,
    };
    cancel.0 = None;
    match answer {
        Ok(result) => Ok(result),
        Err(ServiceError::McpError(error)) => Err(scrubbed(link, error)),
        Err(error) => Err(unavailable(&link.scrubber.text(&error.to_string()))),
    }
}

/// The upstream's client while it is up.
pub(super) fn peer(link: &Link) -> Option<Peer<RoleClient>> {
    let current = link.current.lock().expect("upstream state lock");
    match (&current.peer, current.status) {
        (Some(peer), Status::Up) => Some(peer.clone()),
        _ => None,
    }
}

fn scrubbed(link: &Link, mut error: McpError) -> McpError {
    error.message = link.scrubber.text(&error.message).into();
    if let Some(data) = error.data.as_mut() {
        link.scrubber.value(data);
    }
    error
}

/// An answer of the wrong kind: the upstream broke the protocol.
pub(super) fn unexpected(link: &Link, what: &str) -> McpError {
    McpError::internal_error(
        format!(
            "the upstream server {} answered {what} with something else",
            link.config.name
        ),
        None,
    )
}

/// Tells the upstream a request nobody waits for any more is cancelled.
struct CancelOnDrop(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        tokio::spawn(async move {
            let reason = "cancelled by the client or teamgate's timeout";
            let cancelled = CancelledNotificationParam::new(Some(id), Some(reason.into()));
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}
