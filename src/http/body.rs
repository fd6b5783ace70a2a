//! A POST body as the guard reads it: bounded in size and time, then
//! checked once for content type, syntax and depth before the engine sees it.

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{self, HeaderMap, header},
    response::Response,
};
use serde::Deserialize;
use serde_json::Value;

use super::{GuardConfig, error::HttpError};
use crate::{
    body::{CappedError, read_capped},
    protocol::{Envelope, is_json},
};

pub(super) async fn read_body(body: Body, config: &GuardConfig) -> Result<Bytes, HttpError> {
    let read = read_capped(body, config.max_body_bytes);
    match tokio::time::timeout(config.body_timeout, read).await {
        Err(_) => Err(HttpError::BodyTimeout),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(CappedError::TooLarge(max))) => Err(HttpError::PayloadTooLarge(max)),
        Ok(Err(e)) => Err(HttpError::InvalidRequest(e.to_string())),
    }
}

/// The id of a POSTed message the caller step refuses for want of the
/// database (its reply carries it): read up to a small cap, briefly.
pub(super) async fn request_id(body: Body) -> Option<Value> {
    const PEEK_MAX: usize = 1 << 20;
    const PEEK_TIME: std::time::Duration = std::time::Duration::from_secs(1);
    let read = tokio::time::timeout(PEEK_TIME, read_capped(body, PEEK_MAX));
    let bytes = read.await.ok()?.ok()?;
    serde_json::from_slice::<Envelope>(&bytes).ok()?.id
}

/// Checks a POST body and returns its id and method. On error, returns the
/// id too when it could be read, so the error reply can carry it.
pub(crate) fn inspect(
    bytes: &[u8],
    headers: &HeaderMap,
    max_depth: usize,
) -> Result<Envelope, (HttpError, Option<Value>)> {
    if json_depth(bytes) > max_depth {
        return Err((HttpError::TooDeep(max_depth), None));
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        return Err((
            HttpError::InvalidRequest(
                "JSON-RPC batches are not supported; send one message per POST".into(),
            ),
            None,
        ));
    }
    // JSON is UTF-8 (RFC 8259), and serde skips the bytes of the fields it
    // ignores without checking them: check the whole body once (found by the
    // `envelope` fuzz target).
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err((HttpError::Parse("the body is not UTF-8".into()), None));
    };
    let envelope: Envelope = serde_json::from_str(text).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            return (HttpError::Parse(e.to_string()), None);
        }
        // Not a message's shape (a method that is no string): the reply
        // still carries the id when there is one.
        #[derive(Deserialize)]
        struct Id {
            id: Option<Value>,
        }
        let id = serde_json::from_str::<Id>(text).ok().and_then(|m| m.id);
        let message = "the body must be a JSON-RPC message object".into();
        (HttpError::InvalidRequest(message), id)
    })?;
    if !is_json(headers.get(header::CONTENT_TYPE)) {
        return Err((HttpError::UnsupportedMediaType, envelope.id));
    }
    Ok(envelope)
}

/// Deepest nesting of arrays and objects, ignoring brackets inside strings.
/// A linear scan: serde's own recursion limit would answer a generic error.
/// Most of a request's bytes are inside strings, which are skipped to their
/// next quote or backslash at once (memchr) rather than byte by byte.
pub(crate) fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut at) = (0usize, 0usize, 0usize);
    while let Some(&b) = bytes.get(at) {
        at += 1;
        match b {
            b'"' => loop {
                let Some(found) = memchr::memchr2(b'"', b'\\', &bytes[at..]) else {
                    return max; // unterminated: serde reports it
                };
                let escape = bytes[at + found] == b'\\';
                // An escape also skips the byte it escapes.
                at = (at + found + 1 + usize::from(escape)).min(bytes.len());
                if !escape {
                    break;
                }
            },
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Whether a refusal leaves the request's body unread on an HTTP/1.x
/// connection (decided before any await: a `Body` is not `Sync`).
pub(super) fn unread(request: &Request) -> bool {
    http_body::Body::size_hint(request.body()).exact() != Some(0)
        && request.version() <= http::Version::HTTP_11
}

/// hyper gives up on keep-alive when a refused request's body is left
/// unread, sometimes after the reply went out without saying so, and a client
/// reusing the connection then sees it drop. Saying `Connection: close` up
/// front makes the client open a new one.
pub(super) fn close(mut refusal: Response) -> Response {
    refusal.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    refusal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(json_depth(br#"{"a":"[[[[{{{"}"#), 1);
        assert_eq!(json_depth(br#"{"a":[{"b":[1]}]}"#), 4);
        assert_eq!(json_depth(br#"{"a":"\"[["}"#), 1);
        assert_eq!(json_depth(br#"{"a\\":[["\\\"]"]]}"#), 3);
        assert_eq!(json_depth(br#"[[["#), 3);
        assert_eq!(json_depth(br#"["\"#), 1);
        assert_eq!(json_depth(br#"["[[[[\"#), 1);
        assert_eq!(json_depth(b""), 0);
    }

    #[test]
    fn content_type_accepts_parameters() {
        let v = axum::http::HeaderValue::from_static("application/json; charset=utf-8");
        assert!(is_json(Some(&v)));
        let v = axum::http::HeaderValue::from_static("text/plain");
        assert!(!is_json(Some(&v)));
    }
}
