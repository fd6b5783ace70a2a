//! `EngineError`: every way the engine answers a request with an HTTP
//! error instead of rmcp's reply. The HTTP layer gives each its status and
//! JSON-RPC body (`http/error.rs`), the one way out to the wire.

use axum::http::{HeaderMap, StatusCode};

use super::streams::StreamCapReached;

/// Why the engine refused a request, or how rmcp did.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Another member's session, or none: as far as the caller can tell, it
    /// does not exist.
    #[error("session not found")]
    SessionNotFound,
    /// No room for another session (or no store to keep it in).
    #[error("{0}")]
    Unavailable(String),
    /// No toolset endpoint at the request's path (`endpoint.rs`).
    #[error("{0}")]
    NoEndpoint(String),
    /// The caller may not connect to the request's endpoint.
    #[error("{0}")]
    NotAdmitted(String),
    /// The caller holds all the long-lived streams it may (`streams.rs`).
    #[error(transparent)]
    TooManyStreams(#[from] StreamCapReached),
    /// The handler refused a call for lack of scope (`access.rs`): 403 with
    /// the challenge naming the scopes needed.
    #[error("{message}")]
    InsufficientScope { challenge: String, message: String },
    /// rmcp answered an error status with a plain-text body (`reply.rs`):
    /// its status and text, and the headers worth keeping (`Allow`,
    /// `WWW-Authenticate`, `Retry-After`).
    #[error("{message}")]
    Rmcp {
        status: StatusCode,
        message: String,
        headers: HeaderMap,
    },
}
