//! Authentication for the MCP endpoint's caller step (`caller.rs`):
//! resolves the `Caller`, or the 401 (503 when the token store cannot be
//! read), audited.

use http::request::Parts;

use super::error::HttpError;
use crate::{
    auth::{AuthError, AuthState, challenge},
    protocol::{header_text, names},
    registry::Caller,
    store::{AuditRecord, Via},
};

/// Who is calling, or the refusal to answer with.
pub(super) async fn authenticate(state: &AuthState, parts: &Parts) -> Result<Caller, HttpError> {
    match state.authenticator.authenticate(parts).await {
        Ok(caller) => Ok(caller),
        Err(error) => Err(refuse(state, parts, error).await),
    }
}

async fn refuse(state: &AuthState, parts: &Parts, error: AuthError) -> HttpError {
    let resource = state.authenticator.resource(parts);
    if !matches!(error, AuthError::Missing) {
        // A missing token is the normal first step of discovery; the
        // rest are refusals worth keeping.
        let now = (state.now_ms)();
        let via = Via {
            session_id: header_text(&parts.headers, names::MCP_SESSION_ID),
            protocol_version: header_text(&parts.headers, names::MCP_PROTOCOL_VERSION),
            trace_id: String::new(),
            address: parts
                .extensions
                .get::<crate::protocol::ClientInfo>()
                .map(|client| client.ip.to_string())
                .unwrap_or_default(),
        };
        let method = header_text(&parts.headers, names::MCP_METHOD);
        let target = header_text(&parts.headers, names::MCP_NAME);
        let why = error.to_string();
        let record = AuditRecord::unauthenticated(now, via, (&method, &target), &why);
        state.auditor.record(record).await;
    }
    match &error {
        AuthError::Unavailable(_) => HttpError::Unavailable(error.to_string()),
        _ => HttpError::Unauthorized {
            challenge: challenge(&resource, error.code(), None),
            message: error.to_string(),
        },
    }
}
