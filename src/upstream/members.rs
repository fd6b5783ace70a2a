//! Connections per member to an upstream whose headers name a member's
//! credential (`${user:NAME}`, issue 29): each member acts upstream as
//! themselves, never through another member's connection. An upstream with
//! `auth = "oauth"`, or found to want OAuth (`detect.rs`), gets the same,
//! with the member's own access token (`oauth.rs`) as its `Authorization`
//! header.
//!
//! The upstream's supervised connection (`supervise.rs`) lists its tools with
//! the slots' fallbacks, or without those headers; an OAuth upstream, which
//! lists nothing without a token, is listed over a member's connection
//! (`listing.rs`). A member's call goes
//! over their own connection, opened lazily with their values (or the
//! fallbacks), reopened when a value changed, closed after `IDLE` without
//! calls or when the upstream stops; at most `MAX_OPEN` per upstream.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    client::Client,
    link::{Link, Resolved, Status},
    supervise::{CONNECT_TIMEOUT, adopt},
};
use crate::{
    protocol::{CallToolResponse, McpError, text_result},
    registry::{
        CallContext, MemberSecrets, Slots, Template, oauth::MemberOauth, oauth_reach::Reach,
    },
};

/// A member's connection unused this long is closed.
const IDLE: Duration = Duration::from_secs(300);
/// How often an open connection checks whether it is idle.
const IDLE_CHECK: Duration = Duration::from_secs(30);
/// Member connections per upstream at most.
const MAX_OPEN: usize = 256;

/// One upstream's member connections.
pub(super) struct Members {
    /// The headers that name a slot; the others are the link's own.
    templates: Vec<(http::HeaderName, Template)>,
    slots: Slots,
    /// The upstream's name.
    upstream: String,
    /// Set with `auth = "oauth"` or once the upstream wanted OAuth: each
    /// member's calls carry their own access token.
    oauth: AtomicBool,
    /// Where the upstream's OAuth requests may go (its refreshes).
    reach: (MemberOauth, String),
    /// Members' tokens, read without a call to list the upstream (`listing.rs`).
    pub(super) secrets: Option<Arc<dyn MemberSecrets>>,
    /// Wakes the listing (`listing.rs`): a member connected their account.
    pub(super) relist: tokio::sync::Notify,
    /// Told when a member's connection dropped: the listing's pings the upstream now.
    pub(super) probe: Arc<tokio::sync::Notify>,
    open: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Conn>>>>>,
    /// Cancelled when the upstream stops: every member connection ends.
    stop: CancellationToken,
}

/// A member's open connection.
pub(super) struct Conn {
    link: Arc<Link>,
    /// Digest of the header values it was opened with.
    digest: [u8; 32],
    last_used: Arc<Mutex<Instant>>,
    /// Ends the connection.
    close: CancellationToken,
}

/// What a member's prompt or resource request answers instead of going on.
pub(super) enum Refused {
    /// Connect first (2026-07-28 `input_required`).
    Input(rmcp::model::InputRequiredResult),
    Error(McpError),
}

/// The member's link for one call, and their values to scrub from its result.
pub(super) struct MemberLink {
    pub(super) link: Arc<Link>,
    pub(super) used: Vec<String>,
}

impl Members {
    pub(super) fn new(
        templates: Vec<(http::HeaderName, Template)>,
        slots: Slots,
        (upstream, oauth): (&str, bool),
        (secrets, reach): (Option<Arc<dyn MemberSecrets>>, (MemberOauth, String)),
        stop: CancellationToken,
    ) -> Self {
        Self {
            templates,
            slots,
            upstream: upstream.to_owned(),
            oauth: AtomicBool::new(oauth),
            reach,
            secrets,
            relist: tokio::sync::Notify::new(),
            probe: Arc::default(),
            open: Mutex::default(),
            stop,
        }
    }

    /// Where the upstream's OAuth requests may go, under today's allowlist.
    pub(super) fn reach(&self) -> Reach {
        self.reach.0.reach(&self.reach.1)
    }

    /// Whether members' calls go over their own connections (else over the
    /// upstream's own, until it wants OAuth).
    pub(super) fn active(&self) -> bool {
        !self.templates.is_empty() || self.oauth()
    }

    /// Whether each member's calls carry their own access token.
    pub(super) fn oauth(&self) -> bool {
        self.oauth.load(Ordering::Relaxed)
    }

    /// From now on, each member's calls carry their own access token.
    pub(super) fn oauth_on(&self) {
        self.oauth.store(true, Ordering::Relaxed);
    }

    /// The headers of the supervised connection: each slot's fallback, or
    /// the header left out when a slot it names has none.
    pub(super) fn shared_headers(&self) -> Vec<(http::HeaderName, http::HeaderValue)> {
        (self.templates.iter())
            .filter_map(|(name, template)| {
                let value = self.slots.with_fallbacks(template)?;
                Some((name.clone(), http::HeaderValue::try_from(value).ok()?))
            })
            .collect()
    }

    /// The caller's connection, opened or reopened as needed; else what the
    /// call answers instead (the member is sent to set a value, or told why).
    pub(super) async fn link_for(
        &self,
        shared: &Arc<Link>,
        tool: &str,
        cx: &CallContext,
    ) -> Result<MemberLink, CallToolResponse> {
        // One member's setup at a time: a refresh token is used once.
        let user = cx.caller().user.clone();
        let entry = self.entry(&user).map_err(|why| {
            CallToolResponse::from(text_result(
                format!(
                    "the upstream server {} is unavailable ({why}); try again shortly",
                    shared.config.name
                ),
                true,
            ))
        })?;
        let mut conn = entry.lock().await;
        let templates: Vec<&Template> = self.templates.iter().map(|(_, t)| t).collect();
        if let Some(answer) = self.slots.withheld(&templates, tool, cx).await {
            return Err(answer);
        }
        let mut used = Vec::new();
        let mut headers = shared.resolved.headers.clone();
        let mut digest = Sha256::new();
        for (name, template) in &self.templates {
            let value = (self.slots)
                .render(template, (tool, cx), str::to_owned, &mut used)
                .await
                .map_err(|message| {
                    CallToolResponse::from(text_result(message.to_string(), true))
                })?;
            digest.update(name.as_str());
            digest.update([0]);
            digest.update(&value);
            digest.update([0]);
            let value = http::HeaderValue::try_from(value).map_err(|_| {
                let why = format!(
                    "your value of a credential `{tool}` needs cannot be sent in an HTTP header"
                );
                CallToolResponse::from(text_result(why, true))
            })?;
            headers.insert(name.clone(), value);
        }
        if self.oauth() {
            let upstream = &self.upstream;
            let set =
                super::oauth::tokens((upstream, &self.reach()), &self.slots, tool, cx).await?;
            let bearer = format!("Bearer {}", set.access_token);
            digest.update(&bearer);
            let value = http::HeaderValue::try_from(bearer).map_err(|_| {
                let why = format!("your access token at {upstream} cannot be sent in a header");
                CallToolResponse::from(text_result(why, true))
            })?;
            headers.insert(http::header::AUTHORIZATION, value);
            used.extend(set.secrets());
        }
        let digest: [u8; 32] = digest.finalize().into();
        if let Some(open) = conn.as_ref() {
            let up = open.link.status().0 == Status::Up;
            if up && open.digest == digest {
                *open.last_used.lock().expect("member link lock") = Instant::now();
                return Ok(MemberLink {
                    link: open.link.clone(),
                    used,
                });
            }
            open.close.cancel();
        }
        let resolved = Resolved {
            headers,
            env: shared.resolved.env.clone(),
        };
        let link = shared.for_member(resolved, shared.scrubber.with(used.iter().cloned()));
        let service = match tokio::time::timeout(CONNECT_TIMEOUT, link.connect()).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                let why = shared
                    .scrubber
                    .with(used.iter().cloned())
                    .text(&format!("{error:#}"));
                let hint = match self.oauth() {
                    true => format!(
                        "; if your account there was disconnected, connect it again at {}",
                        self.slots.oauth_start(&self.upstream)
                    ),
                    false => String::new(),
                };
                return Err(text_result(
                    format!(
                        "the upstream server {} refused your connection ({why}){hint}",
                        shared.config.name
                    ),
                    true,
                )
                .into());
            }
            Err(_) => {
                return Err(text_result(
                    format!(
                        "the upstream server {} did not answer your connection in time",
                        shared.config.name
                    ),
                    true,
                )
                .into());
            }
        };
        link.set(Status::Up, None, Some(service.peer().clone()), None);
        if self.oauth() && shared.status().0 != Status::Up {
            // The upstream lists nothing without a token: what this member
            // sees is what the others are offered (`listing.rs`).
            let (shared, peer) = (shared.clone(), service.peer().clone());
            tokio::spawn(async move { adopt(&shared, &peer).await });
        }
        let open = Conn {
            link: link.clone(),
            digest,
            last_used: Arc::new(Mutex::new(Instant::now())),
            close: self.stop.child_token(),
        };
        tokio::spawn(hold(
            service,
            open.link.clone(),
            open.last_used.clone(),
            open.close.clone(),
            self.probe.clone(),
        ));
        *conn = Some(open);
        Ok(MemberLink { link, used })
    }

    /// The link a member's prompt or resource request (`what`) goes over:
    /// their own connection at an OAuth upstream (which answers nothing
    /// without their token), else the upstream's (with the slots'
    /// fallbacks, as before members' OAuth); or what the request answers
    /// instead.
    pub(super) async fn route(
        members: Option<&Arc<Members>>,
        shared: &Arc<Link>,
        what: &str,
        cx: &CallContext,
    ) -> Result<Arc<Link>, Refused> {
        let Some(members) = members.filter(|m| m.oauth()) else {
            return Ok(shared.clone());
        };
        match members.link_for(shared, what, cx).await {
            Ok(member) => Ok(member.link),
            Err(CallToolResponse::InputRequired(input)) => Err(Refused::Input(input)),
            Err(CallToolResponse::Complete(result)) => {
                let text = (result.content.iter())
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect::<Vec<_>>()
                    .join(" ");
                Err(Refused::Error(McpError::invalid_request(text, None)))
            }
            Err(_) => Err(Refused::Error(McpError::internal_error(
                "the upstream server could not be reached as you",
                None,
            ))),
        }
    }

    /// The caller's entry; a full table first drops entries whose connection ended.
    pub(super) fn entry(
        &self,
        user: &str,
    ) -> Result<Arc<tokio::sync::Mutex<Option<Conn>>>, &'static str> {
        let mut open = self.open.lock().expect("member links lock");
        if let Some(entry) = open.get(user) {
            return Ok(entry.clone());
        }
        if open.len() >= MAX_OPEN {
            open.retain(|_, entry| match entry.try_lock() {
                Ok(conn) => conn.as_ref().is_some_and(|c| !c.close.is_cancelled()),
                Err(_) => true,
            });
        }
        if open.len() >= MAX_OPEN {
            return Err("too many members are connected to it right now");
        }
        Ok(open.entry(user.to_owned()).or_default().clone())
    }
}

/// Keeps a member's connection until it ends, is closed, or sits idle with
/// no call running or parked.
async fn hold(
    service: rmcp::service::RunningService<rmcp::RoleClient, Client>,
    link: Arc<Link>,
    last_used: Arc<Mutex<Instant>>,
    close: CancellationToken,
    probe: Arc<tokio::sync::Notify>,
) {
    let ending = service.cancellation_token();
    let mut waiting = std::pin::pin!(service.waiting());
    loop {
        tokio::select! {
            () = close.cancelled() => break,
            _ = &mut waiting => {
                link.set(Status::Down, None, None, Some("disconnected".into()));
                close.cancel();
                probe.notify_one();
                return;
            }
            () = tokio::time::sleep(IDLE_CHECK) => {
                let idle = last_used.lock().expect("member link lock").elapsed() >= IDLE;
                if idle && !link.calls.busy() {
                    break;
                }
            }
        }
    }
    close.cancel();
    link.set(Status::Down, None, None, Some("closed".into()));
    ending.cancel();
    let _ = waiting.await;
}
