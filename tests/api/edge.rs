//! Edge protection through the real endpoint: Host and Origin, CORS,
//! forwarded headers, rate limits, slow clients, stream caps, load
//! shedding, compression and tool timeouts.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::AuthMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{ACCEPT_BOTH, TestApp, messages, spawn_app_with};

fn init() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
}

async fn raw(app: &TestApp, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.body(init().to_string()).send().await.unwrap()
}

#[tokio::test]
async fn hosts_and_origins_are_checked_before_authentication() {
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        c.server.allowed_origins = vec!["https://app.example.com".into()];
    })
    .await;
    let port = app.addr.port().to_string();
    // (headers, expected status, case)
    type Case<'a> = (Vec<(&'a str, String)>, u16, &'a str);
    let table: Vec<Case> = vec![
        (
            vec![("host", format!("localhost:{port}"))],
            401,
            "loopback host reaches auth",
        ),
        (
            vec![("host", format!("[::1]:{port}"))],
            401,
            "IPv6 loopback host",
        ),
        (
            vec![("host", "evil.example.com".into())],
            403,
            "foreign host",
        ),
        (
            vec![("host", "127.0.0.1.evil.com".into())],
            403,
            "look-alike host",
        ),
        (
            vec![("origin", "https://app.example.com".into())],
            401,
            "allowed origin",
        ),
        (
            vec![("origin", format!("http://127.0.0.1:{port}"))],
            401,
            "own loopback origin",
        ),
        (vec![("origin", "null".into())], 403, "null origin"),
        (
            vec![("origin", "https://app.example.com:8443".into())],
            403,
            "other port",
        ),
        (
            vec![("origin", "http://app.example.com".into())],
            403,
            "other scheme",
        ),
        (
            vec![("origin", "https://app.example.com.evil.com".into())],
            403,
            "look-alike origin",
        ),
    ];
    for (headers, status, name) in table {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = raw(&app, &headers).await;
        assert_eq!(response.status().as_u16(), status, "{name}");
        if status == 403 {
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["jsonrpc"], "2.0", "{name}");
            assert!(
                body["error"]["message"].as_str().unwrap().contains("not"),
                "{name}: {body}"
            );
        }
    }
    // Two Origin headers are refused even if one is allowed.
    let duplicated = app
        .client
        .post(&app.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("origin", "https://app.example.com")
        .header("origin", "https://evil.example.com")
        .body(init().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(duplicated.status(), 403);
}

#[tokio::test]
async fn cors_preflight_allows_the_mcp_headers_for_allowed_origins_only() {
    let app =
        spawn_app_with(|c| c.server.allowed_origins = vec!["https://app.example.com".into()]).await;
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, &app.url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id",
            )
            .send()
    };
    let ok = preflight("https://app.example.com").await.unwrap();
    assert!(ok.status().is_success());
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let allowed = ok.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    for h in [
        "authorization",
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    ] {
        assert!(allowed.contains(h), "{h} in {allowed}");
    }
    let refused = preflight("https://evil.example.com").await.unwrap();
    assert_eq!(refused.status(), 403);
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "never reflected"
    );
    let actual = raw(&app, &[("origin", "https://app.example.com")]).await;
    let exposed = actual.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(
        exposed.contains("mcp-session-id") && exposed.contains("www-authenticate"),
        "{exposed}"
    );
}

#[tokio::test]
async fn forwarded_headers_count_only_from_trusted_proxies() {
    let metadata = |app: &TestApp| {
        app.client
            .get(format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                app.base()
            ))
            .header("x-forwarded-proto", "https")
            .header("x-forwarded-host", "mcp.example.com")
            .header("x-forwarded-for", "203.0.113.9")
            .send()
    };
    let trusted = spawn_app_with(|c| {
        c.server.trusted_proxies = vec!["127.0.0.1/32".into()];
        c.server.allowed_hosts = vec!["mcp.example.com".into()];
    })
    .await;
    let doc: Value = metadata(&trusted).await.unwrap().json().await.unwrap();
    assert_eq!(doc["resource"], "https://mcp.example.com/mcp");

    let untrusted =
        spawn_app_with(|c| c.server.allowed_hosts = vec!["mcp.example.com".into()]).await;
    let doc: Value = metadata(&untrusted).await.unwrap().json().await.unwrap();
    assert_eq!(
        doc["resource"], untrusted.url,
        "forwarded headers from an untrusted peer are ignored"
    );
}

#[tokio::test]
async fn one_callers_burst_gets_429_while_another_is_served() {
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        c.rate_limit.enabled = true;
        c.rate_limit.per_caller_per_minute = 60;
        c.rate_limit.per_caller_burst = 3;
    })
    .await;
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let a = tokens
        .create("a", "", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    let b = tokens
        .create("b", "", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(raw(&app, &[("authorization", &format!("Bearer {a}"))]).await);
    }
    let last = statuses.pop().unwrap();
    assert!(statuses.iter().all(|r| r.status() == 200));
    assert_eq!(last.status(), 429);
    let retry: u64 = last.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "retry after {retry}s");
    let body: Value = last.json().await.unwrap();
    assert_eq!(
        body["error"]["code"], -31004,
        "outside the range the spec reserves"
    );
    assert_eq!(
        raw(&app, &[("authorization", &format!("Bearer {b}"))])
            .await
            .status(),
        200,
        "B is not slowed"
    );
}

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
    let session = app.initialize("2025-11-25").await;
    let call = |body: Value| {
        app.client
            .post(&app.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("accept-encoding", "gzip")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
    };
    let list = call(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .await
        .unwrap();
    assert_eq!(
        list.headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );
    let stream = call(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_tool_with_progress","_meta":{"progressToken":"p"}}}))
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
async fn http2_cleartext_is_served_only_when_enabled() {
    let h2 = reqwest::Client::builder()
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
