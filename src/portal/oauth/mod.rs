//! teamgate as the OAuth 2.1 authorization server of its own MCP endpoint
//! (`[authorization_server]`, issue 28): RFC 8414 metadata and the key set
//! (here), clients registered by RFC 7591 or identified by a Client ID
//! Metadata Document (`clients.rs`), `/authorize` with the portal's sign-in
//! and a consent page (`authorize.rs`), `/token` and `/revoke`
//! (`token.rs`), and the portal's page of granted clients (`grants.rs`).
//! Access tokens are `auth::OwnIssuer`'s; the identity provider's tokens
//! never leave the portal.

mod authorize;
pub(super) use authorize::sign_in_then;
mod clients;
mod endpoint;
mod grants;
mod token;

use std::sync::Arc;

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use axum_extra::extract::cookie::{Cookie, CookieJar};
use serde_json::json;

use super::{Portal, PortalError};
use crate::{auth::OwnIssuer, config::AuthorizationServerConfig};

/// What the authorization server's handlers share (inside `Portal`).
pub(crate) struct AuthServer {
    pub(super) config: AuthorizationServerConfig,
    pub(super) issuer: Arc<OwnIssuer>,
    /// Fetches Client ID Metadata Documents: no redirects, bounded time.
    pub(super) http: reqwest::Client,
    /// TESTING ONLY (`cimd_testing_loopback`): fetches loopback documents,
    /// https with the certificate unchecked. None when the switch is off.
    pub(super) loopback_http: Option<reqwest::Client>,
}

impl AuthServer {
    pub(crate) fn new(
        config: AuthorizationServerConfig,
        issuer: Arc<OwnIssuer>,
    ) -> Result<Self, PortalError> {
        let client = |unchecked: bool| {
            crate::outbound::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(config.cimd_timeout)
                .connect_timeout(config.cimd_timeout)
                .danger_accept_invalid_certs(unchecked)
                .build()
                .map_err(|e| PortalError::Config(format!("HTTP client: {e}")))
        };
        let http = client(false)?;
        let loopback_http = if config.cimd_testing_loopback {
            tracing::warn!(
                "authorization server: cimd_testing_loopback is on (TESTING ONLY): Client ID \
                 Metadata Documents on loopback hosts are fetched over http, or https unchecked"
            );
            Some(client(true)?)
        } else {
            None
        };
        Ok(Self {
            config,
            issuer,
            http,
            loopback_http,
        })
    }
}

/// Where to return after signing in, if the browser was sent to sign in: an
/// authorization request (`/authorize?...`) or a portal page it asked for
/// (`/portal/...`, e.g. the credential prompt's Connections link). A path on
/// this site only: never `//host`, a backslash or a line break.
pub(super) fn return_to(jar: &CookieJar) -> Option<String> {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let value = jar.get(authorize::RETURN_COOKIE)?.value();
    let path = String::from_utf8(URL_SAFE_NO_PAD.decode(value).ok()?).ok()?;
    let here = path.starts_with("/authorize?")
        || (path.starts_with("/portal/") && !path.starts_with("/portal/login"));
    (here && path.len() <= 2048 && !path.contains(['\r', '\n', '\\']) && !path.contains("//"))
        .then_some(path)
}

/// The cookie clearing the way back.
pub(super) fn clear_return(portal: &Portal) -> Cookie<'static> {
    authorize::return_cookie(portal, String::new(), 0)
}

/// The routes anyone may call before signing in, when the authorization
/// server is on: the HTTP stack limits them per client address.
pub(super) fn open_routes() -> Router<Arc<Portal>> {
    Router::new()
        .route("/authorize", get(authorize::ask))
        .route("/token", post(token::token))
        .route("/revoke", post(token::revoke))
        .route("/register", post(clients::register))
}

/// Its metadata and key set, when the authorization server is on.
pub(super) fn routes() -> Router<Arc<Portal>> {
    Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route(
            "/.well-known/oauth-authorization-server/{*issuer}",
            get(metadata),
        )
        .route("/.well-known/openid-configuration", get(metadata))
        .route("/.well-known/openid-configuration/{*issuer}", get(metadata))
        .route("/.well-known/jwks.json", get(jwks))
}

/// Its portal pages, for the portal to nest under `/portal`: the consent
/// form's answer and the connected clients.
pub(super) fn pages() -> Router<Arc<Portal>> {
    Router::new()
        .route("/authorize", post(authorize::decide))
        .route("/clients", get(grants::list))
        .route("/clients/{id}/revoke", post(grants::revoke))
}

fn server(portal: &Portal) -> Result<&AuthServer, OAuthError> {
    portal
        .authz
        .as_ref()
        .ok_or_else(|| OAuthError::new(StatusCode::NOT_FOUND, "invalid_request", "not found"))
}

/// The origin of `server.public_url`, where the endpoints live.
fn origin(portal: &Portal) -> String {
    let url = &portal.config.server.public_url;
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    format!("{scheme}://{}", rest.split('/').next().unwrap_or_default())
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414), also served at
/// the OpenID discovery path clients try.
async fn metadata(State(portal): State<Arc<Portal>>) -> Result<Response, OAuthError> {
    let authz = server(&portal)?;
    let base = origin(&portal);
    let mut scopes = portal
        .portal
        .grants
        .iter()
        .flat_map(|g| g.scopes.clone())
        .collect::<Vec<_>>();
    scopes.sort();
    scopes.dedup();
    let mut doc = json!({
        "issuer": authz.issuer.issuer(),
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "revocation_endpoint": format!("{base}/revoke"),
        "jwks_uri": format!("{base}/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": scopes,
        "client_id_metadata_document_supported": !authz.config.cimd_hosts.is_empty()
            || authz.config.cimd_testing_loopback,
        "authorization_response_iss_parameter_supported": true,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
    });
    if authz.config.dynamic_registration {
        doc["registration_endpoint"] = json!(format!("{base}/register"));
    }
    Ok(cors(Json(doc).into_response()))
}

/// `GET /.well-known/jwks.json`: every key whose tokens may still be live.
async fn jwks(State(portal): State<Arc<Portal>>) -> Result<Response, OAuthError> {
    let authz = server(&portal)?;
    let set = authz.issuer.jwks().await.map_err(|e| {
        tracing::error!(error = %e, "authorization server: key set");
        OAuthError::server()
    })?;
    Ok(cors(Json(set).into_response()))
}

/// Metadata, keys, token and revocation are read by browser-based clients
/// (the Inspector) from any origin; they carry no cookie.
fn cors(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// An RFC 6749 §5.2 error: JSON, never cached, no secret in it.
#[derive(Debug)]
pub(crate) struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
}

impl OAuthError {
    fn new(status: StatusCode, error: &'static str, description: &str) -> Self {
        Self {
            status,
            error,
            description: description.to_owned(),
        }
    }
    fn bad(error: &'static str, description: &str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, description)
    }
    fn server() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "the authorization server failed; try again",
        )
    }
}

impl From<crate::store::StoreError> for OAuthError {
    fn from(error: crate::store::StoreError) -> Self {
        tracing::error!(%error, "authorization server: database error");
        Self::server()
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = json!({ "error": self.error, "error_description": self.description });
        cors((self.status, Json(body)).into_response())
    }
}

impl Portal {
    /// One audit record of the authorization server (no secret in it).
    pub(super) async fn audit_oauth(&self, user: &str, method: &str, target: &str, address: &str) {
        self.record(user, "", address, (method, target)).await;
    }
}
