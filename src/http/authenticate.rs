//! The authentication step of the MCP endpoint (`stack.rs`): resolves the
//! `Caller` or answers 401.

use std::sync::Arc;

use http::request::Parts;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::error::HttpError;
use crate::{
    audit::record_id,
    auth::{AuthError, AuthState, challenge},
    protocol::{header_text, names},
    store::AuditRecord,
};

/// The authentication step (`http/stack.rs`): resolves the `Caller` into the
/// request's extensions, or answers 401 (503 when the token store cannot be
/// read).
pub(super) async fn authenticate(
    State(state): State<Arc<AuthState>>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    match state.authenticator.authenticate(&parts).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => {
            // hyper gives up on keep-alive when a refused request's body is
            // left unread, sometimes after the reply went out without saying
            // so, and a client reusing the connection then sees it drop. Saying
            // `Connection: close` up front makes the client open a new one.
            let unread = http_body::Body::size_hint(&body).exact() != Some(0)
                && parts.version <= http::Version::HTTP_11;
            let mut response = refuse(&state, parts, error).await;
            if unread {
                response.headers_mut().insert(
                    http::header::CONNECTION,
                    http::HeaderValue::from_static("close"),
                );
            }
            response
        }
    }
}

async fn refuse(state: &AuthState, parts: Parts, error: AuthError) -> Response {
    let resource = state.authenticator.resource(&parts);
    if !matches!(error, AuthError::Missing) {
        // A missing token is the normal first step of discovery; the
        // rest are refusals worth keeping.
        let now = (state.now_ms)();
        state
            .auditor
            .record(AuditRecord {
                id: record_id(now),
                at_ms: now,
                user: String::new(),
                token_id: String::new(),
                issuer: String::new(),
                subject: String::new(),
                session_id: header_text(&parts.headers, names::MCP_SESSION_ID),
                protocol_version: header_text(&parts.headers, names::MCP_PROTOCOL_VERSION),
                method: header_text(&parts.headers, names::MCP_METHOD),
                target: header_text(&parts.headers, names::MCP_NAME),
                args_digest: String::new(),
                outcome: format!("unauthenticated: {error}"),
                latency_ms: 0,
                trace_id: String::new(),
                upstream: String::new(),
                credential: String::new(),
                address: parts
                    .extensions
                    .get::<crate::protocol::ClientInfo>()
                    .map(|client| client.ip.to_string())
                    .unwrap_or_default(),
            })
            .await;
    }
    let http_error = match &error {
        AuthError::Unavailable(_) => HttpError::Unavailable(error.to_string()),
        _ => HttpError::Unauthorized {
            challenge: challenge(&resource, error.code(), None),
            message: error.to_string(),
        },
    };
    http_error.into_response()
}
