//! `/authorize`: the authorization code flow's browser half. The client, its
//! redirect URI, `response_type`, PKCE S256 and the RFC 8707 `resource` are
//! checked first, then the member signs in through the portal (and comes
//! back here), and a consent page names the client and the scopes, which
//! are at most what the member's groups allow. Every refusal before the
//! member's answer on the consent page is a page here, never a redirect:
//! with open registration anyone can register an https redirect URI, and an
//! error sent there would make teamgate an open redirector (RFC 9700
//! §4.11.2). Allowing stores a grant and a single-use code (its sha256) that
//! expires within a minute; denying goes back to the client.

use std::sync::Arc;

use axum::{
    extract::{RawQuery, State},
    http::{HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse, Redirect, Response},
};
use axum_extra::extract::cookie::{Cookie, CookieJar};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use maud::html;

use super::{AuthServer, clients::Client, endpoint::refused};
use crate::{
    portal::{
        Portal, PortalError,
        pages::{csrf, page},
        session::{Checked as CheckedForm, Fields, Member, address, hash, random},
    },
    registry::scope_covers,
    store::{OAuthCodeRow, OAuthGrantRow, OAuthRepo},
};

/// How long an authorization code may wait for its exchange.
const CODE_TTL_MS: i64 = 60_000;
/// The cookie that brings the browser back here after signing in.
pub(crate) const RETURN_COOKIE: &str = "teamgate_authorize";

const PARAMS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
];

/// The request's parameters (each at most once, RFC 6749 §3.1).
#[derive(Debug, Default, Clone)]
pub(super) struct Ask(Vec<(String, String)>);

impl Ask {
    fn parse(pairs: Vec<(String, String)>) -> Result<Self, PortalError> {
        let mut kept = Vec::new();
        for (key, value) in pairs {
            if !PARAMS.contains(&key.as_str()) {
                continue;
            }
            if kept.iter().any(|(k, _): &(String, String)| *k == key) {
                return Err(PortalError::BadRequest(format!("{key} is repeated")));
            }
            kept.push((key, value));
        }
        Ok(Self(kept))
    }
    fn get(&self, key: &str) -> &str {
        self.0.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v)
    }
    fn query(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&self.0)
            .finish()
    }
}

/// What a checked request is.
struct Checked {
    client: Client,
    redirect_uri: String,
}

/// The client's redirect URI with `pairs` (and `state`, `iss`) added.
fn back(authz: &AuthServer, redirect_uri: &str, ask: &Ask, pairs: &[(&str, &str)]) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return PortalError::BadRequest("the redirect URI is invalid".into()).into_response();
    };
    {
        let mut query = url.query_pairs_mut();
        query.extend_pairs(pairs);
        if !ask.get("state").is_empty() {
            query.append_pair("state", ask.get("state"));
        }
        query.append_pair("iss", authz.issuer.issuer());
    }
    (StatusCode::SEE_OTHER, [(header::LOCATION, url.to_string())]).into_response()
}

fn error_back(authz: &AuthServer, c: &Checked, ask: &Ask, error: &str, why: &str) -> Response {
    back(
        authz,
        &c.redirect_uri,
        ask,
        &[("error", error), ("error_description", why)],
    )
}

/// A refusal before the member's answer: teamgate's page (400), never the
/// way back to the client.
/// The checks that need no member: client, redirect URI, response type,
/// PKCE, resource. A refusal is a page.
async fn check(portal: &Portal, authz: &AuthServer, ask: &Ask) -> Result<Checked, PortalError> {
    let client = authz
        .client(portal, ask.get("client_id"))
        .await
        .map_err(|e| {
            PortalError::BadRequest(format!("the client cannot sign in here: {}", e.description))
        })?;
    let redirect_uri = match ask.get("redirect_uri") {
        "" if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        given if super::clients::redirect_allowed(&client.redirect_uris, given) => given.to_owned(),
        _ => {
            return Err(PortalError::BadRequest(
                "the redirect URI is not one the client registered".into(),
            ));
        }
    };
    let checked = Checked {
        client,
        redirect_uri,
    };
    if ask.get("response_type") != "code" {
        return Err(refused("only response_type=code is supported"));
    }
    let challenge = ask.get("code_challenge");
    if ask.get("code_challenge_method") != "S256"
        || !(43..=128).contains(&challenge.len())
        || !challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(refused("PKCE with code_challenge_method=S256 is required"));
    }
    super::endpoint::asked(portal, authz.issuer.issuer(), ask.get("resource"))?;
    Ok(checked)
}

/// The scopes the member would grant: those asked for (all their groups
/// allow when none are) that their groups allow.
fn scopes_for(portal: &Portal, member: &Member, ask: &Ask) -> Vec<String> {
    let grantable = portal.grantable(member);
    let asked: Vec<String> = ask
        .get("scope")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if asked.is_empty() {
        return grantable;
    }
    let mut scopes: Vec<String> = asked
        .into_iter()
        .filter(|s| scope_covers(&grantable, s))
        .collect();
    scopes.sort();
    scopes.dedup();
    scopes
}

/// `GET /authorize`.
pub(super) async fn ask(
    State(portal): State<Arc<Portal>>,
    parts: Parts,
    RawQuery(query): RawQuery,
) -> Result<Response, PortalError> {
    let Ok(authz) = super::server(&portal) else {
        return Err(PortalError::NotFound);
    };
    let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let ask = Ask::parse(pairs)?;
    let checked = check(&portal, authz, &ask).await?;
    let mut parts = parts;
    let member = match <Member as axum::extract::FromRequestParts<Arc<Portal>>>::from_request_parts(
        &mut parts, &portal,
    )
    .await
    {
        Ok(member) => member,
        Err(PortalError::NotSignedIn) => return Ok(sign_in_first(&portal, &ask)),
        Err(other) => return Err(other),
    };
    let scopes = scopes_for(&portal, &member, &ask);
    if scopes.is_empty() {
        // The member has seen no consent page: a page, not a redirect.
        return Err(refused("your groups allow none of the scopes it asks for"));
    }
    let toolset = super::endpoint::asked(&portal, authz.issuer.issuer(), ask.get("resource"))?;
    let scopes = super::endpoint::scoped(toolset.as_ref(), &member, scopes)?;
    Ok(consent(&member, &checked, &ask, &scopes))
}

/// Off to the portal's sign-in, with the way back kept in a cookie.
fn sign_in_first(portal: &Portal, ask: &Ask) -> Response {
    sign_in_then(portal, &format!("/authorize?{}", ask.query()))
}

/// A redirect to the portal's sign-in that comes back to `path` after it.
pub(in crate::portal) fn sign_in_then(portal: &Portal, path: &str) -> Response {
    let back = return_cookie(portal, URL_SAFE_NO_PAD.encode(path), 600);
    (CookieJar::new().add(back), Redirect::to("/portal/login")).into_response()
}

/// The way back after signing in, kept `seconds` (0: cleared).
pub(super) fn return_cookie(portal: &Portal, back: String, seconds: i64) -> Cookie<'static> {
    crate::portal::session::session_cookie(RETURN_COOKIE, back, portal.secure, seconds)
}

/// The consent page; its CSP lets the form's answer go back to the client.
fn consent(member: &Member, c: &Checked, ask: &Ask, scopes: &[String]) -> Response {
    let target = url::Url::parse(&c.redirect_uri).ok();
    let shown = target
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| c.redirect_uri.clone());
    let body = page(
        "Allow access?",
        Some(member),
        html! {
            p { strong { (c.client.name) } " asks to use this teamgate as " strong { (member.name()) } "." }
            p.muted { "Client: " code { (c.client.id) } }
            p { "It would be allowed these scopes:" }
            ul { @for scope in scopes { li { code { (scope) } } } }
            p { "Your answer goes back to " code { (shown) } ". Allow only a client you started yourself." }
            form.stack method="post" action="/portal/authorize" {
                (csrf(member))
                @for (key, value) in &ask.0 { input type="hidden" name=(key) value=(value); }
                button type="submit" name="decision" value="allow" { "Allow" }
                button.danger type="submit" name="decision" value="deny" { "Deny" }
            }
        },
    );
    let form_target = match &target {
        Some(u) if u.scheme() == "http" || u.scheme() == "https" => {
            u.origin().ascii_serialization()
        }
        Some(u) => format!("{}:", u.scheme()),
        None => String::new(),
    };
    let csp = format!(
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' {form_target}; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    let mut response = body.into_response();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// `POST /portal/authorize`: the member's answer on the consent page.
pub(super) async fn decide(
    State(portal): State<Arc<Portal>>,
    parts_address: AddressOf,
    CheckedForm(member, form): CheckedForm<Fields>,
) -> Result<Response, PortalError> {
    let Ok(authz) = super::server(&portal) else {
        return Err(PortalError::NotFound);
    };
    let allow = form.get("decision") == "allow";
    let ask = Ask::parse(form.0)?;
    let checked = check(&portal, authz, &ask).await?;
    let toolset = super::endpoint::asked(&portal, authz.issuer.issuer(), ask.get("resource"))?;
    // As on the consent page: no scope the member's groups allow, or a
    // toolset they may not use, is a denial.
    let scopes = Some(scopes_for(&portal, &member, &ask))
        .filter(|scopes| !scopes.is_empty())
        .and_then(|scopes| super::endpoint::scoped(toolset.as_ref(), &member, scopes).ok())
        .unwrap_or_default();
    if !allow || scopes.is_empty() {
        return Ok(error_back(
            authz,
            &checked,
            &ask,
            "access_denied",
            "the member did not allow access",
        ));
    }
    let now = portal.store.now_ms();
    let grant = OAuthGrantRow {
        id: format!("tgg_{}", hex::encode(rand::random::<[u8; 12]>())),
        client_id: checked.client.id.clone(),
        client_name: checked.client.name.clone(),
        member: member.name().to_owned(),
        scopes: scopes.clone(),
        created_ms: now,
        last_used_ms: now,
        revoked_ms: None,
    };
    let code = random();
    let row = OAuthCodeRow {
        code_hash: hash(&code),
        grant_id: grant.id.clone(),
        redirect_uri: checked.redirect_uri.clone(),
        challenge: ask.get("code_challenge").to_owned(),
        expires_ms: now + CODE_TTL_MS,
    };
    portal.store.add_oauth_grant(&grant, &row).await?;
    portal
        .audit_oauth(
            member.name(),
            "oauth/grant",
            &format!("{} {} [{}]", grant.id, grant.client_id, scopes.join(" ")),
            &parts_address.0,
        )
        .await;
    Ok(back(authz, &checked.redirect_uri, &ask, &[("code", &code)]))
}

/// The client's address, for the audit record.
pub(super) struct AddressOf(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for AddressOf {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(address(parts)))
    }
}
