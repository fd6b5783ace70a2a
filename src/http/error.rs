//! `HttpError`: every error the HTTP layer answers itself, and the one place
//! such errors become a response: an HTTP status plus a JSON-RPC error body
//! that carries the request id whenever the request had one.

use axum::{
    Json,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use crate::{mcp::EngineError, protocol::codes as code};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("Parse error: the body is not valid JSON ({0})")]
    Parse(String),
    #[error("Invalid Request: JSON nesting deeper than {0} levels")]
    TooDeep(usize),
    #[error("Invalid Request: {0}")]
    InvalidRequest(String),
    #[error("Unsupported Media Type: Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Not Acceptable: the client must accept both application/json and text/event-stream")]
    NotAcceptable,
    #[error("Payload Too Large: the body exceeds {0} bytes")]
    PayloadTooLarge(usize),
    #[error("Request Timeout: the body did not arrive in time")]
    BodyTimeout,
    #[error("Session not found: it ended or expired; initialize a new session")]
    SessionNotFound,
    #[error("Method Not Allowed")]
    MethodNotAllowed,
    #[error("Not Found: {0}")]
    NotFound(String),
    #[error("Service Unavailable: {0}")]
    Unavailable(String),
    #[error("Too Many Requests: {1}; retry after {0:?}")]
    TooManyRequests(std::time::Duration, String),
    #[error("Unauthorized: {message}")]
    Unauthorized { challenge: String, message: String },
    #[error("Forbidden: {message}")]
    Forbidden { challenge: String, message: String },
    /// An error status rmcp answered with a plain-text body; the text is kept.
    #[error("{1}")]
    Engine(StatusCode, String),
    /// A bug of ours (a panic caught by the stack); the details go to the log only.
    #[error("internal error; the server's log has the details")]
    Internal,
}

/// A `server` Host, Origin or proxy rule that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum EdgeRuleError {
    #[error("server.public_url {0:?} is not an http(s) URL")]
    PublicUrl(String),
    #[error("server.allowed_hosts: {0:?} is not a host[:port]")]
    Host(String),
    #[error("server.allowed_origins: {0:?} is not scheme://host[:port]")]
    Origin(String),
    #[error("server.trusted_proxies: {0:?} is not a CIDR or address")]
    Proxy(String),
}

impl From<EngineError> for HttpError {
    fn from(refusal: EngineError) -> Self {
        match refusal {
            EngineError::SessionNotFound => Self::SessionNotFound,
            EngineError::Unavailable(reason) => Self::Unavailable(reason),
            EngineError::NoEndpoint(reason) => Self::NotFound(reason),
            EngineError::NotAdmitted(message) => Self::Forbidden {
                challenge: String::new(),
                message,
            },
            EngineError::TooManyStreams(reason) => {
                Self::TooManyRequests(std::time::Duration::from_secs(5), reason.to_string())
            }
            EngineError::InsufficientScope { challenge, message } => {
                Self::Forbidden { challenge, message }
            }
            EngineError::Rmcp {
                status, message, ..
            } => match status {
                StatusCode::NOT_FOUND => Self::SessionNotFound,
                StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed,
                _ if message.is_empty() => Self::Engine(status, status.to_string()),
                _ => Self::Engine(status, message),
            },
        }
    }
}

impl HttpError {
    /// The engine's refusal as a response carrying `id`, with the headers
    /// rmcp's own error reply had.
    pub fn from_engine(refusal: EngineError, id: Option<Value>) -> Response {
        let kept = match &refusal {
            EngineError::Rmcp { headers, .. } => headers.clone(),
            _ => HeaderMap::new(),
        };
        let mut response = Self::from(refusal).into_response_with_id(id);
        response.headers_mut().extend(kept);
        response
    }
}

impl HttpError {
    fn status(&self) -> StatusCode {
        match self {
            Self::Parse(_) | Self::TooDeep(_) | Self::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::SessionNotFound | Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooManyRequests(..) => StatusCode::TOO_MANY_REQUESTS,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Engine(status, _) => *status,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> i32 {
        match self {
            Self::Parse(_) => code::PARSE_ERROR,
            Self::SessionNotFound => code::SESSION_NOT_FOUND,
            Self::MethodNotAllowed => code::METHOD_NOT_FOUND,
            Self::Unavailable(_) => code::SERVER_BUSY,
            Self::TooManyRequests(..) => code::RATE_LIMITED,
            Self::Unauthorized { .. } => code::UNAUTHORIZED,
            Self::Forbidden { .. } => code::FORBIDDEN,
            Self::Engine(status, _) if status.is_server_error() => code::INTERNAL_ERROR,
            Self::Internal => code::INTERNAL_ERROR,
            Self::Engine(StatusCode::NOT_FOUND, _) => code::SESSION_NOT_FOUND,
            _ => code::INVALID_REQUEST,
        }
    }

    /// The response, with `id` echoed when the request had one.
    pub fn into_response_with_id(self, id: Option<Value>) -> Response {
        let mut body = json!({
            "jsonrpc": "2.0",
            "error": {"code": self.code(), "message": self.to_string()},
        });
        // JSON-RPC allows omitting an unreadable id; the MCP schemas reject `null`.
        if let Some(id) = id.filter(|id| id.is_string() || id.is_number()) {
            body["id"] = id;
        }
        let mut response = (self.status(), Json(body)).into_response();
        match &self {
            Self::Unavailable(_) => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
            }
            Self::TooManyRequests(wait, _) => {
                // Whole seconds, rounded up: a client retrying earlier is refused again.
                let seconds = wait.as_millis().div_ceil(1000).max(1);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds as u64));
            }
            Self::Unauthorized { challenge, .. } | Self::Forbidden { challenge, .. }
                if !challenge.is_empty() =>
            {
                if let Ok(value) = HeaderValue::from_str(challenge) {
                    response
                        .headers_mut()
                        .insert(header::WWW_AUTHENTICATE, value);
                }
            }
            _ => {}
        }
        if matches!(self, Self::MethodNotAllowed) {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
        }
        response
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        self.into_response_with_id(None)
    }
}
