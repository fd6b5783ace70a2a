//! Streams end with an OAuth credential (issue 44 item 5): a 2025-era GET
//! stream and a `subscriptions/listen` stream opened with an external
//! issuer's JWT end at its `exp`, and opened with one of teamgate's own
//! access tokens end when its grant is revoked, as a personal token's do.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use teamgate::config::{AuthMode, IssuerConfig};

use crate::{
    helpers::{TestApp, spawn_app_with},
    idp::Idp,
    oauth_flow::{REDIRECT, code_for, oauth_app, register, token},
    sec_authz::{listen, open_session},
};

/// Both kinds of stream of the bearer of `bearer`, each read in a task that
/// answers how long after `since` its body ended (`None`: open at `within`).
async fn streams(
    app: &TestApp,
    bearer: &str,
    within: Duration,
) -> Vec<(&'static str, tokio::task::JoinHandle<Option<Duration>>)> {
    let session = open_session(app, bearer).await;
    let get = (app.client.get(&app.url))
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {bearer}"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let listened = listen(app, bearer, json!({"toolsListChanged": true}), None).await;
    let since = tokio::time::Instant::now();
    [("GET", get), ("listen", listened)]
        .into_iter()
        .map(|(name, mut stream)| {
            let ended = tokio::spawn(async move {
                loop {
                    match tokio::time::timeout_at(since + within, stream.chunk()).await {
                        Err(_) => return None,
                        Ok(Ok(Some(_))) => continue,
                        Ok(Ok(None) | Err(_)) => return Some(since.elapsed()),
                    }
                }
            });
            (name, ended)
        })
        .collect()
}

#[tokio::test]
async fn streams_opened_with_an_external_jwt_end_when_it_expires() {
    let idp = Idp::start().await;
    let issuer = IssuerConfig {
        issuer: idp.issuer.clone(),
        jwks_url: String::new(),
        audience: String::new(),
        algorithms: vec!["ES256".into()],
        user_claim: "preferred_username".into(),
        user_prefix: None,
    };
    let app = spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.auth.oauth.issuers = vec![issuer];
        c.auth.oauth.leeway = Duration::ZERO;
    })
    .await;
    let mut claims = idp.claims(&app.url, "bob", "*");
    let expires_in = 4;
    claims["exp"] = json!(jsonwebtoken::get_current_timestamp() + expires_in);
    let jwt = idp.sign(&claims);
    for (name, ended) in streams(&app, &jwt, Duration::from_secs(expires_in + 6)).await {
        let after = ended.await.unwrap();
        let after = after.unwrap_or_else(|| panic!("the {name} stream outlived its token"));
        // Opened a moment after signing: ends within the token's life, not long after it.
        assert!(
            after <= Duration::from_secs(expires_in + 2),
            "{name}: {after:?}"
        );
        assert!(
            after >= Duration::from_secs(1),
            "{name} ended before expiry: {after:?}"
        );
    }
}

#[tokio::test]
async fn streams_opened_with_teamgates_own_token_end_when_its_grant_is_revoked() {
    let (app, _idp) = oauth_app(|_| {}).await;
    let client = register(&app, "http://127.0.0.1/callback").await;
    let (code, verifier) = code_for(&app, &client, "ann").await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("client_id", client.as_str()),
        ("code_verifier", verifier.as_str()),
    ];
    let (status, tokens) = token(&app, &form).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let open = streams(&app, &access, Duration::from_secs(12)).await;
    // Open and serving for a while first: nothing ends them but the revocation.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (name, ended) in &open {
        assert!(
            !ended.is_finished(),
            "the {name} stream ended before the revocation"
        );
    }
    let revoke = (app.client.post(format!("{}/revoke", app.base())))
        .form(&[("token", access.as_str()), ("client_id", client.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status(), 200);
    for (name, ended) in open {
        let after = ended.await.unwrap();
        let after = after.unwrap_or_else(|| panic!("the {name} stream outlived its grant"));
        // Revoked at ~3 s; the grant is checked every 2 s.
        assert!(after <= Duration::from_secs(7), "{name}: {after:?}");
    }
}
