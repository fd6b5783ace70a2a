//! What an upstream offers besides tools (prompts, resources, templates),
//! listed at connect and on its `list_changed`, and how a request for one of
//! them is forwarded: with the member's cancellation and teamgate's timeout,
//! an unfinished request cancelled upstream.

use std::{collections::HashMap, sync::Arc};

use rmcp::{
    RoleClient,
    model::{
        CancelledNotificationParam, ClientRequest, PaginatedRequestParams, Prompt, Resource,
        ResourceTemplate, ServerResult,
    },
    service::{Peer, PeerRequestOptions, ServiceError},
};

use super::link::{Link, Status};
use crate::{
    protocol::McpError,
    registry::{CallContext, ChangeEvent},
};

/// Prompts, resources and templates listed per upstream at most, each (pages
/// are followed up to this).
const MAX_ITEMS: usize = 1000;

/// The upstream's prompts, resources and templates, under its own names.
#[derive(Default, Clone, PartialEq)]
pub(super) struct Offer {
    pub(super) prompts: Vec<Prompt>,
    pub(super) resources: Vec<Resource>,
    pub(super) templates: Vec<ResourceTemplate>,
    /// The upstream accepts `resources/subscribe`.
    pub(super) subscribe: bool,
}

impl Offer {
    /// What the upstream's capabilities announce, each list followed up to
    /// `MAX_ITEMS`. A list that fails is left empty (and logged): the rest
    /// of the upstream stays usable.
    pub(super) async fn list(peer: &Peer<RoleClient>, name: &str) -> Offer {
        let Some(info) = peer.peer_info() else {
            return Offer::default();
        };
        let caps = &info.capabilities;
        let mut offer = Offer {
            subscribe: caps
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
            ..Offer::default()
        };
        let warn = |what: &str, error: ServiceError| {
            tracing::warn!(upstream = %name, %error, "listing the upstream's {what} failed");
        };
        if caps.prompts.is_some() {
            let listed = pages(|p| async move {
                let page = peer.list_prompts(p).await?;
                Ok((page.prompts, page.next_cursor))
            });
            offer.prompts = listed.await.unwrap_or_else(|e| {
                warn("prompts", e);
                Vec::new()
            });
        }
        if caps.resources.is_some() {
            let listed = pages(|p| async move {
                let page = peer.list_resources(p).await?;
                Ok((page.resources, page.next_cursor))
            });
            offer.resources = listed.await.unwrap_or_else(|e| {
                warn("resources", e);
                Vec::new()
            });
            let listed = pages(|p| async move {
                let page = peer.list_resource_templates(p).await?;
                Ok((page.resource_templates, page.next_cursor))
            });
            offer.templates = listed.await.unwrap_or_else(|e| {
                warn("resource templates", e);
                Vec::new()
            });
        }
        // teamgate's scheme for upstreams' namespaces is no upstream's own.
        let kept = |uri: &str| {
            let reserved = super::uris::reserved(uri);
            if reserved {
                let uri = super::names::shown(uri);
                tracing::warn!(upstream = %name, %uri, "the upstream listed a resource or template in teamgate's upstream:// scheme (other upstreams' namespaces); dropped");
            }
            !reserved
        };
        offer.resources.retain(|r| kept(&r.uri));
        offer.templates.retain(|t| kept(&t.uri_template));
        offer
    }
}

impl Offer {
    pub(super) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }
}

impl Link {
    /// Takes what the upstream now offers besides tools; whether its
    /// resources or templates changed.
    pub(super) fn offer(&self, offer: Offer) -> bool {
        let mut current = self.current.lock().expect("upstream state lock");
        let before = std::mem::replace(&mut current.offer, Arc::new(offer));
        let after = &current.offer;
        (&before.resources, &before.templates) != (&after.resources, &after.templates)
    }

    /// Tells the change bus (`Upstreams::start` wires it) of `event`.
    pub(super) fn resource_event(&self, event: ChangeEvent) {
        if let Some(events) = self.resource_events.get() {
            events(event);
        }
    }
}

/// Every item of a paginated list, following pages up to `MAX_ITEMS` (an
/// upstream repeating a cursor cannot keep teamgate listing).
async fn pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (listed, next) = page(params).await?;
        items.extend(listed);
        match next {
            Some(next) if items.len() < MAX_ITEMS => cursor = Some(next),
            _ => break,
        }
    }
    items.truncate(MAX_ITEMS);
    Ok(items)
}

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

/// Member subscriptions to an upstream's resources, by the upstream's URI:
/// the upstream is subscribed once per URI while any member is.
pub(super) type Subscribed = std::sync::Mutex<HashMap<String, usize>>;

/// The offer as shared by the link's readers.
pub(super) type Shared = Arc<Offer>;
