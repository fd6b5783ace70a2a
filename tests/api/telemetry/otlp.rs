//! The binary exporting spans and metrics over OTLP to a real receiver.

use super::*;

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
    // The operator commands never create a store: `migrate` does.
    let migrated = teamgate(dir.path()).arg("migrate").output().await.unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
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
    let client = teamgate::outbound::client();
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
