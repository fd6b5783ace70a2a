//! Per-tool quotas are the engine's, decided on the typed call it runs: the
//! tool named in `params.name`, after the scope check, audited when refused.

use super::*;
use teamgate::config::ToolRateLimit;

/// A 2026-07-28 `tools/call` of `tool` by the bearer of `token`.
async fn call(fixture: &Fixture, token: &str, id: u64, tool: &str) -> (u16, Value) {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": {}, "_meta": meta}});
    let headers = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    let (status, text) = send(&fixture.app, token, &body, &headers).await;
    (status, reply(&text))
}

#[tokio::test]
async fn a_tools_quota_is_spent_per_caller_on_the_call_the_engine_runs() {
    let fixture = Fixture::start_with(|c| {
        c.rate_limit.enabled = true;
        c.rate_limit.per_caller_per_minute = 6000;
        c.rate_limit.per_caller_burst = 100;
        // Refilled once a minute: nothing refills while the test runs.
        c.rate_limit.tools = vec![ToolRateLimit {
            tool: "teamgate_info".into(),
            per_minute: 1,
            burst: 2,
        }];
    })
    .await;
    let ann = fixture.token("ann", &["tools:teamgate_info"]).await;
    let bob = fixture.token("bob", &["tools:teamgate_info"]).await;
    let eve = fixture.token("eve", &["resources:read"]).await;

    // A caller who may not use the tool is refused for scope, and spends
    // nothing of anyone's quota.
    for id in 0..3 {
        let (status, message) = call(&fixture, &eve, id, "teamgate_info").await;
        assert_eq!(status, 403, "{message}");
    }
    for id in 1..=2 {
        let (status, message) = call(&fixture, &ann, id, "teamgate_info").await;
        assert_eq!(status, 200, "{message}");
        assert!(message["result"].is_object(), "{message}");
    }
    let (status, message) = call(&fixture, &ann, 3, "teamgate_info").await;
    assert_eq!(
        status, 200,
        "a JSON-RPC refusal, not an HTTP one: {message}"
    );
    assert_eq!(message["id"], 3, "{message}");
    assert_eq!(message["error"]["code"], -31004, "{message}");
    assert!(
        message["error"]["data"]["retryAfterSeconds"]
            .as_u64()
            .unwrap()
            >= 1,
        "{message}"
    );
    // Another caller's quota is their own.
    let (status, message) = call(&fixture, &bob, 4, "teamgate_info").await;
    assert_eq!(status, 200);
    assert!(message["result"].is_object(), "{message}");

    // The refusal is in the audit trail, as ann's.
    let mut refused = Vec::new();
    for _ in 0..50 {
        let records = fixture
            .app
            .store
            .audit_tail(Some("ann"), 0, 10)
            .await
            .unwrap();
        refused = records
            .into_iter()
            .filter(|r| {
                r.outcome
                    .contains("over its rate for the tool teamgate_info")
            })
            .collect();
        if !refused.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused.len(), 1, "one refusal audited");
    assert_eq!(refused[0].target, "teamgate_info");
}
