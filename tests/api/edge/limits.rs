//! Slow clients, stream caps, shedding, compression, timeouts and h2c.

use super::*;

#[tokio::test]
async fn a_slow_client_is_dropped_without_blocking_others() {
    let app = spawn_app_with(|c| c.server.header_read_timeout = Duration::from_millis(300)).await;
    let mut slow = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    // Meanwhile another client is served normally.
    assert_eq!(raw(&app, &[]).await.status(), 200);
    let mut buffer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut buffer)).await;
    assert!(
        closed.is_ok(),
        "the slow connection is closed by the server"
    );
}

#[tokio::test]
async fn open_streams_are_capped_per_caller_and_freed_when_closed() {
    let app = spawn_app_with(|c| c.limits.max_streams_per_caller = 1).await;
    let session = app.initialize("2025-11-25").await;
    let open = || {
        app.client
            .get(&app.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    let first = open().await.unwrap();
    assert_eq!(first.status(), 200);
    let second = open().await.unwrap();
    assert_eq!(second.status(), 429);
    assert!(second.headers().get("retry-after").is_some());
    drop(first);
    let mut status = 0;
    for _ in 0..50 {
        status = open().await.unwrap().status().as_u16();
        if status != 429 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_ne!(status, 429, "a closed stream frees its slot");
}

#[tokio::test]
async fn over_capacity_requests_are_shed_with_503() {
    let app = spawn_app_with(|c| c.limits.max_in_flight = 1).await;
    // A request whose body never finishes holds the only in-flight slot.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tx.send(Ok(b"{\"jsonrpc\":".to_vec())).await.unwrap();
    let stalled = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .body(reqwest::Body::wrap_stream(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        ))
        .send();
    let stalled = tokio::spawn(stalled);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let shed = raw(&app, &[]).await;
    assert_eq!(shed.status(), 503);
    assert!(shed.headers().get("retry-after").is_some());
    let health = app
        .client
        .get(format!("{}/healthz", app.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "probes are not shed");
    drop(tx);
    let _ = stalled.await;
    assert_eq!(raw(&app, &[]).await.status(), 200, "capacity returns");
}

#[tokio::test]
async fn large_json_is_compressed_and_streams_are_not() {
    let app = spawn_app_with(|_| {}).await;
    // A 2026-07-28 request is answered with one JSON body (`mcp.json_responses`).
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "teamgate-tests", "version": "1"},
    });
    let list = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("accept-encoding", "gzip")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": meta}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(list.headers()["content-type"], "application/json");
    assert_eq!(
        list.headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );
    // A 2025-era session's replies are SSE, as rmcp writes them.
    let session = app.initialize("2025-11-25").await;
    let stream = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("accept-encoding", "gzip")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert!(
        stream.headers().get("content-encoding").is_none(),
        "SSE is never compressed"
    );
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_stopped_with_a_tool_error() {
    let app = spawn_app_with(|c| c.limits.tool_timeout = Duration::from_millis(30)).await;
    // 2025-06-18: from 2025-11-25 on this fixture ends its stream before the
    // result (tests/api/sec_streams.rs).
    let session = app.initialize("2025-06-18").await;
    let reply = app
        .session_call(
            &session,
            2,
            "tools/call",
            json!({"name": "test_reconnection"}),
        )
        .await;
    assert_eq!(reply["result"]["isError"], true);
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not finish")
    );
    let fine = messages(app.post(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text"}}),
        &[("mcp-session-id", &session), ("mcp-protocol-version", "2025-11-25")]).await).await;
    assert!(fine[0]["result"]["content"].is_array());
}

#[tokio::test]
async fn the_deadline_counts_from_the_request_s_arrival() {
    // The budget is spent before the tool starts: its body takes 1.5 s to
    // arrive, three times limits.tool_timeout.
    let app = spawn_app_with(|c| c.limits.tool_timeout = Duration::from_millis(500)).await;
    let session = app.initialize("2025-06-18").await;
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"test_simple_text"}})
    .to_string();
    let (head, tail) = call.split_at(call.len() / 2);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(2);
    tx.send(Ok(head.as_bytes().to_vec())).await.unwrap();
    let slow = tokio::spawn(
        app.client
            .post(&app.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(reqwest::Body::wrap_stream(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    tx.send(Ok(tail.as_bytes().to_vec())).await.unwrap();
    drop(tx);
    let late = messages(slow.await.unwrap().unwrap()).await;
    let result = &late[0]["result"];
    assert_eq!(result["isError"], true, "{late:?}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not finish within 500ms"), "{text}");
    // The same call sent at once is answered: the tool itself is instant.
    let quick = app
        .session_call(
            &session,
            3,
            "tools/call",
            json!({"name": "test_simple_text"}),
        )
        .await;
    assert!(crate::helpers::is_simple_text(&quick), "{quick}");
}

#[tokio::test]
async fn http2_cleartext_is_served_only_when_enabled() {
    let h2 = teamgate::outbound::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let send = |url: &str| {
        h2.post(url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .body(init().to_string())
            .send()
    };
    let http1 = spawn_app_with(|_| {}).await;
    assert!(
        send(&http1.url).await.is_err(),
        "HTTP/1.1 only unless server.h2c is on"
    );
    let response = raw(&http1, &[]).await;
    assert_eq!(response.status(), 200, "HTTP/1.1 is served");

    let both = spawn_app_with(|c| c.server.h2c = true).await;
    let response = send(&both.url).await.expect("h2c is served");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert_eq!(raw(&both, &[]).await.status(), 200, "and HTTP/1.1 too");
}
