//! Issue 64 part 3: audit records shipped as they are written, to a webhook
//! that fails and recovers (signed, in order, at least once, redacted) and
//! as OTLP log records to a receiver built on the official protobufs.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};
use hmac::{Hmac, Mac};
use opentelemetry_proto::tonic::{
    collector::logs::v1::ExportLogsServiceRequest, common::v1::any_value,
};
use prost::Message;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::helpers::spawn_app_with;

const SECRET: &str = "audit-hook-secret-0123456789";

/// A `traceparent` whose trace id is `n`: the order calls were made in,
/// readable back from each shipped record's `traceId`.
fn traceparent(n: usize) -> String {
    format!("00-{n:032x}-00f067aa0ba902b7-01")
}

async fn call(app: &crate::helpers::TestApp, n: usize) {
    let params = json!({"name": "test_simple_text", "arguments": {},
        "_meta": {"traceparent": traceparent(n)}});
    let (status, replies) = app.modern_call(n as i64, "tools/call", params).await;
    assert_eq!(status, 200, "{replies:?}");
}

/// A webhook that answers 503 to its first `fail_first` POSTs, then takes
/// them, checking each signature with the shared secret.
struct Hook {
    posts: AtomicUsize,
    fail_first: usize,
    bad_signatures: AtomicUsize,
    records: Mutex<Vec<Value>>,
}

fn signed_correctly(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(header) = headers
        .get("x-teamgate-signature")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((t, mac)) = header
        .strip_prefix("t=")
        .and_then(|rest| rest.split_once(",sha256="))
    else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let fresh = t.parse::<u64>().is_ok_and(|t| t.abs_diff(now) < 300);
    let mut expected = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    expected.update(format!("{t}.").as_bytes());
    expected.update(body);
    fresh && hex::decode(mac).is_ok_and(|mac| expected.verify_slice(&mac).is_ok())
}

async fn take(State(hook): State<Arc<Hook>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let n = hook.posts.fetch_add(1, Ordering::SeqCst);
    if !signed_correctly(&headers, &body) {
        hook.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    if n < hook.fail_first {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let lines = std::str::from_utf8(&body).unwrap().lines();
    let records = lines.map(|line| serde_json::from_str(line).unwrap());
    hook.records.lock().unwrap().extend(records);
    StatusCode::NO_CONTENT
}

async fn listen(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn a_failing_then_recovering_webhook_gets_every_record_once_in_order_signed_and_redacted() {
    let hook = Arc::new(Hook {
        posts: AtomicUsize::new(0),
        fail_first: 3,
        bad_signatures: AtomicUsize::new(0),
        records: Mutex::default(),
    });
    let url = listen(
        Router::new()
            .route("/hook", post(take))
            .with_state(hook.clone()),
    )
    .await;
    let app = spawn_app_with(|config| {
        let ship = &mut config.audit.ship;
        ship.redact = vec!["address".into(), "subject".into()];
        ship.webhook = Some(teamgate::config::AuditWebhookConfig {
            url: format!("{url}/hook"),
            secret: teamgate::config::Secret::new(SECRET),
            timeout: Duration::from_secs(2),
            batch: 4,
        });
    })
    .await;
    const CALLS: usize = 30;
    for n in 1..=CALLS {
        call(&app, n).await;
    }
    // Three refusals, each retried after a backoff (0.1 s, 0.2 s, 0.4 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while hook.records.lock().unwrap().len() < CALLS {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not all records shipped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(hook.bad_signatures.load(Ordering::SeqCst), 0);
    assert!(
        hook.posts.load(Ordering::SeqCst) > 3,
        "the failures were retried"
    );
    let records = hook.records.lock().unwrap().clone();
    // At least once: the receiver deduplicates by id.
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&Value> = records
        .iter()
        .filter(|r| seen.insert(r["id"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(unique.len(), CALLS, "{records:?}");
    // In the order the calls were made (their trace ids count them).
    let order: Vec<String> = unique
        .iter()
        .map(|r| r["traceId"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (1..=CALLS).map(|n| format!("{n:032x}")).collect();
    assert_eq!(order, expected);
    for record in &unique {
        assert_eq!(record["method"], "tools/call", "{record}");
        assert_eq!(record["target"], "test_simple_text", "{record}");
        assert_eq!(record["outcome"], "ok", "{record}");
        assert_eq!(record["address"], "[redacted]", "{record}");
        assert_eq!(record["subject"], "[redacted]", "{record}");
        assert_ne!(record["user"], "[redacted]", "{record}");
        assert!(
            record["argsDigest"].as_str().unwrap().len() == 64,
            "{record}"
        );
    }
    // The store's rows are the shipped ones.
    let stored = app.store.audit_tail(None, 0, 1000).await.unwrap();
    let stored: std::collections::HashSet<String> = (stored.iter())
        .filter(|r| r.method == "tools/call")
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(stored, seen);
}

#[tokio::test]
async fn records_reach_an_otlp_receiver_as_log_records_joined_to_their_traces() {
    let received = Arc::new(Mutex::new(Vec::<ExportLogsServiceRequest>::new()));
    async fn logs(State(r): State<Arc<Mutex<Vec<ExportLogsServiceRequest>>>>, body: Bytes) {
        let request = ExportLogsServiceRequest::decode(body).expect("OTLP logs protobuf");
        r.lock().unwrap().push(request);
    }
    let router = Router::new()
        .route("/v1/logs", post(logs))
        .route("/v1/metrics", post(|| async {}))
        .with_state(received.clone());
    let url = listen(router).await;
    let app = spawn_app_with(|config| {
        config.telemetry.otlp_endpoint = url.clone();
        config.telemetry.service_name = "teamgate-audit-test".into();
        config.audit.ship.otlp = true;
    })
    .await;
    for n in 1..=5 {
        call(&app, n).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let records = loop {
        let records: Vec<_> = (received.lock().unwrap().iter())
            .flat_map(|request| request.resource_logs.clone())
            .flat_map(|resource| {
                let service = resource.resource.clone().unwrap().attributes;
                assert!(format!("{service:?}").contains("teamgate-audit-test"));
                resource.scope_logs
            })
            .inspect(|scope| assert_eq!(scope.scope.as_ref().unwrap().name, "teamgate.audit"))
            .flat_map(|scope| scope.log_records)
            .collect();
        if records.len() >= 5 {
            break records;
        }
        assert!(tokio::time::Instant::now() < deadline, "{records:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(records.len(), 5);
    for (n, record) in (1..).zip(&records) {
        let body = record.body.as_ref().unwrap().value.as_ref().unwrap();
        assert_eq!(
            body,
            &any_value::Value::StringValue("tools/call test_simple_text ok".into())
        );
        assert_eq!(record.severity_text, "INFO");
        assert_eq!(hex::encode(&record.trace_id), format!("{n:032x}"));
        let attribute = |key: &str| {
            (record.attributes.iter())
                .find(|kv| kv.key == key)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        assert_eq!(
            attribute("audit.method"),
            Some(any_value::Value::StringValue("tools/call".into()))
        );
        assert!(matches!(
            attribute("audit.latencyMs"),
            Some(any_value::Value::IntValue(_))
        ));
        assert!(record.time_unix_nano > 1_700_000_000_000_000_000);
    }
}
