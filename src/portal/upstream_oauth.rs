//! `/portal/connections/oauth/...` (issue 29): a member connects their own
//! account at an upstream with `auth = "oauth"`, or one found to want it
//! (`auth = "auto"`, a 401 with RFC 9728 metadata). Start runs the
//! authorization code flow with PKCE at the upstream's authorization server
//! (`oauth_client.rs`); the callback, bound to the browser session that
//! started it by its CSRF token, stores the tokens sealed in the vault under
//! `oauth:<upstream>`; disconnect deletes them and revokes them where the
//! server offers revocation. Neither the tokens nor the verifier are shown.

use std::sync::Arc;

use axum::{
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::Engine;
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{
    Portal, PortalError,
    oauth_client::{self, Server},
    pages::{csrf, time},
    session::{Checked, CsrfOnly, Member, hash, random},
};
use crate::{
    config::{UpstreamAuth, UpstreamConfig},
    registry::{
        oauth::{CLIENT_OWNER, TokenSet, start_path, token_slot},
        oauth_grant::Grant,
        oauth_reach::Reach,
    },
    store::Vault,
};

/// The redirect URI every upstream's authorization server sends back to.
pub(super) const CALLBACK_PATH: &str = "/portal/connections/oauth/callback";
/// How long a started flow may take, in seconds.
const PENDING_SECS: i64 = 600;

/// A started flow, kept sealed in the vault under the member's name.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    verifier: String,
    /// Digest of the starting session's CSRF token: the same browser session.
    session: String,
    client_id: String,
    token_endpoint: String,
    revocation_endpoint: Option<String>,
    resource: String,
    at: i64,
}

/// teamgate's registration at one upstream's authorization server.
#[derive(Serialize, Deserialize)]
struct Registration {
    client_id: String,
    redirect: String,
    token_endpoint: String,
}

fn pending_slot(upstream: &str) -> String {
    format!("oauth-pending:{upstream}")
}

fn now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The upstreams members connect to: `auth = "oauth"`, or found to want it.
pub(super) fn oauth_upstreams(portal: &Portal) -> impl Iterator<Item = &UpstreamConfig> {
    (portal.config.upstreams.iter()).filter(|u| {
        u.auth == UpstreamAuth::Oauth
            || (u.may_detect_oauth() && portal.member_oauth.is_found(&u.name))
    })
}

/// The oauth upstream `name` and the vault.
fn upstream<'p>(
    portal: &'p Portal,
    name: &str,
) -> Result<(&'p UpstreamConfig, &'p Vault), PortalError> {
    let found = oauth_upstreams(portal)
        .find(|u| u.name == name)
        .ok_or(PortalError::NotFound)?;
    Ok((found, portal.vault.as_ref().ok_or(PortalError::NotFound)?))
}

fn redirect_uri(portal: &Portal) -> Result<String, PortalError> {
    let base = crate::config::PortalConfig::redirect_url(&portal.config.server.public_url)
        .ok_or_else(|| PortalError::Config("server.public_url has no origin".into()))?;
    let origin = base
        .strip_suffix(crate::config::PORTAL_CALLBACK_PATH)
        .unwrap_or(&base);
    Ok(format!("{origin}{CALLBACK_PATH}"))
}

/// teamgate's client ID at `server`: configured, registered before, or registered now.
async fn client_id(
    (config, vault): (&UpstreamConfig, &Vault),
    reach: &Reach,
    server: &Server,
    redirect: &str,
) -> Result<String, PortalError> {
    if !config.oauth.client_id.is_empty() {
        return Ok(config.oauth.client_id.clone());
    }
    let slot = token_slot(&config.name);
    let known = vault.get(CLIENT_OWNER, &slot).await?;
    let known = known.and_then(|v| serde_json::from_str::<Registration>(&v).ok());
    if let Some(known) =
        known.filter(|k| k.redirect == redirect && k.token_endpoint == server.token_endpoint)
    {
        return Ok(known.client_id);
    }
    let client_id = oauth_client::register(reach, server, redirect).await?;
    let registration = Registration {
        client_id: client_id.clone(),
        redirect: redirect.to_owned(),
        token_endpoint: server.token_endpoint.clone(),
    };
    let value = serde_json::to_string(&registration).unwrap_or_default();
    vault.set(CLIENT_OWNER, &slot, &value).await?;
    tracing::info!(upstream = %config.name, "portal: registered at the upstream's authorization server");
    Ok(client_id)
}

/// `GET /portal/connections/oauth/{upstream}/start`: to the authorization server.
pub(super) async fn start(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    let (config, vault) = upstream(&portal, &name)?;
    let reach = portal.member_oauth.reach(&config.url);
    let server = oauth_client::discover(&reach, config).await?;
    let redirect = redirect_uri(&portal)?;
    let client_id = client_id((config, vault), &reach, &server, &redirect).await?;
    let verifier = random();
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let state = format!("{name}.{}", random());
    let pending = Pending {
        state: state.clone(),
        verifier,
        session: hash(&member.session.csrf),
        client_id: client_id.clone(),
        token_endpoint: server.token_endpoint.clone(),
        revocation_endpoint: server.revocation_endpoint.clone(),
        resource: server.resource.clone(),
        at: now(),
    };
    let value = serde_json::to_string(&pending).unwrap_or_default();
    vault
        .set(member.name(), &pending_slot(&name), &value)
        .await?;
    let mut url = url::Url::parse(&server.authorization_endpoint)
        .map_err(|e| PortalError::Provider(e.to_string()))?;
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client_id)
            .append_pair("redirect_uri", &redirect)
            .append_pair("state", &state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &server.resource);
        if !server.scopes.is_empty() {
            query.append_pair("scope", &server.scopes.join(" "));
        }
    }
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url.to_string())]).into_response())
}

#[derive(Deserialize)]
pub(super) struct Callback {
    #[serde(default)]
    code: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    error: String,
}

/// `GET /portal/connections/oauth/callback`: the code exchanged, the tokens kept.
pub(super) async fn callback(
    State(portal): State<Arc<Portal>>,
    member: Member,
    Query(back): Query<Callback>,
) -> Result<Response, PortalError> {
    let name = back
        .state
        .split_once('.')
        .map(|(n, _)| n.to_owned())
        .unwrap_or_default();
    let (config, vault) = upstream(&portal, &name)?;
    let slot = pending_slot(&name);
    let pending = vault.get(member.name(), &slot).await?;
    let pending = pending.and_then(|v| serde_json::from_str::<Pending>(&v).ok());
    let stale = || {
        PortalError::BadRequest(
            "this connection was not started here, or took too long; start it again".into(),
        )
    };
    let pending = pending.ok_or_else(stale)?;
    let same = hash(&member.session.csrf) == pending.session && pending.state == back.state;
    if !same || now() - pending.at > PENDING_SECS {
        return Err(stale());
    }
    vault.delete(member.name(), &slot).await?;
    if !back.error.is_empty() || back.code.is_empty() {
        return Err(PortalError::BadRequest(format!(
            "the authorization server did not connect your account ({})",
            back.error
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect::<String>()
        )));
    }
    let reach = portal.member_oauth.reach(&config.url);
    let redirect = redirect_uri(&portal)?;
    let grant = Grant::Code {
        code: &back.code,
        verifier: &pending.verifier,
        redirect: &redirect,
    };
    let ids = (pending.client_id.as_str(), pending.resource.as_str());
    let answer = oauth_client::token_request(&reach, &pending.token_endpoint, ids, grant).await?;
    let empty = TokenSet {
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        token_endpoint: pending.token_endpoint,
        revocation_endpoint: pending.revocation_endpoint,
        client_id: pending.client_id,
        resource: pending.resource,
    };
    let set = empty.updated(&answer, now());
    vault
        .set(member.name(), &token_slot(&name), &set.write())
        .await?;
    portal
        .audit(&member, "portal/connections/oauth/connect", &name, "")
        .await;
    // An upstream that lists nothing without a token is listed over it now.
    portal.member_oauth.connected(&name);
    Ok(back_to_connections())
}

/// `POST /portal/connections/oauth/{upstream}/disconnect`: only the member's own.
pub(super) async fn disconnect(
    State(portal): State<Arc<Portal>>,
    Path(name): Path<String>,
    Checked(member, _): Checked<CsrfOnly>,
) -> Result<Response, PortalError> {
    let (config, vault) = upstream(&portal, &name)?;
    let slot = token_slot(&name);
    let Some(value) = vault.get(member.name(), &slot).await? else {
        return Err(PortalError::NotFound);
    };
    vault.delete(member.name(), &slot).await?;
    if let Some(set) = TokenSet::read(&value) {
        oauth_client::revoke(&portal.member_oauth.reach(&config.url), &set).await;
    }
    portal
        .audit(&member, "portal/connections/oauth/disconnect", &name, "")
        .await;
    Ok(back_to_connections())
}

fn back_to_connections() -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/portal/connections")],
    )
        .into_response()
}

/// The Connections page's part for oauth upstreams; `set` is the member's vault names.
pub(super) fn section(portal: &Portal, member: &Member, set: &[(String, i64)]) -> Markup {
    let upstreams: Vec<&UpstreamConfig> = oauth_upstreams(portal).collect();
    html! {
        @if !upstreams.is_empty() {
            h2 { "Services you sign in to" }
            table id="oauth-connections" {
                thead { tr { th { "Service" } th { "State" } th {} } }
                tbody {
                    @for upstream in upstreams {
                        @let slot = token_slot(&upstream.name);
                        @let since = set.iter().find(|(s, _)| *s == slot).map(|(_, at)| *at);
                        tr id={ "oauth-" (upstream.name) } {
                            td { code { (upstream.name) } }
                            td.state { @match since {
                                Some(at) => { "connected " (time(Some(at))) },
                                None => { "not connected" },
                            } }
                            td {
                                @if since.is_some() {
                                    form.inline method="post" action={ "/portal/connections/oauth/" (upstream.name) "/disconnect" } {
                                        (csrf(member)) button.danger type="submit" { "Disconnect" }
                                    }
                                } @else {
                                    a href=(start_path(&upstream.name)) { "Connect" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
