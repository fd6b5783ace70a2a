//! One upstream server's connection, supervised: connect (a stdio program
//! teamgate starts, or a Streamable HTTP URL), list its tools, prompts and
//! resources, follow its `list_changed` and `resources/updated`, and
//! reconnect with backoff when it goes away.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::Context;
use rmcp::{
    RoleClient, ServiceExt,
    model::{ProgressNotificationParam, ProgressToken, Tool},
    service::Peer,
    transport::TokioChildProcess,
};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt},
    sync::mpsc,
};
use tokio_util::sync::CancellationToken;

use super::{
    client::Client,
    detect::{Wanted, oauth_wanted},
    offer::{self, Offer},
    relay::Relay,
};
use crate::{
    config::UpstreamConfig,
    registry::{ChangeEvent, Scrubber, oauth::MemberOauth},
};

/// Told the upstream's resource changes, under the upstream's own URIs.
pub(super) type ResourceEvents = Arc<dyn Fn(ChangeEvent) + Send + Sync>;

/// First wait before reconnecting; doubled per failure up to `MAX_BACKOFF`.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long connecting and the handshake may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Tools listed per upstream at most (pages are followed up to this).
pub(super) const MAX_TOOLS: usize = 1000;
/// Longest stderr line of a stdio server passed to the log.
const MAX_STDERR_LINE: usize = 2048;
/// Progress notifications queued per call before the oldest wait is dropped.
pub(super) const PROGRESS_QUEUE: usize = 32;

/// Where an upstream stands, for lists, `/metrics` and `teamgate upstreams list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Connecting,
    Up,
    Down,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

/// What callers of the upstream read: its state, tools and client.
pub(super) struct Current {
    pub(super) status: Status,
    pub(super) tools: Arc<Vec<Tool>>,
    /// Its prompts, resources and templates (`offer.rs`).
    pub(super) offer: offer::Shared,
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) error: Option<String>,
}

/// The upstream's configuration with its secrets resolved.
pub(super) struct Resolved {
    pub(super) headers: HashMap<http::HeaderName, http::HeaderValue>,
    pub(super) env: Vec<(String, String)>,
}

pub(super) struct Link {
    pub(super) config: UpstreamConfig,
    pub(super) resolved: Resolved,
    pub(super) scrubber: Scrubber,
    pub(super) current: Mutex<Current>,
    /// Calls waiting for progress, by the token teamgate sent upstream.
    pub(super) progress: Mutex<HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>>,
    /// Held while a call is sent and its progress route put in; progress
    /// is looked up under it (rmcp names the token only as it sends).
    pub(super) sending: tokio::sync::Mutex<()>,
    /// Member calls in flight, for the upstream's requests to its client.
    pub(super) relay: Relay,
    /// Told when the tool list or the status changed.
    changed: Arc<dyn Fn() + Send + Sync>,
    /// Wakes the supervisor to list the tools again.
    pub(super) relist: tokio::sync::Notify,
    /// The upstream answered only the 2024-11-05 HTTP+SSE transport.
    pub(super) legacy: AtomicBool,
    on_call: Arc<std::sync::OnceLock<super::OnCall>>,
    /// Members' subscriptions to the upstream's resources (`resources.rs`).
    pub(super) subscribed: offer::Subscribed,
    /// Set once the upstream's resources are offered (`Upstreams::start`).
    pub(super) resource_events: OnceLock<ResourceEvents>,
    /// Which tools are withheld for a changed definition (`pins.rs`).
    pub(super) pins: super::pins::Pinning,
    /// Which tools are dropped: bad names, clashes (`names.rs`).
    pub(super) dropped: super::names::Tally,
    /// A member's link: the upstream's own, which its list changes relist.
    parent: OnceLock<std::sync::Weak<Link>>,
}

impl Link {
    pub(super) fn new(
        config: UpstreamConfig,
        resolved: Resolved,
        scrubber: Scrubber,
        changed: Arc<dyn Fn() + Send + Sync>,
        on_call: Arc<std::sync::OnceLock<super::OnCall>>,
        pins: super::pins::Pinning,
    ) -> Arc<Self> {
        Arc::new(Self {
            config,
            resolved,
            scrubber,
            current: Mutex::new(Current {
                status: Status::Connecting,
                tools: Arc::default(),
                offer: Arc::default(),
                peer: None,
                error: None,
            }),
            progress: Mutex::default(),
            sending: tokio::sync::Mutex::default(),
            relay: Relay::default(),
            changed,
            relist: tokio::sync::Notify::new(),
            legacy: AtomicBool::new(false),
            on_call,
            subscribed: Default::default(),
            resource_events: OnceLock::new(),
            pins,
            dropped: Default::default(),
            parent: OnceLock::new(),
        })
    }

    /// A link like this one with a member's header values (`members.rs`):
    /// its own progress routes and relay, no listing, pinning or changes.
    /// Its `list_changed` notifications relist the upstream's own link.
    pub(super) fn for_member(
        self: &Arc<Self>,
        resolved: Resolved,
        scrubber: Scrubber,
    ) -> Arc<Self> {
        let link = Self::new(
            self.config.clone(),
            resolved,
            scrubber,
            Arc::new(|| {}),
            self.on_call.clone(),
            super::pins::Pinning::new(&self.config.name, (None, false), Default::default()),
        );
        (link.legacy).store(self.legacy.load(Ordering::Relaxed), Ordering::Relaxed);
        let _ = link.parent.set(Arc::downgrade(self));
        link
    }

    /// The upstream said a list changed: the upstream's own link lists it
    /// again (a member's connection included, `listing.rs`).
    pub(super) fn list_changed(&self) {
        match self.parent.get().and_then(std::sync::Weak::upgrade) {
            Some(parent) => parent.relist.notify_one(),
            None => self.relist.notify_one(),
        }
    }

    /// A forwarded call ended with `outcome` after `took`.
    pub(super) fn ended(&self, outcome: &'static str, took: Duration) {
        if let Some(on_call) = self.on_call.get() {
            on_call(&self.config.name, outcome, took);
        }
    }

    pub(super) fn status(&self) -> (Status, usize, Option<String>) {
        let current = self.current.lock().expect("upstream state lock");
        (current.status, current.tools.len(), current.error.clone())
    }

    pub(super) fn set(
        &self,
        status: Status,
        tools: Option<Vec<Tool>>,
        peer: Option<Peer<RoleClient>>,
        error: Option<String>,
    ) {
        let resources_changed = {
            let mut current = self.current.lock().expect("upstream state lock");
            let gone = status != Status::Up && current.offer.has_resources();
            if status != Status::Up {
                current.offer = Arc::default();
            }
            current.status = status;
            // `on_unavailable = "error"`: a down upstream's last tools stay
            // listed, each call answering that it is unavailable.
            let keep = status != Status::Up
                && tools.is_none()
                && self.config.on_unavailable == crate::config::OnUnavailable::Error;
            if !keep {
                current.tools = Arc::new(tools.unwrap_or_default());
            }
            current.peer = peer;
            current.error = error.map(|e| self.scrubber.text(&e));
            gone
        };
        (self.changed)();
        // The registry lists resources live, so it cannot see this change itself.
        if resources_changed {
            self.resource_event(ChangeEvent::ResourcesListChanged);
        }
    }

    /// Connects, serves, reconnects; until `stop`, or until a refused
    /// connection turns out to want each member's OAuth (`detect.rs`,
    /// `auth = "auto"`): what it wants is returned.
    pub(super) async fn supervise(
        self: Arc<Self>,
        stop: CancellationToken,
        oauth: &MemberOauth,
    ) -> Option<Wanted> {
        let name = self.config.name.clone();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let connected = tokio::select! {
                () = stop.cancelled() => return None,
                connected = tokio::time::timeout(CONNECT_TIMEOUT, self.connect()) => connected,
            };
            match connected {
                Ok(Ok(service)) => {
                    backoff = FIRST_BACKOFF;
                    let peer = service.peer().clone();
                    let ending = service.cancellation_token();
                    let mut waiting = std::pin::pin!(service.waiting());
                    tracing::info!(upstream = %name, "upstream connected");
                    // A new connection forgot the subscriptions members hold.
                    let mut connected_now = true;
                    loop {
                        match list_tools(&peer, &self).await {
                            Ok(tools) => {
                                let changed = self.offer(Offer::list(&peer, &name).await);
                                self.pins.review(&tools).await;
                                self.set(Status::Up, Some(tools), Some(peer.clone()), None);
                                if changed {
                                    self.resource_event(ChangeEvent::ResourcesListChanged);
                                }
                                if std::mem::take(&mut connected_now) {
                                    super::resources::resubscribe(&self, &peer);
                                }
                            }
                            Err(error) => {
                                tracing::warn!(upstream = %name, error = %self.scrubber.text(&format!("{error:#}")), "listing the upstream's tools failed");
                            }
                        }
                        tokio::select! {
                            () = stop.cancelled() => {
                                ending.cancel();
                                let _ = waiting.await;
                                self.set(Status::Down, None, None, Some("stopped".into()));
                                return None;
                            }
                            _ = &mut waiting => break,
                            () = self.relist.notified() => continue,
                            () = self.pins.approval() => continue,
                        }
                    }
                    tracing::warn!(upstream = %name, "upstream disconnected; reconnecting");
                    self.set(Status::Down, None, None, Some("disconnected".into()));
                }
                Ok(Err(error)) => {
                    if self.config.may_detect_oauth()
                        && let Some(wanted) = oauth_wanted(
                            &self.config.url,
                            &self.resolved.headers,
                            &oauth.reach(&self.config.url),
                        )
                        .await
                    {
                        return Some(wanted);
                    }
                    let error = self.scrubber.text(&format!("{error:#}"));
                    tracing::warn!(upstream = %name, %error, retry_in = ?backoff, "upstream unavailable");
                    self.set(Status::Down, None, None, Some(error));
                }
                Err(_) => {
                    tracing::warn!(upstream = %name, retry_in = ?backoff, "upstream did not answer the handshake in time");
                    self.set(Status::Down, None, None, Some("handshake timed out".into()));
                }
            }
            tokio::select! {
                () = stop.cancelled() => return None,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    pub(super) async fn connect(
        self: &Arc<Self>,
    ) -> anyhow::Result<rmcp::service::RunningService<RoleClient, Client>> {
        let client = Client(Arc::downgrade(self));
        if !self.config.url.is_empty() {
            return self.connect_url(client).await;
        }
        let mut command = tokio::process::Command::new(&self.config.command);
        command
            .args(&self.config.args)
            .env_clear()
            .envs(self.resolved.env.iter().cloned());
        if let Some(cwd) = &self.config.cwd {
            command.current_dir(cwd);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", self.config.command))?;
        if let Some(stderr) = stderr {
            tokio::spawn(log_stderr(
                self.config.name.clone(),
                self.scrubber.clone(),
                stderr,
            ));
        }
        client.serve(transport).await.context("handshake")
    }
}

/// Every tool the upstream of `link` lists, following pages up to
/// `MAX_TOOLS`, minus the names it may not list (`names.rs`).
pub(super) async fn list_tools(peer: &Peer<RoleClient>, link: &Link) -> anyhow::Result<Vec<Tool>> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let params = cursor
            .map(|cursor| rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = peer.list_tools(params).await?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if tools.len() < MAX_TOOLS => cursor = Some(next),
            _ => break,
        }
    }
    tools.truncate(MAX_TOOLS);
    let (tools, dropped) = super::names::checked(&link.config.name, tools);
    link.dropped.listed(dropped);
    Ok(tools)
}

/// A stdio server's stderr, line by line into teamgate's log at debug.
async fn log_stderr(name: String, scrubber: Scrubber, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut lines)
            .take(MAX_STDERR_LINE as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                tracing::debug!(upstream = %name, line = %scrubber.text(text.trim_end()), "upstream stderr");
            }
        }
    }
}
