//! The HTTP side of the composition root: the parts `http::router` is built
//! from, and rmcp's service configuration.

use std::sync::Arc;

use axum::Router;

use super::App;
use crate::{
    auth::AuthState,
    config::Config,
    gate::TeamGate,
    http::{self, EdgeConfig, GuardConfig, HttpParts, Observer, QuotaLeases, RateLimits, limits},
    mcp::{Admission, Endpoints, Engine, Gate, McpHandler, StoredSessions, StreamCaps},
    protocol::{StreamableHttpServerConfig, StreamableHttpService},
    store::Store,
    telemetry,
};

impl App {
    /// The HTTP stack of the main listener (`http/stack.rs`).
    pub fn router(&self) -> Router {
        let shared = self.shared.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(McpHandler::for_http(shared.clone())),
            self.sessions.clone(),
            self.engine_config(),
        );
        let config = &self.config;
        let admission = Admission::new(
            self.sessions.clone(),
            Arc::new(self.store.clone()),
            self.audit.auditor.clone(),
            config.store.max_sessions,
            config.store.max_sessions_per_owner,
        );
        let groups_claim = (config.portal.as_ref()).map_or("groups", |p| p.groups_claim.as_str());
        let endpoints = Endpoints::new(&config.mcp.path, groups_claim, self.shared.clone());
        let gate: Arc<dyn Gate> = Arc::new(TeamGate {
            sessions: self.sessions.clone(),
            authenticator: self.authenticator.clone(),
        });
        let streams = StreamCaps::new(
            config.limits.max_streams,
            config.limits.max_streams_per_caller,
        );
        let mcp = Engine::new(mcp, admission, endpoints, (Some(gate.clone()), streams));
        let store = self.store.clone();
        let server = &config.server;
        let edge = self.edge.clone();
        let mut browser_origins = server.allowed_origins.clone();
        if let Some(origin) = origin_of(&server.public_url) {
            browser_origins.push(origin);
        }
        let observer = Observer {
            metrics: self.metrics.clone(),
            mcp_path: config.mcp.path.clone(),
        };
        let portal = self.portal.as_ref().map(|portal| portal.router());
        let (portal, portal_open) = match portal {
            Some(routes) => (Some(routes.rest), Some(routes.open)),
            None => (None, None),
        };
        let metrics = &self.config.telemetry.metrics;
        let on_main_listener = metrics.enabled && metrics.listen.is_empty();
        http::router(
            HttpParts {
                mcp_path: config.mcp.path.clone(),
                mcp,
                guard: GuardConfig::from_config(config, Some(gate)),
                health: self.health.clone(),
                auth: AuthState {
                    authenticator: self.authenticator.clone(),
                    auditor: self.audit.auditor.clone(),
                    scopes_supported: Arc::new(config.auth.oauth.scopes_supported.clone()),
                    now_ms: Arc::new(move || store.now_ms()),
                },
                edge,
                browser_origins,
                rate_limits: self.rate_limits.clone(),
                max_in_flight: config.limits.max_in_flight,
                compression_min_bytes: config.limits.compression_min_bytes,
                observer,
                portal,
                portal_open,
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
}

/// `server`'s Host, Origin and proxy rules, parsed; `serve` and
/// `check-config` refuse a configuration whose rules do not parse.
pub fn edge_config(config: &Config) -> anyhow::Result<EdgeConfig> {
    let server = &config.server;
    EdgeConfig::new(
        &server.public_url,
        &server.allowed_hosts,
        &server.allowed_origins,
        &server.trusted_proxies,
        server.forwarded_header,
    )
    .map_err(|why| anyhow::anyhow!("`server`: {why}"))
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    Some(format!("{scheme}://{authority}"))
}

/// The configured quotas, or none when rate limiting is off; counted
/// across replicas in `store` when `rate_limit.shared` says so.
pub(super) fn rate_limits(config: &Config, store: &Store) -> RateLimits {
    let rl = &config.rate_limit;
    if !rl.enabled {
        return RateLimits::none();
    }
    let shared = rl
        .shared
        .applies_to(config.store.url.expose())
        .then(|| QuotaLeases::start(Arc::new(store.clone()), store.clock()));
    // Governor's limiter shapes bursts on this replica; the shared count,
    // when on, keeps the replicas together within the quota.
    let limiter = |name: &str, per_minute: u32, burst: u32| {
        let local = limits::limiter(limits::quota(per_minute, burst));
        match &shared {
            Some(shared) => shared.limiter(name, per_minute, local),
            None => local,
        }
    };
    RateLimits {
        per_caller: Some(limiter(
            "caller",
            rl.per_caller_per_minute,
            rl.per_caller_burst,
        )),
        unauthenticated: Some(limiter(
            "address",
            rl.unauthenticated_per_minute,
            rl.unauthenticated_burst,
        )),
        per_tool: Arc::new(
            rl.tools
                .iter()
                .map(|t| (t.tool.clone(), (t.per_minute, t.burst)))
                .chain(
                    config
                        .upstreams
                        .iter()
                        .flat_map(|u| u.rate_limits())
                        .map(|(tool, r)| (tool, (r.per_minute, r.burst))),
                )
                .map(|(tool, (per_minute, burst))| {
                    let limiter = limiter(&format!("tool:{tool}"), per_minute, burst);
                    (tool, limiter)
                })
                .collect(),
        ),
        shared: shared.map(|shared| shared.status()),
    }
}

/// teamgate's own token issuer, when `[authorization_server]` (and the portal) are on.
pub(super) fn own_issuer(
    config: &Config,
    store: &crate::store::Store,
) -> Option<Arc<crate::auth::OwnIssuer>> {
    let authz = config.authorization_server.as_ref().filter(|a| a.enabled)?;
    config.portal.as_ref().filter(|p| p.enabled)?;
    Some(Arc::new(crate::auth::OwnIssuer::new(
        store.clone(),
        &config.server.public_url,
        authz.access_token_ttl,
        authz.key_rotation,
    )))
}
