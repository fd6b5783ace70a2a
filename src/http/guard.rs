//! Input checks in front of rmcp on the MCP endpoint, and the normalisation
//! of rmcp's plain-text error replies into `HttpError`'s JSON-RPC bodies.
//!
//! The body is read here once, bounded in size and time, so a malformed
//! request is answered with its id and never reaches the engine.

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
    collapse,
    error::HttpError,
    limits::{StreamCaps, StreamSlot},
    names,
};
use crate::{
    protocol::{Envelope, Refused, ScopeRefusal},
    registry::Caller,
};

/// The decisions the guard asks of the rest of the server, so this HTTP
/// module needs no knowledge of sessions, scopes or the audit trail.
#[async_trait::async_trait]
pub trait Gate: Send + Sync {
    /// Whether `caller` may start a new 2025-era session (caps); `Err` is the reason.
    async fn admit(&self, caller: &Caller) -> Result<(), String>;
    /// Who owns a 2025-era session, if it is known.
    async fn session_owner(&self, session_id: &str) -> Option<Arc<str>>;
    /// The `WWW-Authenticate` value of an insufficient-scope refusal.
    fn scope_challenge(&self, parts: &http::request::Parts, scopes: &[String]) -> String;
    /// Resolves when `caller`'s credential is withdrawn (a revoked token):
    /// the streams it opened end then. `None`: nothing to wait for.
    fn withdrawn(&self, caller: &Caller) -> Option<BoxFuture<'static, ()>>;
    /// Records a refused call.
    async fn audit_refusal(&self, caller: &Caller, refusal: Refusal<'_>);
    /// SSE events whose reply was sent as one JSON body instead: nobody can
    /// resume from them, so they need not be kept.
    fn discard_events(&self, event_ids: Vec<String>);
    /// The protocol version a 2025-era session negotiated, if it is known
    /// (batches are served only at 2025-03-26: `batch.rs`).
    async fn session_version(&self, _session_id: &str) -> Option<String> {
        None
    }
}

/// What was refused, for the audit trail.
pub struct Refusal<'a> {
    pub parts: &'a http::request::Parts,
    pub method: &'a str,
    pub target: &'a str,
    pub arguments: &'a Value,
    pub reason: String,
}

pub struct GuardConfig {
    pub gate: Option<Arc<dyn Gate>>,
    pub streams: StreamCaps,
    pub max_body_bytes: usize,
    pub max_json_depth: usize,
    pub body_timeout: Duration,
    /// Collapse single-message SSE replies into one JSON body.
    pub json_responses: bool,
    /// How long to wait for the first message before committing to SSE.
    pub collapse_wait: Duration,
}

/// A request the guard let through, and what its reply needs from the guard.
pub struct Admitted {
    pub request: Request,
    pub after: After,
}

/// What `finish` needs to shape the reply of an admitted request.
pub struct After {
    /// The JSON-RPC id of a POSTed message, for error replies.
    id: Option<Value>,
    /// A stream's slot, held while its body is sent, and when its caller's
    /// credential is withdrawn (the stream ends then).
    slot: Option<(StreamSlot, Option<BoxFuture<'static, ()>>)>,
    /// Where the engine leaves a refusal for lack of scope.
    refusal: Option<Arc<ScopeRefusal>>,
    post: bool,
    delete: bool,
    /// A reply the client could resume (collapse.rs waits less for it).
    resumable: bool,
}

/// The guard's step (`stack.rs`): [`admit`], the steps below, [`finish`].
pub async fn guard(
    State(config): State<Arc<GuardConfig>>,
    request: Request,
    next: Next,
) -> Response {
    match admit(&config, request).await {
        Ok(Admitted { request, after }) => {
            let response = next.run(request).await;
            finish(&config, after, response).await
        }
        Err(refusal) => refusal,
    }
}

/// The checks before the engine: session ownership for every method; for a
/// POST, the body read once (size, time, syntax, depth), caps, stream slots
/// and per-tool quotas. Scopes are the engine's to decide, on the typed
/// request it acts on (`ScopeRefusal`). `Err` is the refusal, in the JSON-RPC
/// shape.
pub async fn admit(config: &GuardConfig, request: Request) -> Result<Admitted, Response> {
    let caller = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous);
    if let (Some(gate), Some(session)) = (
        &config.gate,
        header(request.headers(), names::MCP_SESSION_ID),
    ) && let Some(owner) = gate.session_owner(&session).await
        && *owner != *caller.user
    {
        // Another member's session: as far as this caller knows, it does not exist.
        let (parts, _) = request.into_parts();
        let refusal = Refusal {
            parts: &parts,
            method: "session",
            target: "",
            arguments: &Value::Null,
            reason: "denied: another member's session".into(),
        };
        gate.audit_refusal(&caller, refusal).await;
        return Err(HttpError::SessionNotFound.into_response());
    }
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
            refusal: None,
            post: false,
            delete: request.method() == Method::DELETE,
            resumable: false,
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
    if let Some(gate) = &config.gate
        && let Err(refusal) = check(gate.as_ref(), &caller, &parts, &envelope).await
    {
        return Err(refusal.into_response_with_id(id));
    }
    // A subscription is a long-lived stream: it takes a slot for its lifetime.
    let slot = if envelope.method.as_deref() == Some("subscriptions/listen") {
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
    let mut parts = parts;
    parts.extensions.insert(Arc::new(envelope));
    // Only a caller without `*` can lack a scope.
    let refusal = (!caller.may_do_anything())
        .then(|| config.gate.clone())
        .flatten()
        .map(|gate| {
            let refusal = Arc::new(ScopeRefusal::new(Box::new(move |parts, scopes| {
                gate.scope_challenge(parts, scopes)
            })));
            parts.extensions.insert(refusal.clone());
            refusal
        });
    let after = After {
        id,
        slot,
        refusal,
        post: true,
        delete: false,
        resumable: collapse::resumable(&parts.headers),
    };
    Ok(Admitted {
        request: Request::from_parts(parts, Body::from(bytes)),
        after,
    })
}

/// The engine's reply, shaped: plain-text errors in the JSON-RPC shape, a
/// stream's slot held while it is sent, single-message SSE replies to a POST
/// as JSON.
pub async fn finish(config: &GuardConfig, after: After, response: Response) -> Response {
    let After {
        id,
        slot,
        refusal,
        post,
        delete,
        resumable,
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
    if post && config.json_responses {
        let gate = config.gate.clone();
        let wait = collapse::wait(config.collapse_wait, resumable);
        response = collapse::collapse(response, wait, move |ids| {
            if let Some(gate) = gate {
                gate.discard_events(ids);
            }
        })
        .await;
    }
    // The engine refused for lack of scope (its reply is known by now, unless
    // it streams): answered as the authorization spec asks, 403 with the
    // challenge naming the scopes needed.
    match refusal.and_then(|refusal| refusal.take()) {
        Some(Refused { challenge, message }) => {
            HttpError::Forbidden { challenge, message }.into_response_with_id(id)
        }
        None => response,
    }
}

/// Session caps, before a new session reaches the engine. Scopes, per-tool
/// quotas and audit room are the engine's, on the typed request.
async fn check(
    gate: &dyn Gate,
    caller: &Caller,
    parts: &http::request::Parts,
    envelope: &Envelope,
) -> Result<(), HttpError> {
    let Some(method) = envelope.method.as_deref() else {
        return Ok(());
    };
    if method == "initialize" && !parts.headers.contains_key(names::MCP_SESSION_ID) {
        gate.admit(caller).await.map_err(HttpError::Unavailable)?;
    }
    Ok(())
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
