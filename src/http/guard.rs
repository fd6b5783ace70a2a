//! Transport checks in front of the engine on the MCP endpoint, and the
//! shape of its replies: rmcp's plain-text errors as JSON-RPC bodies, an
//! engine's scope refusal as 403.
//!
//! The body is read here once, bounded in size and time, so a malformed
//! request is answered with its id and never reaches the engine. What a
//! request may do is the engine's to decide, on rmcp's typed request.

use std::{sync::Arc, time::Duration};

use axum::middleware::Next;
use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderMap, HeaderName, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Limited};

use serde_json::Value;

use super::{
    batch,
    body::{inspect, is_json, read_body},
    error::HttpError,
    limits::{StreamCaps, StreamSlot},
    names,
};
use crate::{
    protocol::{Decision, ProtocolEra, Refused, ScopeRefusal},
    registry::Caller,
};

/// What the guard asks of the rest of the server, so this HTTP module needs
/// no knowledge of sessions, scopes or credentials.
#[async_trait::async_trait]
pub trait Gate: Send + Sync {
    /// The `WWW-Authenticate` value of an insufficient-scope refusal.
    fn scope_challenge(&self, parts: &http::request::Parts, scopes: &[String]) -> String;
    /// Resolves when `caller`'s credential is withdrawn (a revoked token):
    /// the streams it opened end then. `None`: nothing to wait for.
    fn withdrawn(&self, caller: &Caller) -> Option<BoxFuture<'static, ()>>;
    /// The protocol version a 2025-era session negotiated, if it is known
    /// (batches are served only at 2025-03-26: `batch.rs`).
    async fn session_version(&self, _session_id: &str) -> Option<String> {
        None
    }
}

pub struct GuardConfig {
    pub gate: Option<Arc<dyn Gate>>,
    pub streams: StreamCaps,
    pub max_body_bytes: usize,
    pub max_json_depth: usize,
    pub body_timeout: Duration,
}

/// A request the guard let through, and what its reply needs from the guard.
pub(crate) struct Admitted {
    pub request: Request,
    pub after: After,
}

/// What `finish` needs to shape the reply of an admitted request.
pub(crate) struct After {
    /// The JSON-RPC id of a POSTed message, for error replies.
    id: Option<Value>,
    /// A stream's slot, held while its body is sent, and when its caller's
    /// credential is withdrawn (the stream ends then).
    slot: Option<(StreamSlot, Option<BoxFuture<'static, ()>>)>,
    /// Where the engine's refusal for lack of scope arrives, for the methods
    /// it decides scopes on.
    decision: Option<Decision>,
    delete: bool,
}

/// The guard's step (`stack.rs`): [`admit`], the steps below, [`finish`].
pub(crate) async fn guard(
    State(config): State<Arc<GuardConfig>>,
    request: Request,
    next: Next,
) -> Response {
    match admit(&config, request).await {
        Ok(Admitted { request, after }) => {
            let response = next.run(request).await;
            finish(after, response).await
        }
        Err(refusal) => refusal,
    }
}

/// The checks before the engine: for a GET, a stream slot; for a POST, the
/// body read once (size, time, syntax, depth) and a slot for a listen
/// stream. The request's protocol era is decided here, once, from its
/// `MCP-Protocol-Version`. `Err` is the refusal, in the JSON-RPC shape.
pub(crate) async fn admit(
    config: &GuardConfig,
    mut request: Request,
) -> Result<Admitted, Response> {
    let caller = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous);
    let era = header(request.headers(), names::MCP_PROTOCOL_VERSION)
        .and_then(|version| ProtocolEra::of(&version))
        .unwrap_or(ProtocolEra::Legacy);
    request.extensions_mut().insert(era);
    if request.method() != Method::POST {
        let slot = if request.method() == Method::GET {
            match config.streams.acquire(&caller.user) {
                Ok(slot) => Some((slot, withdrawn(config, &caller))),
                Err(reason) => {
                    return Err(
                        HttpError::TooManyRequests(Duration::from_secs(5), reason).into_response()
                    );
                }
            }
        } else {
            None
        };
        let after = After {
            id: None,
            slot,
            decision: None,
            delete: request.method() == Method::DELETE,
        };
        return Ok(Admitted { request, after });
    }
    let (parts, body) = request.into_parts();
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
    let id = envelope.id.clone();
    let method = envelope.method.as_deref().unwrap_or_default();
    // A subscription is a long-lived stream: it takes a slot for its lifetime.
    let slot = if method == "subscriptions/listen" {
        match config.streams.acquire(&caller.user) {
            Ok(slot) => Some((slot, withdrawn(config, &caller))),
            Err(reason) => {
                return Err(HttpError::TooManyRequests(Duration::from_secs(5), reason)
                    .into_response_with_id(id));
            }
        }
    } else {
        None
    };
    // Where the engine can refuse for lack of scope (only a caller without
    // `*` can lack one), its decision is awaited before the reply's head.
    let decision = (SCOPED_METHODS.contains(&method) && !caller.may_do_anything())
        .then(|| config.gate.clone())
        .flatten();
    let mut parts = parts;
    let decision = decision.map(|gate| {
        let (refusal, decision) = ScopeRefusal::new(Box::new(move |parts, scopes| {
            gate.scope_challenge(parts, scopes)
        }));
        parts.extensions.insert(Arc::new(refusal));
        decision
    });
    parts.extensions.insert(Arc::new(envelope));
    let after = After {
        id,
        slot,
        decision,
        delete: false,
    };
    Ok(Admitted {
        request: Request::from_parts(parts, Body::from(bytes)),
        after,
    })
}

/// The methods whose scopes the engine checks with a 403 refusal
/// (`mcp/access.rs`): the others leave out what a caller may not use.
const SCOPED_METHODS: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

/// How long the reply waits at most for the engine's scope decision, which
/// it makes first thing when it handles the request.
const DECISION_WAIT: Duration = Duration::from_secs(10);

/// The engine's reply, shaped: plain-text errors in the JSON-RPC shape, a
/// stream's slot held while it is sent, a refusal for lack of scope as 403.
pub(crate) async fn finish(after: After, response: Response) -> Response {
    let After {
        id,
        slot,
        decision,
        delete,
    } = after;
    let mut response = normalize(response, id.clone()).await;
    // rmcp ends a session with 202; clients (the Python SDK among them)
    // expect the 200 the other SDKs send.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    if let Some((slot, withdrawn)) = slot {
        response = hold(response, slot, withdrawn);
    }
    // The engine refused for lack of scope: answered as the authorization
    // spec asks, 403 with the challenge naming the scopes needed. A reply
    // streamed as SSE has its head before the engine decides, so the
    // decision is awaited (it resolves as allowed when the engine lets the
    // call through, or drops the request).
    let Some(decision) = decision else {
        return response;
    };
    match tokio::time::timeout(DECISION_WAIT, decision).await {
        Ok(Ok(Refused { challenge, message })) => {
            HttpError::Forbidden { challenge, message }.into_response_with_id(id)
        }
        _ => response,
    }
}

/// What ends the streams `caller` opens, if anything can.
fn withdrawn(config: &GuardConfig, caller: &Caller) -> Option<BoxFuture<'static, ()>> {
    config.gate.as_ref()?.withdrawn(caller)
}

/// Keeps `slot` taken for as long as the response body is being sent, and
/// ends the body when `withdrawn` resolves.
fn hold(
    response: Response,
    slot: StreamSlot,
    withdrawn: Option<BoxFuture<'static, ()>>,
) -> Response {
    use futures::StreamExt;
    let (parts, body) = response.into_parts();
    let withdrawn = async move {
        match withdrawn {
            Some(withdrawn) => withdrawn.await,
            None => std::future::pending().await,
        }
    };
    let stream = body
        .into_data_stream()
        .map(move |chunk| {
            let _held = &slot;
            chunk
        })
        .take_until(withdrawn);
    Response::from_parts(parts, Body::from_stream(stream))
}

fn header(headers: &HeaderMap, name: HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Largest plain-text error body read back from the engine.
const MAX_ENGINE_ERROR_BYTES: usize = 16 * 1024;

/// rmcp answers some errors as `text/plain`; give them the JSON-RPC shape
/// every other error has, keeping status, message and headers.
async fn normalize(response: Response, id: Option<Value>) -> Response {
    let status = response.status();
    let is_json_body = is_json(response.headers().get(header::CONTENT_TYPE));
    if !(status.is_client_error() || status.is_server_error()) || is_json_body {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match Limited::new(body, MAX_ENGINE_ERROR_BYTES).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes())
            .trim()
            .to_owned(),
        Err(_) => String::new(),
    };
    let error = match status {
        StatusCode::NOT_FOUND => HttpError::SessionNotFound,
        StatusCode::METHOD_NOT_ALLOWED => HttpError::MethodNotAllowed,
        _ if text.is_empty() => HttpError::Engine(status, status.to_string()),
        _ => HttpError::Engine(status, text),
    };
    let mut normalized = error.into_response_with_id(id);
    for name in [header::ALLOW, header::WWW_AUTHENTICATE, header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            normalized.headers_mut().insert(name, value.clone());
        }
    }
    normalized
}
