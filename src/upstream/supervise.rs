//! The supervision of one upstream's connection: connect (a stdio program
//! teamgate starts, or a Streamable HTTP URL), list its tools, prompts and
//! resources, follow its `list_changed` and `resources/updated`, and
//! reconnect with backoff when it goes away. What it finds is set on the
//! link (`link.rs`), which everything else reads.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use rmcp::{
    RoleClient,
    model::{SubscribeRequestParams, Tool},
    service::Peer,
    transport::TokioChildProcess,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::{
    client::Client,
    detect::{Wanted, oauth_wanted},
    link::{Link, Status},
    offer::Offer,
};
use crate::registry::{ChangeEvent, Scrubber, oauth::MemberOauth};

/// First wait before reconnecting; doubled per failure up to `MAX_BACKOFF`.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long connecting and the handshake may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Tools listed per upstream at most (pages are followed up to this).
const MAX_TOOLS: usize = 1000;
/// Longest stderr line of a stdio server passed to the log.
const MAX_STDERR_LINE: usize = 2048;

impl Link {
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
                                self.review(&tools).await;
                                self.set(Status::Up, Some(tools), Some(peer.clone()), None);
                                if changed {
                                    self.resource_event(ChangeEvent::ResourcesListChanged);
                                }
                                if std::mem::take(&mut connected_now) {
                                    resubscribe(&self, &peer);
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
        // In a sandbox, bwrap runs the server (`crate::sandbox`).
        let (program, args, cgroup) = match &self.config.sandbox {
            None => (
                self.config.command.clone().into(),
                self.config.args.clone(),
                None,
            ),
            Some(sandbox) => {
                let (program, cwd) = (&self.config.command, self.config.cwd.as_deref());
                let wrapped = crate::sandbox::wrap(sandbox, program, &self.config.args, cwd)?;
                (wrapped.program, wrapped.args, wrapped.cgroup)
            }
        };
        let mut command = tokio::process::Command::new::<std::path::PathBuf>(program);
        command
            .args(args)
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
            // The sandbox's cgroup, if any, goes when the server's stderr
            // closes: when it (and every process it left) has ended.
            let name = self.config.name.clone();
            let scrubber = self.scrubber.clone();
            tokio::spawn(async move {
                log_stderr(name, scrubber, stderr).await;
                drop(cgroup);
            });
        }
        (client.handshake(transport, self.config.protocol).await).context("handshake")
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

/// Takes the tools, prompts and resources `peer` (a member's connection)
/// lists as the upstream's; whether its tools could be listed.
pub(super) async fn adopt(link: &Arc<Link>, peer: &Peer<RoleClient>) -> bool {
    let name = &link.config.name;
    let tools = match list_tools(peer, link).await {
        Ok(tools) => tools,
        Err(error) => {
            let error = link.scrubber.text(&format!("{error:#}"));
            tracing::warn!(upstream = %name, %error, "listing the upstream's tools over a member's connection failed");
            return false;
        }
    };
    let was_up = link.status().0 == Status::Up;
    let changed = link.offer(Offer::list(peer, name).await);
    link.review(&tools).await;
    // No peer: calls, prompts and resources go over each member's own.
    link.set(Status::Up, Some(tools), None, None);
    if changed {
        link.resource_event(ChangeEvent::ResourcesListChanged);
    }
    if !was_up {
        tracing::info!(upstream = %name, "upstream listed over a member's connection");
    }
    true
}

/// After a reconnect: the upstream forgot the subscriptions members hold.
#[allow(deprecated)] // resources/subscribe is how 2025-era upstreams subscribe.
fn resubscribe(link: &Arc<Link>, peer: &Peer<RoleClient>) {
    let uris: Vec<String> = {
        let subscribed = link.subscribed.lock().expect("subscriptions lock");
        subscribed.keys().cloned().collect()
    };
    if uris.is_empty() {
        return;
    }
    let peer = peer.clone();
    let name = link.config.name.clone();
    tokio::spawn(async move {
        for uri in uris {
            let params = SubscribeRequestParams::new(uri);
            if let Err(error) = peer.subscribe(params).await {
                tracing::warn!(upstream = %name, %error, "re-subscribing after a reconnect failed");
            }
        }
    });
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
