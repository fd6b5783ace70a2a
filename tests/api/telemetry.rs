//! Observability: `/metrics` counts what the issue asks for, the scrape token
//! and the separate listener work, and the real binary exports spans and
//! metrics over OTLP/HTTP to a receiver this test runs, continuing the
//! caller's `traceparent`, with no secret in any log line.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, routing::post};
use opentelemetry_proto::tonic::collector::{
    metrics::v1::ExportMetricsServiceRequest, trace::v1::ExportTraceServiceRequest,
};
use prost::Message;
use serde_json::json;
use teamgate::config::Secret;

use crate::helpers::{audit_until, repo_path, spawn_app, spawn_app_with};

mod otlp;

pub(crate) async fn scrape(base: &str, token: Option<&str>) -> (u16, String) {
    let mut request = teamgate::outbound::client().get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("scrape");
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The value of the first sample whose line starts with `name{` and holds every label.
pub(crate) fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_tool_calls_clients_and_latency() {
    let app = spawn_app().await;
    let session = app.initialize("2025-06-18").await;
    app.session_call(
        &session,
        1,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {}}),
    )
    .await;
    app.session_call(
        &session,
        2,
        "tools/call",
        json!({"name": "test_error_handling", "arguments": {}}),
    )
    .await;
    // An SSE reply (progress, then the result) is measured to its end: >= 100 ms.
    let streamed = app
        .session_call(
            &session,
            4,
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert!(streamed.get("result").is_some(), "{streamed}");
    let (status, _) = app.modern_call(3, "tools/list", json!({})).await;
    assert_eq!(status, 200);
    // A name no provider has is audited, but never a label (a client made it).
    app.session_call(
        &session,
        5,
        "tools/call",
        json!({"name": "no_such_tool_for_metrics", "arguments": {}}),
    )
    .await;
    let (status, text) = scrape(&app.base(), None).await;
    assert!(!text.contains("no_such_tool_for_metrics"), "{text}");
    assert_eq!(status, 200, "{text}");
    let expect = |name: &str, labels: &[&str]| {
        let value = sample(&text, name, labels)
            .unwrap_or_else(|| panic!("no {name} {labels:?} in:\n{text}"));
        assert!(value >= 1.0, "{name} {labels:?} = {value}");
    };
    expect(
        "teamgate_mcp_requests_total",
        &["method=\"initialize\"", "era=\"legacy\"", "outcome=\"ok\""],
    );
    expect(
        "teamgate_mcp_requests_total",
        &["method=\"tools/list\"", "era=\"modern\""],
    );
    expect(
        "teamgate_mcp_tool_calls_total",
        &["tool=\"test_simple_text\"", "outcome=\"ok\""],
    );
    expect(
        "teamgate_mcp_tool_calls_total",
        &["tool=\"test_error_handling\"", "outcome=\"tool_error\""],
    );
    expect(
        "teamgate_mcp_clients_total",
        &[
            "client=\"teamgate-tests\"",
            "era=\"legacy\"",
            "protocol_version=\"2025-06-18\"",
        ],
    );
    expect(
        "teamgate_mcp_request_duration_seconds_count",
        &["method=\"tools/call\""],
    );
    let fast = sample(
        &text,
        "teamgate_mcp_request_duration_seconds_bucket",
        &["method=\"tools/call\"", "le=\"0.05\""],
    );
    let all = sample(
        &text,
        "teamgate_mcp_request_duration_seconds_count",
        &["method=\"tools/call\""],
    );
    let (fast, all) = (fast.expect("a 50 ms bucket"), all.expect("a count"));
    assert!(
        fast < all,
        "the progress call took >= 100 ms to its last byte: {fast:?} < {all:?}"
    );
    assert_eq!(
        sample(&text, "teamgate_mcp_streams_active", &[]),
        Some(0.0),
        "every stream closed: {text}"
    );
    assert!(text.contains("teamgate_sessions_active"), "{text}");
    app.stop().await;
}

#[tokio::test]
async fn a_traceparent_header_continues_into_the_audit_record() {
    let app = spawn_app().await;
    let session = app.initialize("2025-11-25").await;
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let response = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "test_simple_text", "arguments": {}}}),
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
                ("traceparent", &format!("00-{trace_id}-b7ad6b7169203331-01")),
            ],
        )
        .await;
    assert_eq!(response.status(), 200);
    let records = audit_until(&app.store, None, |r| !r.is_empty()).await;
    let record = records.first().expect("the call is audited");
    assert_eq!(
        record.trace_id, trace_id,
        "span, logs and audit share the caller's trace"
    );
    assert_eq!(record.outcome, "ok");
    app.stop().await;
}

#[tokio::test]
async fn authentication_failures_are_counted() {
    let app = spawn_app_with(|c| c.auth.mode = teamgate::config::AuthMode::Required).await;
    let refused = app
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[("authorization", "Bearer tg_nope_nope")],
        )
        .await;
    assert_eq!(refused.status(), 401);
    let (status, text) = scrape(&app.base(), None).await;
    assert_eq!(status, 200, "/metrics is not behind user tokens");
    assert_eq!(
        sample(&text, "teamgate_auth_failures_total", &["status=\"401\""]),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "teamgate_mcp_requests_total",
            &["outcome=\"http_401\""]
        )
        .is_some(),
        "{text}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_scrape_token_and_a_separate_listener_are_honoured() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap();
    drop(free);
    let app = spawn_app_with(|c| {
        c.telemetry.metrics.listen = metrics_addr.to_string();
        c.telemetry.metrics.token = Secret::new("scrape-token-for-the-test");
    })
    .await;
    let (status, _) = scrape(&app.base(), None).await;
    assert_eq!(status, 404, "not on the main listener when it has its own");
    let separate = format!("http://{metrics_addr}");
    let mut answered = None;
    for _ in 0..50 {
        if let Ok(r) = teamgate::outbound::client()
            .get(format!("{separate}/metrics"))
            .send()
            .await
        {
            answered = Some(r.status().as_u16());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answered, Some(401), "the token is required");
    let (status, _) = scrape(&separate, Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, text) = scrape(&separate, Some("scrape-token-for-the-test")).await;
    assert_eq!(status, 200);
    assert!(text.contains("teamgate_"), "{text}");
    app.stop().await;
}

/// The real binary (jemalloc is its allocator) reports its heap: live
/// objects apart from what the allocator keeps in RAM.
#[tokio::test]
async fn the_binary_reports_its_heap_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let served = crate::binary::serve(&config, &[]);
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let (status, text) = scrape(&base, None).await;
    assert_eq!(status, 200, "{text}");
    let allocated = sample(&text, "teamgate_memory_bytes", &["kind=\"allocated\""]);
    let resident = sample(&text, "teamgate_memory_bytes", &["kind=\"resident\""]);
    let (allocated, resident) = (allocated.expect(&text), resident.expect(&text));
    // A serving process holds at least a megabyte of live objects, in RAM.
    assert!(allocated > 1_048_576.0, "{allocated}");
    assert!(resident >= allocated, "{resident} < {allocated}");
    assert!(sample(&text, "teamgate_memory_bytes", &["kind=\"metadata\""]).is_some());
}
