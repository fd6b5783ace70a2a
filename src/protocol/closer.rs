//! A call's means to end its own stream early (SEP-1699).

use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionHandle;

/// Lets a request end the SSE stream that carries its messages before its
/// result (SEP-1699), found in the request's extensions on 2025-era
/// sessions. rmcp sends a priming event with the retry delay and closes
/// the stream; the request's later messages are recorded as usual and reach
/// the client when it resumes with `Last-Event-ID`.
#[derive(Clone)]
pub struct StreamCloser {
    handle: LocalSessionHandle,
    /// rmcp's number of the request's stream within its session.
    stream: u64,
    retry: Duration,
}

impl StreamCloser {
    pub fn new(handle: LocalSessionHandle, stream: u64, retry: Duration) -> Self {
        Self {
            handle,
            stream,
            retry,
        }
    }

    /// Ends the stream; false when it was already gone.
    pub async fn close(&self) -> bool {
        let closed = self.handle.close_sse_stream(self.stream, Some(self.retry));
        closed.await.is_ok()
    }
}
