//! The lists of an upstream that wants each member's OAuth (issue 29):
//! with no token it lists nothing, so its tools, prompts and resources are
//! listed over a member's own connection and offered to every member, then
//! filtered per caller by scopes as usual, pins applied (`pins.rs`).
//!
//! Why every member sees the list one member's connection gave: the list is
//! the server's offer (its tools' names and schemas, not a member's data),
//! and a member who has not connected yet must see the tools to be asked to
//! connect when calling one (the URL elicitation or the tool error naming
//! the portal page, `oauth.rs`); each call still goes over the caller's own
//! connection, as the caller. The list is taken when a member connects their
//! account in the portal, when the upstream has none yet and a member's
//! connection opens, and else retried every `RETRY` while nothing is listed,
//! over the connection of a member whose tokens the vault keeps (most
//! recently connected first: after a restart, and on every replica).

use std::{sync::Arc, time::Duration};

use rmcp::{RoleClient, service::Peer};
use tokio_util::sync::CancellationToken;

use super::{
    detect::Wanted,
    link::{CONNECT_TIMEOUT, Link, Resolved, Status, list_tools},
    members::Members,
    offer::Offer,
};
use crate::registry::oauth::{CLIENT_OWNER, MemberOauth, token_slot};

/// How often a listing is tried again while nothing is listed.
const RETRY: Duration = Duration::from_secs(60);
/// Members whose connection is tried per listing, at most.
const TRIED: usize = 5;
/// What the upstream's state says while no member's connection listed it.
const WAITING: &str = "waiting for a member to connect their account (portal, Connections)";

/// Runs an upstream's connection: the shared one (`Link::supervise`)
/// until, with `auth = "auto"`, it wants OAuth; with `auth = "oauth"` or
/// from then on, the listing over members' connections. Until `stop`.
pub(super) async fn run(
    link: Arc<Link>,
    members: Option<Arc<Members>>,
    oauth: MemberOauth,
    stop: CancellationToken,
) {
    let oauth_now = members.as_ref().is_some_and(|m| m.oauth());
    if !oauth_now {
        let Some(Wanted { scopes }) = link.clone().supervise(stop.clone()).await else {
            return;
        };
        let name = &link.config.name;
        let members = members.as_ref().filter(|_| oauth.possible());
        let Some(members) = members else {
            let why = "it asks each member to sign in with OAuth (401 with RFC 9728 metadata), \
                       which needs [portal] and credentials.keys; or set auth = \"none\" with a \
                       shared Authorization header";
            tracing::warn!(upstream = %name, "upstream unavailable: {why}");
            link.set(
                Status::Down,
                None,
                None,
                Some(format!("needs OAuth: {why}")),
            );
            return;
        };
        tracing::info!(upstream = %name, ?scopes, "upstream asks for OAuth: each member connects their own account on the portal's Connections page");
        oauth.found(name, scopes);
        members.oauth_on();
    }
    let Some(members) = members else {
        return;
    };
    link.set(Status::Down, None, None, Some(WAITING.into()));
    loop {
        let listed = tokio::select! {
            () = stop.cancelled() => false,
            listed = over_a_member(&members, &link) => listed,
        };
        let retry = async {
            match listed {
                true => std::future::pending().await,
                false => tokio::time::sleep(RETRY).await,
            }
        };
        // Once listed, an operator's approval of a changed definition lists
        // and reviews again (before, the pins were never reviewed).
        let approval = async {
            match listed {
                true => link.pins.approval().await,
                false => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => {
                link.set(Status::Down, None, None, Some("stopped".into()));
                return;
            }
            () = members.relist.notified() => {}
            () = link.relist.notified() => {}
            () = approval => {}
            () = retry => {}
        }
    }
}

/// Lists the upstream over the connection of a member the vault holds
/// tokens of; whether one did.
async fn over_a_member(members: &Members, link: &Arc<Link>) -> bool {
    let name = &link.config.name;
    let Some(secrets) = &members.secrets else {
        return false;
    };
    let holders = secrets.holders(&token_slot(name), TRIED + 1).await;
    let holders = holders.unwrap_or_default().into_iter();
    // teamgate's own registration at the server is kept under the same name.
    for user in holders.filter(|u| u != CLIENT_OWNER).take(TRIED) {
        // One setup per member at a time (`members.rs`): a refresh token is used once.
        let Ok(entry) = members.entry(&user) else {
            return false;
        };
        let stored = {
            let _setup = entry.lock().await;
            super::oauth::stored(name, secrets.as_ref(), &user).await
        };
        let set = match stored {
            Ok(set) => set,
            Err(why) => {
                tracing::debug!(upstream = %name, member = %user, why, "no listing with this member's tokens");
                continue;
            }
        };
        let mut headers = link.resolved.headers.clone();
        let Ok(bearer) = http::HeaderValue::try_from(format!("Bearer {}", set.access_token)) else {
            continue;
        };
        headers.insert(http::header::AUTHORIZATION, bearer);
        let resolved = Resolved {
            headers,
            env: link.resolved.env.clone(),
        };
        let member = link.for_member(resolved, link.scrubber.with(set.secrets()));
        match tokio::time::timeout(CONNECT_TIMEOUT, member.connect()).await {
            Ok(Ok(service)) => {
                let listed = adopt(link, service.peer()).await;
                let _ = service.cancel().await;
                if listed {
                    return true;
                }
            }
            Ok(Err(error)) => {
                let error = member.scrubber.text(&format!("{error:#}"));
                tracing::info!(upstream = %name, member = %user, %error, "listing over a member's connection failed");
            }
            Err(_) => {
                tracing::info!(upstream = %name, member = %user, "a member's connection did not answer in time")
            }
        }
    }
    false
}

/// Takes the tools, prompts and resources `peer` (a member's connection)
/// lists as the upstream's; whether its tools could be listed.
pub(super) async fn adopt(link: &Arc<Link>, peer: &Peer<RoleClient>) -> bool {
    let name = &link.config.name;
    let tools = match list_tools(peer).await {
        Ok(tools) => tools,
        Err(error) => {
            let error = link.scrubber.text(&format!("{error:#}"));
            tracing::warn!(upstream = %name, %error, "listing the upstream's tools over a member's connection failed");
            return false;
        }
    };
    let was_up = link.status().0 == Status::Up;
    let changed = link.offer(Offer::list(peer, name).await);
    link.pins.review(&tools).await;
    // No peer: calls, prompts and resources go over each member's own.
    link.set(Status::Up, Some(tools), None, None);
    if changed {
        link.resource_event(crate::registry::ChangeEvent::ResourcesListChanged);
    }
    if !was_up {
        tracing::info!(upstream = %name, "upstream listed over a member's connection");
    }
    true
}
