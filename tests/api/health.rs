//! Probes and graceful shutdown.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::spawn_app_with;

#[tokio::test]
async fn probes_answer_without_authentication() {
    let app = crate::helpers::spawn_app().await;
    for (path, status) in [("/healthz", "ok"), ("/readyz", "ready")] {
        let response = app
            .client
            .get(format!("{}{path}", app.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[tokio::test]
async fn shutdown_ends_open_streams_after_the_grace_period() {
    let mut app = spawn_app_with(|c| c.server.shutdown_grace = Duration::from_millis(300)).await;
    let session = app.initialize("2025-11-25").await;
    // A standalone GET stream never ends by itself.
    let stream = app
        .client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    app.shutdown();
    let served = tokio::time::timeout(Duration::from_secs(10), &mut app.served)
        .await
        .expect("the server stops within grace plus slack");
    served.unwrap().expect("clean exit");
    let rest = tokio::time::timeout(Duration::from_secs(5), stream.text()).await;
    assert!(rest.is_ok(), "the open stream was ended");
}
