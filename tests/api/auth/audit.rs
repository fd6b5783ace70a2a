//! Audit records under load and at shutdown.

use super::*;

#[tokio::test]
async fn every_call_under_load_leaves_exactly_one_audit_record() {
    let idp = Idp::start().await;
    let app = secured(&idp).await;
    let token = token(&app, "loader", &["*"], None).await;
    let auth = format!("Bearer {token}");
    let calls = 200;
    let requests = (0..calls).map(|i| {
        let body = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"test_simple_text",
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
        let headers = [("authorization", auth.as_str()), ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"), ("mcp-name", "test_simple_text")];
        let app = &app;
        async move { app.post(&body, &headers).await.status().as_u16() }
    });
    let statuses = futures::stream::iter(requests)
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let mut count = 0;
    for _ in 0..100 {
        count = app
            .store
            .audit_tail(Some("loader"), 0, 10_000)
            .await
            .unwrap()
            .len();
        if count >= calls {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count, calls, "one record per call, none lost");
}

#[tokio::test]
async fn records_still_queued_at_shutdown_are_written() {
    let idp = Idp::start().await;
    let mut app = secured(&idp).await;
    let token = token(&app, "leaver", &["*"], None).await;
    let auth = format!("Bearer {token}");
    let calls = 40;
    for i in 0..calls {
        let body = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"test_simple_text",
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
        let headers = [
            ("authorization", auth.as_str()),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "test_simple_text"),
        ];
        assert_eq!(app.post(&body, &headers).await.status(), 200);
    }
    // Stop at once: the writer waits 10 ms for more records before a write,
    // so the last ones are still queued when the server stops.
    app.halt().await;
    let written = app
        .store
        .audit_tail(Some("leaver"), 0, 1_000)
        .await
        .unwrap();
    assert_eq!(written.len(), calls, "every record written before exit");
}
