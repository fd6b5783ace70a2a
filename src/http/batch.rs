//! JSON-RPC batches, which 2025-03-26 requires servers to accept (later
//! revisions removed them). rmcp takes one message per POST, so a batch
//! in a session negotiated at 2025-03-26 is split here: each element is
//! served as a POST of its own through every step of the endpoint
//! (capacity, authentication, rate limits, the guard's scopes, caps and
//! audit room, the engine and its audit record), exactly as if the client
//! had sent it alone, and the answers are joined into one JSON array.
//! Notifications and responses get no answer; a batch of only those gets
//! 202. Anywhere else a batch is refused (400), as before.

use std::future::Future;

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, value::RawValue};

use super::{error::HttpError, names};
use crate::{body::read_capped, mcp::Gate, protocol::codes};

/// Elements a batch may hold at most (the body is bounded by
/// `server.max_body_bytes` besides).
pub(super) const MAX_ELEMENTS: usize = 100;
/// Largest answer read back from one element.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The only revision with batches.
const BATCH_VERSION: &str = "2025-03-26";

/// A batch the guard read, set aside for the endpoint to serve if its
/// session allows (carried in the refusal's extensions).
#[derive(Clone)]
pub(super) struct Deferred {
    parts: http::request::Parts,
    bytes: Bytes,
}

/// Marks an element's own request: an element that is itself an array is
/// refused, never expanded again.
#[derive(Clone, Copy)]
struct Element;

/// Whether the guard should set this body aside as a batch.
pub(super) fn is_batch(parts: &http::request::Parts, bytes: &[u8]) -> bool {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    first == Some(&b'[') && parts.extensions.get::<Element>().is_none()
}

/// The refusal a batch gets where batches are not accepted, carrying the
/// batch for [`take`].
pub(super) fn defer(parts: http::request::Parts, bytes: Bytes) -> Response {
    let error = HttpError::InvalidRequest(
        "JSON-RPC batches are accepted only in 2025-03-26 sessions; send one message per POST"
            .into(),
    );
    let mut refusal = error.into_response();
    refusal.extensions_mut().insert(Deferred { parts, bytes });
    refusal
}

/// The batch a refusal carries, if it does.
fn take(refusal: &mut Response) -> Option<Deferred> {
    refusal.extensions_mut().remove::<Deferred>()
}

/// The endpoint's outermost step (`endpoint.rs`, step 9): `serve` is the
/// rest of the endpoint; a batch the guard set aside is served here, each
/// element through it.
pub(super) async fn batches<F>(
    gate: Option<&dyn Gate>,
    request: Request,
    serve: impl Fn(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let mut response = serve(request).await;
    if response.status() != StatusCode::BAD_REQUEST {
        return response;
    }
    let Some(deferred) = take(&mut response) else {
        return response;
    };
    serve_batch(deferred, gate, serve).await
}

/// Serves `batch` when its session was negotiated at 2025-03-26, each
/// element through `serve` (the whole endpoint); else the refusal.
async fn serve_batch<F>(
    batch: Deferred,
    gate: Option<&dyn Gate>,
    serve: impl Fn(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let session = batch
        .parts
        .headers
        .get(names::MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok());
    let version = match (gate, session) {
        (Some(gate), Some(session)) => gate.session_version(session).await,
        _ => None,
    };
    if version.as_deref() != Some(BATCH_VERSION) {
        return defer(batch.parts, batch.bytes);
    }
    let elements: Vec<Box<RawValue>> = match serde_json::from_slice(&batch.bytes) {
        Ok(elements) => elements,
        Err(e) => return HttpError::Parse(e.to_string()).into_response(),
    };
    if elements.is_empty() || elements.len() > MAX_ELEMENTS {
        let message = format!("a batch holds 1 to {MAX_ELEMENTS} messages");
        return HttpError::InvalidRequest(message).into_response();
    }
    let replies = elements.iter().map(|element| {
        let request = element_request(&batch.parts, element);
        let reply = serve(request);
        async move { answers(reply.await).await }
    });
    let answers: Vec<Value> = futures::future::join_all(replies)
        .await
        .into_iter()
        .flatten()
        .collect();
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut response = Response::new(Body::from(Value::Array(answers).to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The POST of one element: the batch's headers, the element as the body.
fn element_request(parts: &http::request::Parts, element: &RawValue) -> Request {
    let mut parts = parts.clone();
    parts.extensions.insert(Element);
    let body = Bytes::copy_from_slice(element.get().as_bytes());
    parts.headers.remove(header::TRANSFER_ENCODING);
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    Request::from_parts(parts, Body::from(body))
}

/// What one element's reply answers: nothing for 202, the JSON-RPC
/// response of a JSON body or of an SSE stream (its notifications, which a
/// JSON array cannot order against the answers, are left out).
async fn answers(reply: Response) -> Option<Value> {
    if reply.status() == StatusCode::ACCEPTED {
        return None;
    }
    let is_sse = reply
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let Ok(body) = read_capped(reply.into_body(), MAX_ANSWER_BYTES).await else {
        return Some(lost());
    };
    if !is_sse {
        return Some(serde_json::from_slice(&body).unwrap_or_else(|_| lost()));
    }
    let text = String::from_utf8_lossy(&body).replace("\r\n", "\n");
    let response = text.split("\n\n").find_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let message: Value = serde_json::from_str(&data.join("\n")).ok()?;
        let is_response = message.get("method").is_none()
            && message.get("id").is_some()
            && (message.get("result").is_some() || message.get("error").is_some());
        is_response.then_some(message)
    });
    Some(response.unwrap_or_else(lost))
}

/// The answer of an element whose reply could not be read.
fn lost() -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": codes::INTERNAL_ERROR, "message": "the reply to this batch element was lost"}})
}
