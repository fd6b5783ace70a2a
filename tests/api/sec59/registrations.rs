//! Item 4: the registration cap is not one pool an attacker can drain.
//! The per-address limit keys IPv6 by /64 (one host holds a whole /64),
//! and clients registered but never used to sign in stop counting against
//! the 500-an-hour cap after minutes. Time is the store's manual clock.

use std::sync::Arc;

use reqwest::{Response, StatusCode};
use serde_json::json;
use teamgate::store::{Clock, ManualClock, OAuthClientRow, OAuthRepo};

use crate::{helpers::TestApp, portal_idp::portal_app_with};

async fn register_from(app: &TestApp, address: &str) -> Response {
    teamgate::outbound::client()
        .post(format!("{}/register", app.base()))
        .header("x-forwarded-for", address)
        .json(&json!({"client_name": "Editor", "redirect_uris": ["http://127.0.0.1/cb"]}))
        .send()
        .await
        .unwrap()
}

/// `n` clients registered at `at_ms` and never used.
async fn flood(app: &TestApp, n: usize, at_ms: i64) {
    for i in 0..n {
        let row = OAuthClientRow {
            client_id: format!("tgc_flood_{at_ms}_{i}"),
            name: "Flood".into(),
            redirect_uris: vec!["https://evil.example/cb".into()],
            created_ms: at_ms,
        };
        app.store.add_oauth_client(&row).await.unwrap();
    }
}

#[tokio::test]
async fn an_ipv6_64_is_one_address_and_unused_clients_stop_counting() {
    let clock = Arc::new(ManualClock::new(teamgate::store::SystemClock.now_ms()));
    let (app, _idp) = portal_app_with(clock.clone(), |c| {
        c.authorization_server = Some(serde_json::from_value(json!({"enabled": true})).unwrap());
        c.server.trusted_proxies = vec!["127.0.0.1/32".into()];
        c.rate_limit.enabled = true;
        c.rate_limit.unauthenticated_per_minute = 60;
        c.rate_limit.unauthenticated_burst = 5;
    })
    .await;

    // Ten addresses of one /64 share one quota; another /64 has its own.
    let mut statuses = Vec::new();
    for host in 1..=10 {
        let response = register_from(&app, &format!("2001:db8:1:2::{host:x}")).await;
        statuses.push(response.status().as_u16());
    }
    assert_eq!(&statuses[..5], &[201; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    let other = register_from(&app, "2001:db8:1:3::1").await;
    assert_eq!(other.status(), StatusCode::CREATED);

    // 500 clients registered 20 minutes ago and never used: a real client
    // still registers.
    flood(&app, 500, clock.now_ms() - 20 * 60 * 1000).await;
    let real = register_from(&app, "203.0.113.1").await;
    assert_eq!(real.status(), StatusCode::CREATED, "the cap was drained");

    // 500 just now: the cap holds while they may still be signing in...
    flood(&app, 500, clock.now_ms()).await;
    let waits = register_from(&app, "203.0.113.2").await;
    assert_eq!(waits.status(), StatusCode::TOO_MANY_REQUESTS);
    // ...and minutes later, none of them used, it is free again.
    clock.advance(11 * 60 * 1000);
    let again = register_from(&app, "203.0.113.3").await;
    assert_eq!(again.status(), StatusCode::CREATED);
}
