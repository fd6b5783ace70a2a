//! Answers a POST with one JSON body when the engine's SSE reply turns out to
//! hold nothing but the final response (no progress, logs or requests first).
//!
//! rmcp streams every legacy-session reply as SSE. Most calls emit a single
//! message, and a plain JSON body is cheaper for clients and proxies, so the
//! first events are peeked: a response becomes JSON, anything else is passed
//! through as SSE with the peeked bytes replayed. The peek is bounded in
//! bytes and in time, so a slow or large reply simply stays a stream.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use futures::StreamExt;
use serde_json::Value;

/// Largest reply collapsed into JSON; bigger ones stay SSE.
const MAX_PEEK_BYTES: usize = 8 * 1024 * 1024;

/// `discard` receives the SSE event ids the collapsed reply carried: the
/// client never sees them, so the event store may forget them.
pub async fn collapse(
    response: Response,
    wait: Duration,
    discard: impl FnOnce(Vec<String>),
) -> Response {
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if response.status() != StatusCode::OK || !is_sse {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut peeked: Vec<Bytes> = Vec::new();
    let mut buffer: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;

    let decision = loop {
        let next = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => break None,
            Ok(next) => next,
        };
        let Some(Ok(chunk)) = next else {
            break None;
        };
        buffer.extend_from_slice(&chunk);
        peeked.push(chunk);
        if buffer.len() > MAX_PEEK_BYTES {
            break None;
        }
        match first_message(&buffer) {
            Scan::NeedMore => continue,
            Scan::Stream => break None,
            Scan::Final(json, ids) => break Some((json, ids)),
        }
    };

    match decision {
        Some((json, ids)) => {
            discard(ids);
            let mut response = Response::from_parts(parts, Body::from(json));
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.remove(header::CACHE_CONTROL);
            headers.remove("x-accel-buffering");
            response
        }
        None => {
            let replay = futures::stream::iter(peeked.into_iter().map(Ok::<_, axum::Error>));
            Response::from_parts(parts, Body::from_stream(replay.chain(stream)))
        }
    }
}

enum Scan {
    /// No complete event with data yet.
    NeedMore,
    /// The first message is a notification or request: keep streaming.
    Stream,
    /// The first message is the final response; here is its JSON, and the
    /// ids of the events read up to it.
    Final(String, Vec<String>),
}

/// Looks at complete SSE events in `buffer`, skipping comments (keep-alive)
/// and priming events with empty data.
fn first_message(buffer: &[u8]) -> Scan {
    let Ok(text) = std::str::from_utf8(buffer) else {
        // A multi-byte character may be split across chunks; wait for more.
        return Scan::NeedMore;
    };
    let text = text.replace("\r\n", "\n");
    let mut rest = text.as_str();
    let mut ids = Vec::new();
    while let Some(end) = rest.find("\n\n") {
        let event = &rest[..end];
        rest = &rest[end + 2..];
        ids.extend(
            event
                .lines()
                .filter_map(|line| line.strip_prefix("id:"))
                .map(|id| id.trim().to_owned()),
        );
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if data.trim().is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&data) else {
            return Scan::Stream;
        };
        let is_response = message.get("method").is_none()
            && message.get("id").is_some()
            && (message.get("result").is_some() || message.get("error").is_some());
        return if is_response {
            Scan::Final(data, ids)
        } else {
            Scan::Stream
        };
    }
    Scan::NeedMore
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_response_after_priming_collapses() {
        let sse = b"id: 0\nretry: 3000\ndata:\n\n: keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert!(
            matches!(first_message(sse), Scan::Final(json, ids) if json.contains("\"id\":1") && ids == ["0"])
        );
    }

    #[test]
    fn a_notification_first_keeps_the_stream() {
        let sse =
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        assert!(matches!(first_message(sse), Scan::Stream));
    }

    #[test]
    fn an_incomplete_event_waits() {
        assert!(matches!(
            first_message(b"data: {\"jsonrpc\""),
            Scan::NeedMore
        ));
    }
}
