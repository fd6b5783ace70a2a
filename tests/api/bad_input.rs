//! Bad input gets a clear HTTP status and a JSON-RPC error carrying the
//! request id when there is one; never a panic, a hang or a plain-text body.

use serde_json::{Value, json};

use crate::helpers::{messages, spawn_app};

struct Case {
    name: &'static str,
    body: String,
    headers: Vec<(&'static str, &'static str)>,
    status: u16,
    code: i64,
    id: Option<Value>,
}

fn case(
    name: &'static str,
    body: impl Into<String>,
    status: u16,
    code: i64,
    id: Option<Value>,
) -> Case {
    Case {
        name,
        body: body.into(),
        headers: vec![],
        status,
        code,
        id,
    }
}

#[tokio::test]
async fn every_bad_request_is_answered_with_status_and_jsonrpc_error() {
    let app = spawn_app().await;
    app.initialize("2025-11-25").await;
    let nested = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{{\"x\":{}1{}}}}}",
        "[".repeat(100),
        "]".repeat(100)
    );
    let cases = vec![
        case(
            "malformed JSON",
            "{\"jsonrpc\":\"2.0\",,}",
            400,
            -32700,
            None,
        ),
        case(
            "truncated JSON",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/li"#,
            400,
            -32700,
            None,
        ),
        case("not an object", "42", 400, -32600, None),
        case(
            "batch",
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            400,
            -32600,
            None,
        ),
        case("too deep", nested, 400, -32600, None),
        Case {
            headers: vec![("content-type", "text/plain")],
            ..case(
                "wrong Content-Type",
                r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
                415,
                -32600,
                Some(json!(4)),
            )
        },
        Case {
            headers: vec![("accept", "text/html")],
            ..case(
                "wrong Accept",
                r#"{"jsonrpc":"2.0","id":"five","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                406,
                -32600,
                Some(json!("five")),
            )
        },
        Case {
            headers: vec![("mcp-session-id", "no-such-session")],
            ..case(
                "unknown session",
                r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#,
                404,
                -32001,
                Some(json!(6)),
            )
        },
        case(
            "no session",
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#,
            400,
            -32600,
            Some(json!(8)),
        ),
        case(
            "oversized body",
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
                "x".repeat(5 * 1024 * 1024)
            ),
            413,
            -32600,
            None,
        ),
    ];
    for c in cases {
        let response = app.post_raw(c.body.clone(), &c.headers).await;
        assert_eq!(response.status().as_u16(), c.status, "{}: status", c.name);
        let body: Value = response
            .json()
            .await
            .unwrap_or_else(|e| panic!("{}: JSON body: {e}", c.name));
        assert_eq!(body["jsonrpc"], "2.0", "{}", c.name);
        assert_eq!(body["error"]["code"], c.code, "{}: code in {body}", c.name);
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{}",
            c.name
        );
        assert_eq!(body.get("id").cloned(), c.id, "{}: id", c.name);
    }
}

#[tokio::test]
async fn in_session_protocol_errors_carry_the_id() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let unknown = app
        .session_call(&session, 21, "no/such/method", json!({}))
        .await;
    assert_eq!(unknown["id"], 21);
    assert_eq!(unknown["error"]["code"], -32601);
    let bad_params = app
        .session_call(
            &session,
            22,
            "tools/call",
            json!({"name": "test_simple_text", "arguments": 5}),
        )
        .await;
    assert_eq!(bad_params["id"], 22);
    assert_eq!(bad_params["error"]["code"], -32602);
    let unknown_tool = app
        .session_call(&session, 23, "tools/call", json!({"name": "no_such_tool"}))
        .await;
    assert_eq!(unknown_tool["error"]["code"], -32602);
    assert!(
        unknown_tool["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
    let missing_arg = app
        .session_call(
            &session,
            24,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        )
        .await;
    assert_eq!(missing_arg["error"]["code"], -32602);
    assert!(
        missing_arg["error"]["message"]
            .as_str()
            .unwrap()
            .contains("arg2")
    );
}

#[tokio::test]
async fn a_slow_body_times_out_and_other_clients_are_served() {
    // The body timeout is 30 s; this only checks that a stalled upload does
    // not block a second client meanwhile.
    let app = spawn_app().await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let stalled = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", crate::helpers::ACCEPT_BOTH)
        .body(reqwest::Body::wrap_stream(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        ));
    tx.send(Ok(b"{\"jsonrpc\":".to_vec())).await.unwrap();
    let stalled = tokio::spawn(stalled.send());
    let response = app.post(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}), &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(messages(response).await[0]["id"], 1);
    drop(tx);
    let finished = stalled
        .await
        .unwrap()
        .expect("stalled request ends when its body ends");
    assert_eq!(finished.status(), 400);
}

#[tokio::test]
async fn wrong_http_methods_are_refused_with_a_json_body() {
    let app = spawn_app().await;
    let response = app.client.put(&app.url).send().await.unwrap();
    assert_eq!(response.status(), 405);
    assert!(response.headers().get("allow").is_some());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32601);
}

/// JSON is UTF-8: invalid bytes anywhere, even in a member nobody reads, are
/// a parse error at the door (the `envelope` fuzz target found such a body
/// let through the guard).
#[tokio::test]
async fn a_body_that_is_not_utf8_is_a_parse_error() {
    let app = spawn_app().await;
    let mut body = br#"{"jsonrpc":"2.0","id":4,"method":"ping","":{""#.to_vec();
    body.extend([0xa7; 8]);
    body.extend(br#"":2}}"#);
    let response = app.post_raw(body, &[]).await;
    assert_eq!(response.status(), 400);
    let reply: Value = response.json().await.expect("a JSON-RPC error body");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
}

/// A number no float can hold is JSON (RFC 8259 sets no range), so the guard
/// lets it through; the engine's typed parse refuses it, with the id.
#[tokio::test]
async fn a_number_out_of_every_range_is_refused_with_the_id() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"teamgate_info","arguments":{"n":1e+11558111}}}"#;
    let response = app
        .post_raw(body.to_vec(), &[("mcp-session-id", session.as_str())])
        .await;
    let status = response.status();
    let reply: Value = response.json().await.expect("a JSON-RPC body");
    assert!(
        status.is_client_error() || status == 200,
        "{status}: {reply}"
    );
    assert_eq!(reply["id"], 7, "{reply}");
    assert!(reply["error"]["code"].is_i64(), "{reply}");
}
