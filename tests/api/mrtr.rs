//! Multi-round-trip requests on 2026-07-28 and the same tools on a 2025 session.

use serde_json::{Value, json};

use crate::helpers::spawn_app;

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn input_required_then_complete_with_sealed_state() {
    let app = spawn_app().await;
    let tool = "test_input_required_result_request_state";
    let (status, r1) = app
        .modern_call(1, "tools/call", json!({"name": tool, "arguments": {}}))
        .await;
    assert_eq!(status, 200);
    let r1 = &r1[0]["result"];
    assert_eq!(r1["resultType"], "input_required");
    assert_eq!(
        r1["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    let state = r1["requestState"]
        .as_str()
        .expect("sealed state")
        .to_owned();

    let (_, r2) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": tool, "arguments": {},
            "inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": state}),
        )
        .await;
    assert_eq!(r2[0]["result"]["resultType"], "complete");
    assert!(
        r2[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("state-ok")
    );

    // A tampered state is an error, never another round.
    let (_, r3) = app
        .modern_call(3, "tools/call", json!({"name": tool, "arguments": {},
            "inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": format!("{state}x")}))
        .await;
    assert_eq!(r3[0]["error"]["code"], -32602);
    // A state sealed for one tool does not open for another.
    let (_, r4) = app
        .modern_call(
            4,
            "tools/call",
            json!({"name": "test_input_required_result_tampered_state", "arguments": {},
            "inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": state}),
        )
        .await;
    assert_eq!(
        r4[0]["error"]["code"], -32602,
        "state is bound to its target"
    );
}

#[tokio::test]
async fn multi_round_changes_state_and_validates_answers() {
    let app = spawn_app().await;
    let tool = "test_input_required_result_multi_round";
    let (_, r1) = app
        .modern_call(1, "tools/call", json!({"name": tool}))
        .await;
    let s1 = r1[0]["result"]["requestState"].as_str().unwrap().to_owned();
    let (_, r2) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": tool,
            "inputResponses": {"step1": accept(json!({"name": "Ada"}))}, "requestState": s1}),
        )
        .await;
    assert_eq!(r2[0]["result"]["resultType"], "input_required");
    let s2 = r2[0]["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(s1, s2);
    let (_, r3) = app
        .modern_call(
            3,
            "tools/call",
            json!({"name": tool,
            "inputResponses": {"step2": accept(json!({"color": "green"}))}, "requestState": s2}),
        )
        .await;
    assert_eq!(r3[0]["result"]["content"][0]["text"], "Ada likes green");

    let (_, bad) = app
        .modern_call(
            4,
            "tools/call",
            json!({"name": "test_input_required_result_elicitation",
            "inputResponses": {"user_name": 12345}}),
        )
        .await;
    assert_eq!(
        bad[0]["error"]["code"], -32602,
        "a malformed answer is refused"
    );
}

#[tokio::test]
async fn missing_capability_is_400_with_the_capability_object() {
    let app = spawn_app().await;
    let (status, replies) = app
        .modern_call(1, "tools/call", json!({"name": "test_missing_capability"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(replies[0]["error"]["code"], -32021);
    assert_eq!(
        replies[0]["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
}

#[tokio::test]
async fn listen_streams_receive_triggered_list_changes() {
    let app = spawn_app().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": crate::helpers::MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut listen = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen",
                "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}),
            &[
                ("mcp-protocol-version", crate::helpers::MODERN),
                ("mcp-method", "subscriptions/listen"),
            ],
        )
        .await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut seen = String::new();
    while !seen.contains("acknowledged") {
        let chunk = tokio::time::timeout_at(deadline, listen.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    app.modern_call(
        2,
        "tools/call",
        json!({"name": "test_trigger_prompt_change"}),
    )
    .await;
    app.modern_call(3, "tools/call", json!({"name": "test_trigger_tool_change"}))
        .await;
    while !seen.contains("notifications/tools/list_changed") {
        let chunk = tokio::time::timeout_at(deadline, listen.chunk())
            .await
            .expect("the change arrives")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        !seen.contains("prompts/list_changed"),
        "not subscribed to prompts: {seen}"
    );
    assert!(seen.contains("\"io.modelcontextprotocol/subscriptionId\":77"));
}
