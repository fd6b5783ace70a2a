//! One span, one log line and the measurements of each MCP request.
//!
//! Two halves, so a request is described once whatever happens to it:
//! `observe` sits right in front of the engine (after authentication and the
//! input guard), where the caller is known and the body is already read and
//! checked; `refusals.rs`'s `Watch` begins before the edge step (`front.rs`)
//! and describes the requests refused before they got there (401, 403, 404,
//! 413, 429, ...).
//! A reply is measured to the end of its body, so the latency of an SSE
//! reply includes its progress notifications.

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use axum::{body::Body, extract::Request, http::header, response::Response};
use opentelemetry::{propagation::TextMapPropagator, trace::TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::{Instrument, Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::watched::{Finish, Watched};
use crate::{
    protocol::{Envelope, ProtocolEra, header_text, names},
    registry::{Caller, RequestFacts},
    telemetry::{Metrics, Observed, REQUEST_TARGET, new_trace_id},
};

/// Set by the inner half: the request reached the engine.
#[derive(Default)]
pub(super) struct Reached(pub(super) AtomicBool);

#[derive(Clone)]
pub struct Observer {
    pub metrics: Metrics,
    pub mcp_path: String,
}

/// The step in front of the engine (`endpoint.rs`, step 13): the request's
/// span, which the engine's work (`next`) runs in, and its measurements.
pub(super) async fn observe<F>(
    observer: &Observer,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let (request, observing) = Observing::start(request);
    let span = observing.span().clone();
    let response = next(request).instrument(span).await;
    observing.finish(observer, response)
}

struct Observing {
    span: Span,
    started: Instant,
    facts: Arc<RequestFacts>,
    observed: Arc<Observed>,
}

impl Observing {
    /// Describes `request` and opens its span; the returned request carries
    /// its facts with the trace id set, and the `Observed` slot for the handler.
    fn start(request: Request) -> (Request, Self) {
        let started = Instant::now();
        if let Some(reached) = request.extensions().get::<Arc<Reached>>() {
            reached.0.store(true, Ordering::Relaxed);
        }
        let (mut parts, body) = request.into_parts();
        // The guard made the request's facts; a request that met no guard
        // is described from its head alone.
        let facts = match RequestFacts::of(&parts) {
            Some(facts) => facts.clone(),
            None => {
                let era = header_text(&parts.headers, names::MCP_PROTOCOL_VERSION);
                let era = ProtocolEra::of(&era).unwrap_or(ProtocolEra::Legacy);
                let facts =
                    RequestFacts::new(&parts, &Envelope::default(), Caller::anonymous(), era);
                let facts = Arc::new(facts);
                parts.extensions.insert(facts.clone());
                facts
            }
        };
        let era = ProtocolEra::label(Some(facts.era));
        let span = tracing::info_span!(
            target: REQUEST_TARGET,
            "mcp.request",
            otel.name = %format!("{} {}", facts.method, facts.target).trim_end(),
            otel.kind = "server",
            otel.status_code = Empty,
            mcp.method = %facts.method,
            mcp.target = %facts.target,
            user = %facts.caller.user,
            session = %facts.session,
            protocol_version = %facts.version,
            era = era,
            client = %facts.client,
            trace_id = Empty,
            outcome = Empty,
            latency_ms = Empty,
        );
        let trace_id = continue_trace(&span, facts.traceparent.as_deref());
        span.record("trace_id", trace_id.as_str());
        // The handler and the audit record read it from the facts.
        let _ = facts.trace_id.set(trace_id);
        let observed = Arc::new(Observed::default());
        parts.extensions.insert(observed.clone());
        let observing = Self {
            span,
            started,
            facts,
            observed,
        };
        (Request::from_parts(parts, body), observing)
    }

    /// The span the engine's work runs in.
    fn span(&self) -> &Span {
        &self.span
    }

    /// Records what the reply says now and watches its body: the outcome,
    /// latency and metrics are recorded when the body ends.
    fn finish(self, observer: &Observer, response: Response) -> Response {
        let Self {
            span,
            started,
            facts,
            observed,
        } = self;
        let metrics = &observer.metrics;
        // A 2025-era client names itself once per session; a 2026-07-28 client
        // on every request. Only an authenticated caller's names are labels.
        let era = ProtocolEra::label(Some(facts.era));
        if response.status().is_success() && facts.names_client() && !facts.caller.user.is_empty() {
            metrics.client(era, &facts.version, &facts.client);
        }
        if facts.session.is_empty() {
            let session = header_text(response.headers(), names::MCP_SESSION_ID);
            span.record("session", session.as_str());
        }
        let sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if sse {
            metrics.stream_opened();
        }
        let finish = Finish {
            metrics: metrics.clone(),
            span,
            started,
            facts,
            observed,
            sse,
            status: response.status().as_u16(),
        };
        response.map(|body| {
            Body::new(Watched {
                body,
                finish: Some(finish),
            })
        })
    }
}

/// Continues the caller's W3C trace when `traceparent` is valid; returns
/// the trace id the span, the logs and the audit record share.
fn continue_trace(span: &Span, traceparent: Option<&str>) -> String {
    // Most requests carry no traceparent: skip the propagator's allocations.
    if let Some(traceparent) = traceparent {
        let carrier: HashMap<String, String> =
            HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let parent = TraceContextPropagator::new().extract(&carrier);
        let remote = parent.span().span_context().trace_id();
        if parent.span().span_context().is_valid() {
            // Without the OpenTelemetry layer (no OTLP endpoint) there is no
            // parent to set; the id still reaches logs and audit.
            let _ = span.set_parent(parent);
            return remote.to_string();
        }
    }
    let own = span.context().span().span_context().trace_id();
    if own != opentelemetry::trace::TraceId::INVALID {
        own.to_string()
    } else {
        new_trace_id()
    }
}
