//! The composition root: turns a `Config` into a running server.
//! The only module that wires every other one together; it holds no
//! business rules of its own.

use std::{future::Future, sync::Arc};

use anyhow::Context;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    audit::Auditor,
    auth::{AuthState, Authenticator, PersonalTokens},
    config::{Config, Secret},
    gate::TeamGate,
    http::{
        self, EdgeConfig, GuardConfig, Health, HttpParts, RateLimits, ServeOptions, StreamCaps,
        limits,
    },
    mcp::{
        AuditSink, Engine, McpHandler, SessionSettings, Sessions, Shared, StateKeys,
        StoredSessions, StreamableHttpServerConfig, StreamableHttpService,
    },
    providers::{self, builtin::Builtin, conformance},
    registry::{ChangeBus, Registry},
    store::{self, Clock, Retention, SessionRepo, SqlEventStore, Store, SystemClock},
    telemetry::{self, Metrics, Observer},
};

/// How often the active-sessions gauge is refreshed.
const SESSIONS_GAUGE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How often revocations made elsewhere (CLI, other replicas) are picked up.
const REVOCATION_POLL: std::time::Duration = std::time::Duration::from_millis(250);

pub struct App {
    pub config: Config,
    shared: Arc<Shared>,
    rate_limits: RateLimits,
    auditor: Auditor,
    /// Cancelled once the server has stopped: the audit writer then writes
    /// what is queued and finishes.
    audit_stop: CancellationToken,
    authenticator: Arc<Authenticator>,
    health: Health,
    store: Store,
    events: Arc<SqlEventStore>,
    sessions: Arc<Sessions>,
    metrics: Metrics,
    /// Ends every rmcp session and stream when cancelled.
    engine_shutdown: CancellationToken,
}

impl App {
    /// Connects and migrates the store, then builds registries and shared
    /// state once; binds nothing.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// `build` with the clock the store reads (tests move time with it).
    pub async fn build_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let store = Store::connect(config.store.url.expose(), clock).await?;
        store.migrate().await?;
        let bus = ChangeBus::default();
        let engine_shutdown = CancellationToken::new();
        store::bridge(
            &store,
            config.store.url.expose(),
            &bus,
            engine_shutdown.clone(),
        )
        .await
        .context("cannot LISTEN for changes from other replicas")?;
        let registry = build_registry(&config, &bus)?;
        let audit_stop = CancellationToken::new();
        let auditor = Auditor::start(store.clone(), config.audit.buffer, audit_stop.clone());
        let clock_store = store.clone();
        let audit_sink = AuditSink {
            auditor: auditor.clone(),
            now_ms: Arc::new(move || clock_store.now_ms()),
        };
        let shared = Arc::new(
            Shared::new(
                registry,
                bus,
                state_keys(&config, &store).await?,
                &config.mcp.server_name,
                &config.mcp.instructions,
            )
            .with_audit(audit_sink)
            .with_tool_timeout(config.limits.tool_timeout),
        );
        let tokens = Arc::new(PersonalTokens::new(
            store.clone(),
            config.auth.token_cache_ttl,
        ));
        tokens.watch_revocations(REVOCATION_POLL);
        let authenticator = Arc::new(Authenticator::new(
            &config.auth,
            tokens,
            &config.server.public_url,
            &config.mcp.path,
        ));
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
            },
        ));
        let config_limits = config.clone();
        let metrics = Metrics::new(&config.telemetry)?;
        Ok(Self {
            metrics,
            health: Health::new(Some(store.clone())),
            config,
            shared,
            rate_limits: rate_limits(&config_limits),
            auditor,
            audit_stop,
            authenticator,
            store,
            events,
            sessions,
            engine_shutdown,
        })
    }

    /// Rebuilds every provider from `config` and swaps the registry whole;
    /// clients hear `list_changed` for what changed. A configuration that
    /// does not build is refused and the current registry keeps serving.
    /// Only capabilities reload: listener, limits and the like need a restart.
    pub fn reload(&self, config: &Config) -> anyhow::Result<()> {
        self.reloader().reload(config).map(drop)
    }

    /// A handle that reloads this app's capabilities, usable after `serve`
    /// has taken the app.
    pub fn reloader(&self) -> Reloader {
        Reloader {
            shared: self.shared.clone(),
        }
    }

    /// The registry serving right now (for the identity layer's scope checks).
    pub fn registry(&self) -> Arc<Registry> {
        self.shared.registry()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Says at start what authentication expects, and how to get a first token.
    pub async fn announce_auth(&self) {
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
        if no_tokens && !self.authenticator.oauth.is_enabled() {
            tracing::warn!(
                "no personal token exists yet; create the first one with: teamgate token create --user <name> (then send Authorization: Bearer <token>)"
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

    /// The HTTP stack of the main listener (`http/stack.rs`).
    pub fn router(&self) -> Router {
        let shared = self.shared.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(McpHandler::for_http(shared.clone())),
            self.sessions.clone(),
            self.engine_config(),
        );
        let mcp = Engine::new(
            mcp,
            self.shared.clone(),
            self.config.mcp.sse_keep_alive,
            self.engine_shutdown.clone(),
        );
        let config = &self.config;
        let gate = TeamGate {
            sessions: self.sessions.clone(),
            repo: Arc::new(self.store.clone()),
            auditor: self.auditor.clone(),
            events: self.events.clone(),
            authenticator: self.authenticator.clone(),
            max_sessions: config.store.max_sessions,
            max_sessions_per_owner: config.store.max_sessions_per_owner,
        };
        let streams = StreamCaps::new(
            config.limits.max_streams,
            config.limits.max_streams_per_caller,
        );
        let store = self.store.clone();
        let server = &config.server;
        let edge = EdgeConfig::new(
            &server.public_url,
            &server.allowed_hosts,
            &server.allowed_origins,
            &server.trusted_proxies,
            server.forwarded_header,
        )
        .expect("validated with the configuration");
        let mut browser_origins = server.allowed_origins.clone();
        if let Some(origin) = origin_of(&server.public_url) {
            browser_origins.push(origin);
        }
        let observer = Observer {
            metrics: self.metrics.clone(),
            mcp_path: config.mcp.path.clone(),
        };
        let metrics = &self.config.telemetry.metrics;
        let on_main_listener = metrics.enabled && metrics.listen.is_empty();
        http::router(
            HttpParts {
                mcp_path: config.mcp.path.clone(),
                mcp,
                guard: GuardConfig::from_config(
                    config,
                    Some(Arc::new(gate)),
                    streams,
                    self.rate_limits.clone(),
                ),
                health: self.health.clone(),
                auth: AuthState {
                    authenticator: self.authenticator.clone(),
                    auditor: self.auditor.clone(),
                    scopes_supported: Arc::new(config.auth.oauth.scopes_supported.clone()),
                    now_ms: Arc::new(move || store.now_ms()),
                },
                edge,
                browser_origins,
                rate_limits: self.rate_limits.clone(),
                max_in_flight: config.limits.max_in_flight,
                compression_min_bytes: config.limits.compression_min_bytes,
                observer,
            },
            on_main_listener.then(|| self.metrics_router()),
        )
    }

    /// `/metrics` (Prometheus text), on the main listener or its own.
    pub fn metrics_router(&self) -> Router {
        telemetry::metrics_router(self.metrics.clone(), &self.config.telemetry)
    }

    fn engine_config(&self) -> StreamableHttpServerConfig {
        let mcp = &self.config.mcp;
        let mut engine = StreamableHttpServerConfig::default()
            // Host and Origin are checked once, by the edge layer, before
            // authentication; rmcp's own copy of that check would only disagree
            // behind a proxy.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_sse_keep_alive(Some(mcp.sse_keep_alive))
            .with_sse_retry(Some(mcp.sse_retry))
            .with_json_response(mcp.json_responses)
            .with_legacy_session_mode(mcp.legacy_sessions)
            .with_max_request_body_bytes(self.config.server.max_body_bytes)
            .with_cancellation_token(self.engine_shutdown.clone());
        // rmcp restores a session it does not hold from this store.
        engine.session_store = Some(Arc::new(StoredSessions(Arc::new(self.store.clone()))));
        engine
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
        tokio::spawn(sessions_gauge(
            self.sessions.clone(),
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
        http::serve(
            listener,
            router,
            options,
            shutdown,
            move || health.start_draining(),
            self.engine_shutdown.clone(),
        )
        .await
        .context("HTTP server failed")?;
        self.engine_shutdown.cancel();
        // Every connection has closed: write the audit records still queued.
        self.audit_stop.cancel();
        if !self
            .auditor
            .finished(std::time::Duration::from_secs(10))
            .await
        {
            tracing::error!(
                "audit records still queued at exit were not written (database unreachable)"
            );
        }
        // Pushes the last OTLP metrics; blocking, so off the executor.
        let metrics = self.metrics.clone();
        let _ = tokio::task::spawn_blocking(move || metrics.shutdown()).await;
        Ok(())
    }
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    Some(format!("{scheme}://{authority}"))
}

/// The configured quotas, or none when rate limiting is off.
fn rate_limits(config: &Config) -> RateLimits {
    let rl = &config.rate_limit;
    if !rl.enabled {
        return RateLimits::none();
    }
    RateLimits {
        per_caller: Some(limits::limiter(limits::quota(
            rl.per_caller_per_minute,
            rl.per_caller_burst,
        ))),
        unauthenticated: Some(limits::limiter(limits::quota(
            rl.unauthenticated_per_minute,
            rl.unauthenticated_burst,
        ))),
        per_tool: Arc::new(
            rl.tools
                .iter()
                .map(|t| {
                    (
                        t.tool.clone(),
                        limits::limiter(limits::quota(t.per_minute, t.burst)),
                    )
                })
                .collect(),
        ),
    }
}

/// Swaps in capabilities built from a new configuration (see `App::reload`).
#[derive(Clone)]
pub struct Reloader {
    shared: Arc<Shared>,
}

impl Reloader {
    /// Returns a one-line summary of what was added and removed.
    pub fn reload(&self, config: &Config) -> anyhow::Result<String> {
        let registry = build_registry(config, &self.shared.bus)?;
        let summary = crate::reload::summary(&self.shared.registry(), &registry);
        self.shared.replace_registry(registry);
        Ok(summary)
    }
}

/// Keeps the active-sessions gauge current until `stop`.
async fn sessions_gauge(sessions: Arc<Sessions>, metrics: Metrics, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(SESSIONS_GAUGE_EVERY);
    loop {
        tokio::select! {
            _ = ticks.tick() => metrics.set_sessions(sessions.in_memory().await),
            () = stop.cancelled() => return,
        }
    }
}

/// Deletes expired sessions and old stream events every `interval`.
async fn purge_loop(
    store: Store,
    events: Arc<SqlEventStore>,
    limits: RateLimits,
    config: Config,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(config.store.purge_interval);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = stop.cancelled() => return,
        }
        match store.purge_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "expired sessions deleted"),
            Err(error) => tracing::warn!(%error, "session purge failed"),
        }
        if let Err(error) = events.purge().await {
            tracing::warn!(%error, "stream event purge failed");
        }
        limits.forget_idle();
        let horizon = store.now_ms() - config.audit.retention.as_millis() as i64;
        if let Err(error) = store.purge_audit(horizon).await {
            tracing::warn!(%error, "audit retention not applied");
        }
    }
}

/// The keys sealing MRTR `requestState`. Replicas must share them, so on
/// PostgreSQL they must be configured; a lone SQLite instance may generate
/// one and keep it in its database.
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
    let registry = build_registry(config, &bus)?;
    let shared = Arc::new(Shared::new(
        registry,
        bus,
        StateKeys::new(&config.mcp.request_state_keys)?,
        &config.mcp.server_name,
        &config.mcp.instructions,
    ));
    let reloader = Reloader {
        shared: shared.clone(),
    };
    Ok((McpHandler::new(shared), reloader))
}

/// Registers the providers the configuration enables.
pub(crate) fn build_registry(config: &Config, bus: &ChangeBus) -> anyhow::Result<Arc<Registry>> {
    let providers = &config.providers;
    let mut builder = Registry::builder();
    if providers.conformance.enabled {
        // The suite calls the first listed tool with `{}` and reads the first
        // listed resource, so the conformance fixtures come first.
        let mrtr = Arc::new(conformance::ConformanceMrtr);
        builder = builder
            .tools(Arc::new(conformance::ConformanceTools))
            .tools(mrtr.clone())
            .tools(Arc::new(conformance::ConformanceModern::new(bus.clone())))
            .resources(Arc::new(conformance::ConformanceResources))
            .prompts(Arc::new(conformance::ConformancePrompts))
            .prompts(mrtr)
            .subscribable();
    }
    let builtin = providers
        .builtin
        .enabled
        .then(|| Arc::new(Builtin::new(&config.mcp.server_name)));
    if let Some(builtin) = &builtin {
        builder = builder.tools(builtin.clone()).prompts(builtin.clone());
    }
    builder = providers::declare(config, bus, builder)?;
    let registry = Arc::new(builder.build()?);
    if let Some(builtin) = builtin {
        builtin.offered_by(&registry);
    }
    Ok(registry)
}
