//! The instruments behind `/metrics` (Prometheus text) and OTLP metric
//! export. One OpenTelemetry meter provider per `App`, read by the
//! Prometheus exporter on each scrape and, when `telemetry.otlp_endpoint` is
//! set, pushed every `telemetry.export_interval`.

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

use anyhow::Context;
use axum::{
    Router,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
mod audit;
mod memory;
mod quotas;
mod store;
mod tasks;

use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram, Meter, MeterProvider as _, UpDownCounter},
};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig as _};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use subtle::ConstantTimeEq;

use super::{
    EXPORT_TIMEOUT,
    labels::{Labels, method_label, version_label},
    resource, signal_url,
};
use crate::config::TelemetryConfig;

/// Latency buckets in seconds: MCP calls range from sub-millisecond list
/// calls to tools that run for minutes.
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 120.0,
];

/// Cheap to clone; every clone records into the same instruments.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    provider: SdkMeterProvider,
    registry: prometheus::Registry,
    requests: Counter<u64>,
    tool_calls: Counter<u64>,
    clients: Counter<u64>,
    latency: Histogram<f64>,
    streams: UpDownCounter<i64>,
    rate_limited: Counter<u64>,
    auth_failures: Counter<u64>,
    sessions: Arc<AtomicI64>,
    tool_names: Labels,
    client_names: Labels,
    upstream_calls: Counter<u64>,
    upstream_latency: Histogram<f64>,
    meter: Meter,
}

/// An upstream server as `/metrics` shows it: its configured name (bounded
/// by the configuration), whether it is connected, how many tools it lists
/// and how many of them are dropped (bad names, clashes).
pub struct UpstreamGauge {
    pub name: String,
    pub up: bool,
    pub tools: usize,
    pub dropped: usize,
}

impl Metrics {
    pub fn new(config: &TelemetryConfig) -> anyhow::Result<Self> {
        let registry = prometheus::Registry::new();
        let prometheus = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .scope_info_enabled(false)
            .build()
            .context("cannot build the Prometheus exporter")?;
        let mut builder = SdkMeterProvider::builder()
            .with_resource(resource(config))
            .with_reader(prometheus);
        if !config.otlp_endpoint.is_empty() {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_endpoint(signal_url(config, "metrics"))
                .with_timeout(EXPORT_TIMEOUT)
                .with_http_client(crate::outbound::blocking(EXPORT_TIMEOUT)?)
                .build()
                .context("telemetry.otlp_endpoint: cannot build the metric exporter")?;
            builder = builder.with_reader(
                PeriodicReader::builder(exporter)
                    .with_interval(config.export_interval)
                    .build(),
            );
        }
        let provider = builder.build();
        let meter = provider.meter("teamgate");
        let sessions = Arc::new(AtomicI64::new(0));
        let observed = sessions.clone();
        meter
            .i64_observable_gauge("teamgate.sessions.active")
            .with_description("2025-era sessions held in memory by this replica")
            .with_callback(move |gauge| gauge.observe(observed.load(Ordering::Relaxed), &[]))
            .build();
        let metrics = Self {
            inner: Arc::new(Inner {
                requests: counter(
                    &meter,
                    "teamgate.mcp.requests",
                    "MCP requests by method, era and outcome",
                ),
                latency: meter
                    .f64_histogram("teamgate.mcp.request.duration")
                    .with_unit("s")
                    .with_description("Time from request to the end of its reply")
                    .with_boundaries(LATENCY_BUCKETS.to_vec())
                    .build(),
                tool_calls: counter(
                    &meter,
                    "teamgate.mcp.tool_calls",
                    "tools/call by tool and outcome",
                ),
                streams: meter
                    .i64_up_down_counter("teamgate.mcp.streams.active")
                    .with_description("SSE responses and GET streams open now")
                    .build(),
                rate_limited: counter(
                    &meter,
                    "teamgate.http.rate_limited",
                    "Requests refused with 429",
                ),
                auth_failures: counter(
                    &meter,
                    "teamgate.auth.failures",
                    "Requests refused with 401 or 403",
                ),
                clients: counter(
                    &meter,
                    "teamgate.mcp.clients",
                    "2025-era initializations and 2026-07-28 requests, by era, protocol version and client name",
                ),
                upstream_calls: counter(
                    &meter,
                    "teamgate.upstream.calls",
                    "Calls forwarded to upstream MCP servers, by upstream and outcome",
                ),
                upstream_latency: meter
                    .f64_histogram("teamgate.upstream.call.duration")
                    .with_unit("s")
                    .with_description("Time an upstream MCP server took to answer a forwarded call")
                    .with_boundaries(LATENCY_BUCKETS.to_vec())
                    .build(),
                meter,
                sessions,
                tool_names: Labels::default(),
                client_names: Labels::default(),
                registry,
                provider,
            }),
        };
        metrics.watch_memory();
        Ok(metrics)
    }

    /// `method` becomes a label only if it is a known one (`method_label`).
    /// Outcomes are the server's own words (`ok`, `http_429`, `error -32602`).
    pub fn request(&self, method: &str, era: &'static str, outcome: &str, seconds: Option<f64>) {
        let method = KeyValue::new("method", method_label(method));
        if let Some(seconds) = seconds {
            self.inner
                .latency
                .record(seconds, std::slice::from_ref(&method));
        }
        let labels = [
            method,
            KeyValue::new("era", era),
            KeyValue::new("outcome", outcome.to_owned()),
        ];
        self.inner.requests.add(1, &labels);
    }

    /// `tool`: a declared tool's name (the caller passes "other" for a call
    /// that named none).
    pub fn tool_call(&self, tool: &str, outcome: &str) {
        let labels = [
            KeyValue::new("tool", self.inner.tool_names.bounded(tool)),
            KeyValue::new("outcome", outcome.to_owned()),
        ];
        self.inner.tool_calls.add(1, &labels);
    }

    /// A call forwarded to `upstream` ended.
    pub fn upstream_call(&self, upstream: &str, outcome: &'static str, seconds: f64) {
        let name = KeyValue::new("upstream", upstream.to_owned());
        self.inner
            .upstream_latency
            .record(seconds, std::slice::from_ref(&name));
        let labels = [name, KeyValue::new("outcome", outcome)];
        self.inner.upstream_calls.add(1, &labels);
    }

    /// Each upstream's state, read at every collection: whether it is
    /// connected (`teamgate.upstream.up`) and how many tools it lists.
    pub fn watch_upstreams(&self, read: Arc<dyn Fn() -> Vec<UpstreamGauge> + Send + Sync>) {
        let (tools, dropped) = (read.clone(), read.clone());
        self.inner
            .meter
            .i64_observable_gauge("teamgate.upstream.up")
            .with_description("1 while the upstream MCP server is connected, else 0")
            .with_callback(move |gauge| {
                for upstream in read() {
                    let name = [KeyValue::new("upstream", upstream.name)];
                    gauge.observe(i64::from(upstream.up), &name);
                }
            })
            .build();
        self.inner
            .meter
            .i64_observable_gauge("teamgate.upstream.tools")
            .with_description("Tools the upstream MCP server lists")
            .with_callback(move |gauge| {
                for upstream in tools() {
                    let name = [KeyValue::new("upstream", upstream.name)];
                    gauge.observe(upstream.tools as i64, &name);
                }
            })
            .build();
        self.inner
            .meter
            .i64_observable_gauge("teamgate.upstream.tools.dropped")
            .with_description("Tools of the upstream MCP server not offered: names outside [A-Za-z0-9_.-]{1,128}, listed twice, or taken by another tool")
            .with_callback(move |gauge| {
                for upstream in dropped() {
                    let name = [KeyValue::new("upstream", upstream.name)];
                    gauge.observe(upstream.dropped as i64, &name);
                }
            })
            .build();
    }

    /// Called for authenticated requests only: an outsider's requests name
    /// no clients here.
    pub fn client(&self, era: &'static str, version: &str, client: &str) {
        let labels = [
            KeyValue::new("era", era),
            KeyValue::new("protocol_version", version_label(version)),
            KeyValue::new("client", self.inner.client_names.bounded(client)),
        ];
        self.inner.clients.add(1, &labels);
    }

    pub fn stream_opened(&self) {
        self.inner.streams.add(1, &[]);
    }

    pub fn stream_closed(&self) {
        self.inner.streams.add(-1, &[]);
    }

    pub fn rate_limited(&self) {
        self.inner.rate_limited.add(1, &[]);
    }

    pub fn auth_failure(&self, status: u16) {
        let labels = [KeyValue::new("status", i64::from(status))];
        self.inner.auth_failures.add(1, &labels);
    }

    pub fn set_sessions(&self, live: usize) {
        self.inner.sessions.store(live as i64, Ordering::Relaxed);
    }

    /// Counts the 2025-era session workers dropped for
    /// `store.max_sessions_in_memory`, as `read` tells.
    pub fn watch_sessions_dropped(&self, read: Arc<dyn Fn() -> u64 + Send + Sync>) {
        self.inner
            .meter
            .u64_observable_counter("teamgate.sessions.dropped")
            .with_description("2025-era session workers dropped from memory past store.max_sessions_in_memory; each is restored by its next request")
            .with_callback(move |counter| counter.observe(read(), &[]))
            .build();
    }

    /// The Prometheus text exposition of every instrument.
    pub fn render(&self) -> String {
        let families = self.inner.registry.gather();
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_default()
    }

    /// Pushes what is pending and stops the OTLP reader (blocking: call
    /// off the async executor).
    pub fn shutdown(&self) {
        if let Err(error) = self.inner.provider.shutdown() {
            tracing::debug!(%error, "metrics provider shutdown");
        }
    }
}

fn counter(meter: &Meter, name: &'static str, description: &'static str) -> Counter<u64> {
    meter
        .u64_counter(name)
        .with_description(description)
        .build()
}

#[derive(Clone)]
struct Scrape {
    metrics: Metrics,
    token: Option<String>,
}

/// Where the Prometheus text is served.
pub const METRICS_PATH: &str = "/metrics";

/// `GET /metrics`; behind `telemetry.metrics.token` when one is set, never
/// behind user tokens.
pub fn metrics_router(metrics: Metrics, config: &TelemetryConfig) -> Router {
    let token = Some(config.metrics.token.expose().to_owned()).filter(|t| !t.is_empty());
    Router::new()
        .route(METRICS_PATH, get(scrape))
        .with_state(Scrape { metrics, token })
}

async fn scrape(State(scrape): State<Scrape>, headers: HeaderMap) -> Response {
    if let Some(expected) = &scrape.token {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a scrape token is required\n",
            )
                .into_response();
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        scrape.metrics.render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> Metrics {
        let config: crate::Config = crate::config::ConfigSources::files_only(vec![])
            .load()
            .expect("defaults load");
        Metrics::new(&config.telemetry).expect("metrics build")
    }

    #[test]
    fn the_exposition_names_each_instrument_once_used() {
        let metrics = metrics();
        metrics.request("tools/call", "modern", "ok", Some(0.01));
        metrics.tool_call("echo", "ok");
        metrics.rate_limited();
        metrics.auth_failure(401);
        let text = metrics.render();
        for name in [
            "teamgate_mcp_requests_total",
            "teamgate_mcp_request_duration_seconds_bucket",
            "teamgate_mcp_tool_calls_total",
            "teamgate_http_rate_limited_total",
            "teamgate_auth_failures_total",
        ] {
            assert!(text.contains(name), "{name} missing from:\n{text}");
        }
    }
}
