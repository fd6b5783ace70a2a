//! The composition root: turns a `Config` into a running server.
//! The only module that wires every other one together; it holds no
//! business rules of its own.

use std::{future::Future, net::SocketAddr, sync::Arc};

use anyhow::Context;
use axum::{Router, serve::ListenerExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    config::Config,
    http::{self, GuardConfig, Health, HttpParts},
    mcp::{McpHandler, Sessions, Shared, StreamableHttpServerConfig, StreamableHttpService},
    providers::{self, builtin::Builtin, conformance},
    registry::{ChangeBus, Registry},
    store::{MemoryEventStore, Retention},
};

/// Loopback names always accepted in `Host` (DNS-rebinding protection).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Browser origins on this machine, any port.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

pub struct App {
    pub config: Config,
    shared: Arc<Shared>,
    health: Health,
    /// Ends every rmcp session and stream when cancelled.
    engine_shutdown: CancellationToken,
}

impl App {
    /// Builds registries and shared state once; binds nothing.
    pub fn build(config: Config) -> anyhow::Result<Self> {
        let bus = ChangeBus::default();
        let registry = Arc::new(build_registry(&config, &bus)?);
        let shared = Arc::new(Shared::new(
            registry,
            bus,
            &config.mcp.server_name,
            &config.mcp.instructions,
        ));
        Ok(Self {
            config,
            shared,
            health: Health::default(),
            engine_shutdown: CancellationToken::new(),
        })
    }

    /// Rebuilds every provider from `config` and swaps the registry whole;
    /// clients hear `list_changed` for what changed. A configuration that
    /// does not build is refused and the current registry keeps serving.
    /// Only capabilities reload: listener, limits and the like need a restart.
    pub fn reload(&self, config: &Config) -> anyhow::Result<()> {
        self.reloader().reload(config)
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

    /// A handler over the same registry, for the stdio transport.
    pub fn handler(&self) -> McpHandler {
        McpHandler::new(self.shared.clone())
    }

    pub fn router(&self) -> Router {
        let shared = self.shared.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(McpHandler::new(shared.clone())),
            Arc::new(Sessions::new(Arc::new(MemoryEventStore::new(
                Retention::default(),
            )))),
            self.engine_config(),
        );
        http::router(HttpParts {
            mcp_path: self.config.mcp.path.clone(),
            mcp,
            guard: GuardConfig::from_config(&self.config),
            health: self.health.clone(),
        })
    }

    fn engine_config(&self) -> StreamableHttpServerConfig {
        let server = &self.config.server;
        let mcp = &self.config.mcp;
        let hosts = LOOPBACK_HOSTS
            .iter()
            .map(|h| h.to_string())
            .chain(server.allowed_hosts.iter().cloned());
        let origins = LOOPBACK_ORIGINS
            .iter()
            .map(|o| o.to_string())
            .chain(server.allowed_origins.iter().cloned());
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_sse_keep_alive(Some(mcp.sse_keep_alive))
            .with_sse_retry(Some(mcp.sse_retry))
            .with_json_response(mcp.json_responses)
            .with_legacy_session_mode(mcp.legacy_sessions)
            .with_max_request_body_bytes(server.max_body_bytes)
            .with_cancellation_token(self.engine_shutdown.clone())
    }

    /// Serves on `listener` until `shutdown` resolves, then drains: readiness
    /// turns false, in-flight calls get `server.shutdown_grace` to finish,
    /// then open streams are ended.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let router = self.router();
        let health = self.health.clone();
        let engine_shutdown = self.engine_shutdown.clone();
        let grace = self.config.server.shutdown_grace;
        let drained = CancellationToken::new();
        let drained_signal = drained.clone();
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!(grace = ?grace, "shutdown requested: draining");
            health.start_draining();
            drained_signal.cancel();
            tokio::time::sleep(grace).await;
            engine_shutdown.cancel();
        });
        // rmcp writes an SSE reply in several small writes; without NODELAY,
        // Nagle plus delayed ACKs stall each of them by ~40 ms.
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::warn!(%error, "could not set TCP_NODELAY");
            }
        });
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async move { drained.cancelled().await })
        .await
        .context("HTTP server failed")?;
        self.engine_shutdown.cancel();
        Ok(())
    }
}

/// Swaps in capabilities built from a new configuration (see `App::reload`).
#[derive(Clone)]
pub struct Reloader {
    shared: Arc<Shared>,
}

impl Reloader {
    pub fn reload(&self, config: &Config) -> anyhow::Result<()> {
        let registry = build_registry(config, &self.shared.bus)?;
        self.shared.replace_registry(Arc::new(registry));
        Ok(())
    }
}

/// Registers the providers the configuration enables.
fn build_registry(config: &Config, bus: &ChangeBus) -> anyhow::Result<Registry> {
    let providers = &config.providers;
    let mut builder = Registry::builder();
    if providers.builtin.enabled {
        let builtin = Arc::new(Builtin::new(&config.mcp.server_name));
        builder = builder.tools(builtin.clone()).prompts(builtin);
    }
    if providers.conformance.enabled {
        builder = builder
            .tools(Arc::new(conformance::ConformanceTools))
            .resources(Arc::new(conformance::ConformanceResources))
            .prompts(Arc::new(conformance::ConformancePrompts))
            .subscribable();
    }
    builder = providers::declare(config, bus, builder)?;
    Ok(builder.build()?)
}
