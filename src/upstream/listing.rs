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
//!
//! Once listed, the member's connection that listed it is kept and pinged
//! every `PROBE` (and at once when a member's own connection drops): when
//! it ends or the ping fails, the upstream is down (its tools leave the
//! lists, or answer `on_unavailable = "error"`'s clear error) and is listed
//! again with backoff, as a shared connection is reconnected (`supervise.rs`).
//! Its `list_changed` notifications, on that connection or a member's
//! (`client.rs`), list it again.

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use super::{
    client::Client,
    detect::Wanted,
    link::{Link, Resolved, Status},
    members::Members,
    supervise::{CONNECT_TIMEOUT, FIRST_BACKOFF, MAX_BACKOFF, adopt},
};
use crate::registry::oauth::{CLIENT_OWNER, MemberOauth, token_slot};

/// How often a listing is tried again while nothing is listed.
const RETRY: Duration = Duration::from_secs(60);
/// How often the connection that listed the upstream is pinged.
const PROBE: Duration = Duration::from_secs(5);
/// How long a ping may take.
const PING_TIMEOUT: Duration = Duration::from_secs(10);
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
        let Some(Wanted { scopes }) = link.clone().supervise(stop.clone(), &oauth).await else {
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
    let (mut backoff, mut ever_listed) = (FIRST_BACKOFF, false);
    loop {
        let held = tokio::select! {
            () = stop.cancelled() => None,
            held = over_a_member(&members, &link) => held,
        };
        let listed = held.is_some();
        let was_up = link.status().0 == Status::Up;
        if listed {
            backoff = FIRST_BACKOFF;
        } else if was_up {
            // Listed before, not now: the upstream is gone (or refuses every
            // member's token); its tools leave the lists until it is back.
            tracing::warn!(upstream = %link.config.name, retry_in = ?backoff, "upstream unavailable over members' connections");
            link.set(
                Status::Down,
                None,
                None,
                Some("unreachable over members' connections".into()),
            );
        }
        // After being up, retried with backoff; never listed, every `RETRY`.
        ever_listed |= listed;
        let lost = !listed && ever_listed;
        let retry = async {
            match (&held, lost) {
                (Some(service), _) => watch(service, &members, &link).await,
                (None, true) => tokio::time::sleep(backoff).await,
                (None, false) => tokio::time::sleep(RETRY).await,
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
        let stopped = tokio::select! {
            () = stop.cancelled() => true,
            () = members.relist.notified() => false,
            () = link.relist.notified() => false,
            () = approval => false,
            () = retry => {
                if !listed {
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                false
            }
        };
        if let Some(service) = held {
            let _ = service.cancel().await;
        }
        if stopped {
            link.set(Status::Down, None, None, Some("stopped".into()));
            return;
        }
    }
}

/// Returns when the connection that listed the upstream ends, or a ping
/// over it (every `PROBE`, or when a member's connection dropped) fails.
async fn watch(service: &Listing, members: &Members, link: &Link) {
    let peer = service.peer().clone();
    loop {
        tokio::select! {
            () = tokio::time::sleep(PROBE) => {}
            () = members.probe.notified() => {}
        }
        if service.is_closed() {
            break;
        }
        let ping = peer.send_request(rmcp::model::PingRequest::default().into());
        match tokio::time::timeout(PING_TIMEOUT, ping).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                let error = link.scrubber.text(&format!("{error:#}"));
                tracing::info!(upstream = %link.config.name, %error, "the upstream did not answer a ping");
                break;
            }
            Err(_) => {
                tracing::info!(upstream = %link.config.name, "the upstream did not answer a ping in time");
                break;
            }
        }
    }
}

type Listing = rmcp::service::RunningService<rmcp::RoleClient, Client>;

/// Lists the upstream over the connection of a member the vault holds
/// tokens of; the connection that did, kept to watch the upstream.
async fn over_a_member(members: &Members, link: &Arc<Link>) -> Option<Listing> {
    let name = &link.config.name;
    let secrets = members.secrets.as_ref()?;
    let holders = secrets.holders(&token_slot(name), TRIED + 1).await;
    let holders = holders.unwrap_or_default().into_iter();
    // teamgate's own registration at the server is kept under the same name.
    for user in holders.filter(|u| u != CLIENT_OWNER).take(TRIED) {
        // One setup per member at a time (`members.rs`): a refresh token is used once.
        let entry = members.entry(&user).ok()?;
        let stored = {
            let _setup = entry.lock().await;
            super::oauth::stored((name, &members.reach()), secrets.as_ref(), &user).await
        };
        let set = match stored {
            Ok(set) => set,
            Err(why) => {
                tracing::debug!(upstream = %name, member = %user, %why, "no listing with this member's tokens");
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
                if adopt(link, service.peer()).await {
                    return Some(service);
                }
                let _ = service.cancel().await;
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
    None
}
