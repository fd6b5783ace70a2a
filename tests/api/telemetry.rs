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

use crate::helpers::{repo_path, spawn_app, spawn_app_with};

async fn scrape(base: &str, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("scrape");
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The value of the first sample whose line starts with `name{` and holds every label.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
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
    let (status, text) = scrape(&app.base(), None).await;
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
    let mut records = Vec::new();
    for _ in 0..100 {
        records = app.store.audit_tail(None, 0, 10).await.unwrap();
        if !records.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
        if let Ok(r) = reqwest::get(format!("{separate}/metrics")).await {
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

/// What the OTLP receiver got.
#[derive(Default)]
struct Received {
    spans: Vec<opentelemetry_proto::tonic::trace::v1::Span>,
    metric_names: Vec<String>,
}

async fn otlp_receiver() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    async fn traces(State(r): State<Arc<Mutex<Received>>>, body: Bytes) -> &'static str {
        let request = ExportTraceServiceRequest::decode(body).expect("OTLP traces protobuf");
        let spans = request
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans);
        r.lock().unwrap().spans.extend(spans);
        ""
    }
    async fn metrics(State(r): State<Arc<Mutex<Received>>>, body: Bytes) -> &'static str {
        let request = ExportMetricsServiceRequest::decode(body).expect("OTLP metrics protobuf");
        let names = request
            .resource_metrics
            .into_iter()
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .map(|m| m.name);
        r.lock().unwrap().metric_names.extend(names);
        ""
    }
    let router = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, received)
}

/// Kills the server process when the test ends, however it ends.
struct Server(tokio::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

fn teamgate(dir: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_teamgate"));
    command
        .current_dir(repo_path(""))
        .env(
            "TEAMGATE__STORE__URL",
            format!("sqlite://{}/teamgate.db", dir.display()),
        )
        .env("TEAMGATE__LOG__FORMAT", "json")
        .env_remove("RUST_LOG");
    command
}

#[tokio::test]
async fn the_binary_exports_spans_and_metrics_over_otlp_and_logs_no_secret() {
    let (otlp, received) = otlp_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let created = teamgate(dir.path())
        .args(["token", "create", "--user", "otel-tester", "--name", "ci"])
        .output()
        .await
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let token = String::from_utf8_lossy(&created.stdout)
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_owned();
    let state_key = format!("state-key-{}", "s".repeat(32));
    let scrape_token = "scrape-token-0123456789";
    let log_path = dir.path().join("server.log");
    let child = teamgate(dir.path())
        .args([
            "serve",
            "--config",
            "config/conformance.toml",
            "--listen",
            "127.0.0.1:0",
        ])
        .env("TEAMGATE__TELEMETRY__OTLP_ENDPOINT", &otlp)
        .env("TEAMGATE__TELEMETRY__EXPORT_INTERVAL", "300ms")
        // Per-request log lines are opt-in; this run checks their fields.
        .env("TEAMGATE__LOG__REQUESTS", "true")
        // The SDK's standard knob: export span batches every 200 ms instead of 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .env("TEAMGATE__TELEMETRY__METRICS__TOKEN", scrape_token)
        .env(
            "TEAMGATE__MCP__REQUEST_STATE_KEYS",
            format!("[\"{state_key}\"]"),
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut server = Server(child);
    let mut base = None;
    for _ in 0..100 {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(at) = log.find("\"url\":\"http://") {
            let rest = &log[at + 7..];
            let url = &rest[..rest.find('"').unwrap()];
            base = Some(url.trim_end_matches("/mcp").to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let base = base.unwrap_or_else(|| {
        panic!(
            "server did not start: {}",
            std::fs::read_to_string(&log_path).unwrap()
        )
    });
    let client = reqwest::Client::new();
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
    "name": "test_simple_text", "arguments": {},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "otel-test-client", "version": "1"},
        "traceparent": format!("00-{trace_id}-00f067aa0ba902b7-01"),
    }}});
    let response = client
        .post(format!("{base}/mcp"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "test_simple_text")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let refused = client
        .post(format!("{base}/mcp"))
        .bearer_auth("tg_wrong_token")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    let mut span = None;
    for _ in 0..200 {
        {
            let got = received.lock().unwrap();
            span = got
                .spans
                .iter()
                .find(|s| s.name == "tools/call test_simple_text")
                .cloned();
            if span.is_some()
                && got
                    .metric_names
                    .iter()
                    .any(|n| n == "teamgate.mcp.tool_calls")
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let span = span.expect("the call's span arrived over OTLP");
    assert_eq!(
        hex::encode(&span.trace_id),
        trace_id,
        "the caller's trace continues"
    );
    assert_eq!(hex::encode(&span.parent_span_id), "00f067aa0ba902b7");
    let attribute = |key: &str| {
        span.attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref())
            .map(|v| format!("{:?}", v.value))
            .unwrap_or_default()
    };
    assert!(
        attribute("user").contains("otel-tester"),
        "{:?}",
        span.attributes
    );
    assert!(attribute("era").contains("modern"));
    assert!(attribute("outcome").contains("ok"));
    assert!(attribute("client").contains("otel-test-client"));
    let libraries: Vec<String> = received
        .lock()
        .unwrap()
        .spans
        .iter()
        .filter(|s| s.name == "serve_inner" || s.name.starts_with("HTTP"))
        .map(|s| s.name.clone())
        .collect();
    assert!(
        libraries.is_empty(),
        "only teamgate's spans are exported: {libraries:?}"
    );
    let names = received.lock().unwrap().metric_names.clone();
    for metric in [
        "teamgate.mcp.requests",
        "teamgate.mcp.request.duration",
        "teamgate.mcp.tool_calls",
        "teamgate.auth.failures",
        "teamgate.mcp.clients",
    ] {
        assert!(
            names.iter().any(|n| n == metric),
            "{metric} not in {names:?}"
        );
    }

    let _ = server.0.start_kill();
    let _ = server.0.wait().await;
    let log = std::fs::read_to_string(&log_path).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("\"message\":\"mcp request\"") && l.contains("test_simple_text"))
        .expect("one log line for the call");
    for field in [
        trace_id,
        "\"user\":\"otel-tester\"",
        "\"era\":\"modern\"",
        "\"outcome\":\"ok\"",
        "\"protocol_version\":\"2026-07-28\"",
        "\"client\":\"otel-test-client\"",
        "latency_ms",
    ] {
        assert!(line.contains(field), "{field} not in {line}");
    }
    let secret = token.rsplit('_').next().unwrap();
    for (what, value) in [
        ("token", token.as_str()),
        ("token secret", secret),
        ("state key", &state_key),
        ("scrape token", scrape_token),
        ("refused token", "tg_wrong_token"),
    ] {
        assert!(!log.contains(value), "the {what} appears in the logs");
    }
}
