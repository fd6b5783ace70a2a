//! Item 8 (and item 9's limit): the per-address limit on unauthenticated
//! traffic (`rate_limit.unauthenticated_*`) stands in front of the portal's
//! and the authorization server's open routes, so one address is refused
//! with 429 and `Retry-After` long before the global registration cap, and
//! another address still registers and signs in. Behind a trusted proxy on
//! loopback the address is the one its `X-Forwarded-For` names.

use std::sync::Arc;

use reqwest::{Response, StatusCode, header};
use serde_json::json;
use teamgate::store::SystemClock;

use crate::{helpers::TestApp, portal_idp::portal_app_with};

async fn register_from(app: &TestApp, address: &str) -> Response {
    teamgate::outbound::client()
        .post(format!("{}/register", app.base()))
        .header("x-forwarded-for", address)
        .json(&json!({"client_name": "Flood", "redirect_uris": ["https://evil.example/cb"]}))
        .send()
        .await
        .unwrap()
}

async fn get_from(app: &TestApp, path: &str, address: &str) -> Response {
    teamgate::outbound::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}{path}", app.base()))
        .header("x-forwarded-for", address)
        .send()
        .await
        .unwrap()
}

fn refused(response: &Response, what: &str) {
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{what}");
    let wait: u64 = response.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{what}: Retry-After {wait}");
}

#[tokio::test]
async fn one_address_cannot_use_up_registration_or_sign_in() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), |c| {
        c.authorization_server = Some(serde_json::from_value(json!({"enabled": true})).unwrap());
        c.server.trusted_proxies = vec!["127.0.0.1/32".into()];
        c.rate_limit.enabled = true;
        c.rate_limit.unauthenticated_per_minute = 60;
        c.rate_limit.unauthenticated_burst = 5;
    })
    .await;
    let flood = "203.0.113.10";
    let mut statuses = Vec::new();
    let mut last = None;
    for _ in 0..20 {
        let response = register_from(&app, flood).await;
        statuses.push(response.status().as_u16());
        last = Some(response);
    }
    assert_eq!(&statuses[..5], &[201; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    refused(&last.unwrap(), "register");
    // The same address's sign-in, authorization and token requests wait too.
    refused(&get_from(&app, "/portal/login", flood).await, "login");
    refused(
        &get_from(&app, "/authorize?client_id=x", flood).await,
        "authorize",
    );
    let token = teamgate::outbound::client()
        .post(format!("{}/token", app.base()))
        .header("x-forwarded-for", flood)
        .form(&[("grant_type", "refresh_token"), ("refresh_token", "x")])
        .send()
        .await
        .unwrap();
    refused(&token, "token");
    // Another address is untouched: it registers and starts a sign-in.
    let other = "203.0.113.20";
    assert_eq!(
        register_from(&app, other).await.status(),
        StatusCode::CREATED
    );
    let login = get_from(&app, "/portal/login", other).await;
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    // The global cap was never near: 6 clients were registered.
    let hour_ago = app.store.now_ms() - 3_600_000;
    assert_eq!(app.store.oauth_clients_since(hour_ago).await.unwrap(), 6);
}
