//! Issue 44 item 6: the URLs an upstream's 401 and metadata name are
//! reached only under `tools.http_allowlist`, over https on a public
//! address, or, for an upstream on loopback, on its own loopback address.
//! The upstream here is on 127.0.0.1; a bait server on 127.0.0.2 (loopback,
//! but not the upstream's address) counts every request that reaches it,
//! and the cloud metadata and private addresses are refused before any
//! connection is tried (the test would wait out the timeout otherwise).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::json;
use teamgate::{registry::oauth::TokenSet, store::Vault};

use super::{Liar, SEALING_KEY, fronting, refused, start_url};
use crate::{
    credentials::Logs,
    portal_idp::{Browser, hidden},
};

/// A server on 127.0.0.2 counting the requests it gets; its origin.
async fn bait() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let app = axum::Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async { StatusCode::NOT_FOUND }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (origin, hits)
}

#[tokio::test]
async fn upstream_oauth_discovery_reaches_only_what_the_rule_allows() {
    let logs = Logs::capture();
    let (bait, hits) = bait().await;
    let liar = Liar::start().await;
    let auto = Liar::start().await;
    let auto_named = format!("{bait}/auto/.well-known/oauth-protected-resource");
    auto.say(|s| s.challenge = auto_named.clone());
    let (app, idp) = fronting(&liar, Some(&auto)).await;
    let ann = Browser::sign_in(&app, "ann").await;
    let start = start_url(&app);

    // A 401 naming metadata on another loopback address; metadata naming an
    // authorization server there.
    let named = format!("{bait}/.well-known/oauth-protected-resource/mcp");
    liar.say(|s| s.challenge = named.clone());
    let text = refused(ann.get(&start).await).await;
    assert!(
        text.contains(&named) && text.contains("tools.http_allowlist"),
        "{text}"
    );
    liar.say(|s| (s.challenge, s.issuer) = (String::new(), bait.clone()));
    let text = refused(ann.get(&start).await).await;
    assert!(text.contains(&bait), "{text}");

    // Authorization server metadata naming the cloud metadata address, a
    // private address over https, a public address over plain http.
    liar.say(|s| s.issuer = liar.origin.clone());
    for (endpoint, at) in [
        (
            "registration_endpoint",
            "http://169.254.169.254/latest/meta-data",
        ),
        ("token_endpoint", "https://10.255.255.1/token"),
        ("registration_endpoint", "http://93.184.215.14/register"),
        ("revocation_endpoint", &format!("{bait}/revoke")),
    ] {
        let mut server = json!({
            "issuer": liar.origin,
            "authorization_endpoint": format!("{}/auth", idp.issuer),
            "token_endpoint": format!("{}/token", idp.issuer),
            "registration_endpoint": format!("{}/reg", idp.issuer),
        });
        server[endpoint] = json!(at);
        liar.say(|s| s.server = server);
        let asked = Instant::now();
        let text = refused(ann.get(&start).await).await;
        assert!(text.contains(at), "{endpoint}: {text}");
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "refused, not tried"
        );
    }

    // A revocation endpoint kept with a member's tokens is checked again
    // when they disconnect.
    let vault = Vault::new(app.store.clone(), &[SEALING_KEY]);
    let set = TokenSet {
        access_token: "access".into(),
        refresh_token: Some("refresh".into()),
        expires_at: None,
        token_endpoint: format!("{bait}/token"),
        revocation_endpoint: Some(format!("{bait}/revoke")),
        client_id: "c".into(),
        resource: liar.url.clone(),
    };
    vault.set("ann", "oauth:up", &set.write()).await.unwrap();
    let page = ann.get(&format!("{}/portal/connections", app.base())).await;
    let csrf = hidden(&page.text().await.unwrap(), "csrf").unwrap();
    let url = format!("{}/portal/connections/oauth/up/disconnect", app.base());
    let gone = ann.post(&url, &[("csrf", &csrf)]).await;
    assert_eq!(gone.status(), StatusCode::SEE_OTHER);
    assert!(vault.get("ann", "oauth:up").await.unwrap().is_none());

    // `auto`'s 401 names metadata on the bait: not fetched, logged; its own
    // well-known metadata (its own address) still finds its OAuth.
    for _ in 0..100 {
        if logs.text().contains("upstream asks for OAuth") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = logs.text();
    assert!(log.contains("upstream asks for OAuth"), "auto was probed");
    assert!(log.contains(&format!("{auto_named} is refused")), "logged");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the bait was reached");
}
