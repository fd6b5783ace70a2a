//! Revocation (issue 30, item 5): a revoked personal token is refused at once
//! by the replica that revoked it and by every replica within a second, and
//! the streams it opened end within a second.

use std::time::Duration;

use serde_json::json;

use super::{Fixture, legacy, open_session};
use crate::helpers::TestApp;

/// Reads `stream` until its body ends; false if it is still open at `deadline`.
async fn ends_by(stream: &mut reqwest::Response, deadline: tokio::time::Instant) -> bool {
    loop {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Err(_) => return false,
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None) | Err(_)) => return true,
        }
    }
}

/// A listen stream of the bearer of `token` (see `super::listen`).
async fn listen(app: &TestApp, token: &str, extra: Option<(&str, &str)>) -> reqwest::Response {
    super::listen(app, token, json!({"toolsListChanged": true}), extra).await
}

#[tokio::test]
async fn a_token_revoked_elsewhere_is_refused_and_its_streams_end_within_a_second() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let token = fx.token("rex", &["*"]).await;
    let id = token.split('_').nth(1).unwrap().to_owned();
    let session = open_session(app, &token).await;
    let get = app
        .client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let native = listen(app, &token, None).await;
    let engine = listen(app, &token, Some(("last-event-id", "0"))).await;
    // Each stream is read as it arrives; its task tells when the body ended.
    let ends: Vec<_> = [("GET", get), ("listen", native), ("rmcp listen", engine)]
        .into_iter()
        .map(|(name, mut stream)| {
            let within = tokio::time::Instant::now() + Duration::from_secs(5);
            let ended = tokio::spawn(async move {
                ends_by(&mut stream, within)
                    .await
                    .then(tokio::time::Instant::now)
            });
            (name, ended)
        })
        .collect();
    // Streams are open and the token works.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = legacy(app, &token, &session, 2, "tools/list", json!({})).await;
    assert_eq!(status, 200);

    // Revoked in the database, as `teamgate token revoke` or another replica does.
    assert!(app.store.revoke_token(&id).await.unwrap());
    let revoked = tokio::time::Instant::now();
    let deadline = revoked + Duration::from_secs(1);
    let mut refused_at = None;
    while tokio::time::Instant::now() < deadline + Duration::from_millis(500) {
        let (status, _) = legacy(app, &token, &session, 3, "tools/list", json!({})).await;
        match (status, refused_at) {
            (401, None) => refused_at = Some(tokio::time::Instant::now()),
            (401, Some(_)) => {}
            (_, Some(_)) => panic!("accepted again after being refused: {status}"),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let refused_at = refused_at.expect("the revoked token is refused");
    assert!(
        refused_at <= deadline,
        "refused {:?} after the revoke",
        refused_at - revoked
    );
    for (name, ended) in ends {
        let ended = ended.await.unwrap();
        let ended = ended.unwrap_or_else(|| panic!("the {name} stream is still open"));
        assert!(
            revoked <= ended && ended <= deadline,
            "the {name} stream ended {:?} after the revoke",
            ended - revoked
        );
    }
}

#[tokio::test]
async fn a_token_revoked_by_this_replica_is_refused_at_once() {
    let fx = Fixture::start().await;
    let app = &fx.app;
    let token = fx.token("rex", &["*"]).await;
    let id = token.split('_').nth(1).unwrap().to_owned();
    let session = open_session(app, &token).await;
    let mut stream = listen(app, &token, None).await;
    let (status, _) = legacy(app, &token, &session, 2, "tools/list", json!({})).await;
    assert_eq!(status, 200, "cached as valid");

    assert!(app.tokens.revoke(&id).await.unwrap());
    let revoked = tokio::time::Instant::now();
    let (status, _) = legacy(app, &token, &session, 3, "tools/list", json!({})).await;
    assert_eq!(status, 401, "refused by the next request");
    let soon = revoked + Duration::from_millis(200);
    assert!(ends_by(&mut stream, soon).await, "the stream ends at once");
}
