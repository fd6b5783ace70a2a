//! The 2026-07-28 stateless era on the same endpoint: discover, per-request
//! `_meta`, header validation, modern error codes and statuses, listen.

use serde_json::{Value, json};

use crate::helpers::{MODERN, Sse, messages, spawn_app};

#[tokio::test]
async fn discover_and_calls_need_no_session() {
    let app = spawn_app().await;
    let (status, replies) = app.modern_call(1, "server/discover", json!({})).await;
    assert_eq!(status, 200);
    let result = &replies[0]["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "teamgate"
    );

    let (status, replies) = app
        .modern_call(2, "tools/call", json!({"name": "test_simple_text"}))
        .await;
    assert_eq!(status, 200);
    let result = &replies[0]["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"][0]["text"],
        "This is a simple text response for testing."
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "teamgate"
    );

    let (_, replies) = app.modern_call(3, "tools/list", json!({})).await;
    let result = &replies[0]["result"];
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
        "lists carry cache hints: {result}"
    );
}

#[tokio::test]
async fn removed_methods_are_not_found_with_a_modern_body() {
    let app = spawn_app().await;
    for (id, method) in [
        (1, "ping"),
        (2, "logging/setLevel"),
        (3, "resources/subscribe"),
    ] {
        let (status, replies) = app
            .modern_call(
                id,
                method,
                json!({"level": "info", "uri": "test://static-text"}),
            )
            .await;
        assert_eq!(status, 404, "{method}");
        assert_eq!(replies[0]["error"]["code"], -32601, "{method}");
        assert_eq!(replies[0]["id"], id);
    }
}

#[tokio::test]
async fn malformed_envelopes_get_400_with_the_spec_codes() {
    let app = spawn_app().await;
    let post = |body: Value, headers: Vec<(&'static str, &'static str)>| {
        let app = &app;
        async move {
            let response = app.post(&body, &headers).await;
            let status = response.status().as_u16();
            (status, messages(response).await.remove(0))
        }
    };
    // Missing clientCapabilities.
    let (status, reply) = post(
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion": MODERN}}}),
        vec![("mcp-protocol-version", MODERN), ("mcp-method", "tools/list")],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
    assert_eq!(reply["id"], 1);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    // Header disagrees with the body.
    let (status, reply) = post(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": meta}}),
        vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "prompts/list"),
        ],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    // Unsupported version.
    let old_meta = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
    let (status, reply) = post(
        json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta": old_meta}}),
        vec![
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
    assert!(
        reply["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
}

#[tokio::test]
async fn unknown_resources_use_invalid_params_with_the_uri() {
    let app = spawn_app().await;
    let (status, replies) = app
        .modern_call(1, "resources/read", json!({"uri": "test://missing"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(replies[0]["error"]["code"], -32602);
    assert_eq!(replies[0]["error"]["data"]["uri"], "test://missing");
}

#[tokio::test]
async fn progress_streams_on_the_request_and_listen_acknowledges_first() {
    let app = spawn_app().await;
    let (status, replies) = app
        .modern_call(
            1,
            "tools/call",
            json!({"name": "test_tool_with_progress", "_meta": {"progressToken": "m1"}}),
        )
        .await;
    assert_eq!(status, 200);
    let progress = replies
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 3, "{replies:?}");
    assert_eq!(replies.last().unwrap()["id"], 1);

    // subscriptions/listen stays open: read until the acknowledgment arrives.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    let response = app
        .post(
            &json!({"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{
                "_meta": meta, "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://watched-resource"]}}}),
            &[("mcp-protocol-version", MODERN), ("mcp-method", "subscriptions/listen")],
        )
        .await;
    assert_eq!(response.status(), 200);
    let mut stream = Sse::new(response);
    stream
        .until("\n\n", std::time::Duration::from_secs(5))
        .await;
    let data = stream
        .seen
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap();
    let ack: Value = serde_json::from_str(data.trim()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
}
