//! The composition root: turns a `Config` into a running server.
//! The only module that wires every other one together; it holds no
//! business rules of its own.

mod audit;
mod background;
mod credentials;
mod pins;
mod registry;
pub mod reload;
mod router;

use audit::AuditParts;
use background::{gauges, purge_loop};

pub(crate) use registry::build_registry;
pub use reload::Reloader;
pub use router::edge_config;
use router::{own_issuer, rate_limits};

use std::{future::Future, sync::Arc};

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    auth::{Authenticator, PersonalTokens},
    config::{Config, Secret},
    http::{self, EdgeConfig, Health, RateLimits, ServeOptions},
    mcp::{AuditSink, McpHandler, SessionSettings, Sessions, Shared, Tasks, ToolQuota},
    protocol::StateKeys,
    registry::{ChangeBus, Registry},
    store::{self, Clock, Retention, SqlEventStore, Store, SystemClock},
    telemetry::Metrics,
    upstream::Upstreams,
};

/// How often the active-sessions gauge is refreshed.
const SESSIONS_GAUGE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How often revocations made elsewhere (CLI, other replicas) are picked up.
const REVOCATION_POLL: std::time::Duration = std::time::Duration::from_millis(250);

pub struct App {
    pub config: Config,
    shared: Arc<Shared>,
    rate_limits: RateLimits,
    /// The audit writer and shipper (`audit.rs`).
    audit: AuditParts,
    /// Durable tasks running here, stopped with the server.
    tasks: Arc<Tasks>,
    authenticator: Arc<Authenticator>,
    health: Health,
    store: Store,
    events: Arc<SqlEventStore>,
    sessions: Arc<Sessions>,
    metrics: Metrics,
    /// Who may reach the server (Host, Origin, trusted proxies), parsed once.
    edge: EdgeConfig,
    /// Ends every rmcp session and stream when cancelled.
    engine_shutdown: CancellationToken,
    /// Cancelled when the server starts draining: calls parked for approval
    /// then leave their requests pending for the restart.
    draining: CancellationToken,
    /// The upstream MCP servers' connections, kept across reloads.
    upstreams: Arc<Upstreams>,
    /// The sign-in and pages under `/portal`, when `[portal]` is on.
    portal: Option<Arc<crate::portal::Portal>>,
}

impl App {
    /// Connects and migrates the store, then builds registries and shared
    /// state once; binds nothing.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// `build` with the clock the store reads (tests move time with it).
    pub async fn build_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let edge = edge_config(&config)?;
        let store = Store::from_config(&config.store, clock).await?;
        store.migrate().await?;
        let bus = ChangeBus::default();
        let engine_shutdown = CancellationToken::new();
        let draining = CancellationToken::new();
        let (relay, outgoing) = tokio::sync::mpsc::channel(store::RELAY_QUEUE);
        let replicas = bus.clone();
        let relayed = store::bridge(
            &store,
            config.store.url.expose(),
            outgoing,
            move |event| replicas.publish_local(event),
            engine_shutdown.clone(),
        )
        .await
        .context("cannot LISTEN for changes from other replicas")?;
        if relayed {
            bus.set_relay(relay);
        }
        let vault = credentials::vault(&config, &store)?;
        let (upstreams, member_oauth) = credentials::upstreams(&config, &store, vault.as_ref());
        let registry = build_registry(&config, &bus, Some(&upstreams))?;
        let audit = AuditParts::start(&config, &store)?;
        let auditor = audit.auditor.clone();
        let clock_store = store.clone();
        let audit_sink = AuditSink {
            auditor: auditor.clone(),
            now_ms: Arc::new(move || clock_store.now_ms()),
        };
        let limits = rate_limits(&config, &store);
        let tasks = tasks(&store, &config, &engine_shutdown, audit_sink.clone());
        let mut shared = Shared::new(
            registry,
            bus,
            state_keys(&config, &store).await?,
            &config.mcp.server_name,
            &config.mcp.instructions,
        )
        .with_approvals(crate::mcp::ApprovalDesk::new(
            store.clone(),
            Some(audit_sink.clone()),
            draining.clone(),
        ))
        .with_audit(audit_sink)
        .with_tool_timeout(config.limits.tool_timeout)
        .with_tool_quota(tool_quota(&limits))
        .with_tasks(tasks.clone());
        if let Some(vault) = &vault {
            shared = shared.with_member_secrets(credentials::member_secrets(vault));
        }
        let shared = Arc::new(shared);
        crate::mcp::retry_tasks(&shared);
        upstreams.on_change(Shared::refresher(&shared));
        let tokens = Arc::new(PersonalTokens::new(
            store.clone(),
            config.auth.token_cache_ttl,
        ));
        tokens.watch_revocations(REVOCATION_POLL);
        let live = shared.clone();
        let own = own_issuer(&config, &store);
        let portal = crate::portal::Portal::new(
            &config,
            store.clone(),
            tokens.clone(),
            auditor.clone(),
            Arc::new(move || live.registry()),
            (vault, member_oauth),
            own.clone(),
        )?;
        let authenticator = Arc::new(
            Authenticator::new(
                &config.auth,
                tokens,
                &config.server.public_url,
                &config.mcp.path,
            )
            .with_own_issuer(own),
        );
        let retention = Retention {
            max_events: config.store.events_max,
            max_age: config.store.events_max_age,
        };
        let events = SqlEventStore::new(store.clone(), retention);
        let sessions = Arc::new(Sessions::new(
            Arc::new(store.clone()),
            events.clone(),
            &SessionSettings {
                idle_ttl: config.store.session_idle_ttl,
                memory_idle: config.store.session_memory_idle,
                sse_retry: config.mcp.sse_retry,
                disconnect_grace: config.mcp.disconnect_grace,
                max_in_memory: config.store.max_sessions_in_memory,
            },
        ));
        let metrics = Metrics::new(&config.telemetry)?;
        registry::observe_upstreams(&metrics, &upstreams);
        let counted = tasks.clone();
        metrics.watch_tasks(Arc::new(move || counted.counts()));
        if let Some(status) = limits.shared.clone() {
            metrics.watch_quota_store(Arc::new(move || !status.per_replica()));
        }
        audit.observe(&metrics);
        Ok(Self {
            edge,
            metrics,
            health: Health::new(Some(store.clone())).with_quotas(limits.shared.clone()),
            config,
            shared,
            rate_limits: limits,
            audit,
            tasks: tasks.clone(),
            authenticator,
            store,
            events,
            sessions,
            engine_shutdown,
            draining,
            upstreams,
            portal,
        })
    }

    /// Rebuilds every provider from `config` and swaps the registry whole;
    /// clients hear `list_changed` for what changed. A configuration that
    /// does not build is refused and the current registry keeps serving.
    /// Only capabilities and upstreams reload: the listener, the store,
    /// sign-in, the portal and the like need a restart, which the reload's
    /// line says when they changed (`reload::restart_needed`).
    pub fn reload(&self, config: &Config) -> anyhow::Result<()> {
        self.reloader().reload(config).map(drop)
    }

    /// A handle that reloads this app's capabilities, usable after `serve`
    /// has taken the app.
    pub fn reloader(&self) -> Reloader {
        Reloader {
            shared: self.shared.clone(),
            upstreams: Some(self.upstreams.clone()),
            started: Arc::new(self.config.clone()),
        }
    }

    /// The registry serving right now (for the identity layer's scope checks).
    pub fn registry(&self) -> Arc<Registry> {
        self.shared.registry()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Says at start what authentication expects, and how to get a first
    /// token: `create_token` is that command as the operator can type it.
    pub async fn announce_auth(&self, create_token: &str) {
        if !self.authenticator.required() {
            tracing::warn!(
                "auth.mode = \"none\": every request is served as the anonymous user; use only on this machine"
            );
            return;
        }
        let no_tokens = self
            .store
            .tokens(None)
            .await
            .map(|t| t.is_empty())
            .unwrap_or(false);
        let oauth = self.authenticator.oauth.is_enabled() || self.authenticator.own.is_some();
        if no_tokens && !oauth {
            tracing::warn!(
                "no personal token exists yet; create the first one with: {create_token} (then send Authorization: Bearer <token>)"
            );
        }
    }

    /// This replica's personal tokens (a revocation here takes effect at once).
    pub fn tokens(&self) -> Arc<crate::auth::PersonalTokens> {
        self.authenticator.tokens.clone()
    }

    /// The session manager, to observe what is held in memory.
    pub fn sessions(&self) -> Arc<Sessions> {
        self.sessions.clone()
    }

    /// The change bus every session forwarder and listen stream reads.
    pub fn change_bus(&self) -> crate::registry::ChangeBus {
        self.shared.bus.clone()
    }

    /// Serves on `listener` until `shutdown` resolves, then drains: readiness
    /// turns false, the listener closes after `server.drain_delay`, in-flight
    /// calls get `server.shutdown_grace` to finish, then open streams end.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let router = self.router();
        let metrics = &self.config.telemetry.metrics;
        if metrics.enabled && !metrics.listen.is_empty() {
            let addr = &metrics.listen;
            let listener = TcpListener::bind(addr)
                .await
                .with_context(|| format!("telemetry.metrics.listen: cannot bind {addr}"))?;
            tracing::info!(url = %format!("http://{}/metrics", listener.local_addr()?), "metrics listening");
            let router = self.metrics_router();
            let stop = self.engine_shutdown.clone();
            tokio::spawn(async move {
                let served = axum::serve(listener, router)
                    .with_graceful_shutdown(async move { stop.cancelled().await })
                    .await;
                if let Err(error) = served {
                    tracing::warn!(%error, "metrics listener failed");
                }
            });
        }
        tokio::spawn(gauges(
            self.sessions.clone(),
            self.store.clone(),
            self.metrics.clone(),
            self.engine_shutdown.clone(),
        ));
        tokio::spawn(purge_loop(
            self.store.clone(),
            self.events.clone(),
            self.rate_limits.clone(),
            self.config.clone(),
            self.engine_shutdown.clone(),
        ));
        let server = &self.config.server;
        let options = ServeOptions {
            header_read_timeout: server.header_read_timeout,
            max_connections: server.max_connections,
            h2c: server.h2c,
            drain_delay: server.drain_delay,
            grace: server.shutdown_grace,
        };
        let health = self.health.clone();
        let draining = self.draining.clone();
        http::serve(
            listener,
            router,
            options,
            shutdown,
            move || {
                draining.cancel();
                health.start_draining();
            },
            self.engine_shutdown.clone(),
        )
        .await
        .context("HTTP server failed")?;
        self.engine_shutdown.cancel();
        // Tasks still running get the grace to finish, then fail, audited.
        self.tasks.stop(self.config.server.shutdown_grace).await;
        // Every connection has closed: the audit records still queued.
        self.audit.finish().await;
        // stdio upstream servers end with their connections.
        self.upstreams.shutdown();
        // Pushes the last OTLP metrics; blocking, so off the executor.
        let metrics = self.metrics.clone();
        let _ = tokio::task::spawn_blocking(move || metrics.shutdown()).await;
        Ok(())
    }
}

/// The engine's per-tool quotas, from the same limiters as every other limit.
fn tool_quota(limits: &RateLimits) -> ToolQuota {
    let limits = limits.clone();
    Arc::new(move |user, tool| limits.check_tool(user, tool))
}

/// The keys sealing MRTR `requestState`. Replicas must share them, so on
/// PostgreSQL they must be configured; a lone SQLite instance may generate
/// one and keep it in its database.
/// Durable tasks over the store, heartbeat and sweep running until shutdown.
fn tasks(store: &Store, config: &Config, stop: &CancellationToken, audit: AuditSink) -> Arc<Tasks> {
    let tasks = Tasks::new(store.clone(), config.tasks.clone(), Some(audit));
    tasks.start(stop.clone());
    tasks
}

async fn state_keys(config: &Config, store: &Store) -> anyhow::Result<StateKeys> {
    if !config.mcp.request_state_keys.is_empty() {
        return StateKeys::new(&config.mcp.request_state_keys);
    }
    if let Some(problem) = config.state_keys_problem() {
        anyhow::bail!(problem);
    }
    let key = store
        .setting_or_insert("mrtr_request_state_key", || {
            hex::encode(rand::random::<[u8; 32]>())
        })
        .await?;
    StateKeys::new(&[Secret::new(key)])
}

/// A handler for `teamgate stdio`: the configured registry, no store (one
/// local client, no sessions to keep), a per-process requestState key; and
/// the `Reloader` that swaps its capabilities.
pub fn stdio_handler(config: &Config) -> anyhow::Result<(McpHandler, Reloader)> {
    let bus = ChangeBus::default();
    let upstreams = Arc::new(Upstreams::new());
    let registry = build_registry(config, &bus, Some(&upstreams))?;
    let shared = Arc::new(Shared::new(
        registry,
        bus,
        StateKeys::new(&config.mcp.request_state_keys)?,
        &config.mcp.server_name,
        &config.mcp.instructions,
    ));
    upstreams.on_change(Shared::refresher(&shared));
    let reloader = Reloader {
        shared: shared.clone(),
        upstreams: Some(upstreams),
        started: Arc::new(config.clone()),
    };
    Ok((McpHandler::new(shared), reloader))
}
