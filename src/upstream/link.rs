//! One upstream server's connection as the rest of the module reads it:
//! its configuration with secrets resolved, its state (status, tools,
//! offer, client), its calls in flight (`forward.rs`), its pinning and
//! drops. The supervision that connects and lists it is `supervise.rs`;
//! what is read here is set there.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, OnceLock, Weak,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::{RoleClient, model::Tool, service::Peer};

use super::{
    dropped::Tally,
    forward::Calls,
    offer::{self, Offer},
    pins::Pinning,
};
use crate::{
    config::UpstreamConfig,
    registry::{ChangeEvent, Scrubber},
};

/// Told the upstream's resource changes, under the upstream's own URIs.
pub(super) type ResourceEvents = Arc<dyn Fn(ChangeEvent) + Send + Sync>;

/// Every configured upstream (set at each reconcile) and its connection:
/// whose names a tool seen for the first time may claim (`review.rs`).
/// Weak: a link is owned by its upstream, not by the others.
pub(super) type Configured = Arc<Mutex<Vec<(UpstreamConfig, Weak<Link>)>>>;

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
    /// Member calls in flight: their progress, the upstream's requests to
    /// its client, calls parked for input (`forward.rs`).
    pub(super) calls: Arc<Calls>,
    /// Told when the tool list or the status changed.
    changed: Arc<dyn Fn() + Send + Sync>,
    /// Wakes the supervisor to list the tools again.
    pub(super) relist: tokio::sync::Notify,
    /// The upstream answered only the 2024-11-05 HTTP+SSE transport.
    pub(super) legacy: AtomicBool,
    /// Members' subscriptions to the upstream's resources (`resources.rs`).
    pub(super) subscribed: offer::Subscribed,
    /// Set once the upstream's resources are offered (`Upstreams::start`).
    pub(super) resource_events: OnceLock<ResourceEvents>,
    /// Which tools are withheld for a changed definition (`pins.rs`).
    pub(super) pins: Pinning,
    /// The other upstreams, for the name claims of its tools (`review.rs`).
    pub(super) configured: Configured,
    /// Which tools are dropped: bad names, clashes (`dropped.rs`).
    pub(super) dropped: Tally,
    /// A member's link: the upstream's own, which its list changes relist.
    parent: OnceLock<Weak<Link>>,
}

impl Link {
    pub(super) fn new(
        config: UpstreamConfig,
        resolved: Resolved,
        scrubber: Scrubber,
        changed: Arc<dyn Fn() + Send + Sync>,
        on_call: Arc<OnceLock<super::OnCall>>,
        (pins, configured): (Pinning, Configured),
    ) -> Arc<Self> {
        Arc::new(Self {
            calls: Arc::new(Calls::new(&config.name, on_call)),
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
            changed,
            relist: tokio::sync::Notify::new(),
            legacy: AtomicBool::new(false),
            subscribed: Default::default(),
            resource_events: OnceLock::new(),
            pins,
            configured,
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
            self.calls.on_call.clone(),
            (
                Pinning::new(&self.config.name, (None, false)),
                Configured::default(),
            ),
        );
        (link.legacy).store(self.legacy.load(Ordering::Relaxed), Ordering::Relaxed);
        let _ = link.parent.set(Arc::downgrade(self));
        link
    }

    /// The upstream said a list changed: the upstream's own link lists it
    /// again (a member's connection included, `listing.rs`).
    pub(super) fn list_changed(&self) {
        match self.parent.get().and_then(Weak::upgrade) {
            Some(parent) => parent.relist.notify_one(),
            None => self.relist.notify_one(),
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
