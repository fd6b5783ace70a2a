//! Item 9: an upstream authorization server's `authorization_endpoint`
//! becomes the portal's `Location` only when it is https, or http on the
//! upstream's own loopback address; `javascript:` and the like never do.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::{
    portal_idp::Browser,
    sec44_upoauth::{Liar, fronting, refused, start_url},
};

#[tokio::test]
async fn only_https_or_the_upstreams_own_loopback_becomes_the_location() {
    let liar = Liar::start().await;
    let (app, idp) = fronting(&liar, None).await;
    let ann = Browser::sign_in(&app, "ann").await;
    let start = start_url(&app);
    liar.say(|s| s.issuer = liar.origin.clone());
    let server = |authorize: &str| {
        json!({
            "issuer": liar.origin,
            "authorization_endpoint": authorize,
            "token_endpoint": format!("{}/token", idp.issuer),
            "registration_endpoint": format!("{}/reg", idp.issuer),
        })
    };
    for at in [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "http://93.184.215.14/authorize",
        "http://127.0.0.2:9/authorize",
        "https://user:pw@login.example.com/authorize",
    ] {
        liar.say(|s| s.server = server(at));
        let response = ann.get(&start).await;
        assert!(
            response.headers().get("location").is_none(),
            "{at} became the Location"
        );
        let text = refused(response).await;
        assert!(text.contains("authorization endpoint"), "{at}: {text}");
    }

    // The provider on the upstream's own loopback address, over http: sent.
    let own = format!("{}/auth", idp.issuer);
    liar.say(|s| s.server = server(&own));
    let mut response = ann.get(&start).await;
    for _ in 0..3 {
        if response.status() != StatusCode::BAD_GATEWAY {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        response = ann.get(&start).await;
    }
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{}", response.status()));
    assert!(location.starts_with(&own), "{location}");
}
