//! A reply body watched to its end: the request's outcome, latency and
//! metrics are recorded when the last frame is sent or the body is dropped.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use axum::body::{Body, Bytes};
use http_body::Frame;
use tracing::Span;

use crate::{
    registry::RequestFacts,
    telemetry::{Metrics, Observed, Outcome, REQUEST_TARGET},
};

/// Records the outcome once, when the reply body ends or is dropped.
pub(super) struct Finish {
    pub(super) metrics: Metrics,
    pub(super) span: Span,
    pub(super) started: Instant,
    pub(super) facts: Arc<RequestFacts>,
    pub(super) observed: Arc<Observed>,
    pub(super) sse: bool,
    pub(super) status: u16,
}

impl Finish {
    fn done(self) {
        // The engine records every error and every call's outcome; a request
        // it recorded nothing for succeeded, unless the reply's status says
        // it was refused on the way.
        let recorded = self.observed.get();
        let outcome = match recorded {
            Some(outcome) => outcome.label(),
            None if self.status >= 400 => format!("http_{}", self.status).into(),
            None => Outcome::Ok.label(),
        };
        let failed = recorded.is_some_and(Outcome::is_error) || self.status >= 400;
        let elapsed = self.started.elapsed();
        let span = &self.span;
        span.record("outcome", &*outcome);
        span.record("latency_ms", elapsed.as_secs_f64() * 1000.0);
        if failed {
            span.record("otel.status_code", "ERROR");
        }
        span.in_scope(|| tracing::info!(target: REQUEST_TARGET, "mcp request"));
        let facts = &self.facts;
        let metrics = &self.metrics;
        let seconds = facts.post.then_some(elapsed.as_secs_f64());
        let era = crate::protocol::ProtocolEra::label(Some(facts.era));
        metrics.request(&facts.method, era, &outcome, seconds);
        if facts.calls_tool() {
            let tool = if self.observed.declared() {
                facts.target.as_str()
            } else {
                "other"
            };
            metrics.tool_call(tool, &outcome);
        }
        if self.sse {
            metrics.stream_closed();
        }
    }
}

/// A reply body, watched for its end.
pub(super) struct Watched {
    pub(super) body: Body,
    pub(super) finish: Option<Finish>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None | Some(Err(_))) = polled
            && let Some(finish) = self.finish.take()
        {
            finish.done();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            finish.done();
        }
    }
}
