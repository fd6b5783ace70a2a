//! Sign-in through the team's OpenID provider with `openidconnect`:
//! discovery and JWKS (read on first use, kept), authorization code with
//! PKCE, `state` and nonce kept in the browser's own pre-login session row
//! and taken once, and the ID token verified (signature, issuer, audience,
//! expiry, nonce) before its member and group claims are read.

use std::sync::Arc;

use axum::{
    extract::{Query, State},
    response::{IntoResponse, Redirect, Response},
};
use axum_extra::extract::cookie::CookieJar;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata},
};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::{
    Portal, PortalError,
    session::{Checked, CsrfOnly, hash},
};
use crate::{
    config::PortalConfig,
    outbound::OAuthHttp,
    store::{PortalSessions, SignInClaims, StoreError},
};

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The relying party: the provider's metadata and keys, discovered once.
pub(crate) struct Oidc {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    redirect: RedirectUrl,
    scopes: Vec<String>,
    http: OAuthHttp,
    client: OnceCell<Client>,
}

impl Oidc {
    pub(super) fn new(portal: &PortalConfig, public_url: &str) -> Result<Self, PortalError> {
        let redirect = PortalConfig::redirect_url(public_url)
            .ok_or_else(|| PortalError::Config("server.public_url has no origin".into()))?;
        let secret = portal.client_secret.expose();
        Ok(Self {
            issuer: IssuerUrl::new(portal.issuer.clone())
                .map_err(|e| PortalError::Config(format!("portal.issuer: {e}")))?,
            client_id: ClientId::new(portal.client_id.clone()),
            client_secret: (!secret.is_empty()).then(|| ClientSecret::new(secret.to_owned())),
            redirect: RedirectUrl::new(redirect)
                .map_err(|e| PortalError::Config(format!("redirect URL: {e}")))?,
            scopes: portal.scopes.clone(),
            // Never follow redirects (the provider's endpoints answer directly).
            http: OAuthHttp::new(
                crate::outbound::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(std::time::Duration::from_secs(10))
                    .build()
                    .map_err(|e| PortalError::Config(format!("HTTP client: {e}")))?,
            ),
            client: OnceCell::new(),
        })
    }

    /// The client, discovering the provider on first use (a failed
    /// discovery is tried again on the next sign-in).
    async fn client(&self) -> Result<&Client, PortalError> {
        self.client
            .get_or_try_init(|| async {
                let metadata =
                    CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
                        .await
                        .map_err(|e| {
                            // Which issuer, and why down to the socket ("connection
                            // refused"): anyhow's alternate form prints the causes.
                            PortalError::Provider(format!(
                                "discovery of the issuer {} failed: {:#}",
                                self.issuer.as_str(),
                                anyhow::Error::new(e)
                            ))
                        })?;
                Ok(CoreClient::from_provider_metadata(
                    metadata,
                    self.client_id.clone(),
                    self.client_secret.clone(),
                )
                .set_redirect_uri(self.redirect.clone()))
            })
            .await
    }
}

/// `GET /portal/login`: a new pre-login session holding this login's
/// secrets, living minutes (anyone can start one; the purge loop deletes
/// it), and the browser sent to the provider.
pub(super) async fn login(
    State(portal): State<Arc<Portal>>,
    jar: CookieJar,
) -> Result<Response, PortalError> {
    let client = portal.oidc.client().await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in portal.oidc.scopes.iter().filter(|s| *s != "openid") {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
    let cookie = portal
        .open_session(
            "",
            (&[], SignInClaims::default()),
            Some((state.secret(), verifier.secret(), nonce.secret())),
        )
        .await?;
    let cookie = portal.cookie(Some((&cookie, portal.lifetime(true))));
    Ok((jar.add(cookie), Redirect::to(url.as_str())).into_response())
}

#[derive(Deserialize)]
pub(super) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /portal/callback`: the provider's answer, accepted only in the
/// browser that started this login and only once.
pub(super) async fn callback(
    State(portal): State<Arc<Portal>>,
    jar: CookieJar,
    Query(answer): Query<Callback>,
) -> Result<Response, PortalError> {
    if answer.error.is_some() {
        return Err(PortalError::Login(
            "the identity provider refused the sign-in",
        ));
    }
    let (Some(code), Some(state)) = (answer.code, answer.state) else {
        return Err(PortalError::Login("the answer has no code or state"));
    };
    let cookie = portal
        .cookie_in(&jar)
        .ok_or(PortalError::Login("this browser did not start a sign-in"))?;
    let pre_login = hash(cookie);
    let pending = portal
        .store
        .take_login(&pre_login, &state)
        .await?
        .ok_or(PortalError::Login(
            "the sign-in is unknown, was used already, or its state does not match",
        ))?;
    let client = portal.oidc.client().await?;
    let exchange = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| PortalError::Provider(format!("token endpoint: {e}")))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier));
    let tokens = exchange
        .request_async(&portal.oidc.http)
        .await
        .map_err(|error| {
            tracing::warn!(%error, "portal: code exchange refused");
            PortalError::Login("the identity provider refused the code")
        })?;
    use openidconnect::TokenResponse as _;
    let id_token = tokens
        .id_token()
        .ok_or(PortalError::Login("the provider sent no ID token"))?;
    id_token
        .claims(&client.id_token_verifier(), &Nonce::new(pending.nonce))
        .map_err(|error| {
            tracing::warn!(%error, "portal: ID token refused");
            PortalError::Login("the ID token did not verify")
        })?;
    // Verified: its payload's other claims can be read as they are.
    let claims =
        payload(&id_token.to_string()).ok_or(PortalError::Login("the ID token cannot be read"))?;
    let member = claims
        .get(&portal.portal.user_claim)
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty() && !m.contains('#'))
        .ok_or(PortalError::Login("the ID token does not name the member"))?
        .to_owned();
    let (groups, read) = super::claims::read(&claims, &portal.portal);
    if portal.portal.grantable(&groups, &read.values).is_empty() {
        // The admin's side of the member's page: which claim held what.
        let why = super::claims::explain(&portal.portal, &groups, &read);
        tracing::warn!(member = %member, %why, "portal: signed in; no grant matches");
    } else {
        tracing::info!(member = %member, "portal: signed in");
    }
    // A new session id after sign-in (no fixation); the pre-login row goes.
    portal.store.end_portal_session(&pre_login).await?;
    let cookie = portal.open_session(&member, (&groups, read), None).await?;
    // Back to an authorization request that sent the member to sign in.
    let back = super::oauth::return_to(&jar);
    let mut jar = jar.add(portal.cookie(Some((&cookie, portal.lifetime(false)))));
    if back.is_some() {
        jar = jar.add(super::oauth::clear_return(&portal));
    }
    Ok((jar, Redirect::to(back.as_deref().unwrap_or("/portal/"))).into_response())
}

/// The JSON payload of a compact JWT.
fn payload(jwt: &str) -> Option<serde_json::Map<String, Value>> {
    let part = jwt.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `POST /portal/logout`: the session row goes and the cookie with it.
pub(super) async fn logout(
    State(portal): State<Arc<Portal>>,
    jar: CookieJar,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    portal
        .store
        .end_portal_session(&member.session.id_hash)
        .await
        .map_err(|e: StoreError| PortalError::Store(e))?;
    let jar = jar.add(portal.cookie(None));
    Ok((jar, Redirect::to("/portal/")).into_response())
}
