//! `/token` (the authorization_code and refresh_token grants) and `/revoke`
//! (RFC 7009). A code is taken once: presenting it again revokes the grant
//! it started. A refresh token rotates on every use: presenting an old one
//! again revokes the whole family (the grant). Errors are RFC 6749 §5.2
//! JSON; no code, token or verifier ever reaches a log or an audit row.

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use axum_extra::extract::{Form, FormRejection};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{AuthServer, OAuthError, authorize::AddressOf, cors};
use crate::{
    portal::{
        Portal,
        session::{Fields, hash, random},
    },
    store::{OAuthGrantRow, OAuthRepo, Taken},
};

fn invalid_grant(why: &str) -> OAuthError {
    OAuthError::bad("invalid_grant", why)
}

/// The body of `/token` and `/revoke`: one that is no form is refused as
/// OAuth refuses (RFC 6749 §5.2, JSON), not with the extractor's text.
type Posted = Result<Form<Fields>, FormRejection>;

fn read(posted: Posted) -> Result<Fields, OAuthError> {
    posted.map(|Form(form)| form).map_err(|_| {
        OAuthError::bad(
            "invalid_request",
            "the body is not an application/x-www-form-urlencoded form",
        )
    })
}

/// `POST /token`.
pub(super) async fn token(
    State(portal): State<Arc<Portal>>,
    address: AddressOf,
    posted: Posted,
) -> Result<Response, OAuthError> {
    let authz = super::server(&portal)?;
    let form = read(posted)?;
    for name in [
        "grant_type",
        "code",
        "refresh_token",
        "code_verifier",
        "client_id",
    ] {
        if form.0.iter().filter(|(k, _)| k == name).count() > 1 {
            return Err(OAuthError::bad(
                "invalid_request",
                &format!("{name} is repeated"),
            ));
        }
    }
    match form.get("grant_type") {
        "authorization_code" => code_grant(&portal, authz, &form, &address.0).await,
        "refresh_token" => refresh_grant(&portal, authz, &form, &address.0).await,
        "" => Err(OAuthError::bad("invalid_request", "grant_type is missing")),
        _ => Err(OAuthError::bad(
            "unsupported_grant_type",
            "only authorization_code and refresh_token are supported",
        )),
    }
}

/// Whether `verifier` is the PKCE verifier of `challenge` (S256).
fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    well_formed
        && computed.len() == challenge.len()
        && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

async fn code_grant(
    portal: &Portal,
    authz: &AuthServer,
    form: &Fields,
    address: &str,
) -> Result<Response, OAuthError> {
    let code = form.get("code");
    if code.is_empty() {
        return Err(OAuthError::bad("invalid_request", "code is missing"));
    }
    let row = match portal.store.take_oauth_code(&hash(code)).await? {
        Taken::Fresh(row) => row,
        Taken::Reused(grant) => {
            // A replayed code: whatever it gave is taken back.
            revoke_audited(portal, &grant, "oauth/code_reused", address).await?;
            return Err(invalid_grant("the code was used already"));
        }
        Taken::Unknown => return Err(invalid_grant("the code is unknown or expired")),
    };
    let grant = live_grant(portal, &row.grant_id).await?;
    if form.get("client_id") != grant.client_id {
        return Err(invalid_grant("the code was issued to another client"));
    }
    if form.get("redirect_uri") != row.redirect_uri {
        return Err(invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    if !verifier_matches(form.get("code_verifier"), &row.challenge) {
        return Err(invalid_grant("the PKCE code_verifier does not match"));
    }
    issue(portal, authz, &grant, "oauth/token", address).await
}

async fn refresh_grant(
    portal: &Portal,
    authz: &AuthServer,
    form: &Fields,
    address: &str,
) -> Result<Response, OAuthError> {
    let token = form.get("refresh_token");
    if token.is_empty() {
        return Err(OAuthError::bad(
            "invalid_request",
            "refresh_token is missing",
        ));
    }
    // Every client here is public: it names itself on a refresh (OAuth 2.1
    // §4.3), checked before the token is taken, so the refusal spends nothing.
    let client = form.get("client_id");
    if client.is_empty() {
        return Err(OAuthError::bad(
            "invalid_request",
            "client_id is missing; a public client sends it with every refresh",
        ));
    }
    let grant_id = match portal.store.take_oauth_refresh(&hash(token)).await? {
        Taken::Fresh(grant) => grant,
        Taken::Reused(grant) => {
            // An old refresh token again: someone holds a copy. The family goes.
            revoke_audited(portal, &grant, "oauth/refresh_reused", address).await?;
            return Err(invalid_grant(
                "the refresh token was used already; the grant is revoked",
            ));
        }
        Taken::Unknown => return Err(invalid_grant("the refresh token is unknown or expired")),
    };
    let mut grant = live_grant(portal, &grant_id).await?;
    if client != grant.client_id {
        return Err(invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    // A narrower scope may be asked for, never a wider one.
    let asked: Vec<String> = form
        .get("scope")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if !asked.is_empty() {
        if asked.iter().any(|s| !grant.scopes.contains(s)) {
            return Err(OAuthError::bad(
                "invalid_scope",
                "the scope is wider than the grant's",
            ));
        }
        grant.scopes = asked;
    }
    issue(portal, authz, &grant, "oauth/refresh", address).await
}

/// Revokes a grant, audited under its member when it was live.
async fn revoke_audited(
    portal: &Portal,
    grant: &str,
    action: &str,
    address: &str,
) -> Result<(), OAuthError> {
    if portal.store.revoke_oauth_grant(grant, None).await? {
        let (member, target) = match portal.store.oauth_grant(grant).await? {
            Some(g) => (g.member, format!("{grant} {}", g.client_id)),
            None => (String::new(), grant.to_owned()),
        };
        portal.audit_oauth(&member, action, &target, address).await;
    }
    Ok(())
}

async fn live_grant(portal: &Portal, id: &str) -> Result<OAuthGrantRow, OAuthError> {
    portal
        .store
        .oauth_grant(id)
        .await?
        .filter(|g| g.revoked_ms.is_none())
        .ok_or_else(|| invalid_grant("the grant was revoked"))
}

/// A new access token and a new refresh token of `grant`.
async fn issue(
    portal: &Portal,
    authz: &AuthServer,
    grant: &OAuthGrantRow,
    action: &str,
    address: &str,
) -> Result<Response, OAuthError> {
    let signed = authz
        .issuer
        .sign(&grant.member, &grant.scopes, &grant.id, &grant.client_id)
        .await
        .map_err(|error| {
            tracing::error!(%error, "authorization server: cannot sign");
            OAuthError::server()
        })?;
    let refresh = format!("tgr_{}", random());
    let expires = portal.store.now_ms() + authz.config.refresh_token_ttl.as_millis() as i64;
    portal
        .store
        .add_oauth_refresh(&hash(&refresh), &grant.id, expires)
        .await?;
    portal
        .audit_oauth(
            &grant.member,
            action,
            &format!("{} {}", grant.id, grant.client_id),
            address,
        )
        .await;
    let body = json!({
        "access_token": signed.token,
        "token_type": "Bearer",
        "expires_in": signed.expires_in,
        "refresh_token": refresh,
        "scope": grant.scopes.join(" "),
    });
    let mut response = cors(Json(body).into_response());
    response
        .headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// `POST /revoke` (RFC 7009): a refresh or access token's grant is revoked;
/// the answer is 200 whether or not the token was known.
pub(super) async fn revoke(
    State(portal): State<Arc<Portal>>,
    address: AddressOf,
    posted: Posted,
) -> Result<Response, OAuthError> {
    let authz = super::server(&portal)?;
    let form = read(posted)?;
    let token = form.get("token");
    if token.is_empty() {
        return Err(OAuthError::bad("invalid_request", "token is missing"));
    }
    let grant = match portal.store.oauth_refresh_grant(&hash(token)).await? {
        Some(grant) => Some(grant),
        None => authz.issuer.grant_of(token).await,
    };
    if let Some(grant) = grant {
        revoke_audited(&portal, &grant, "oauth/revoke", &address.0).await?;
    }
    Ok(cors(Json(json!({})).into_response()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_of_rfc_7636_appendix_b_matches() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(verifier_matches(verifier, challenge));
        assert!(!verifier_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX",
            challenge
        ));
        assert!(!verifier_matches("short", challenge));
    }
}
