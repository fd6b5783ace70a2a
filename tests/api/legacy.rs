//! The 2025-era lifecycle over real HTTP: handshake per revision, JSON or SSE
//! replies, logging levels, resources, prompts, completion, resumption, DELETE.

use serde_json::json;

use crate::helpers::{Sse, header, messages, spawn_app};

#[tokio::test]
async fn every_legacy_revision_is_negotiated() {
    let app = spawn_app().await;
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let response = app
            .post(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}}), &[])
            .await;
        assert!(header(response.headers(), "mcp-session-id").is_some());
        let reply = &messages(response).await[0];
        assert_eq!(reply["result"]["protocolVersion"], version);
        assert_eq!(reply["result"]["serverInfo"]["name"], "teamgate");
        let caps = &reply["result"]["capabilities"];
        for cap in ["tools", "resources", "prompts", "logging", "completions"] {
            assert!(caps.get(cap).is_some(), "{version} advertises {cap}");
        }
    }
    // An unknown older version gets the newest legacy one.
    let response = app
        .post(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": "2024-01-01", "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}}), &[])
        .await;
    assert_eq!(
        messages(response).await[0]["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[tokio::test]
async fn session_calls_answer_sse_as_rmcp_writes_them() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let simple = app
        .post(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}), &headers)
        .await;
    assert_eq!(
        header(simple.headers(), "content-type").as_deref(),
        Some("text/event-stream")
    );
    let replies = messages(simple).await;
    let reply = replies.last().unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );

    let progress = app
        .post(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"test_tool_with_progress","_meta":{"progressToken":"tok"}}}),
            &headers,
        )
        .await;
    assert_eq!(
        header(progress.headers(), "content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(
        header(progress.headers(), "x-accel-buffering").as_deref(),
        Some("no")
    );
    let all = messages(progress).await;
    let values: Vec<f64> = all
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, vec![0.0, 50.0, 100.0]);
    assert_eq!(all.last().unwrap()["id"], 3, "the result comes last");
}

#[tokio::test]
async fn log_lines_follow_the_session_level() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    // Log lines are not tied to a request's stream: they arrive on the GET stream.
    let mut stream = Sse::new(app.open_stream(&session).await);
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_tool_with_logging"}});
    messages(app.post(&call, &headers).await).await;
    stream
        .until(
            "Tool execution completed",
            std::time::Duration::from_secs(5),
        )
        .await;
    assert!(
        stream.seen.contains("Tool execution started")
            && stream.seen.contains("Tool processing data")
    );

    let set = app
        .session_call(&session, 6, "logging/setLevel", json!({"level": "error"}))
        .await;
    assert_eq!(set["result"], json!({}));
    messages(app.post(&call, &headers).await).await;
    let extra = stream
        .next_within(std::time::Duration::from_millis(400))
        .await;
    assert!(
        !extra.unwrap_or_default().contains("notifications/message"),
        "info lines are below the error level"
    );
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    let app = spawn_app().await;
    let s = app.initialize("2025-06-18").await;
    let list = app.session_call(&s, 1, "resources/list", json!({})).await;
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"test://static-text"));
    assert!(
        uris.iter().any(|u| u.starts_with("docs://project/")),
        "the default docs source's documents are listed: {uris:?}"
    );
    let text = app
        .session_call(
            &s,
            2,
            "resources/read",
            json!({"uri": "test://static-text"}),
        )
        .await;
    assert_eq!(
        text["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let templated = app
        .session_call(
            &s,
            3,
            "resources/read",
            json!({"uri": "test://template/77/data"}),
        )
        .await;
    assert!(
        templated["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("77")
    );
    let missing = app
        .session_call(&s, 4, "resources/read", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(missing["error"]["data"]["uri"], "test://nothing");
    let templates = app
        .session_call(&s, 5, "resources/templates/list", json!({}))
        .await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    let prompt = app
        .session_call(&s, 6, "prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "A1", "arg2": "B2"}}))
        .await;
    let text = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("A1") && text.contains("B2"));
    let completion = app
        .session_call(&s, 7, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "par"}}))
        .await;
    assert_eq!(
        completion["result"]["completion"]["values"],
        json!(["paris", "park", "party"])
    );
    let subscribed = app
        .session_call(
            &s,
            8,
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(subscribed["result"], json!({}));
    let tools = app.session_call(&s, 9, "tools/list", json!({})).await;
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert!(
            tool["description"].is_string() && tool["inputSchema"].is_object(),
            "{tool}"
        );
    }
    assert!(
        tools["result"].get("resultType").is_none(),
        "legacy results carry no 2026 fields"
    );
}

#[tokio::test]
async fn a_dropped_stream_resumes_from_last_event_id() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let response = app
        .post(
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
            "name":"test_tool_with_progress","_meta":{"progressToken":"r"}}}),
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    let body = response.text().await.unwrap();
    let ids: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .collect();
    assert!(ids.len() >= 4, "events carry ids: {body}");
    // Pretend the connection broke after the second event.
    let resumed = app
        .client
        .get(&app.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &ids[1])
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let replayed = tokio::time::timeout(std::time::Duration::from_secs(5), messages(resumed))
        .await
        .expect("the replay ends");
    assert_eq!(
        replayed.last().unwrap()["id"],
        3,
        "the missed result is replayed: {replayed:?}"
    );
    assert!(
        replayed.iter().all(|m| m["params"]["progress"] != 0.0),
        "events before the id are not replayed"
    );
}

#[tokio::test]
async fn delete_ends_the_session() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let deleted = app
        .client
        .delete(&app.url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success());
    let after = app
        .post(
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        )
        .await;
    assert_eq!(
        after.status(),
        404,
        "an ended session is not found, so clients re-initialize"
    );
}
