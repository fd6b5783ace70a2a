//! Remote upstream servers (issue 26): the official everything server run
//! by the test over Streamable HTTP and over the 2024-11-05 HTTP+SSE
//! transport (teamgate falls back to it when the Streamable HTTP handshake
//! fails), its tools listed and called through teamgate, the configured
//! header's secret scrubbed from what comes back.

use std::{net::TcpListener, process::Stdio, time::Duration};

use serde_json::json;
use teamgate::config::UpstreamConfig;

use crate::{
    helpers::{TestApp, spawn_app_with},
    sec_authz::{reply, send},
    upstream_pins::{HttpUpstream, python},
    upstreams::{everything, listed, modern_meta},
};

/// The everything server on a loopback port of its own, over `transport`
/// (`streamableHttp` or `sse`); it ends with the returned child.
async fn serve_everything(transport: &str) -> Option<(tokio::process::Child, u16)> {
    let (node, script) = everything()?;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(node)
        .args([script.as_str(), transport])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some((child, port));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the everything server did not listen on {port}");
}

async fn spawn_fronting(url: String) -> TestApp {
    spawn_app_with(move |c| {
        c.tools.http_allowlist = vec![url.clone()];
        let upstream: UpstreamConfig = serde_json::from_value(json!({
            "name": "remote",
            "url": url,
            // A secret in a header: sent upstream, scrubbed from whatever returns.
            "headers": {"X-Team-Key": "${HOME}"},
            "tools": {"include": ["echo", "trigger-long-running-operation"]},
        }))
        .unwrap();
        c.upstreams = vec![upstream];
    })
    .await
}

async fn echo_through(app: &TestApp) {
    let names = listed(app, None, "remote_echo").await;
    assert!(names.iter().any(|n| n == "remote_echo"), "{names:?}");
    let home = std::env::var("HOME").unwrap();
    let message = format!("hello from {home}");
    let (status, replies) = app
        .modern_call(
            2,
            "tools/call",
            json!({"name": "remote_echo", "arguments": {"message": message}}),
        )
        .await;
    assert_eq!(status, 200);
    let text = replies[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("hello from [redacted]"), "{replies:?}");

    let session = app.initialize("2025-11-25").await;
    let reply = app
        .session_call(
            &session,
            3,
            "tools/call",
            json!({"name": "remote_trigger-long-running-operation",
                   "arguments": {"duration": 1, "steps": 2}}),
        )
        .await;
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("completed"),
        "{reply}"
    );
}

#[tokio::test]
async fn a_streamable_http_upstream_is_fronted() {
    let Some((_server, port)) = serve_everything("streamableHttp").await else {
        return;
    };
    let app = spawn_fronting(format!("http://127.0.0.1:{port}/mcp")).await;
    echo_through(&app).await;
}

#[tokio::test]
async fn an_upstream_that_speaks_only_http_and_sse_is_fronted_through_the_fallback() {
    let Some((_server, port)) = serve_everything("sse").await else {
        return;
    };
    let app = spawn_fronting(format!("http://127.0.0.1:{port}/sse")).await;
    echo_through(&app).await;
}

#[tokio::test]
async fn a_members_bearer_token_never_reaches_an_http_upstream() {
    let Some((python, script)) = python() else {
        return;
    };
    let server = HttpUpstream::start(&python, &script);
    let base = server.url.trim_end_matches("mcp").to_owned();
    let url = server.url.clone();
    let app = spawn_app_with(move |c| {
        c.auth.mode = teamgate::config::AuthMode::Required;
        c.tools.http_allowlist = vec![base];
        c.upstreams = vec![
            serde_json::from_value(json!({
                "name": "py", "url": url, "pin": false,
                "headers": {"X-Team-Key": "${HOME}"},
            }))
            .unwrap(),
        ];
    })
    .await;
    let tokens = teamgate::auth::PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let token = tokens
        .create("alice", "test", vec!["*".into()], None)
        .await
        .unwrap()
        .token;
    listed(&app, Some(&token), "py_headers").await;
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "py_headers", "arguments": {}, "_meta": modern_meta()}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "py_headers"),
    ];
    let (status, text) = send(&app, &token, &body, &headers).await;
    assert_eq!(status, 200, "{text}");
    let seen = reply(&text)["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        seen.contains("x-team-key"),
        "the configured header arrives: {seen}"
    );
    assert!(
        seen.contains("[redacted]"),
        "its secret value is scrubbed on the way back: {seen}"
    );
    let secret = token.to_lowercase();
    assert!(!seen.contains(&secret), "no member token upstream: {seen}");
    assert!(
        !seen.contains("bearer"),
        "no authorization of the member's: {seen}"
    );
}
