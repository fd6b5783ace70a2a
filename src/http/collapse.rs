//! Answers a POST with one JSON body when the engine's SSE reply turns out to
//! hold nothing but the final response (no progress, logs or requests first).
//!
//! rmcp streams every legacy-session reply as SSE. Most calls emit a single
//! message, and a plain JSON body is cheaper for clients and proxies, so the
//! first events are peeked: a response becomes JSON, anything else is passed
//! through as SSE with the peeked bytes replayed. The peek is bounded in
//! bytes and in time, so a slow or large reply simply stays a stream.
//!
//! On a 2025-11-25 session the time bound is short (`RESUMABLE_WAIT`): a
//! slow call's stream then reaches the client with its priming event (an
//! event id) while the call runs, so a client whose connection drops can
//! resume with `Last-Event-ID` and still get the result (SEP-1699). Held
//! back here, the id would be lost with the connection.

use std::{ops::Range, time::Duration};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use futures::StreamExt;
use serde::{Deserialize, Deserializer, de::IgnoredAny};

/// Largest reply collapsed into JSON; bigger ones stay SSE.
const MAX_PEEK_BYTES: usize = 8 * 1024 * 1024;

/// How long a resumable reply is held back at most before it is streamed.
const RESUMABLE_WAIT: Duration = Duration::from_secs(1);

/// Whether a POST's reply could be resumed: a request of a 2025-11-25
/// session (the revision whose clients resume a stream the server ended).
pub fn resumable(headers: &HeaderMap) -> bool {
    let version = headers.get(super::names::MCP_PROTOCOL_VERSION);
    headers.contains_key(super::names::MCP_SESSION_ID)
        && version.is_some_and(|v| v.as_bytes() == b"2025-11-25")
}

/// How long to peek at a reply before committing to SSE.
pub fn wait(configured: Duration, resumable: bool) -> Duration {
    if resumable {
        configured.min(RESUMABLE_WAIT)
    } else {
        configured
    }
}

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
    // All peeked bytes in one piece, kept only once a reply spans chunks:
    // most arrive whole, and are scanned and answered from the chunk itself.
    let mut joined: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;

    let decision = loop {
        let next = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => break None,
            Ok(next) => next,
        };
        let Some(Ok(chunk)) = next else {
            break None;
        };
        peeked.push(chunk);
        let scanned: &[u8] = match peeked.as_slice() {
            [only] => only,
            [first, .., last] => {
                if joined.is_empty() {
                    joined.extend_from_slice(first);
                }
                joined.extend_from_slice(last);
                &joined
            }
            [] => unreachable!("a chunk was just pushed"),
        };
        if scanned.len() > MAX_PEEK_BYTES {
            break None;
        }
        match first_message(scanned) {
            Scan::NeedMore => continue,
            Scan::Stream => break None,
            Scan::Final(data, ids) => {
                let json = match data {
                    Data::At(range) if peeked.len() == 1 => peeked[0].slice(range),
                    Data::At(range) => Bytes::copy_from_slice(&joined[range]),
                    Data::Joined(text) => Bytes::from(text),
                };
                break Some((json, ids));
            }
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
    Final(Data, Vec<String>),
}

/// Where a response's JSON is.
enum Data {
    /// These bytes of the scanned buffer (one `data:` line, the usual case).
    At(Range<usize>),
    /// Several `data:` lines (or CRLF line ends), joined.
    Joined(String),
}

/// What a message's top-level keys say about it; nothing else is kept (the
/// JSON is only checked, never built into a tree).
#[derive(Deserialize)]
struct Shape {
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    id: bool,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

/// True for any value, `null` included (a null id is still an id).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// Looks at complete SSE events in `buffer`, skipping comments (keep-alive)
/// and priming events with empty data.
fn first_message(buffer: &[u8]) -> Scan {
    let Ok(text) = std::str::from_utf8(buffer) else {
        // A multi-byte character may be split across chunks; wait for more.
        return Scan::NeedMore;
    };
    if !text.contains('\r') {
        return scan(text);
    }
    // Rare (rmcp writes LF): scanned in a normalised copy.
    let normal = text.replace("\r\n", "\n");
    match scan(&normal) {
        Scan::Final(Data::At(range), ids) => {
            Scan::Final(Data::Joined(normal[range].to_owned()), ids)
        }
        other => other,
    }
}

/// One pass over the lines (an event ends at an empty line); a line not
/// yet ended means the rest has not arrived.
fn scan(text: &str) -> Scan {
    let mut ids = Vec::new();
    let mut data: Option<Data> = None;
    for line in text.split_inclusive('\n') {
        let Some(line) = line.strip_suffix('\n') else {
            break;
        };
        if let Some(id) = line.strip_prefix("id:") {
            ids.push(id.trim().to_owned());
        } else if let Some(more) = line.strip_prefix("data:") {
            let more = more.strip_prefix(' ').unwrap_or(more);
            data = Some(match data {
                None => Data::At(offset(text, more)),
                Some(Data::At(range)) => Data::Joined([&text[range], more].join("\n")),
                Some(Data::Joined(mut joined)) => {
                    joined.push('\n');
                    joined.push_str(more);
                    Data::Joined(joined)
                }
            });
        } else if line.is_empty()
            && let Some(data) = data.take()
        {
            let json = match &data {
                Data::At(range) => &text[range.clone()],
                Data::Joined(joined) => joined.as_str(),
            };
            if json.trim().is_empty() {
                continue; // a priming event
            }
            let Ok(shape) = serde_json::from_str::<Shape>(json) else {
                return Scan::Stream;
            };
            let is_response = !shape.method && shape.id && (shape.result || shape.error);
            return if is_response {
                Scan::Final(data, ids)
            } else {
                Scan::Stream
            };
        }
    }
    Scan::NeedMore
}

/// The byte range of `part`, a slice of `whole`, within it.
fn offset(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The response JSON of a scan that found one.
    fn final_json(sse: &[u8]) -> Option<(String, Vec<String>)> {
        let Scan::Final(data, ids) = first_message(sse) else {
            return None;
        };
        let json = match data {
            Data::At(range) => std::str::from_utf8(&sse[range]).unwrap().to_owned(),
            Data::Joined(text) => text,
        };
        Some((json, ids))
    }

    #[test]
    fn a_lone_response_after_priming_collapses() {
        let sse = b"id: 0\nretry: 3000\ndata:\n\n: keep-alive\n\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let (json, ids) = final_json(sse).expect("a response");
        assert_eq!(json, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(ids, ["0", "1"]);
    }

    #[test]
    fn crlf_and_multi_line_data_collapse_too() {
        let sse = b"id: 7\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\r\n\r\n";
        let (json, ids) = final_json(sse).expect("an error response, null id included");
        assert_eq!(
            json,
            "{\"jsonrpc\":\"2.0\",\n\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}"
        );
        assert_eq!(ids, ["7"]);
    }

    #[test]
    fn a_notification_or_request_first_keeps_the_stream() {
        let sse =
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        assert!(matches!(first_message(sse), Scan::Stream));
        let request =
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\"}\n\n";
        assert!(matches!(first_message(request), Scan::Stream));
        assert!(matches!(first_message(b"data: not json\n\n"), Scan::Stream));
    }

    #[test]
    fn an_incomplete_event_waits() {
        assert!(matches!(
            first_message(b"data: {\"jsonrpc\""),
            Scan::NeedMore
        ));
    }
}
