//! MCP servers teamgate fronts (`[[upstreams]]`): one client connection per
//! upstream (`link.rs`), supervised (`supervise.rs`), whose tools, prompts
//! and resources the registry offers as teamgate's own (`tools.rs`,
//! `prompts.rs`, `resources.rs`), so the engine's scopes, quotas, audit,
//! timeouts and secret scrubbing apply to them unchanged. A member's
//! credential never leaves teamgate: upstreams see only the headers and
//! environment their configuration names. Each tool's definition is pinned
//! on first sight, and a changed one withheld until approved (`pins.rs`).
//! Connections outlive registry rebuilds: a reload keeps an upstream whose
//! configuration did not change, and starts or stops the others.

mod client;
mod detect;
mod dropped;
mod forward;
mod legacy_sse;
mod link;
mod listing;
mod members;
mod names;
mod oauth;
mod offer;
mod parked;
mod pins;
mod progress;
mod prompts;
mod relay;
mod request;
mod resources;
pub(crate) mod review;
mod supervise;
mod task_wait;
mod tools;
mod uris;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

pub use link::Status;
pub use names::{Dropped, Why};
pub use pins::{Pinned, Pins};

use crate::{
    config::{UpstreamConfig, env_value, member_slots, resolve_env},
    registry::{
        ChangeBus, MemberSecrets, PromptProvider, ResourceProvider, Scrubber, Slots, Template,
        ToolProvider, oauth::MemberOauth,
    },
};

/// What the registry is told about an upstream change: rebuild the lists.
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

/// Told of every forwarded call as it ends (for `/metrics`): the upstream,
/// the outcome (`ok`, `tool_error`, `error`, `unavailable`, `cancelled`)
/// and how long it took.
pub type OnCall = Arc<dyn Fn(&str, &'static str, std::time::Duration) + Send + Sync>;

/// An upstream's tools, and the secrets its configuration holds (scrubbed
/// from every result).
pub type Offered = (Arc<dyn ToolProvider>, Vec<String>);

/// An upstream's prompts and resources.
pub type Passed = (Arc<dyn PromptProvider>, Arc<dyn ResourceProvider>);

/// Every configured upstream, running.
pub struct Upstreams {
    runtime: tokio::runtime::Handle,
    running: Arc<Mutex<HashMap<String, Running>>>,
    /// Set once the registry exists (`App` wires it); until then changes
    /// are picked up by the first build.
    on_change: Arc<OnceLock<OnChange>>,
    /// Set once metrics exist; calls before that are not counted.
    on_call: Arc<OnceLock<OnCall>>,
    /// Who offers resources besides each upstream (the URI rule).
    neighbours: Arc<resources::Neighbours>,
    /// Where the upstreams' `resources/updated` go; set with the first registry.
    bus: Arc<OnceLock<ChangeBus>>,
    /// Where tool definitions are pinned; `None`: nowhere (no database).
    pins: Option<Arc<dyn Pins>>,
    /// Every configured upstream, for the pins' name claims.
    configured: link::Configured,
    /// Upstreams found to want members' OAuth, shared with the portal.
    oauth: MemberOauth,
    /// Members' tokens, to list an OAuth upstream over a member's connection.
    secrets: Option<Arc<dyn MemberSecrets>>,
}

/// A started upstream; dropping it stops the connection (and a stdio
/// server with it).
struct Running {
    link: Arc<link::Link>,
    members: Option<Arc<members::Members>>,
    provider: Arc<tools::UpstreamTools>,
    prompts: Arc<prompts::UpstreamPrompts>,
    resources: Arc<resources::UpstreamResources>,
    secrets: Vec<String>,
    stop: CancellationToken,
}

/// One upstream, as `teamgate upstreams list` and `/metrics` show it.
pub struct UpstreamState {
    pub name: String,
    pub status: Status,
    pub tools: usize,
    /// Tools not offered: bad names, clashes (`dropped.rs`).
    pub dropped: usize,
    pub error: Option<String>,
}

impl Upstreams {
    /// Must be called on the runtime the connections will run on.
    pub fn new() -> Self {
        // rmcp's HTTP client takes the process's TLS provider; already set is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            runtime: tokio::runtime::Handle::current(),
            running: Arc::default(),
            on_change: Arc::default(),
            on_call: Arc::default(),
            neighbours: Arc::default(),
            bus: Arc::default(),
            pins: None,
            configured: Arc::default(),
            oauth: MemberOauth::default(),
            secrets: None,
        }
    }

    /// Members' OAuth to upstreams that want it: `oauth` is shared with the
    /// portal (which tells when a member connected), `secrets` holds the
    /// members' tokens.
    pub fn with_member_oauth(
        mut self,
        oauth: MemberOauth,
        secrets: Option<Arc<dyn MemberSecrets>>,
    ) -> Self {
        let running = Arc::downgrade(&self.running);
        oauth.on_connected(Arc::new(move |name| {
            let Some(running) = running.upgrade() else {
                return;
            };
            let running = running.lock().expect("upstreams lock");
            if let Some(members) = running.get(name).and_then(|r| r.members.as_ref()) {
                members.relist.notify_one();
            }
        }));
        self.oauth = oauth;
        self.secrets = secrets;
        self
    }

    /// Where upstreams' OAuth requests may go: under `allowlist` (the
    /// configuration's `tools.http_allowlist`), else by the rule of
    /// `registry::oauth_reach`.
    pub fn allow_oauth_at(&self, allowlist: &[String]) {
        self.oauth.allow(allowlist);
    }

    /// Pins every upstream's tool definitions in `pins` (unless its `pin = false`).
    pub fn with_pins(mut self, pins: Arc<dyn Pins>) -> Self {
        self.pins = Some(pins);
        self
    }

    /// Called whenever an upstream's tools or status change.
    pub fn on_change(&self, on_change: OnChange) {
        let _ = self.on_change.set(on_change);
    }

    /// Called as each forwarded call ends.
    pub fn on_call(&self, on_call: OnCall) {
        let _ = self.on_call.set(on_call);
    }

    /// Runs exactly `configs`: keeps the upstreams whose configuration is
    /// unchanged, starts new and changed ones, stops the rest. Returns every
    /// upstream's tool provider and the secrets its configuration holds (for
    /// scrubbing), in the order of `configs`. `slots` fills the `${user:NAME}`
    /// of upstream headers per member (`members.rs`). A configuration that cannot be resolved (a missing
    /// environment variable) starts nothing.
    pub fn reconcile(
        &self,
        configs: &[UpstreamConfig],
        slots: &Slots,
    ) -> anyhow::Result<Vec<Offered>> {
        let mut running = self.running.lock().expect("upstreams lock");
        // Everything new is built first: a configuration that fails leaves
        // the running upstreams exactly as they were.
        let mut fresh = HashMap::new();
        for (i, config) in configs.iter().enumerate() {
            let unchanged = running
                .get(&config.name)
                .is_some_and(|r| r.link.config == *config);
            if !unchanged {
                fresh.insert(config.name.clone(), self.start(i, config, slots)?);
            }
        }
        // Before any new upstream lists (and pins) its tools.
        let link = |name: &String| (fresh.get(name).or_else(|| running.get(name))).map(|r| &r.link);
        let weak = |c: &UpstreamConfig| link(&c.name).map(Arc::downgrade).unwrap_or_default();
        let configured = configs.iter().map(|c| (c.clone(), weak(c))).collect();
        *self.configured.lock().expect("configured lock") = configured;
        let mut next = HashMap::new();
        for config in configs {
            let entry = match fresh.remove(&config.name) {
                Some(started) => {
                    self.oauth.forget(&config.name);
                    let (link, members) = (started.link.clone(), started.members.clone());
                    let run = listing::run(link, members, self.oauth.clone(), started.stop.clone());
                    self.runtime.spawn(run);
                    started
                }
                None => running.remove(&config.name).expect("kept above"),
            };
            next.insert(config.name.clone(), entry);
        }
        for name in running.keys() {
            if configs.iter().any(|c| c.name == *name) {
                tracing::info!(upstream = %name, "upstream configuration changed; reconnecting");
            } else {
                tracing::info!(upstream = %name, "upstream removed");
                self.oauth.forget(name);
            }
        }
        *self.neighbours.links.lock().expect("neighbours lock") =
            configs.iter().map(|c| next[&c.name].link.clone()).collect();
        // Dropping a `Running` stops its connection.
        *running = next;
        // In the configuration's order, so lists are stable across rebuilds.
        Ok(configs
            .iter()
            .map(|config| {
                let r = &running[&config.name];
                (
                    r.provider.clone() as Arc<dyn ToolProvider>,
                    r.secrets.clone(),
                )
            })
            .collect())
    }

    /// Every running upstream's prompts and resources, by name, beside
    /// `own` (teamgate's resource providers, which keep their URIs); their
    /// `resources/updated` are published on `bus`.
    pub fn passthrough(&self, own: &[Arc<dyn ResourceProvider>], bus: &ChangeBus) -> Vec<Passed> {
        let _ = self.bus.set(bus.clone());
        *self.neighbours.own.lock().expect("neighbours lock") = own.to_vec();
        let running = self.running.lock().expect("upstreams lock");
        let mut names: Vec<&String> = running.keys().collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let r = &running[name];
                (
                    r.prompts.clone() as Arc<dyn PromptProvider>,
                    r.resources.clone() as Arc<dyn ResourceProvider>,
                )
            })
            .collect()
    }

    fn start(&self, i: usize, config: &UpstreamConfig, slots: &Slots) -> anyhow::Result<Running> {
        let key = format!("upstreams[{i}]"); // as check-config names it
        let mut secrets = Vec::new();
        let mut headers = HashMap::new();
        let mut member_headers = Vec::new();
        for (name, template) in &config.headers {
            let header = http::HeaderName::try_from(name.as_str())
                .with_context(|| format!("{key}.headers: {name:?}"))?;
            let key = format!("{key}.headers.{name}");
            if !member_slots(template).is_empty() {
                member_headers.push((header, Template::parse(template, &key, &mut secrets)?));
                continue;
            }
            let value = resolve_env(template, &key, &mut secrets)?;
            headers.insert(
                header,
                http::HeaderValue::try_from(value).with_context(|| key.clone())?,
            );
        }
        let stop = CancellationToken::new();
        let oauth = config.auth == crate::config::UpstreamAuth::Oauth;
        let may_oauth = oauth || config.may_detect_oauth();
        let members = (!member_headers.is_empty() || may_oauth).then(|| {
            Arc::new(members::Members::new(
                member_headers,
                slots.clone(),
                (&config.name, oauth),
                (
                    self.secrets.clone(),
                    (self.oauth.clone(), config.url.clone()),
                ),
                stop.child_token(),
            ))
        });
        headers.extend(members.iter().flat_map(|m| m.shared_headers()));
        let mut env = Vec::new();
        if let Ok(path) = std::env::var("PATH") {
            env.push(("PATH".to_owned(), path));
        }
        for (j, name) in config.env.iter().enumerate() {
            let value = env_value(&format!("{key}.env[{j}]"), name)?;
            env.push((name.clone(), value));
        }
        for (j, name) in config.secret_env.iter().enumerate() {
            let value = env_value(&format!("{key}.secret_env[{j}]"), name)?;
            secrets.push(value.clone());
            env.push((name.clone(), value));
        }
        let on_change = self.on_change.clone();
        let changed: OnChange = Arc::new(move || {
            if let Some(on_change) = on_change.get() {
                on_change();
            }
        });
        let pinning = pins::Pinning::new(&config.name, (self.pins.clone(), config.pin));
        let link = link::Link::new(
            config.clone(),
            link::Resolved { headers, env },
            Scrubber::new(secrets.clone()),
            changed,
            self.on_call.clone(),
            (pinning, self.configured.clone()),
        );
        link.dropped.report_to(&config.name, self.pins.clone());
        let neighbours = self.neighbours.clone();
        let provider = tools::UpstreamTools::new(link.clone(), neighbours, members.clone());
        let provider = Arc::new(provider.with_context(|| key.clone())?);
        let resources = Arc::new(resources::UpstreamResources::new(
            link.clone(),
            self.neighbours.clone(),
            members.clone(),
        ));
        let (bus, offered) = (self.bus.clone(), Arc::downgrade(&resources));
        let _ = link.resource_events.set(Arc::new(move |event| {
            if let (Some(bus), Some(offered)) = (bus.get(), offered.upgrade()) {
                // Local only: each replica holds its own upstream subscriptions.
                bus.publish_local(offered.member_event(event));
            }
        }));
        Ok(Running {
            prompts: Arc::new(prompts::UpstreamPrompts::new(link.clone(), members.clone())),
            resources,
            link,
            members,
            provider,
            secrets,
            stop,
        })
    }

    /// Each upstream's state, by name.
    pub fn states(&self) -> Vec<UpstreamState> {
        let running = self.running.lock().expect("upstreams lock");
        let mut states: Vec<UpstreamState> = running
            .iter()
            .map(|(name, running)| {
                let (status, tools, error) = running.link.status();
                UpstreamState {
                    name: name.clone(),
                    status,
                    tools,
                    dropped: running.link.dropped.all().len(),
                    error,
                }
            })
            .collect();
        states.sort_by(|a, b| a.name.cmp(&b.name));
        states
    }

    /// Stops every upstream (stdio servers are ended with their connection).
    pub fn shutdown(&self) {
        self.running.lock().expect("upstreams lock").clear();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Default for Upstreams {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        self.shutdown();
    }
}
