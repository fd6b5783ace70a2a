//! Authentication and authorization through the real endpoint: every
//! rejection case, scopes, session ownership, metadata and the audit trail.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::{
    auth::PersonalTokens,
    config::{AuthMode, IssuerConfig},
};

use crate::{
    helpers::{TestApp, audit_until, messages, spawn_app_with},
    idp::Idp,
};

use futures::StreamExt;

mod audit;
mod tokens;

async fn secured(idp: &Idp) -> TestApp {
    let issuer = IssuerConfig {
        issuer: idp.issuer.clone(),
        jwks_url: String::new(), // discovered
        audience: String::new(),
        algorithms: vec!["ES256".into(), "RS256".into()],
        user_claim: "preferred_username".into(),
        user_prefix: None,
    };
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.auth.oauth.issuers = vec![issuer];
        c.auth.oauth.jwks_refresh_min_interval = Duration::from_secs(60);
    })
    .await
}

async fn token(app: &TestApp, user: &str, scopes: &[&str], expires: Option<Duration>) -> String {
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let scopes = scopes.iter().map(|s| s.to_string()).collect();
    tokens
        .create(user, "test", scopes, expires)
        .await
        .unwrap()
        .token
}

fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
}

async fn initialize_with(app: &TestApp, authorization: &str) -> reqwest::Response {
    app.post(&initialize_body(), &[("authorization", authorization)])
        .await
}

/// Initializes a session as the bearer of `token`.
async fn session_of(app: &TestApp, token: &str) -> String {
    let response = initialize_with(app, &format!("Bearer {token}")).await;
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn every_bad_credential_is_refused_with_a_challenge() {
    let idp = Idp::start().await;
    let app = secured(&idp).await;
    let resource = app.url.clone();
    let good = token(&app, "alice", &["*"], None).await;
    let expired = token(&app, "alice", &["*"], Some(Duration::from_millis(1))).await;
    let revoked = token(&app, "alice", &["*"], None).await;
    let revoked_id = revoked.split('_').nth(1).unwrap().to_owned();
    assert!(app.store.revoke_token(&revoked_id).await.unwrap());
    let (wrong_secret, _) = good.rsplit_once('_').unwrap();
    let wrong = format!("{wrong_secret}_{}", "0".repeat(64));
    tokio::time::sleep(Duration::from_millis(20)).await;

    let now = jsonwebtoken::get_current_timestamp() as i64;
    let claims = idp.claims(&resource, "bob", "tools:*");
    let mut expired_jwt = claims.clone();
    expired_jwt["exp"] = json!(now - 3600);
    let mut future_jwt = claims.clone();
    future_jwt["nbf"] = json!(now + 3600);
    let mut other_issuer = claims.clone();
    other_issuer["iss"] = json!("https://evil.example.com");
    let other_audience = idp.claims("https://other.example.com/mcp", "bob", "tools:*");
    let valid_jwt = idp.sign(&claims);
    let (head, rest) = valid_jwt.split_once('.').unwrap();
    let (payload, _) = rest.split_once('.').unwrap();
    let tampered = format!("{head}.{payload}.{}", "A".repeat(86));

    let cases: Vec<(&str, String)> = vec![
        ("malformed", "Bearer not-a-token".into()),
        ("basic", "Basic YWxpY2U6c2VjcmV0".into()),
        ("wrong secret", format!("Bearer {wrong}")),
        ("expired personal token", format!("Bearer {expired}")),
        ("revoked personal token", format!("Bearer {revoked}")),
        ("expired jwt", format!("Bearer {}", idp.sign(&expired_jwt))),
        (
            "not yet valid jwt",
            format!("Bearer {}", idp.sign(&future_jwt)),
        ),
        (
            "wrong issuer",
            format!("Bearer {}", idp.sign(&other_issuer)),
        ),
        (
            "wrong audience",
            format!("Bearer {}", idp.sign(&other_audience)),
        ),
        ("alg none", format!("Bearer {}", idp.unsigned(&claims))),
        ("alg confusion", format!("Bearer {}", idp.confused(&claims))),
        (
            "unknown kid",
            format!("Bearer {}", idp.sign_with_kid(&claims, "rotated-away")),
        ),
        ("tampered signature", format!("Bearer {tampered}")),
    ];
    let missing = app.post(&initialize_body(), &[]).await;
    assert_eq!(missing.status(), 401, "missing");
    // The refused POST's body was never read: the reply says the connection
    // closes, so a client does not reuse one hyper is about to drop.
    assert_eq!(missing.headers()["connection"], "close", "missing");
    let bodiless = app
        .client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(bodiless.status(), 401);
    assert!(bodiless.headers().get("connection").is_none());
    for (name, authorization) in cases {
        let response = initialize_with(&app, &authorization).await;
        assert_eq!(response.status(), 401, "{name}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            challenge.starts_with("Bearer resource_metadata=\"http://127.0.0.1:"),
            "{name}: {challenge}"
        );
        assert!(
            challenge.contains("/.well-known/oauth-protected-resource/mcp"),
            "{name}"
        );
        let body: Value = response.json().await.unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().len() > 5,
            "{name}: {body}"
        );
        assert!(
            !body.to_string().contains(&good),
            "{name}: no secret echoed"
        );
    }
    let query = app
        .client
        .post(format!("{}?access_token={good}", app.url))
        .header("content-type", "application/json")
        .header("accept", crate::helpers::ACCEPT_BOTH)
        .body(initialize_body().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        query.status(),
        401,
        "tokens in the query string are never accepted"
    );

    assert_eq!(
        initialize_with(&app, &format!("Bearer {good}"))
            .await
            .status(),
        200
    );
    assert_eq!(
        initialize_with(&app, &format!("Bearer {valid_jwt}"))
            .await
            .status(),
        200
    );
    let uppercase = idp.claims(
        &resource.replace("http://127.0.0.1", "HTTP://127.0.0.1"),
        "bob",
        "",
    );
    assert_eq!(
        initialize_with(&app, &format!("Bearer {}", idp.sign(&uppercase)))
            .await
            .status(),
        200,
        "RFC 8707: uppercase scheme variants of the resource are the same audience"
    );
}

#[tokio::test]
async fn scopes_filter_lists_and_refuse_calls_with_403() {
    let idp = Idp::start().await;
    let app = secured(&idp).await;
    let narrow = token(&app, "carol", &["tools:test_simple_text"], None).await;
    let session = session_of(&app, &narrow).await;
    let auth = format!("Bearer {narrow}");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("authorization", auth.as_str()),
    ];
    let listed = messages(
        app.post(
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
            &headers,
        )
        .await,
    )
    .await;
    let names: Vec<&str> = listed[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["test_simple_text"],
        "a caller sees only what it may use"
    );
    let allowed = messages(app.post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text"}}), &headers).await).await;
    assert!(allowed[0]["result"].is_object());

    let refused = app.post(&json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_error_handling","arguments":{"password":"hunter2"}}}), &headers).await;
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"tools:test_error_handling\""),
        "{challenge}"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["id"], 4);

    // A JWT with scp works the same way.
    let jwt = idp.sign(
        &json!({"iss": idp.issuer, "aud": app.url, "sub": "s-dan", "preferred_username": "dan",
        "scp": ["prompts:*"], "exp": jsonwebtoken::get_current_timestamp() + 600}),
    );
    let modern = app
        .post(&json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_simple_text","_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}),
            &[("authorization", &format!("Bearer {jwt}")), ("mcp-protocol-version", "2026-07-28"),
              ("mcp-method", "tools/call"), ("mcp-name", "test_simple_text")])
        .await;
    assert_eq!(modern.status(), 403);

    // The refusal is audited, with a digest of the arguments, never the arguments.
    let records = audit_until(&app.store, Some("carol"), |r| r.len() >= 2).await;
    let denied = records
        .iter()
        .find(|r| r.outcome.starts_with("denied"))
        .expect("refusal audited");
    assert_eq!(denied.target, "test_error_handling");
    assert_eq!(denied.args_digest.len(), 64);
    let ok = records
        .iter()
        .find(|r| r.outcome == "ok")
        .expect("call audited");
    assert_eq!(ok.token_id.len(), 12);
    assert!(!format!("{records:?}").contains("hunter2"));
}

#[tokio::test]
async fn sessions_belong_to_their_owner() {
    let idp = Idp::start().await;
    let app = secured(&idp).await;
    let alice = token(&app, "alice", &["*"], None).await;
    let mallory = token(&app, "mallory", &["*"], None).await;
    let session = session_of(&app, &alice).await;
    let as_mallory = format!("Bearer {mallory}");
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
        ("authorization", as_mallory.as_str()),
    ];
    let post = app
        .post(
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
            &headers,
        )
        .await;
    assert_eq!(post.status(), 404, "POST into another's session");
    let mut get = app
        .client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .header("last-event-id", "0.0");
    for (k, v) in headers {
        get = get.header(k, v);
    }
    assert_eq!(
        get.send().await.unwrap().status(),
        404,
        "GET stream or replay of another's session"
    );
    let mut delete = app.client.delete(&app.url);
    for (k, v) in headers {
        delete = delete.header(k, v);
    }
    assert_eq!(
        delete.send().await.unwrap().status(),
        404,
        "DELETE of another's session"
    );
    // The owner still has it.
    let as_alice = format!("Bearer {alice}");
    let own = app
        .post(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
                ("authorization", as_alice.as_str()),
            ],
        )
        .await;
    assert_eq!(own.status(), 200);
}

#[tokio::test]
async fn protected_resource_metadata_names_this_endpoint() {
    let idp = Idp::start().await;
    let app = secured(&idp).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = app
            .client
            .get(format!("{}{path}", app.base()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["resource"], app.url, "{path}");
        assert_eq!(doc["authorization_servers"], json!([idp.issuer]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert!(
            doc["scopes_supported"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        );
    }
}
