//! What operators see: log output (stderr only: stdout belongs to command
//! output and to the protocol under `teamgate stdio`), OpenTelemetry traces
//! over OTLP, the metrics behind `/metrics` and OTLP (`metrics`), and what
//! the request observation beside the stack (`http/observe.rs`) shares with
//! the engine: the outcome slot, the log target, trace ids.
//! Holds no business logic.

mod labels;
mod metrics;
mod outcome;
mod request;

use std::io::IsTerminal;

use anyhow::Context;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig as _};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing_subscriber::{EnvFilter, Layer, Registry, filter::Targets, fmt, prelude::*};

pub use metrics::{METRICS_PATH, Metrics, UpstreamGauge, metrics_router};
pub use outcome::{Observed, Outcome};
pub use request::{REQUEST_TARGET, new_trace_id};

use crate::config::{Config, LogConfig, LogFormat, TelemetryConfig};

/// Ends the OTLP trace pipeline (flushing what is queued) when dropped.
pub struct TelemetryGuard {
    tracer: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(tracer) = self.tracer.take()
            && let Err(error) = tracer.shutdown()
        {
            eprintln!("teamgate: OTLP trace export did not flush: {error}");
        }
    }
}

/// Logs for `serve`, plus OTLP traces when `telemetry.otlp_endpoint` is set.
pub fn init(config: &Config) -> anyhow::Result<TelemetryGuard> {
    let tracer = tracer_provider(&config.telemetry)?;
    // Exported: teamgate's own spans (one per MCP request, and what runs
    // inside it), not the libraries' internals, whatever `log.level` says.
    let otel = tracer.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("teamgate"))
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target("teamgate", tracing::Level::INFO))
    });
    install(&config.log, otel)?;
    Ok(TelemetryGuard { tracer })
}

/// Logs only (`stdio`, `migrate` and the other one-shot commands).
pub fn init_stderr(config: &LogConfig) -> anyhow::Result<()> {
    install::<tracing_subscriber::layer::Identity>(config, None)
}

fn install<L>(config: &LogConfig, otel: Option<L>) -> anyhow::Result<()>
where
    L: Layer<Registry> + Send + Sync,
{
    // RUST_LOG, when set, wins: the usual escape hatch while debugging.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level_with_requests(config)))
        .context("log.level")?;
    let json = match config.format {
        LogFormat::Json => true,
        LogFormat::Pretty => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    // The OTel layer has its own filter, so `log.level = "warn"` does not
    // stop request spans from being exported. Without it, the log filter is
    // the only one: an absent (`None`) layer would declare interest in every
    // callsite, and every disabled span would still be built in the registry
    // on each request. A second init (tests building several apps) keeps the
    // first subscriber.
    let _ = match otel {
        Some(otel) => tracing_subscriber::registry()
            .with(otel)
            .with(output(json).with_filter(filter))
            .try_init(),
        None => tracing_subscriber::registry()
            .with(output(json).with_filter(filter))
            .try_init(),
    };
    Ok(())
}

/// The log lines' layer: JSON or human-readable, on stderr.
fn output<S>(json: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    if json {
        fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        fmt::layer().with_writer(std::io::stderr).boxed()
    }
}

/// `log.level`, with the per-request lines turned off unless `log.requests`
/// (or the level itself names their target).
fn level_with_requests(config: &LogConfig) -> String {
    if config.requests || config.level.contains(request::REQUEST_TARGET) {
        config.level.clone()
    } else {
        format!("{},{}=off", config.level, request::REQUEST_TARGET)
    }
}

/// The OTLP/HTTP span pipeline, when an endpoint is configured.
fn tracer_provider(config: &TelemetryConfig) -> anyhow::Result<Option<SdkTracerProvider>> {
    if config.otlp_endpoint.is_empty() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(signal_url(config, "traces"))
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(crate::outbound::blocking(EXPORT_TIMEOUT)?)
        .with_headers(Default::default())
        .build()
        .context("telemetry.otlp_endpoint: cannot build the span exporter")?;
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource(config))
            .build(),
    ))
}

/// How long one OTLP export may take before it is abandoned.
const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn signal_url(config: &TelemetryConfig, signal: &str) -> String {
    format!("{}/v1/{signal}", config.otlp_endpoint.trim_end_matches('/'))
}

fn resource(config: &TelemetryConfig) -> Resource {
    Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(level: &str, requests: bool) -> LogConfig {
        LogConfig {
            format: LogFormat::Json,
            level: level.into(),
            requests,
        }
    }

    #[test]
    fn request_lines_are_opt_in() {
        assert_eq!(
            level_with_requests(&log("info", false)),
            "info,teamgate::request=off"
        );
        assert_eq!(level_with_requests(&log("info", true)), "info");
        let explicit = "info,teamgate::request=debug";
        assert_eq!(level_with_requests(&log(explicit, false)), explicit);
    }
}
