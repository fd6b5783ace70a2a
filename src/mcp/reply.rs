//! What the engine adds around rmcp's reply: a long-lived stream's slot
//! (2025-era GET streams, `subscriptions/listen`), the handler's refusal for
//! lack of scope answered as 403, rmcp's plain-text errors handed on as
//! [`EngineError`]s, and the 200 clients expect when a session ends.

use std::{sync::Arc, time::Duration};

use axum::{
    http::{HeaderMap, Method, StatusCode, header, request::Parts},
    response::Response,
};
use futures::future::BoxFuture;

use super::{
    EngineError,
    refusal::{Decision, Refused, ScopeRefusal},
    streams::{StreamCaps, StreamSlot, hold},
};
use crate::{
    body::read_capped,
    protocol::is_json,
    registry::{Caller, RequestFacts},
};

/// What the engine asks of the rest of the server, so it needs no
/// knowledge of authentication or of how a challenge is written.
#[async_trait::async_trait]
pub trait Gate: Send + Sync {
    /// The `WWW-Authenticate` value of an insufficient-scope refusal.
    fn scope_challenge(&self, parts: &Parts, scopes: &[String]) -> String;
    /// Resolves when `caller`'s credential is withdrawn (a revoked token):
    /// the streams it opened end then. `None`: nothing to wait for.
    fn withdrawn(&self, caller: &Caller) -> Option<BoxFuture<'static, ()>>;
    /// The protocol version a 2025-era session negotiated, if it is known
    /// (batches are served only at 2025-03-26: `http/batch.rs`).
    async fn session_version(&self, _session_id: &str) -> Option<String> {
        None
    }
}

/// The methods whose scopes the handler checks with a 403 refusal
/// (`access.rs`): the others leave out what a caller may not use.
const SCOPED_METHODS: [&str; 4] = ["tools/call", "resources/read", "prompts/get", "skills/get"];

/// How long the reply waits at most for the handler's scope decision, which
/// it makes first thing when it handles the request.
const DECISION_WAIT: Duration = Duration::from_secs(10);

/// Largest plain-text error body read back from rmcp.
const MAX_RMCP_ERROR_BYTES: usize = 16 * 1024;

/// What shaping a request's reply needs, taken before rmcp runs.
pub(super) struct Shaping {
    /// A stream's slot, held while its body is sent, and what ends the
    /// stream when its caller's credential is withdrawn.
    slot: Option<(StreamSlot, Option<BoxFuture<'static, ()>>)>,
    /// Where the handler's refusal for lack of scope arrives.
    decision: Option<Decision>,
    delete: bool,
}

impl Shaping {
    /// Takes a stream slot for a GET stream or a listen, and for a scoped
    /// call a place for the handler's refusal in `parts`.
    pub(super) fn begin(
        gate: Option<&Arc<dyn Gate>>,
        streams: &StreamCaps,
        parts: &mut Parts,
        facts: &RequestFacts,
    ) -> Result<Self, EngineError> {
        let (method, caller) = (facts.method.as_str(), &facts.caller);
        let long_lived =
            parts.method == Method::GET || (facts.post && method == "subscriptions/listen");
        let slot = match long_lived {
            true => {
                let slot = streams
                    .acquire(&caller.user)
                    .map_err(EngineError::TooManyStreams)?;
                Some((slot, gate.and_then(|gate| gate.withdrawn(caller))))
            }
            false => None,
        };
        // Only a caller without `*` can lack a scope.
        let scoped = facts.post && SCOPED_METHODS.contains(&method) && !caller.may_do_anything();
        let decision = gate.filter(|_| scoped).map(|gate| {
            let gate = gate.clone();
            let (refusal, decision) = ScopeRefusal::new(Box::new(move |parts, scopes| {
                gate.scope_challenge(parts, scopes)
            }));
            parts.extensions.insert(Arc::new(refusal));
            decision
        });
        Ok(Self {
            slot,
            decision,
            delete: parts.method == Method::DELETE,
        })
    }

    /// rmcp's reply, shaped: a plain-text error as an [`EngineError`], a
    /// stream's slot held while it is sent, a refusal for lack of scope.
    pub(super) async fn finish(self, response: Response) -> Result<Response, EngineError> {
        let Self {
            slot,
            decision,
            delete,
        } = self;
        let mut response = plain_text_error(response).await?;
        // rmcp ends a session with 202; clients (the Python SDK among them)
        // expect the 200 the other SDKs send.
        if delete && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        if let Some((slot, withdrawn)) = slot {
            response = hold(response, slot, withdrawn);
        }
        // A reply streamed as SSE has its head before the handler decides,
        // so the decision is awaited (it resolves as allowed when the handler
        // lets the call through, or drops the request).
        let Some(decision) = decision else {
            return Ok(response);
        };
        match tokio::time::timeout(DECISION_WAIT, decision).await {
            Ok(Ok(Refused { challenge, message })) => {
                Err(EngineError::InsufficientScope { challenge, message })
            }
            _ => Ok(response),
        }
    }
}

/// rmcp answers some errors as `text/plain`: they become
/// [`EngineError::Rmcp`], so they reach the wire in the JSON-RPC shape
/// every other error has, keeping status, message and headers.
async fn plain_text_error(response: Response) -> Result<Response, EngineError> {
    let status = response.status();
    let json = is_json(response.headers().get(header::CONTENT_TYPE));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let message = match read_capped(body, MAX_RMCP_ERROR_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let mut headers = HeaderMap::new();
    for name in [header::ALLOW, header::WWW_AUTHENTICATE, header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            headers.insert(name, value.clone());
        }
    }
    Err(EngineError::Rmcp {
        status,
        message,
        headers,
    })
}
