//! The authorization server's refusals (issue 28): a wrong PKCE verifier, a
//! reused code (which revokes what it gave), an unregistered redirect URI,
//! a `resource` of another server, a refresh token reused after rotation
//! (the family is revoked), Client ID Metadata Documents that are too
//! large, slow or redirect, and a token for another audience at `/mcp`.

use std::time::Duration;

use axum::{Json, Router, response::Redirect, routing::get};
use base64::Engine;
use reqwest::StatusCode;
use serde_json::json;
use teamgate::store::OAuthRepo;

use crate::{
    oauth_flow::{
        REDIRECT, audited, authorize_url, code_for, oauth_app, pkce, register, token, tools_with,
    },
    portal_idp::Browser,
};

fn exchange<'a>(code: &'a str, client: &'a str, verifier: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("client_id", client),
        ("code_verifier", verifier),
    ]
}

#[tokio::test]
async fn oauth_wrong_verifier_and_reused_code_are_refused() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let (code, _verifier) = code_for(&app, &client, "ann").await;
    let (wrong, _) = pkce();
    let (status, body) = token(&app, &exchange(&code, &client, &wrong)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{body}"
    );

    // A code used once, then replayed: the replay fails and the tokens it gave die.
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let (status, tokens) = token(&app, &exchange(&code, &client, &verifier)).await;
    assert_eq!(status, StatusCode::OK);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(tools_with(&app, access).await.0, 200);
    let (status, body) = token(&app, &exchange(&code, &client, &verifier)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    assert_eq!(
        tools_with(&app, access).await.0,
        401,
        "the reused code's grant is revoked"
    );
    let reuse = audited(&app, "oauth/code_reused").await;
    assert_eq!(
        reuse.first().map(|r| r.user.as_str()),
        Some("ann"),
        "audited under the member"
    );
    let (status, body) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    // Nonsense is an OAuth error, never a crash.
    let (status, body) = token(&app, &[("grant_type", "password")]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("unsupported_grant_type"))
    );
}

#[tokio::test]
async fn oauth_refresh_reuse_after_rotation_revokes_the_family() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let (code, verifier) = code_for(&app, &client, "bob").await;
    let (_, first) = token(&app, &exchange(&code, &client, &verifier)).await;
    let old = first["refresh_token"].as_str().unwrap().to_owned();
    let (status, second) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &old),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let access = second["access_token"].as_str().unwrap();
    assert_eq!(tools_with(&app, access).await.0, 200);
    // The rotated-out token again: refused, and the newest tokens die with it.
    let (status, body) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &old),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, _) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", second["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the family is revoked");
    assert_eq!(tools_with(&app, access).await.0, 401);
}

#[tokio::test]
async fn oauth_bad_redirect_and_foreign_resource_are_refused() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let browser = Browser::sign_in(&app, "ann").await;
    let (_, challenge) = pkce();
    // Not registered: a page here, never a redirect to it.
    let url = authorize_url(
        &app,
        &client,
        "http://127.0.0.1:9/elsewhere",
        &challenge,
        &[],
    );
    let response = browser.get(&url).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let url = authorize_url(
        &app,
        &client,
        "https://evil.example/callback",
        &challenge,
        &[],
    );
    assert_eq!(browser.get(&url).await.status(), StatusCode::BAD_REQUEST);
    // Another server's resource: a page, never a redirect before consent
    // (RFC 9700 §4.11.2; sec44_authz::redirect).
    let url = authorize_url(
        &app,
        &client,
        REDIRECT,
        &challenge,
        &[("resource", "https://other.example/mcp")],
    );
    let response = browser.get(&url).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
    // No PKCE: refused the same way.
    let url = authorize_url(
        &app,
        &client,
        REDIRECT,
        "",
        &[("code_challenge_method", "plain")],
    );
    let response = browser.get(&url).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
    // An unknown client: a page.
    let url = authorize_url(&app, "tgc_unknown", REDIRECT, &challenge, &[]);
    assert_eq!(browser.get(&url).await.status(), StatusCode::BAD_REQUEST);
}

/// A loopback server of Client ID Metadata Documents; its base URL.
async fn cimd_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let ok_id = format!("{base}/ok.json");
    let app = Router::new()
        .route("/ok.json", get(move || async move { Json(json!({"client_id": ok_id, "client_name": "CIMD client", "redirect_uris": ["http://127.0.0.1/callback"]})) }))
        .route("/big.json", get(|| async { "x".repeat(10_000) }))
        .route("/slow.json", get(|| async { tokio::time::sleep(Duration::from_secs(5)).await; "{}" }))
        .route("/redirect.json", get(|| async { Redirect::temporary("/ok.json") }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn oauth_cimd_client_signs_in_and_bad_documents_are_refused() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let base = cimd_server().await;
    let client = format!("{base}/ok.json");
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let (status, tokens) = token(&app, &exchange(&code, &client, &verifier)).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let browser = Browser::sign_in(&app, "ann").await;
    let (_, challenge) = pkce();
    for (doc, why) in [
        ("big.json", "too large"),
        ("slow.json", "too long"),
        ("redirect.json", "redirects"),
    ] {
        let url = authorize_url(&app, &format!("{base}/{doc}"), REDIRECT, &challenge, &[]);
        let started = std::time::Instant::now();
        let response = browser.get(&url).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{doc}");
        let page = response.text().await.unwrap();
        assert!(page.contains(why), "{doc}: {page}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{doc} bounded in time"
        );
    }
}

#[tokio::test]
async fn oauth_token_for_another_audience_is_refused_at_mcp() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, REDIRECT).await;
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let (_, tokens) = token(&app, &exchange(&code, &client, &verifier)).await;
    assert_eq!(
        tools_with(&app, tokens["access_token"].as_str().unwrap())
            .await
            .0,
        200
    );
    // Teamgate's own key and a live grant, but for another resource.
    let key = app.store.oauth_keys(0).await.unwrap().remove(0);
    let grant = app.store.oauth_grants(None).await.unwrap().remove(0);
    let der = base64::engine::general_purpose::STANDARD
        .decode(&key.private_pkcs8)
        .unwrap();
    let issuer = format!("{}/mcp", app.base());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sign = |aud: &str| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(key.kid.clone());
        let claims = json!({"iss": issuer, "aud": aud, "member": "ann", "scope": "tools:*", "grant": grant.id, "exp": now + 300});
        jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_ec_der(&der),
        )
        .unwrap()
    };
    assert_eq!(
        tools_with(&app, &sign(&issuer)).await.0,
        200,
        "the same claims for this server pass"
    );
    assert_eq!(
        tools_with(&app, &sign("https://other.example/mcp")).await.0,
        401
    );
    // Another teamgate's token is not this one's either.
    let (other, _idp2) = oauth_app(|_| {}).await;
    let client = register(&other, REDIRECT).await;
    let (code, verifier) = code_for(&other, &client, "ann").await;
    let (_, tokens) = token(&other, &exchange(&code, &client, &verifier)).await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(tools_with(&other, access).await.0, 200);
    assert_eq!(tools_with(&app, access).await.0, 401);
}

#[tokio::test]
async fn oauth_registration_can_be_off_and_a_member_without_scopes_is_refused() {
    let (app, _idp) = oauth_app(|c| {
        c.insert("dynamic_registration".into(), json!(false));
    })
    .await;
    let http = teamgate::outbound::client();
    let refused = http
        .post(format!("{}/register", app.base()))
        .json(&json!({"redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let doc: serde_json::Value = http
        .get(format!(
            "{}/.well-known/oauth-authorization-server/mcp",
            app.base()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc.get("registration_endpoint").is_none(), "{doc}");
    // dan's group grants no scope: a page (he saw no consent page), no code.
    let base = cimd_server().await;
    let client = format!("{base}/ok.json");
    let browser = Browser::sign_in(&app, "dan").await;
    let (_, challenge) = pkce();
    let response = browser
        .get(&authorize_url(&app, &client, REDIRECT, &challenge, &[]))
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
    let page = response.text().await.unwrap();
    assert!(page.contains("none of the scopes"), "{page}");
}
