//! Toolsets and sign-in (issue 60): groups come from the real OpenID
//! provider. A member in one of a toolset's groups gets, from teamgate's
//! authorization server, a token for that toolset's endpoint (RFC 8707
//! `resource`) that works there and nowhere else; a member of no such group
//! is refused before any consent.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;
use teamgate::store::SystemClock;

use crate::{
    oauth_flow::{REDIRECT, authorize_url, consent, param, pkce, register, token},
    portal_idp::{Browser, portal_app_with},
    toolsets::names,
};

#[tokio::test]
async fn a_token_for_a_toolsets_endpoint_goes_to_its_groups_and_works_only_there() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), |c| {
        let authz = json!({"enabled": true});
        c.authorization_server = Some(serde_json::from_value(authz).unwrap());
        c.toolsets = vec![
            serde_json::from_value(
                json!({"name": "devs", "include": ["test_simple_text"], "groups": ["dev"]}),
            )
            .unwrap(),
        ];
    })
    .await;
    let client = register(&app, "http://127.0.0.1/callback").await;
    let resource = format!("{}/mcp/devs", app.base());

    // ann is in `dev` at the provider.
    let (verifier, challenge) = pkce();
    let url = authorize_url(
        &app,
        &client,
        REDIRECT,
        &challenge,
        &[("resource", &resource)],
    );
    let back = consent(&app, &Browser::new(), &url, "ann").await;
    let code = param(&back, "code").expect("a code");
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
    let access = tokens["access_token"].as_str().unwrap();
    let listed = names(&app, "/mcp/devs", access).await;
    assert_eq!(listed.into_iter().collect::<Vec<_>>(), ["test_simple_text"]);
    // Its audience is that endpoint (RFC 8707): /mcp refuses it.
    let payload = access.split('.').nth(1).unwrap();
    let payload =
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(claims["aud"], resource, "{claims}");
    let (status, reply) =
        crate::toolsets::call(&app, "/mcp", access, 3, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{reply}");

    // bob is in `ops` only: refused at /authorize, with the groups named.
    let (_, challenge) = pkce();
    let url = authorize_url(
        &app,
        &client,
        REDIRECT,
        &challenge,
        &[("resource", &resource)],
    );
    let browser = Browser::sign_in(&app, "bob").await;
    let refused = browser.get(&url).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let page = refused.text().await.unwrap();
    assert!(page.contains("ops") && page.contains("devs"), "{page}");
    // A resource that is no endpoint here is refused as before.
    let url = authorize_url(
        &app,
        &client,
        REDIRECT,
        &challenge,
        &[("resource", &format!("{}/mcp/nope", app.base()))],
    );
    assert_eq!(browser.get(&url).await.status(), StatusCode::BAD_REQUEST);
}
