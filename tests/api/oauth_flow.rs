//! teamgate as the OAuth authorization server (issue 28), over HTTP with the
//! real `oidc-provider` behind the portal and the browser-less browser of
//! the portal tests: metadata, registration, sign-in and consent, code
//! exchange, a tool call with the access token, refresh rotation, and
//! revocation from the portal.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use teamgate::store::{AuditFilter, SystemClock};

use crate::{
    helpers::TestApp,
    portal_idp::{Browser, Idp, hidden, portal_app_with},
    sec_authz::{reply, send},
    upstreams::modern_meta,
};

pub(crate) const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A teamgate with the portal and the authorization server on.
pub(crate) async fn oauth_app(
    adjust: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> (TestApp, Idp) {
    let mut authz = json!({"enabled": true, "cimd_testing_loopback": true, "cimd_timeout": "1s", "cimd_max_bytes": 2048});
    adjust(authz.as_object_mut().unwrap());
    portal_app_with(Arc::new(SystemClock), move |c| {
        c.authorization_server = Some(serde_json::from_value(authz).unwrap());
    })
    .await
}

/// A PKCE verifier and its S256 challenge.
pub(crate) fn pkce() -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// Registers a client (RFC 7591) redirecting to `redirect`; its id.
pub(crate) async fn register(app: &TestApp, redirect: &str) -> String {
    let response = teamgate::outbound::client()
        .post(format!("{}/register", app.base()))
        .json(&json!({"client_name": "Test client", "redirect_uris": [redirect]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "none");
    body["client_id"].as_str().unwrap().to_owned()
}

pub(crate) fn authorize_url(
    app: &TestApp,
    client: &str,
    redirect: &str,
    challenge: &str,
    extra: &[(&str, &str)],
) -> String {
    let resource = format!("{}/mcp", app.base());
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", redirect),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("state", "st4te"),
        ("resource", resource.as_str()),
    ];
    for (k, v) in extra {
        pairs.retain(|(key, _)| key != k);
        pairs.push((k, v));
    }
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&pairs)
        .finish();
    format!("{}/authorize?{query}", app.base())
}

/// Follows an authorization URL as `user` (signing in when asked) to the
/// consent page and allows it; the URL teamgate sends the browser back to.
pub(crate) async fn consent(app: &TestApp, browser: &Browser, url: &str, user: &str) -> String {
    let mut response = browser.get(url).await;
    if response.status() == StatusCode::SEE_OTHER
        && response.headers()["location"].to_str().unwrap() == "/portal/login"
    {
        let callback = browser.authorize(app, user).await;
        let back = browser.get(&callback).await;
        let to = back.headers()["location"].to_str().unwrap().to_owned();
        assert!(to.starts_with("/authorize?"), "back to the request: {to}");
        response = browser.get(&format!("{}{to}", app.base())).await;
    }
    assert_eq!(response.status(), StatusCode::OK, "the consent page");
    let html = response.text().await.unwrap();
    assert!(html.contains("Allow access?"), "{html}");
    let mut form: Vec<(String, String)> = html
        .split("<input type=\"hidden\" name=\"")
        .skip(1)
        .filter_map(|rest| {
            let name = rest.split('"').next()?;
            Some((name.to_owned(), hidden(&format!("name=\"{rest}"), name)?))
        })
        .collect();
    form.push(("decision".into(), "allow".into()));
    let decoded: Vec<(String, String)> = form
        .into_iter()
        .map(|(k, v)| (k, v.replace("&amp;", "&").replace("&quot;", "\"")))
        .collect();
    let pairs: Vec<(&str, &str)> = decoded
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let answer = browser
        .post(&format!("{}/portal/authorize", app.base()), &pairs)
        .await;
    if answer.status() != StatusCode::SEE_OTHER {
        panic!(
            "consent: {} {pairs:?} {}",
            answer.status(),
            answer.text().await.unwrap()
        );
    }
    answer.headers()["location"].to_str().unwrap().to_owned()
}

/// The query parameter `name` of `url`.
pub(crate) fn param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

pub(crate) async fn token(app: &TestApp, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let response = teamgate::outbound::client()
        .post(format!("{}/token", app.base()))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `tools/list` with `token`: the HTTP status and the number of tools.
pub(crate) async fn tools_with(app: &TestApp, token: &str) -> (u16, usize) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, text) = send(app, token, &body, &headers).await;
    let count = reply(&text)["result"]["tools"]
        .as_array()
        .map_or(0, Vec::len);
    (status, count)
}

/// Signs `user` in and consents: (code, verifier) for `client`.
pub(crate) async fn code_for(app: &TestApp, client: &str, user: &str) -> (String, String) {
    let (verifier, challenge) = pkce();
    let browser = Browser::new();
    let url = authorize_url(app, client, REDIRECT, &challenge, &[]);
    let back = consent(app, &browser, &url, user).await;
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    assert_eq!(
        param(&back, "iss").as_deref(),
        Some(format!("{}/mcp", app.base()).as_str())
    );
    (param(&back, "code").expect("a code"), verifier)
}

#[tokio::test]
async fn oauth_metadata_is_listed_and_served() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let http = teamgate::outbound::client();
    let prm: Value = http
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            app.base()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = format!("{}/mcp", app.base());
    assert_eq!(prm["authorization_servers"][0], issuer.as_str());
    for path in [
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration/mcp",
        "/.well-known/oauth-authorization-server",
    ] {
        let doc: Value = http
            .get(format!("{}{path}", app.base()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["issuer"], issuer.as_str(), "{path}");
        assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            doc["registration_endpoint"],
            format!("{}/register", app.base())
        );
    }
    // A browser-based client (the Inspector) registers from its own origin, preflight
    // included; the MCP endpoint still refuses that origin.
    let inspector = "http://localhost:6274";
    let preflight = |path: &str| {
        http.request(reqwest::Method::OPTIONS, format!("{}{path}", app.base()))
            .header("origin", inspector)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
    };
    let allowed = preflight("/register").await.unwrap();
    assert_eq!(
        allowed
            .headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().unwrap()),
        Some(inspector)
    );
    let mcp = preflight("/mcp").await.unwrap();
    assert!(mcp.headers().get("access-control-allow-origin").is_none());
    let registered = http
        .post(format!("{}/register", app.base()))
        .header("origin", inspector)
        .json(&json!({"redirect_uris": ["http://localhost:6274/oauth/callback"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), StatusCode::CREATED);
    // The 401 points at the metadata.
    let (status, _) = tools_with(&app, "nothing").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn oauth_full_flow_signs_in_calls_refreshes_and_revokes() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, "http://127.0.0.1/callback").await;
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let (status, tokens) = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client),
            ("code_verifier", &verifier),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let (status, count) = tools_with(&app, &access).await;
    assert_eq!(status, 200);
    assert!(count > 0, "ann's groups allow tools");
    // The key set verifies it: ES256 with a published kid.
    let jwks: Value = teamgate::outbound::client()
        .get(format!("{}/.well-known/jwks.json", app.base()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["alg"], "ES256");
    assert!(
        jwks["keys"][0].get("d").is_none(),
        "no private part published"
    );

    let (status, renewed) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    let access2 = renewed["access_token"].as_str().unwrap().to_owned();
    assert_ne!(renewed["refresh_token"], tokens["refresh_token"], "rotated");
    assert_eq!(tools_with(&app, &access2).await.0, 200);

    // ann sees the client in the portal and revokes it: its tokens stop.
    let browser = Browser::sign_in(&app, "ann").await;
    let page = browser
        .get(&format!("{}/portal/clients", app.base()))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Test client"), "{page}");
    let id = page
        .split("/portal/clients/")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let csrf = hidden(&page, "csrf").unwrap();
    let done = browser
        .post(
            &format!("{}/portal/clients/{id}/revoke", app.base()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        tools_with(&app, &access2).await.0,
        401,
        "a revoked grant's access token is refused"
    );
    let (status, body) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", renewed["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    // Every step is audited, and no secret is in the audit trail.
    let wanted = [
        "oauth/grant",
        "oauth/token",
        "oauth/refresh",
        "portal/clients/revoke",
    ];
    let mut records = Vec::new();
    for _ in 0..50 {
        let filter = AuditFilter {
            limit: 200,
            ..AuditFilter::default()
        };
        records = app.store.audit_search(&filter).await.unwrap();
        if wanted
            .iter()
            .all(|m| records.iter().any(|r| r.method == *m))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let methods: Vec<&str> = records.iter().map(|r| r.method.as_str()).collect();
    for method in wanted {
        assert!(methods.contains(&method), "{method} in {methods:?}");
    }
    let all = format!("{records:?}");
    for secret in [&code, &verifier, &refresh, &access] {
        assert!(
            !all.contains(secret.as_str()),
            "a secret in the audit trail"
        );
    }
}

/// The audit records of `method`, waiting up to 5 s for the audit queue.
pub(crate) async fn audited(app: &TestApp, method: &str) -> Vec<teamgate::store::AuditRecord> {
    for _ in 0..50 {
        let filter = AuditFilter {
            limit: 200,
            ..AuditFilter::default()
        };
        let found: Vec<_> = app
            .store
            .audit_search(&filter)
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.method == method)
            .collect();
        if !found.is_empty() {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Vec::new()
}
