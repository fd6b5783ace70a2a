//! Issue 64 part 5: the database down under a steady client. A PostgreSQL
//! of the test's own is stopped: `/readyz` turns 503 at once; what is held
//! in memory (a cached token, an open 2025-era session) goes on being
//! served; what needs the database (a token not seen yet, a new session)
//! gets HTTP 503 with a JSON-RPC error naming the database, carrying the
//! request's id, within `store.timeout`; nothing hangs. Started again,
//! everything recovers by itself and the calls made meanwhile have their
//! audit rows.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{binary::serve, own_postgres::OwnPostgres};

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-06-18";

fn modern_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "teamgate_info", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// POSTs `body` with `headers`; the status, the session header and the
/// JSON-RPC reply (JSON or the last SSE message), and how long it took.
async fn post(
    url: &str,
    token: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, Value, Duration) {
    let started = Instant::now();
    let mut request = teamgate::outbound::client()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .timeout(Duration::from_secs(30))
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("an answer, not a hang");
    let status = response.status().as_u16();
    let session =
        (response.headers().get("mcp-session-id")).map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let reply = (text.lines().rev())
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| serde_json::from_str(data.trim()).ok())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (status, session, reply, started.elapsed())
}

async fn modern(url: &str, token: &str, id: u64) -> (u16, Option<String>, Value, Duration) {
    let headers = [
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "teamgate_info"),
    ];
    post(url, token, &modern_call(id), &headers).await
}

async fn initialize(url: &str, token: &str, id: u64) -> (u16, Option<String>, Value, Duration) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "outage-test", "version": "1"}}});
    post(url, token, &body, &[]).await
}

async fn ready(base: &str) -> u16 {
    let probe = teamgate::outbound::client()
        .get(format!("{base}/readyz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    probe.map_or(0, |r| r.status().as_u16())
}

async fn until_ready_is(base: &str, status: u16, within: Duration) -> Duration {
    let started = Instant::now();
    while ready(base).await != status {
        assert!(
            started.elapsed() < within,
            "/readyz never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_database_stopped_calls_complete_or_get_a_clear_503_within_the_bound() {
    let Some(pg) = OwnPostgres::start() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/install-test-deps.sh installs PostgreSQL's server"
        );
        eprintln!("SKIP: no PostgreSQL server installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("teamgate.toml");
    std::fs::write(
        &config,
        "[reload]\nwatch = false\n[store]\ntimeout = \"2s\"\n",
    )
    .unwrap();
    let url = pg.url();
    let keys = r#"["outage-test-state-key-of-32-characters-at-least"]"#;
    let served = serve(
        &config,
        &[
            ("TEAMGATE__STORE__URL", url.as_str()),
            ("TEAMGATE__MCP__REQUEST_STATE_KEYS", keys),
        ],
    );
    let base = served.url.replace("/mcp", "");
    let (warm, cold) = (served.token("ann", &[]), served.token("bob", &[]));
    // Before: the warm token is cached, and ann has a 2025-era session open.
    let (status, _, reply, _) = modern(&served.url, &warm, 1).await;
    assert_eq!(status, 200, "{reply}");
    let (status, session, _, _) = initialize(&served.url, &warm, 2).await;
    assert_eq!(status, 200);
    let session = session.expect("a session");
    let in_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", LEGACY),
    ];
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&served.url, &warm, &notified, &in_session).await.0,
        202
    );

    pg.stop();
    let noticed = until_ready_is(&base, 503, Duration::from_secs(5)).await;
    assert!(noticed < Duration::from_secs(3), "readyz took {noticed:?}");
    served.logged("the database does not answer");
    // Held in memory: served as before.
    for id in 10..15 {
        let (status, _, reply, took) = modern(&served.url, &warm, id).await;
        assert_eq!(status, 200, "{reply}");
        assert!(reply["result"].is_object(), "{reply}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    let call = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "teamgate_info", "arguments": {}}});
    let (status, _, reply, took) = post(&served.url, &warm, &call, &in_session).await;
    assert_eq!(status, 200, "{reply}");
    assert!(reply["result"].is_object(), "{reply}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // Needing the database: a clear 503 naming it, within store.timeout.
    let bound = Duration::from_millis(2_000 + 1_500);
    let (status, _, reply, took) = modern(&served.url, &cold, 30).await;
    assert_eq!(status, 503, "{reply}");
    assert_eq!(reply["id"], 30, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("database"), "{reply}");
    assert!(took < bound, "a cold token waited {took:?}");
    let (status, _, reply, took) = initialize(&served.url, &warm, 31).await;
    assert_eq!(status, 503, "{reply}");
    assert_eq!(reply["id"], 31, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("database"), "{reply}");
    assert!(took < bound, "initialize waited {took:?}");

    pg.start_again();
    until_ready_is(&base, 200, Duration::from_secs(15)).await;
    served.logged("the database answers again");
    let (status, _, reply, _) = modern(&served.url, &cold, 40).await;
    assert_eq!(status, 200, "{reply}");
    // The calls served during the outage have their rows once it is back.
    let store =
        teamgate::store::Store::connect(&url, std::sync::Arc::new(teamgate::store::SystemClock))
            .await
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = store.audit_tail(Some("ann"), 0, 100).await.unwrap();
        let calls = rows.iter().filter(|r| r.method == "tools/call").count();
        // 1 before, 5 stateless and 1 in the session during the outage.
        if calls == 7 {
            break;
        }
        assert!(Instant::now() < deadline, "{calls} of 7 calls audited");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
