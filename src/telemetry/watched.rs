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

use super::{
    Metrics,
    observe::{Facts, Observed, REQUEST_TARGET},
};

/// Records the outcome once, when the reply body ends or is dropped.
pub(super) struct Finish {
    pub(super) metrics: Metrics,
    pub(super) span: Span,
    pub(super) started: Instant,
    pub(super) facts: Facts,
    pub(super) observed: Arc<Observed>,
    pub(super) sse: bool,
    pub(super) status: u16,
    pub(super) saw_error: bool,
}

impl Finish {
    fn done(self) {
        // Set by the handler once a call reached a declared tool, resource
        // or prompt; never for a name it did not know.
        let reached = self.observed.get();
        let declared = reached.is_some();
        let outcome = reached.unwrap_or_else(|| {
            if self.status >= 400 {
                format!("http_{}", self.status)
            } else if self.saw_error {
                "error".to_owned()
            } else {
                "ok".to_owned()
            }
        });
        let elapsed = self.started.elapsed();
        let span = &self.span;
        span.record("outcome", outcome.as_str());
        span.record("latency_ms", elapsed.as_secs_f64() * 1000.0);
        if outcome.starts_with("error") || outcome.starts_with("http_") {
            span.record("otel.status_code", "ERROR");
        }
        span.in_scope(|| tracing::info!(target: REQUEST_TARGET, "mcp request"));
        let facts = &self.facts;
        let metrics = &self.metrics;
        let seconds = facts.post.then_some(elapsed.as_secs_f64());
        metrics.request(&facts.method, facts.era, &outcome, seconds);
        if facts.method == "tools/call" {
            let tool = if declared {
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

/// A reply body, watched for JSON-RPC errors and for its end.
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
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(finish)) = (frame.data_ref(), self.finish.as_mut())
                    && carries_error(data)
                {
                    finish.saw_error = true;
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                if let Some(finish) = self.finish.take() {
                    finish.done();
                }
            }
            Poll::Pending => {}
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

/// Whether a reply chunk carries a JSON-RPC error object.
fn carries_error(data: &Bytes) -> bool {
    memchr::memmem::find(data, b"\"error\":{").is_some()
}
