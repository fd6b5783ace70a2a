//! Transport checks in front of the engine on the MCP endpoint: the body
//! read once, bounded in size and time, so a malformed request is answered
//! with its id and never reaches the engine, the protocol era decided once
//! from `MCP-Protocol-Version`, and a POSTed message's deadline set from
//! when it arrived. What a request may do, and the shape of rmcp's replies,
//! are the engine's (`mcp/reply.rs`).

use std::{future::Future, sync::Arc, time::Instant};

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderMap, HeaderName, Method},
    response::{IntoResponse, Response},
};

use super::{
    GuardConfig, batch,
    body::{inspect, read_body},
    names,
};
use crate::{
    protocol::{Envelope, ProtocolEra},
    registry::{Caller, RequestFacts},
};

/// The guard's step (`endpoint.rs`, step 12): [`admit`], then `next`.
pub(super) async fn guard<F>(
    config: &GuardConfig,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    match admit(config, request).await {
        Ok(request) => next(request).await,
        Err(refusal) => refusal,
    }
}

/// The checks before the engine: for a POST, the body read once (size,
/// time, syntax, depth), a batch set aside for `batch.rs`. Then the
/// request's facts, made once: the caller the authentication step left,
/// the protocol era decided from `MCP-Protocol-Version`, what the message
/// says it is, its deadline. `Err` is the refusal, in the JSON-RPC shape.
pub(crate) async fn admit(config: &GuardConfig, request: Request) -> Result<Request, Response> {
    // Before the body: a slow upload spends the request's time too.
    let received = Instant::now();
    let era = header(request.headers(), names::MCP_PROTOCOL_VERSION)
        .and_then(|version| ProtocolEra::of(&version))
        .unwrap_or(ProtocolEra::Legacy);
    let (mut parts, body) = request.into_parts();
    if parts.method != Method::POST {
        let facts = facts(&mut parts, &Envelope::default(), era);
        parts.extensions.insert(Arc::new(facts));
        return Ok(Request::from_parts(parts, body));
    }
    let bytes = read_body(body, config)
        .await
        .map_err(IntoResponse::into_response)?;
    if batch::is_batch(&parts, &bytes) {
        // Served element by element by the endpoint, if its session allows.
        return Err(batch::defer(parts, bytes));
    }
    let envelope = match inspect(&bytes, &parts.headers, config.max_json_depth) {
        Ok(envelope) => envelope,
        Err((error, id)) => return Err(error.into_response_with_id(id)),
    };
    let facts = facts(&mut parts, &envelope, era).with_deadline(received, config.answer_within);
    parts.extensions.insert(Arc::new(facts));
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The request's facts; the caller moves into them from the extensions.
fn facts(parts: &mut http::request::Parts, message: &Envelope, era: ProtocolEra) -> RequestFacts {
    let caller = parts
        .extensions
        .remove::<Caller>()
        .unwrap_or_else(Caller::anonymous);
    RequestFacts::new(parts, message, caller, era)
}

fn header(headers: &HeaderMap, name: HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
