//! `PortalError`: the one way the portal's refusals and failures reach the
//! browser, as a small page with the status (drawn by `pages`, which owns
//! the frame). Details of a failure go to the log, never to the page (they
//! may name the provider's answers).

use axum::http::StatusCode;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum PortalError {
    #[error("the portal is misconfigured: {0}")]
    Config(String),
    #[error("sign in first")]
    NotSignedIn,
    #[error("this page is for the portal's admins")]
    NotAdmin,
    #[error("the form is stale or was not sent by this portal; reload the page and try again")]
    Csrf,
    #[error("{0}")]
    BadRequest(String),
    /// A form asks for what this member may not have.
    #[error("{0}")]
    Forbidden(String),
    #[error("sign-in failed: {0}")]
    Login(&'static str),
    #[error("the identity provider cannot be reached or answered wrongly")]
    Provider(String),
    /// An upstream's OAuth refused for what it said: shown to the member.
    #[error("{0}")]
    Upstream(String),
    #[error("not found")]
    NotFound,
    #[error("the database failed")]
    Store(#[from] StoreError),
}

impl PortalError {
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::Config(_) | Self::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NotSignedIn => StatusCode::UNAUTHORIZED,
            Self::NotAdmin | Self::Csrf | Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) | Self::Login(_) => StatusCode::BAD_REQUEST,
            Self::Provider(_) | Self::Upstream(_) => StatusCode::BAD_GATEWAY,
            Self::NotFound => StatusCode::NOT_FOUND,
        }
    }
}
