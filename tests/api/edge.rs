//! Edge protection through the real endpoint: Host and Origin, CORS,
//! forwarded headers, rate limits, slow clients, stream caps, load
//! shedding, compression and tool timeouts.

use std::time::Duration;

use serde_json::{Value, json};
use teamgate::config::AuthMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{ACCEPT_BOTH, TestApp, messages, spawn_app_with};

mod limits;

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
        // Refused before its body was read: the client is told not to reuse
        // the connection (the 401s come from the caller layer, tested there).
        let close = response.headers().get("connection").map(|v| v.as_bytes());
        assert_eq!(close, Some(&b"close"[..]), "{name}");
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
    // Refused before its body was read: the connection is not reused.
    assert_eq!(last.headers()["connection"], "close");
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
